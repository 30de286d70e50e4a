"""Reference solution of the Bricard mechanism (IFToMM / MBS benchmark A04), computed twice
without fmu_mb, and written to tests/data/bricard_p3_reference.csv.

The problem (Gonzalez, Dopico, Lugris, Cuadrado, "A benchmarking system for MBS simulation
software: problem standardization and performance measurement", Multibody System Dynamics 16
(2006) 179-190; lim.ii.udc.es/mbsbenchmark, problem A04): five uniform slender rods of length
L = 1 m and mass 1 kg (inertia m L^2 / 12 about any axis across the rod, none along it),
revolute joints at P1 = (0,0,0) axis y (ground), P2 = (1,0,0) axis z, P3 = (1,-1,0) axis x,
P4 = (1,-1,1) axis y, P5 = (0,-1,1) axis z, P6 = (0,0,1) axis x (ground); gravity 9.81 m/s2
along -y; released at rest; 10 s. Grubler count 0, mobility 1 (one constraint is redundant).

Route 1, minimal coordinates (the tight reference). The loop is opened at P6; the five joint
angles q of the open chain place every rod by the product of exponentials about the joint
axes of the reference pose. The cut joint gives five closure equations Phi(q) = 0 of rank 4.
The angle theta = q1 at the ground joint P1 is the one coordinate; for a given theta the other
four angles solve Phi = 0 by Gauss-Newton (the normal equations, exact for this consistent
system), and T = dq/dtheta solves D T = 0 with T1 = 1. With m(theta) = T' Mq T (the generalised
mass, from the rods' velocities for thetadot = 1) and the potential V(theta), Lagrange's
equation of the one coordinate is
    m(theta) theta'' + 1/2 m'(theta) theta'^2 + V'(theta) = 0.
V' = sum m g vy is exact; m' is taken by the complex step (every step above is analytic in
theta, the Newton solve included), so it is exact to rounding. scipy DOP853, rtol 1e-13.

Route 2, Exudyn 1.13.6 (its own Euler-parameter rigid bodies and revolute joints, index-3
generalized-alpha without numerical damping, the redundant constraint handled by its dense
solver with ignoreSingularJacobian), at h = 2.5e-4 and 1e-4 s; its error against route 1
falls as h^2 (3.4e-7 m, 5.4e-8 m), and the Richardson extrapolation of the two is stored as
a cross-check.

    python bench/bricard_reference.py            # both routes, writes the CSV, prints the table
    python bench/bricard_reference.py --no-exudyn
"""
import argparse
import csv
import math
import os
import sys
import time

import numpy as np
from scipy.integrate import solve_ivp

L, MASS, G = 1.0, 1.0, 9.81
P = np.array([[0, 0, 0], [1, 0, 0], [1, -1, 0], [1, -1, 1], [0, -1, 1], [0, 0, 1]], float) * L
EX, EY, EZ = np.eye(3)
AXES = np.array([EY, EZ, EX, EY, EZ, EX])
T_END = 10.0
OUT_TIMES = np.round(np.arange(0.0, T_END + 1e-9, 0.5), 10)
HERE = os.path.dirname(os.path.abspath(__file__))
CSV_PATH = os.path.join(HERE, "..", "tests", "data", "bricard_p3_reference.csv")


def _rot(a, q):
    """Rotation by angle q about unit axis a (Rodrigues; analytic in q, complex q allowed)."""
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]], float)
    return np.eye(3) + np.sin(q) * K + (1 - np.cos(q)) * (K @ K)


class MinimalBricard:
    """The Bricard loop in the one coordinate theta = q1 (see the module docstring)."""

    def __init__(self):
        self.q = np.zeros(5)                        # last real solution (Newton warm start)
        u = np.diff(P, axis=0) / L                  # rod directions in the reference pose
        self.theta_ref = [MASS * L ** 2 / 12 * (np.eye(3) - np.outer(d, d)) for d in u]
        self.mid = 0.5 * (P[:-1] + P[1:])

    # ---- kinematics of the open chain
    @staticmethod
    def chain(q):
        """Rotations R_i and translations t_i of rods 1..5 (x_world = R_i x_ref + t_i)."""
        dtype = np.result_type(q, float)
        R, t = np.eye(3, dtype=dtype), np.zeros(3, dtype=dtype)
        Rs, ts = [], []
        for j in range(5):
            Rj = _rot(AXES[j], q[j])
            # compose with the rotation about the line through P_j: x -> P_j + Rj (x - P_j)
            t = t + R @ (P[j] - Rj @ P[j])
            R = R @ Rj
            Rs.append(R)
            ts.append(t)
        return Rs, ts

    @staticmethod
    def joint_frames(Rs, ts):
        """Current axis w_j and point p_j of joints 1..5."""
        w, p = [], []
        for j in range(5):
            if j == 0:
                w.append(AXES[0].astype(Rs[0].dtype))
                p.append(P[0].astype(Rs[0].dtype))
            else:
                w.append(Rs[j - 1] @ AXES[j])
                p.append(Rs[j - 1] @ P[j] + ts[j - 1])
        return w, p

    def closure(self, q):
        Rs, ts = self.chain(q)
        w, p = self.joint_frames(Rs, ts)
        tip = Rs[4] @ P[5] + ts[4]
        ax = Rs[4] @ EX
        phi = np.concatenate([tip - P[5], [ax[1], ax[2]]])
        D = np.empty((5, 5), dtype=phi.dtype)
        for j in range(5):
            D[:3, j] = np.cross(w[j], tip - p[j])
            c = np.cross(w[j], ax)
            D[3:, j] = c[1], c[2]
        return phi, D, Rs, ts, w, p

    def solve(self, theta):
        """Joint angles at theta (complex theta allowed), D and the chain."""
        q = self.q.astype(np.result_type(theta, float)).copy()
        q[0] = theta
        extra = 0
        for _ in range(50):
            phi, D, *rest = self.closure(q)
            Dd = D[:, 1:]
            dq = np.linalg.solve(Dd.T @ Dd, Dd.T @ phi)
            q[1:] -= dq
            if np.max(np.abs(dq)) < 1e-10:
                extra += 1          # quadratic convergence: two more steps reach rounding
                if extra == 3:
                    break
        else:
            raise RuntimeError(f"loop closure did not converge at theta = {theta}")
        phi, D, Rs, ts, w, p = self.closure(q)
        if np.isrealobj(q):
            self.q = q.copy()
        return q, D, Rs, ts, w, p

    def velocities(self, theta):
        """q, T = dq/dtheta, and the rods' centre velocities and angular velocities per unit
        thetadot, with the chain."""
        q, D, Rs, ts, w, p = self.solve(theta)
        Dd = D[:, 1:]
        T = np.empty(5, dtype=q.dtype)
        T[0] = 1.0
        T[1:] = np.linalg.solve(Dd.T @ Dd, -Dd.T @ D[:, 0])
        c = [Rs[i] @ self.mid[i] + ts[i] for i in range(5)]
        v, om = [], []
        for i in range(5):
            vi = sum(T[j] * np.cross(w[j], c[i] - p[j]) for j in range(i + 1))
            oi = sum(T[j] * w[j] for j in range(i + 1))
            v.append(vi)
            om.append(oi)
        return q, T, c, v, om, Rs, ts, cond(Dd)

    def mass(self, theta):
        q, T, c, v, om, Rs, ts, _ = self.velocities(theta)
        m = 0.0
        for i in range(5):
            Th = Rs[i] @ self.theta_ref[i] @ Rs[i].T
            m = m + MASS * (v[i] @ v[i]) + om[i] @ Th @ om[i]
        return m, v

    def rhs(self, t, y):
        theta, thd = y
        h = 1e-30
        mc, _ = self.mass(theta + 1j * h)
        dm = mc.imag / h
        m, v = self.mass(theta)
        dV = sum(MASS * G * vi[1] for vi in v)
        return [thd, -(0.5 * dm * thd ** 2 + dV) / m.real]

    def p3(self, theta):
        q, _, Rs, ts, *_ = self.solve(theta)
        return Rs[1] @ P[2] + ts[1]

    def energy(self, theta, thd):
        m, _ = self.mass(theta)
        _, _, c, *_ = self.velocities(theta)
        return 0.5 * m * thd ** 2 + sum(MASS * G * ci[1] for ci in c)


def cond(A):
    s = np.linalg.svd(np.asarray(A, complex).real, compute_uv=False)
    return s[0] / s[-1]


def minimal_route(rtol=1e-13, atol=1e-14, t_end=T_END):
    """P3 at the OUT_TIMES up to t_end from the minimal-coordinate equation; also the worst
    conditioning of the closure in q2..q5 met along the way and the energy drift."""
    mb = MinimalBricard()
    t0 = time.perf_counter()
    sol = solve_ivp(mb.rhs, (0.0, t_end), [0.0, 0.0], method="DOP853", rtol=rtol, atol=atol,
                    t_eval=OUT_TIMES[OUT_TIMES <= t_end + 1e-12])
    if not sol.success:
        raise RuntimeError(sol.message)
    wall = time.perf_counter() - t0
    mb.q = np.zeros(5)
    pts, worst, E = [], 1.0, []
    for th, thd in zip(sol.y[0], sol.y[1]):
        pts.append(mb.p3(th))
        worst = max(worst, mb.velocities(th)[-1])
        E.append(mb.energy(th, thd).real)
    return np.array(pts), sol.y[0], worst, max(abs(e - E[0]) for e in E), sol.nfev, wall


def exudyn_route(step, tol=1e-10, axial=0.0, show=False):
    """P3 at OUT_TIMES from Exudyn: five rigid bodies (Euler parameters), six revolute joints."""
    import exudyn as exu
    from exudyn.utilities import RigidBodyInertia, ObjectGround, MarkerBodyPosition
    from exudyn.utilities import SensorMarker
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(ObjectGround())
    bodies = []
    for i in range(5):
        a, b = P[i], P[i + 1]
        u = (b - a) / L
        Jc = MASS * L ** 2 / 12 * (np.eye(3) - np.outer(u, u)) + axial * np.outer(u, u)
        inertia = RigidBodyInertia(mass=MASS, inertiaTensor=Jc)
        bodies.append(mbs.CreateRigidBody(inertia=inertia, referencePosition=0.5 * (a + b),
                                          gravity=[0, -G, 0]))
    chain = [ground] + bodies + [ground]
    for j in range(6):
        mbs.CreateRevoluteJoint(itemNumbers=[chain[j], chain[j + 1]], position=list(P[j]),
                                axis=list(AXES[j]), useGlobalFrame=True)
    mP3 = mbs.AddMarker(MarkerBodyPosition(bodyNumber=bodies[1],
                                           localPosition=[0, -0.5 * L, 0]))
    sens = mbs.AddSensor(SensorMarker(markerNumber=mP3, outputVariableType=exu.OutputVariableType.Position,
                                      storeInternal=True, writeToFile=False))
    mbs.Assemble()
    s = exu.SimulationSettings()
    s.timeIntegration.endTime = T_END
    s.timeIntegration.numberOfSteps = int(round(T_END / step))
    s.timeIntegration.verboseMode = 0
    s.timeIntegration.newton.relativeTolerance = tol
    s.timeIntegration.newton.absoluteTolerance = tol
    s.timeIntegration.generalizedAlpha.spectralRadius = 1.0
    s.solution.file.write = False
    s.solution.sensors.writePeriod = step
    s.linearSolver.solverType = exu.LinearSolverType.EigenDense
    s.linearSolver.ignoreSingularJacobian = True
    t0 = time.perf_counter()
    mbs.SolveDynamic(s, showHints=show)
    wall = time.perf_counter() - t0
    data = mbs.GetSensorStoredData(sens)
    out = np.array([[np.interp(t, data[:, 0], data[:, k]) for k in (1, 2, 3)]
                    for t in OUT_TIMES])
    # the sensor rows fall on the steps; check the output times are among them
    assert np.min(np.abs(data[:, 0][:, None] - OUT_TIMES[None, :]), axis=0).max() < 1e-9
    return out, wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-exudyn", action="store_true")
    ap.add_argument("--out", default=CSV_PATH)
    args = ap.parse_args(argv)
    p_ref, theta, worst, dE, nfev, wall = minimal_route()
    p_chk, *_ = minimal_route(rtol=1e-11, atol=1e-12)
    print(f"minimal coordinates: {nfev} evaluations, {wall:.1f} s; worst cond(D_q2..q5) "
          f"{worst:.3g}; energy drift {dE:.2e} J; |rtol 1e-13 - rtol 1e-11| "
          f"{np.abs(p_ref - p_chk).max():.2e} m")
    rows = {"x": p_ref[:, 0], "y": p_ref[:, 1], "z": p_ref[:, 2]}
    rich = None
    if not args.no_exudyn:
        ex = {}
        for h in (2.5e-4, 1e-4):
            ex[h], wall = exudyn_route(h)
            print(f"Exudyn generalized-alpha h = {h:g}: {wall:.1f} s, max |P3 - minimal| "
                  f"{np.abs(ex[h] - p_ref).max():.2e} m")
        # second order in h: Richardson extrapolation of the two step sizes
        r = (2.5e-4 / 1e-4) ** 2
        rich = ex[1e-4] + (ex[1e-4] - ex[2.5e-4]) / (r - 1)
        print(f"Exudyn Richardson-extrapolated: max |P3 - minimal| "
              f"{np.abs(rich - p_ref).max():.2e} m")
    with open(args.out, "w", newline="") as f:
        f.write("# Bricard mechanism (IFToMM A04), point P3 [m]. P3.*: minimal-coordinate "
                "reference (DOP853 rtol 1e-13); exudyn.*: Exudyn 1.13.6 generalized-alpha, "
                "Richardson-extrapolated from h = 2.5e-4 and 1e-4 s. "
                "Regenerate: python bench/bricard_reference.py\n")
        wr = csv.writer(f)
        head = ["t", "P3.x", "P3.y", "P3.z"]
        if rich is not None:
            head += ["exudyn.x", "exudyn.y", "exudyn.z"]
        wr.writerow(head)
        for k, t in enumerate(OUT_TIMES):
            row = [f"{t:g}"] + [f"{rows[c][k]:.13f}" for c in "xyz"]
            if rich is not None:
                row += [f"{v:.11f}" for v in rich[k]]
            wr.writerow(row)
    print("t      P3.x               P3.y               P3.z")
    for t in (1.0, 2.0, 5.0, 10.0):
        k = int(np.argmin(abs(OUT_TIMES - t)))
        print(f"{t:4.1f}  {p_ref[k, 0]: .12f}  {p_ref[k, 1]: .12f}  {p_ref[k, 2]: .12f}")
    print("written", os.path.relpath(args.out))


if __name__ == "__main__":
    sys.exit(main())
