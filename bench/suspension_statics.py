"""Static equilibrium of the two suspension models at their design pose, by virtual work on
the velocity Jacobian (independent of fmu_mb's solver): the spring preloads that make the
design pose the equilibrium, and the motion ratios. Prints the constants that
models/double_wishbone.py and models/five_point_suspension.py carry.

Each body has the velocity (v, w) of its centre of mass; joints give rows C (v, w) = 0. The
free motions N (the null space of C) must do no virtual work with the applied forces:
N' (Q_gravity + F0 Q_tyre + S Q_spring + R Q_rack) = 0, linear in the unknown preloads.

    python bench/suspension_statics.py
"""
import os
import sys

import numpy as np
from scipy.linalg import null_space

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from fmu_mb.mechanics.loader import load_module  # noqa: E402

G = 9.81


def skew(r):
    return np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])


class Statics:
    def __init__(self, bodies):
        """bodies: {name: (mass, centre)}."""
        self.names = list(bodies)
        self.m = {k: v[0] for k, v in bodies.items()}
        self.c = {k: np.asarray(v[1], float) for k, v in bodies.items()}
        self.rows = []
        self.n = 6 * len(self.names)

    def _col(self, b):
        return 6 * self.names.index(b)

    def point(self, b, p):
        """3 x n: velocity of point p of body b (zero for the ground, b = None)."""
        R = np.zeros((3, self.n))
        if b is not None:
            i = self._col(b)
            R[:, i:i + 3] = np.eye(3)
            R[:, i + 3:i + 6] = -skew(np.asarray(p) - self.c[b])
        return R

    def omega(self, b):
        R = np.zeros((3, self.n))
        if b is not None:
            R[:, self._col(b) + 3:self._col(b) + 6] = np.eye(3)
        return R

    def spherical(self, a, b, p):
        self.rows.append(self.point(b, p) - self.point(a, p))

    def revolute(self, a, b, p, axis):
        self.spherical(a, b, p)
        perp = null_space(np.atleast_2d(axis)).T
        self.rows.append(perp @ (self.omega(b) - self.omega(a)))

    def prismatic(self, a, b, p, axis):
        self.rows.append(self.omega(b) - self.omega(a))
        perp = null_space(np.atleast_2d(axis)).T
        self.rows.append(perp @ (self.point(b, p) - self.point(a, p)))

    def distance(self, a, pa, b, pb):
        d = np.asarray(pb) - np.asarray(pa)
        self.rows.append(d @ (self.point(b, pb) - self.point(a, pa)) / np.linalg.norm(d))

    def force(self, b, p, F):
        """Generalised force of force F at point p of body b."""
        return self.point(b, p).T @ np.asarray(F, float)

    def gravity(self):
        Q = np.zeros(self.n)
        for b in self.names:
            Q[self._col(b):self._col(b) + 3] = self.m[b] * np.array([0, 0, -G])
        return Q

    def tsda(self, a, pa, b, pb):
        """Generalised force of a unit compressive force in a TSDA from pa (body a) to pb."""
        u = (np.asarray(pb) - np.asarray(pa)) / np.linalg.norm(np.asarray(pb) - np.asarray(pa))
        return self.force(b, pb, u) - (self.force(a, pa, u) if a is not None else 0.0)

    def motions(self):
        C = np.vstack(self.rows)
        N = null_space(C)
        return C, N

    def preloads(self, loads, unknowns):
        """Solve N' (sum known + sum x_k Q_k) = 0 for the unknown factors x (least squares;
        the residual must vanish)."""
        _, N = self.motions()
        A = N.T @ np.column_stack(unknowns)
        b = -N.T @ sum(loads)
        x, *_ = np.linalg.lstsq(A, b, rcond=None)
        return x, np.abs(A @ x - b).max()


def double_wishbone():
    dw = load_module(os.path.join(HERE, "..", "models", "double_wishbone.py"))
    P = dw.hp
    M = dw.MASSES
    m_c, c_c, _ = dw.carrier_properties(M["upright"], M["spindle"], M["wheel"], M["tyre"])
    s = Statics({"upper_arm": (M["upper_arm"], P("UCA_CM")),
                 "lower_arm": (M["lower_arm"], P("LCA_CM")), "carrier": (m_c, c_c),
                 "tie_rod": (M["tie_rod"], 0.5 * (P("TIEROD_C") + P("TIEROD_U"))),
                 "rack": (M["rack"], dw.rack_centre())})
    s.revolute(None, "upper_arm", P("UCA_F"), P("UCA_F") - P("UCA_B"))
    s.revolute(None, "lower_arm", P("LCA_F"), P("LCA_F") - P("LCA_B"))
    s.spherical("upper_arm", "carrier", P("UCA_U"))
    s.spherical("lower_arm", "carrier", P("LCA_U"))
    s.spherical("carrier", "tie_rod", P("TIEROD_U"))
    s.spherical("rack", "tie_rod", P("TIEROD_C"))
    s.prismatic(None, "rack", dw.rack_centre(), (0, 1, 0))
    C, N = s.motions()
    Qtyre = s.force("carrier", P("SPINDLE"), (0, 0, 1.0))
    Qspring = s.tsda(None, P("SPRING_C"), "lower_arm", P("SPRING_A"))
    rc = dw.rack_centre()
    Qrack = -s.tsda(None, rc - np.array([0, dw.RACK_SPRING_LENGTH, 0]), "rack", rc)  # tension
    xg, rg = s.preloads([s.gravity()], [Qspring, Qrack])
    xf, rf = s.preloads([Qtyre], [Qspring, Qrack])
    # motion ratio with the rack held: spring length rate per wheel-centre vertical rate
    s.rows.append(s.point("rack", rc)[1:2])
    _, N1 = s.motions()
    wz = s.point("carrier", P("SPINDLE"))[2] @ N1
    u = (P("SPRING_A") - P("SPRING_C")) / np.linalg.norm(P("SPRING_A") - P("SPRING_C"))
    ls = u @ s.point("lower_arm", P("SPRING_A")) @ N1
    k = np.argmax(np.abs(wz))               # the bump motion (the tie-rod spin has wz = 0)
    mr = ls[k] / wz[k]
    i = s._col("carrier")
    twist = N1[i:i + 6, k] / wz[k]          # carrier (v, w) per unit wheel-centre rise
    return {"C": C.shape, "rank": np.linalg.matrix_rank(C), "dof": N.shape[1],
            "spring_gravity": xg[0], "spring_per_load": xf[0], "rack_gravity": xg[1],
            "rack_per_load": xf[1], "residual": max(rg, rf), "motion_ratio": mr,
            "carrier_twist": twist}


def five_point(mr_dw, k_dw, c_dw):
    fp = load_module(os.path.join(HERE, "..", "models", "five_point_suspension.py"))
    P = fp.HARDPOINTS
    m_c, c_c, _ = fp.carrier_properties()
    s = Statics({"carrier": (m_c, c_c)})
    for chassis, carrier in fp.LINKS.values():
        s.distance(None, P[chassis], "carrier", P[carrier])
    C, N = s.motions()
    Qtyre = s.force("carrier", P["SPINDLE"], (0, 0, 1.0))
    Qspring = s.tsda(None, P["SHOCK_C"], "carrier", P["LCA_U"])
    xg, rg = s.preloads([s.gravity()], [Qspring])
    xf, rf = s.preloads([Qtyre], [Qspring])
    wz = s.point("carrier", P["SPINDLE"])[2] @ N
    u = (P["LCA_U"] - P["SHOCK_C"]) / np.linalg.norm(P["LCA_U"] - P["SHOCK_C"])
    ls = u @ s.point("carrier", P["LCA_U"]) @ N
    mr = (ls / wz)[0]
    ratio = (mr_dw / mr) ** 2
    twist = N[:, 0] / wz[0]
    return {"C": C.shape, "rank": np.linalg.matrix_rank(C), "dof": N.shape[1],
            "spring_gravity": xg[0], "spring_per_load": xf[0], "residual": max(rg, rf),
            "motion_ratio": mr, "stiffness": k_dw * ratio, "damping": c_dw * ratio,
            "carrier_twist": twist}


def main():
    dw = double_wishbone()
    dwm = load_module(os.path.join(HERE, "..", "models", "double_wishbone.py"))
    F0 = dwm.WHEEL_LOAD
    print("double wishbone:", {k: (round(v, 6) if isinstance(v, float) else v)
                               for k, v in dw.items() if k != "carrier_twist"})
    fp = five_point(dw["motion_ratio"], dwm.SPRING_STIFFNESS, dwm.DAMPER_DAMPING)
    print("five-point:     ", {k: (round(v, 6) if isinstance(v, float) else v)
                               for k, v in fp.items() if k != "carrier_twist"})
    print("carrier twist per unit wheel rise, double wishbone with the rack held vs five-point:",
          np.abs(dw["carrier_twist"] - fp["carrier_twist"]).max())
    print(f"double wishbone, F0 = {F0:.1f} N: coil-over {dw['spring_gravity'] + F0 * dw['spring_per_load']:.3f} N"
          f" compression, rack {dw['rack_gravity'] + F0 * dw['rack_per_load']:.3f} N tension")
    print(f"five-point, F0 = {F0:.1f} N: coil-over {fp['spring_gravity'] + F0 * fp['spring_per_load']:.3f} N"
          " compression")


if __name__ == "__main__":
    main()
