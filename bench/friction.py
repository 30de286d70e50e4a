"""Friction: the tumbling box with Coulomb friction at its eight corner spheres, side by side.

    python bench/friction.py            # T = 3 s
    python bench/friction.py --quick    # T = 1 s

Rows (CPU seconds per simulated second, 1 ms communication steps, one process):
1. models/tumbling_box.py (frictionless corner spheres, e = 0.6) in the compiled engine of the
   native FMU (fmu_mb.engine.engine.Engine.do_step: the C step a C host calls through FMI);
2. the same box with friction mu at its corners (e = 0.6) in the same compiled engine (its
   native FMU's step; the friction of native/event_loop.h) -- the target: at most 2x row 1;
3. the same frictional box in fmu_mb's Python event loop (integrate.stepper, formulation
   newton_euler: the reference; over the first second only, it is slow);
4. the same box (mass, inertia, edges, pose, velocities) dropped on a plane in MuJoCo
   (mj_step, timestep 1 ms, the same mu as sliding friction, elliptic cones, one box geom;
   MuJoCo's soft contacts have no Newton restitution: solref's default damping).
and the final pose of the box (centre height, which face is down, Cardan angles) of each
frictional run, and whether it came to rest.
"""
import math
import sys
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


def engine_frictionless(T):
    import tumbling_box
    from fmu_mb.engine.engine import Engine

    eng = Engine(tumbling_box.build())
    eng.initialize()
    t0 = time.process_time()
    for _ in range(int(round(T / 1e-3))):
        eng.do_step(1e-3)
    return (time.process_time() - t0) / T


def engine_friction(mu, T):
    """The frictional box in the compiled engine: CPU per simulated second, final pose."""
    from fmu_mb.engine.engine import Engine
    from fmu_mb.mechanics.spatial import rotations as rot

    eng = Engine(friction_box(mu))
    eng.initialize()
    t0 = time.process_time()
    for _ in range(int(round(T / 1e-3))):
        eng.do_step(1e-3)
    cpu = (time.process_time() - t0) / T
    s = eng.get_state()
    n = (len(s) - 2 - 9 * 8) // 2
    q, qd = s[1:1 + n], s[1 + n:1 + 2 * n]
    r, p = q[:3], q[3:7]
    return cpu, r, rot.matrix(p[None])[0], float(np.abs(qd).max())


def python_friction(mu, T):
    from fmu_mb.dynamics import integrate
    from fmu_mb.dynamics.integrate import Settings, initial_state
    from fmu_mb.mechanics.spatial import rotations as rot

    m = friction_box(mu)
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

    T = 1.0 if "--quick" in sys.argv else 3.0
    mu = 0.5
    engine_frictionless(0.05)                               # build and load first
    engine_friction(mu, 0.05)
    c0 = engine_frictionless(T)
    ce, re_, Re, ve = engine_friction(mu, T)
    c1, r1, R1, v1 = python_friction(mu, min(T, 1.0))
    c2, r2, R2, v2 = mujoco_friction(mu, T)
    print(f"tumbling box, 1 ms steps over {T:g} s, mu = {mu} (CPU s per simulated s)")
    print(f"  frictionless corners, compiled engine (native FMU step): {c0:.4f}")
    print(f"  friction at the corners, compiled engine (native FMU):  {ce:.4f}  "
          f"({ce / c0:.2f}x the frictionless engine)")
    print(f"  friction at the corners, Python event loop (first 1 s): {c1:.4f}  "
          f"({c1 / c0:.0f}x)")
    print(f"  MuJoCo mj_step (box geom, elliptic cone):               {c2:.4f}")
    for name, r, Rm, v in (("fmu_mb", re_, Re, ve), ("MuJoCo", r2, R2, v2)):
        ang = [float(a[0]) for a in rot.cardan_angles(Rm[None])]
        print(f"  final pose {name:7s}: centre ({r[0]: .4f}, {r[1]: .4f}, {r[2]: .5f}) m, "
              f"face down {_face(Rm)}, Cardan angles ({ang[0]: .4f}, {ang[1]: .4f}, "
              f"{ang[2]: .4f}) rad, max |velocity| {v:.2e}")


if __name__ == "__main__":
    main()
