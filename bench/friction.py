"""Friction: the tumbling box with Coulomb friction, side by side in one run.

    python bench/friction.py                 # T = 3 s, 3 rounds
    python bench/friction.py --quick         # T = 1 s, 1 round
    python bench/friction.py --no-python     # without the (slow) Python event loop row

models/tumbling_box.py at its defaults (e = 0.6, 1 ms communication steps), CPU seconds per
simulated second, the median of the rounds (the runs of a round one after the other):
1. its frictionless corner spheres (shape="corners", mu = 0) as a native FMU stepped by a C
   host (tests/c_host/native_host.c bench: doStep + getReal of box.x, box.y, box.z per step,
   the first 200 steps not timed, then T s) -- the reference of the target;
2. its box shape with friction (shape="box", mu = 0.5: a Box on the body against the ground
   Plane, lowered to the box's eight vertices) as a native FMU in the same C host -- the
   target: at most 2x row 1;
3. its corner spheres with friction mu = 0.5, native FMU in the same C host;
4. rows 1-3 in the compiled engine in process (fmu_mb.engine.engine.Engine.do_step, behind
   Python's per-step cost; first T s);
5. the frictional box shape in fmu_mb's Python event loop (integrate.stepper, formulation
   newton_euler: the reference; the first second only, it is slow);
6. the same box (mass, inertia, edges, pose, velocities) dropped on a plane in MuJoCo
   (mj_step, timestep 1 ms, the same mu as sliding friction, elliptic cones, one box geom;
   MuJoCo's soft contacts have no Newton restitution: solref's default damping),
and the final pose of the box (centre, which face is down, Cardan angles) after T s of the
frictional box shape in fmu_mb and of MuJoCo's box, and whether it came to rest.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "models"))

from fmu_mb import ModelBuilder, cardan  # noqa: E402

M, A, B, C, R = 2.0, 0.4, 0.25, 0.15, 0.01
H0, ALPHA0, BETA0 = 0.6, 0.35, -0.2
W0, V0 = (1.0, -2.0, 6.0), (0.5, 0.0, 0.0)
INERTIA = (M * (B * B + C * C) / 12.0, M * (A * A + C * C) / 12.0, M * (A * A + B * B) / 12.0)


def friction_box(mu, e=0.6):
    """models/tumbling_box.py's box (its default parameters) with friction mu at the corners."""
    mb = ModelBuilder("friction_box", gravity=(0.0, 0.0, -9.81))
    box = mb.body("box", mass=M, inertia=INERTIA, position=(0.0, 0.0, H0),
                  orientation=cardan(ALPHA0, BETA0, 0.0), velocity=V0, angular_velocity=W0)
    for i, sx in enumerate((-1, 1)):
        for j, sy in enumerate((-1, 1)):
            for k, sz in enumerate((-1, 1)):
                mb.contact(f"c{i}{j}{k}", box, point=(sx * A / 2, sy * B / 2, sz * C / 2),
                           radius=R, restitution=e, friction=mu)
    return mb.build()


def _face(R_):
    """Which body axis points down, e.g. '-z' (the face the box rests on)."""
    down = R_.T @ np.array([0.0, 0.0, -1.0])
    k = int(np.argmax(np.abs(down)))
    return ("+" if down[k] > 0 else "-") + "xyz"[k]


#: the three variants of models/tumbling_box.py timed (name: build overrides)
VARIANTS = {"corners, mu = 0": {},
            "box shape, mu = 0.5": {"shape": "box", "mu": 0.5},
            "corners, mu = 0.5": {"mu": 0.5}}
OUTS = ("box.x", "box.y", "box.z")


class NativeHost:
    """The variants as native FMUs (this machine's platform) and the C host that steps them."""

    def __init__(self, tmp):
        from fmpy import extract, read_model_description
        from fmu_mb.fmi.native_build import build_native_fmu
        cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
        if cc is None:
            sys.exit("bench/friction.py needs a C compiler")
        self.host = tmp / "native_host"
        subprocess.run([cc, "-O2", "-o", str(self.host),
                        str(ROOT / "tests/c_host/native_host.c"), "-ldl", "-lpthread"],
                       check=True)
        plat = {"linux": "linux64", "darwin": "darwin64", "win32": "win64"}[sys.platform]
        self.fmus = {}
        for k, (name, ov) in enumerate(VARIANTS.items()):
            d = tmp / f"v{k}"
            path = build_native_fmu(ROOT / "models" / "tumbling_box.py", d, ov, platforms=plat)
            md = read_model_description(str(path))
            vr = {v.name: v.valueReference for v in md.modelVariables}
            self.fmus[name] = (extract(str(path), str(d / "x")), md,
                               ",".join(str(vr[o]) for o in OUTS))

    def run(self, name, T):
        """CPU s per simulated s of T s of 1 ms steps (after 200 untimed steps)."""
        folder, md, outs = self.fmus[name]
        res = subprocess.run([str(self.host), "bench", folder, md.guid,
                              md.coSimulation.modelIdentifier, "1e-3", str(int(round(T / 1e-3))),
                              "-1", outs], capture_output=True, text=True, env={})
        if res.returncode != 0:
            raise RuntimeError(res.stderr[-2000:])
        fields = dict(kv.split("=") for kv in res.stdout.split())
        return float(fields["cpu_us_per_step"]) * 1e-3


def engine_run(overrides, T):
    """A variant in the compiled engine in process: CPU per simulated second, final pose."""
    import tumbling_box
    from fmu_mb.engine.engine import Engine
    from fmu_mb.mechanics.spatial import rotations as rot

    model = tumbling_box.build(**overrides)
    eng = Engine(model)
    eng.initialize()
    t0 = time.process_time()
    for _ in range(int(round(T / 1e-3))):
        eng.do_step(1e-3)
    cpu = (time.process_time() - t0) / T
    s = eng.get_state()
    n = eng.n
    q, qd = s[1:1 + n], s[1 + n:1 + 2 * n]
    r, p = q[:3], q[3:7]
    return cpu, r, rot.matrix(p[None])[0], float(np.abs(qd).max())


def python_friction(mu, T):
    import tumbling_box
    from fmu_mb.dynamics import integrate
    from fmu_mb.dynamics.integrate import Settings, initial_state
    from fmu_mb.mechanics.spatial import rotations as rot

    m = tumbling_box.build(shape="box", mu=mu)
    st = Settings(formulation="newton_euler")
    step = integrate.stepper(m, st)
    s = initial_state(m, st)
    u = np.zeros(len(m.inputs))
    t0 = time.process_time()
    for k in range(1, int(round(T / 1e-3)) + 1):
        s = step(s, k * 1e-3, u)
    cpu = (time.process_time() - t0) / T
    r, p = s.q[:3], s.q[3:7]
    Rm = rot.matrix(p[None])[0]
    speed = float(np.abs(s.qd).max())
    return cpu, r, Rm, speed


def mujoco_friction(mu, T):
    import mujoco

    xml = f"""
<mujoco>
  <option timestep="0.001" cone="elliptic" gravity="0 0 -9.81"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1" friction="{mu} 0 0"/>
    <body name="box" pos="0 0 {H0}">
      <freejoint/>
      <geom type="box" size="{A / 2} {B / 2} {C / 2}" mass="{M}" friction="{mu} 0 0"/>
    </body>
  </worldbody>
</mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    from fmu_mb.mechanics.spatial.builder import orientation_quaternion
    q = np.asarray(orientation_quaternion("bench", cardan(ALPHA0, BETA0, 0.0)), float)
    data.qpos[3:7] = q / np.linalg.norm(q)
    mujoco.mj_forward(model, data)
    Rb = data.xmat[1].reshape(3, 3)
    data.qvel[:3] = V0
    data.qvel[3:6] = Rb.T @ np.array(W0)        # free joint: angular velocity in body axes
    t0 = time.process_time()
    for _ in range(int(round(T / model.opt.timestep))):
        mujoco.mj_step(model, data)
    cpu = (time.process_time() - t0) / T
    return cpu, data.qpos[:3].copy(), data.xmat[1].reshape(3, 3).copy(), \
        float(np.abs(data.qvel).max())


def main():
    from fmu_mb.mechanics.spatial import rotations as rot

    quick = "--quick" in sys.argv
    T = 1.0 if quick else 3.0
    rounds = 1 if quick else 3
    mu = 0.5
    names = list(VARIANTS)
    with tempfile.TemporaryDirectory() as tmp:
        host = NativeHost(Path(tmp))
        for name in names:                                  # load, and the first calls
            host.run(name, 0.05)
            engine_run(VARIANTS[name], 0.05)
        c_host = {n: [] for n in names}
        c_eng = {n: [] for n in names}
        for _ in range(rounds):
            for name in names:
                c_host[name].append(host.run(name, T))
            for name in names:
                c_eng[name].append(engine_run(VARIANTS[name], T)[0])
    med_h = {n: statistics.median(v) for n, v in c_host.items()}
    med_e = {n: statistics.median(v) for n, v in c_eng.items()}
    _, re_, Re, ve = engine_run(VARIANTS[names[1]], T)
    c2, r2, R2, v2 = mujoco_friction(mu, T)
    py = None if "--no-python" in sys.argv else python_friction(mu, 1.0)
    ref = med_h[names[0]]
    print(f"tumbling box (models/tumbling_box.py), 1 ms steps over {T:g} s, e = 0.6 "
          f"(CPU s per simulated s, median of {rounds})")
    for name in names:
        print(f"  {name:20s} native FMU, C host:  {med_h[name]:.4f}  "
              f"({med_h[name] / ref:.2f}x corners, mu = 0)   "
              f"[rounds {', '.join(f'{x:.4f}' for x in c_host[name])}]")
    for name in names:
        print(f"  {name:20s} engine in process:   {med_e[name]:.4f}  "
              f"({med_e[name] / med_e[names[0]]:.2f}x)")
    if py is not None:
        print(f"  box shape, mu = 0.5  Python event loop (first 1 s): {py[0]:.4f}  "
              f"({py[0] / ref:.0f}x)")
    print(f"  MuJoCo mj_step (box geom, elliptic cone, mu = 0.5): {c2:.4f}  "
          f"(box shape native FMU / MuJoCo {med_h[names[1]] / c2:.1f}x)")
    for name, r, Rm, v in (("fmu_mb", re_, Re, ve), ("MuJoCo", r2, R2, v2)):
        ang = [float(a[0]) for a in rot.cardan_angles(Rm[None])]
        print(f"  final pose {name:7s}: centre ({r[0]: .4f}, {r[1]: .4f}, {r[2]: .5f}) m, "
              f"face down {_face(Rm)}, Cardan angles ({ang[0]: .4f}, {ang[1]: .4f}, "
              f"{ang[2]: .4f}) rad, max |velocity| {v:.2e}")


if __name__ == "__main__":
    main()
