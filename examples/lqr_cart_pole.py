"""LQR on the linearization: balance the inverted pendulum on a cart, its FMU in fmpy.

1. fmu_mb.equilibrium / fmu_mb.linearize give A, B of examples/models/cart_pole.py upright
   (x = rail.position, pivot.angle, rail.rate, pivot.rate; u = push.h).
2. scipy.linalg.solve_continuous_are gives the LQR gain K = R^-1 B' P for weights Q, R; the
   design's closed-loop poles are eig(A - B K), and those of the loop as it runs (the gain
   applied at each communication point and held, zero-order hold over h) are
   log(eig(Ad - Bd K)) / h with Ad, Bd the exact discretisation of A, B.
3. The cart-pole FMU runs in fmpy from the pole tilted phi0 = 0.1 rad; at every communication
   point the master reads the state outputs, sets push.h = -K x and calls doStep(h).
4. The closed-loop poles are measured from the recorded states alone: the least-squares
   transition matrix X_{k+1} = Phi X_k over the run (dynamic mode decomposition), its
   eigenvalues mapped back by log(z) / h; the decay rate is the largest real part. It must
   agree with the design (tests/test_linearize.py::test_lqr_example runs this file).

    python examples/lqr_cart_pole.py [-o out/examples]
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import linalg as sla

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))              # this checkout's fmu_mb
MODEL = ROOT / "examples" / "models" / "cart_pole.py"

Q = np.diag([10.0, 100.0, 1.0, 1.0])       # weights of rail.position, pivot.angle, rates
R = np.array([[0.1]])                      # weight of push.h [1/N^2]
STEP = 0.005                               # communication step [s]
STOP = 5.0                                 # [s]
PHI0 = 0.1                                 # initial tilt of the pole [rad]


def design(q=Q, r=R):
    """(linear model at the upright equilibrium, LQR gain K (1 x 4), design poles)."""
    import fmu_mb

    model = fmu_mb.load_model(MODEL, phi0=0.0)
    eq = fmu_mb.equilibrium(model)
    lin = fmu_mb.linearize(model, eq, outputs=[])
    P = sla.solve_continuous_are(lin.A, lin.B, q, r)
    K = np.linalg.solve(r, lin.B.T @ P)
    return lin, K, _sorted(np.linalg.eigvals(lin.A - lin.B @ K))


def sampled_poles(lin, K, h=STEP):
    """Continuous-time equivalents of the poles of the sampled loop (gain held over h)."""
    n, m = lin.B.shape
    E = sla.expm(np.block([[lin.A, lin.B], [np.zeros((m, n + m))]]) * h)
    Ad, Bd = E[:n, :n], E[:n, n:]
    return _sorted(np.log(np.linalg.eigvals(Ad - Bd @ K).astype(complex)) / h)


def run_fmpy(fmu, lin, K, h=STEP, stop=STOP, phi0=PHI0):
    """The loop in fmpy: read the state outputs, set push.h = u0 - K (x - x0), doStep(h).
    Returns (times, states (n_steps + 1, 4), inputs)."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    f = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(fmu)),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="cart_pole")
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.setReal([vr["phi0"], vr["solver.rtol"]], [phi0, 1e-10])
    f.exitInitializationMode()
    xs = [vr[k] for k in lin.x_names]
    u_ref = vr[lin.u_names[0]]
    n = int(round(stop / h))
    X, U = np.zeros((n + 1, len(xs))), np.zeros(n + 1)
    try:
        for k in range(n + 1):
            X[k] = f.getReal(xs)
            U[k] = lin.u0[0] - float(K[0] @ (X[k] - lin.x0))
            if k == n:
                break
            f.setReal([u_ref], [U[k]])
            f.doStep(currentCommunicationPoint=k * h, communicationStepSize=h)
    finally:
        f.terminate()
        f.freeInstance()
    return np.arange(n + 1) * h, X, U


def measured_poles(X, h=STEP, start=0.5):
    """Closed-loop poles from the recorded states: Phi = X1 X0^+ over the samples after
    `start` seconds (the initial transient of the 0.1 rad tilt is the least linear)."""
    k0 = int(round(start / h))
    X0, X1 = X[k0:-1].T, X[k0 + 1:].T
    scale = np.abs(X0).max(axis=1)[:, None]            # condition the least squares
    Phi = (X1 / scale) @ np.linalg.pinv(X0 / scale)
    return _sorted(np.log(np.linalg.eigvals(Phi).astype(complex)) / h)


def _sorted(poles):
    return poles[np.lexsort((poles.imag, -poles.real))]


def main(out_dir=ROOT / "out" / "examples"):
    """Design, run and compare; prints the table and returns a dict of the results."""
    from fmu_mb.fmi.build import build_fmu

    lin, K, poles = design()
    sampled = sampled_poles(lin, K)
    fmu = build_fmu(MODEL, out_dir)
    t, X, U = run_fmpy(fmu, lin, K)
    measured = measured_poles(X)
    print(f"LQR on the linearization of {MODEL.name} upright: K = "
          + np.array2string(K[0], precision=4) + f" (x = {list(lin.x_names)})")
    print(f"{'design (continuous)':>22s} {'sampled loop, h = %g s' % STEP:>24s} "
          f"{'measured in fmpy':>22s}")
    for a, b, c in zip(poles, sampled, measured):
        print(f"{a.real:+10.5f}{a.imag:+10.5f}j  {b.real:+10.5f}{b.imag:+10.5f}j  "
              f"{c.real:+10.5f}{c.imag:+10.5f}j")
    rate = {"design": float(poles.real.max()), "sampled": float(sampled.real.max()),
            "measured": float(measured.real.max())}
    print(f"decay rate (largest real part) [1/s]: design {rate['design']:.5f}, sampled loop "
          f"{rate['sampled']:.5f}, measured {rate['measured']:.5f}; largest |pivot.angle| "
          f"{np.abs(X[:, 1]).max():.4f} rad, final {X[-1, 1]:.2e} rad, largest |push.h| "
          f"{np.abs(U).max():.2f} N")
    return {"lin": lin, "K": K, "design": poles, "sampled": sampled, "measured": measured,
            "rate": rate, "t": t, "X": X, "U": U}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--out-dir", default=str(ROOT / "out" / "examples"))
    main(p.parse_args().out_dir)
