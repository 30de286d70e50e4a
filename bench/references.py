"""Tight references for the benchmarks, derived by hand in minimal coordinates (independent of
fmu_mb and Exudyn) and integrated with scipy DOP853 at rtol 1e-13.

Each benchmark's reference gives the joint angles at the end time under the names fmu_mb uses
for its revolute joints ('A', 'B', 'J0', ...), and an energy function of the joint state so
both engines' energy drift is measured the same way.
"""
import math

import numpy as np
from scipy.integrate import solve_ivp

RTOL, ATOL = 1e-13, 1e-15


# ---------------------------------------------------------------- serial chain of uniform rods
class RodChain:
    """Open chain of uniform rods hinged end to end, the first at the origin; absolute angles
    th_i of the rods from +x; gravity vector (gx, gy). Lagrange's equations:
        sum_j A_ij [cos(th_i - th_j) thdd_j + sin(th_i - th_j) thd_j^2] = Q_i
    A_ij = sum_k m_k c_ik c_jk (+ I_i on the diagonal), c_ik = L_i (i < k), L_i / 2 (i = k), 0;
    Q_i = (-gx sin th_i + gy cos th_i) sum_k m_k c_ik."""

    def __init__(self, masses, lengths, gravity):
        self.m = np.asarray(masses, float)
        self.L = np.asarray(lengths, float)
        self.g = gravity
        n = len(self.m)
        c = np.zeros((n, n))                      # c[i, k]
        for i in range(n):
            c[i, i] = self.L[i] / 2
            c[i, i + 1:] = self.L[i]
        self.c = c
        self.A = (c * self.m) @ c.T + np.diag(self.m * self.L ** 2 / 12)
        self.s = c @ self.m                       # sum_k m_k c_ik

    def rhs(self, t, y):
        n = len(self.m)
        th, w = y[:n], y[n:]
        d = th[:, None] - th[None, :]
        M = self.A * np.cos(d)
        gx, gy = self.g
        Q = (-gx * np.sin(th) + gy * np.cos(th)) * self.s - (self.A * np.sin(d)) @ (w * w)
        return np.concatenate([w, np.linalg.solve(M, Q)])

    def energy(self, th, w):
        d = th[:, None] - th[None, :]
        T = 0.5 * w @ (self.A * np.cos(d)) @ w
        # potential -m g.r; r_k = sum_i c_ik e(th_i)
        gx, gy = self.g
        V = -np.sum(self.s * (gx * np.cos(th) + gy * np.sin(th)))
        return T + V

    def solve(self, th0, w0, t_end):
        sol = solve_ivp(self.rhs, (0.0, t_end), np.concatenate([th0, w0]), method="DOP853",
                        rtol=RTOL, atol=ATOL)
        n = len(self.m)
        return sol.y[:n, -1], sol.y[n:, -1]


def _relative(th):
    return np.concatenate([th[:1], np.diff(th)])


def chain_reference(names, masses, lengths, gravity, th0, w0, t_end):
    """(joint angles at t_end {name: value}, energy(q_rel dict, qd_rel dict), E0)."""
    ch = RodChain(masses, lengths, gravity)
    th, w = ch.solve(np.asarray(th0, float), np.asarray(w0, float), t_end)
    rel = _relative(th)

    def energy(q, qd):
        a = np.cumsum([q[k] for k in names])
        b = np.cumsum([qd[k] for k in names])
        return ch.energy(a, b)
    return dict(zip(names, rel)), energy, ch.energy(np.asarray(th0, float),
                                                    np.asarray(w0, float))


def double_pendulum(t_end=2.0):
    return chain_reference(["A", "B"], [1.0, 1.0], [0.55, 0.55], (9.81, 0.0),
                           [math.radians(30), math.radians(60)], [0.0, 0.0], t_end)


def pendulum_chain(n, t_end=2.0, L=0.1, m=0.1, phi0=0.5):
    th0 = np.full(n, phi0)
    return chain_reference([f"J{i}" for i in range(n)], [m] * n, [L] * n, (0.0, -9.81), th0,
                           np.zeros(n), t_end)


# ---------------------------------------------------------------- slider-crank (1 DOF)
class SliderCrank:
    """Crank angle th; rod angle b with sin b = -(r/l) sin th; slider on the x axis.
    J(th) thdd + h(th) thd^2 = -dV/dth."""

    def __init__(self, r=0.1, l=0.4, mc=1.0, mr=2.0, ms=0.5, g=9.81):
        self.r, self.l, self.mc, self.mr, self.ms, self.g = r, l, mc, mr, ms, g

    def kin(self, th):
        r, l = self.r, self.l
        sb = -(r / l) * math.sin(th)
        cb = math.sqrt(1.0 - sb * sb)
        b = math.atan2(sb, cb)
        b1 = -(r / l) * math.cos(th) / cb
        b2 = ((r / l) * math.sin(th) + sb * b1 * b1) / cb
        # rod COM and slider x: first and second derivatives w.r.t. th
        xr1 = -r * math.sin(th) - l / 2 * sb * b1
        yr1 = r * math.cos(th) + l / 2 * cb * b1
        xr2 = -r * math.cos(th) - l / 2 * (cb * b1 * b1 + sb * b2)
        yr2 = -r * math.sin(th) + l / 2 * (-sb * b1 * b1 + cb * b2)
        xs1 = -r * math.sin(th) - l * sb * b1
        xs2 = -r * math.cos(th) - l * (cb * b1 * b1 + sb * b2)
        return b, b1, b2, xr1, yr1, xr2, yr2, xs1, xs2

    def J_h(self, th):
        b, b1, b2, xr1, yr1, xr2, yr2, xs1, xs2 = self.kin(th)
        Ir = self.mr * self.l ** 2 / 12
        J = self.mc * self.r ** 2 / 3 + self.mr * (xr1 ** 2 + yr1 ** 2) + Ir * b1 ** 2 \
            + self.ms * xs1 ** 2
        h = self.mr * (xr1 * xr2 + yr1 * yr2) + Ir * b1 * b2 + self.ms * xs1 * xs2
        return J, h

    def rhs(self, t, y):
        th, w = y
        J, h = self.J_h(th)
        dV = self.g * (self.mc + self.mr) * self.r / 2 * math.cos(th)
        return [w, (-dV - h * w * w) / J]

    def energy_th(self, th, w):
        J, _ = self.J_h(th)
        return 0.5 * J * w * w + self.g * (self.mc + self.mr) * self.r / 2 * math.sin(th)

    def bodies(self, th, w):
        """[(x, y, phi, vx, vy, omega)] of crank, rod, slider."""
        r, l = self.r, self.l
        b, b1, _, xr1, yr1, _, _, xs1, _ = self.kin(th)
        crank = (r / 2 * math.cos(th), r / 2 * math.sin(th), th,
                 -r / 2 * math.sin(th) * w, r / 2 * math.cos(th) * w, w)
        rod = (r * math.cos(th) + l / 2 * math.cos(b), r * math.sin(th) + l / 2 * math.sin(b),
               b, xr1 * w, yr1 * w, b1 * w)
        slider = (r * math.cos(th) + l * math.cos(b), 0.0, 0.0, xs1 * w, 0.0, 0.0)
        return [crank, rod, slider]


def slider_crank(t_end=2.0, th0=0.0, w0=10.0):
    sc = SliderCrank()
    sol = solve_ivp(sc.rhs, (0.0, t_end), [th0, w0], method="DOP853", rtol=RTOL, atol=ATOL)
    th = sol.y[0, -1]
    b = sc.kin(th)[0]
    ref = {"O": th, "A": b - th, "B": -b}

    def energy(q, qd):
        return sc.energy_th(q["O"], qd["O"])
    return ref, energy, sc.energy_th(th0, w0)


# ---------------------------------------------------------------- N-four-bar (IFToMM A02)
def n_four_bar(n, t_end=2.0, g=9.81):
    """All cranks turn together (angle th), couplers translate: J thdd = -g cos(th) c,
    J = (N+1)/3 + N, c = (N+1)/2 + N (links of 1 m and 1 kg); th(0) = pi/2, thd(0) = -1."""
    J, c = (n + 1) / 3 + n, (n + 1) / 2 + n
    sol = solve_ivp(lambda t, y: [y[1], -g * math.cos(y[0]) * c / J], (0.0, t_end),
                    [math.pi / 2, -1.0], method="DOP853", rtol=RTOL, atol=ATOL)
    th = sol.y[0, -1]
    ref = {f"O{i}": th for i in range(n + 1)}
    ref.update({f"L{i}": -th for i in range(n)})
    ref.update({f"R{i}": -th for i in range(n)})

    def energy(q, qd):
        return 0.5 * J * qd["O0"] ** 2 + g * c * math.sin(q["O0"])
    return ref, energy, 0.5 * J + g * c


def four_bar_bodies(n, th, w, L=1.0):
    """[(x, y, phi, vx, vy, omega)]: cranks 0..n, then couplers 0..n-1."""
    s, c = math.sin(th), math.cos(th)
    cranks = [(i + L / 2 * c, L / 2 * s, th, -L / 2 * s * w, L / 2 * c * w, w)
              for i in range(n + 1)]
    couplers = [(i + L / 2 + L * c, L * s, 0.0, -L * s * w, L * c * w, 0.0) for i in range(n)]
    return cranks + couplers


# ---------------------------------------------------------------- simple pendulum (IFToMM A01)
def simple_pendulum(t, L=1.0, g=9.81, th0=math.pi / 2):
    """(x, y) at times t of a point mass on a massless rod of length L hinged at the origin,
    released from rest at th0 from the downward vertical (gravity along -y). Closed form with
    Jacobi's elliptic functions: sin(th / 2) = k sn(K(k) - sqrt(g / L) t, k), k = sin(th0 / 2)."""
    from scipy.special import ellipj, ellipk
    k2 = math.sin(th0 / 2) ** 2
    sn = ellipj(ellipk(k2) - math.sqrt(g / L) * np.asarray(t, float), k2)[0]
    th = 2.0 * np.arcsin(math.sqrt(k2) * sn)
    return L * np.sin(th), -L * np.cos(th)


# ---------------------------------------------------------------- Andrews' squeezer (IFToMM A03)
#: (beta, Theta, gamma, Phi, delta, Omega, epsilon) [rad] at t = 0.03 s: the Test Set for IVP
#: Solvers' reference solution of problem 'andrews' (PSIDE at rtol = atol = 1e-14, CWI)
ANDREWS_Q_AT_003 = (0.1581077119629904e+2, -0.1575637105984298e+2, 0.4082224013073101e-1,
                    -0.5347301163226948e+0, 0.5244099658805304e+0, 0.5347301163226948e+0,
                    0.1048080741042263e+1)


def andrews_coordinates(phi):
    """Hairer and Wanner's coordinates (beta, Theta, gamma, Phi, delta, Omega, epsilon) from
    the absolute angles phi of bodies 1..7 (Theta, Phi and Omega are relative angles)."""
    p = phi
    return np.array([p[0], p[1] - p[0], p[2], p[3] - p[4], p[4], p[5] - p[6], p[6]])
