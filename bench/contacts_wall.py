"""Contact models: wall time of the contact event loop, C against Python, side by side (one
process).

    python bench/contacts_wall.py            # both tables
    python bench/contacts_wall.py --quick    # shorter runs

Table 1, per model: one advance() over [0, t_end] (no output sampling) with formulation
recursive and the whole event loop in C (fmu_mb/engine/native/event_loop.h: events.c planar,
spatial_events.c spatial), with recursive and
the Python event loop of fmu_mb.dynamics.integrate (the kernel stepping between events,
scipy's dense output and brentq, the impact equations in numpy: the path before the C loop),
and with tmt (all Python). Also the events handled, the largest difference of the final
state and contact records between the two recursive loops (scaled by max(1, |value|)), and
the speed-up. Each variant runs once briefly first (the kernel's build and imports are not
counted); the best of 3 runs is reported (the machine is shared).

Table 2, the excavator's 1 ms co-simulation step in process (integrate.stepper, u = 0: the
arm falls, the boom cylinder strikes its lower end stop, bounces and rests on it): us per
step over [0, 2] s and over [2, 3] s (resting in persistent contact), with the C loop, with
the Python loop, and for the same model with its six end stops removed (no contacts: one
mbk_advance per step).
"""
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from fmu_mb import load_model  # noqa: E402
from fmu_mb.dynamics import integrate  # noqa: E402
from fmu_mb.dynamics.formulations import recursive  # noqa: E402
from fmu_mb.mechanics.builder import ModelBuilder  # noqa: E402

CASES = [("bouncing_ball", 2.0, {}), ("bouncing_ball", 2.0, {"e": 0.5}),   # at rest from 1.35 s
         ("pendulum_wall", 2.0, {}), ("newtons_cradle", 1.0, {}),
         ("slider_crank_stop", 1.0, {}), ("falling_rod", 1.0, {}), ("excavator", 2.0, {}),
         # spatial (native/spatial_events.c): the box's first 0.6 s (before its corners'
         # near-simultaneous landings make the two loops' results depend on rounding), the
         # double wishbone under a 100 mm road step (tyre.h = -k z_road) onto its bump stop
         ("tumbling_box", 0.6, {}), ("double_wishbone", 0.25, {"stops": "on"})]
#: the inputs of a case (None: the model's defaults)
INPUTS = {"double_wishbone": {"tyre.h": -357859.232809 * 0.1}}
FIELDS = ("impacts", "last_time", "last_impulse", "energy_loss", "active")


def _model(name, **pars):
    return load_model(str(ROOT / "models" / f"{name}.py"), **pars)


def _records(m, s):
    c = s.extra["contacts"]
    return np.array([[float(c[x.name][f]) for f in FIELDS] for x in m.contacts])


def _run(m, t_end, formulation, native, u=None):
    recursive.NATIVE_EVENTS = native
    st = integrate.Settings(formulation=formulation)
    s0 = integrate.initial_state(m, st)
    integrate.advance(m, s0, 0.01, u, st)                    # warm-up
    best, out = np.inf, None
    for _ in range(3):
        t0 = time.perf_counter()
        out = integrate.advance(m, s0, t_end, u, st)
        best = min(best, time.perf_counter() - t0)
    recursive.NATIVE_EVENTS = True
    return best, out


def table_loops(quick):
    print("| model, t_end | events | recursive, C loop [ms] | recursive, Python loop [ms] | "
          "tmt [ms] | speed-up C / Python loop | max diff C vs Python loop |")
    print("|---|---|---|---|---|---|---|")
    for name, t_end, pars in CASES:
        t_end = t_end / 2 if quick else t_end
        m = _model(name, **pars)
        u = INPUTS.get(name)
        wc, sc = _run(m, t_end, "recursive", True, u)
        wp, sp = _run(m, t_end, "recursive", False, u)
        wt, _ = _run(m, t_end, "tmt", True, u)
        rc, rp = _records(m, sc), _records(m, sp)
        d = max(np.abs(a - b).max() / max(1.0, np.abs(b).max())
                for a, b in ((sc.q, sp.q), (sc.qd, sp.qd), (rc, rp)))
        label = name + "".join(f" {k}={v}" for k, v in pars.items())
        print(f"| {label}, {t_end} s | {int(rp[:, 0].sum())} impacts | {wc * 1e3:.2f} | "
              f"{wp * 1e3:.1f} | {wt * 1e3:.1f} | **{wp / wc:.0f}x** | {d:.1e} |")


def _excavator(stops=True):
    if stops:
        return _model("excavator")
    real = ModelBuilder.build

    def without_stops(self):
        self._contacts = []          # the cylinders' end stops are their two contacts each
        return real(self)
    ModelBuilder.build = without_stops
    try:
        return _model("excavator")
    finally:
        ModelBuilder.build = real


def _holding_inputs(m):
    """Cylinder forces <cyl>.h that hold the arm still at its initial pose (qdd = 0 at
    qd = 0: one acceleration per unit input, a 3 x 3 solve)."""
    from fmu_mb.dynamics.formulations import get_formulation

    form = get_formulation("recursive")
    s = integrate.initial_state(m, integrate.Settings(formulation="recursive"))
    names = [i.name if hasattr(i, "name") else i for i in m.inputs]
    cols = [k for k, nm in enumerate(names) if str(nm).endswith("_cyl.h")]
    u0 = np.zeros(len(names))
    a0 = form.accelerations(m, s.q, s.qd * 0, 0.0, u0).qdd
    A = np.zeros((len(a0), len(cols)))
    for j, k in enumerate(cols):
        u = u0.copy()
        u[k] = 1.0
        A[:, j] = form.accelerations(m, s.q, s.qd * 0, 0.0, u).qdd - a0
    u0[cols] = np.linalg.solve(A, -a0)
    return u0


def _cosim(m, native, spans, u):
    """CPU time per 1 ms step over each span (process time: the machine is shared)."""
    recursive.NATIVE_EVENTS = native
    st = integrate.Settings()
    step = integrate.stepper(m, st)
    s = integrate.initial_state(m, st)
    s = step(s, 1e-3, u)
    k, out = 1, []
    for span in spans:
        t0 = time.process_time()
        n = 0
        while (k + 1) * 1e-3 <= span + 1e-12:
            k += 1
            s = step(s, k * 1e-3, u)
            n += 1
        out.append((time.process_time() - t0) / n * 1e6)
    recursive.NATIVE_EVENTS = True
    return out, s


def table_excavator(quick):
    spans = (1.0, 1.5) if quick else (2.0, 3.0)
    hold = 1.0 if quick else 2.0
    rows = [("C event loop (this branch)", _excavator(True), True),
            ("Python event loop (before)", _excavator(True), False),
            ("end stops removed (no contacts)", _excavator(False), True)]
    u_hold = _holding_inputs(rows[0][1])
    print(f"| excavator, 1 ms co-simulation step [us CPU/step] | u = 0, [0, {spans[0]}] s: falls, "
          f"strikes the boom's lower stop, bounces, rests | u = 0, [{spans[0]}, {spans[1]}] s: "
          f"resting on the stop | u holding the arm still, [0, {hold}] s |")
    print("|---|---|---|---|")
    for label, m, native in rows:
        z = np.zeros(len(m.inputs))
        _cosim(m, native, (0.05,), z)                        # warm-up
        (a, b), s = _cosim(m, native, spans, z)
        (c,), s2 = _cosim(m, native, (hold,), u_hold)
        print(f"| {label} | {a:.1f} | {b:.1f} | {c:.1f} |")


def main():
    quick = "--quick" in sys.argv
    table_loops(quick)
    print()
    table_excavator(quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
