"""Newton-Euler with Lagrange multipliers in absolute coordinates (seed 000 ch.1 eq. 8, 12).

    [ M  D' ] [ xdd ]   [ f - Dv' s ]
    [ D  0  ] [ lam ] = [ -conv     ]

x = (x, y, phi) per body, M = diag(m, m, J), D = dphi/dx, conv = D_{k,pq} xd_p xd_q (+ the
drives' -f''(t)). Baumgarte stabilisation replaces -conv by -conv - 2 alpha phi' - beta^2 phi.
Spatial models: x = (r, p) per body, M = diag(m I, 4 G' J G) and f with the gyroscopic term
(mechanics.spatial.elements), solved by linalg.solve_kkt_dense.
"""
from dataclasses import dataclass

import numpy as np

from ...errors import InputError

from ...mechanics import constraints
from ...mechanics.elements import applied_forces
from ...linalg import (PROJECTION_ACCEPT, PROJECTION_RTOL, RANK_RTOL,  # noqa: F401
                       kept_energy, min_norm_correction, projection_done, projection_settled,
                       solve_kkt, solve_kkt_dense)

COORDINATES = "absolute"


@dataclass(frozen=True)
class Dynamics:
    """Result of one solve: accelerations, multipliers and the rows they came from."""

    qdd: np.ndarray     # (n,) xdd [m/s2, rad/s2]
    lam: np.ndarray     # (m,) multipliers (sign: M xdd + D' lam = f)
    phi: np.ndarray     # (m,) constraint residual
    D: np.ndarray       # (m, n) constraint Jacobian


def coordinates(model):
    """Names of x: <body>.x, <body>.y, <body>.phi per body (spatial: x, y, z, e0 ... e3)."""
    names = ("x", "y", "z", "e0", "e1", "e2", "e3") if model.spatial else ("x", "y", "phi")
    return tuple(f"{b.name}.{c}" for b in model.bodies for c in names)


def accelerations(model, x, xd, t, u, baumgarte=None):
    """Solve seed 000 eq. 12 for xdd and lam at (x, xd, t) with inputs u (array).

    baumgarte : None or (alpha, beta) [1/s].
    """
    phi, D, conv, phi_t = constraints.evaluate(model, x, xd, t)
    b = -conv
    if baumgarte is not None:
        alpha, beta = baumgarte
        b = b - 2.0 * alpha * (D @ xd + phi_t) - beta * beta * phi
    F = applied_forces(model, x, xd, t, u)
    C = model.compiled
    if C.spatial:
        from ...mechanics.spatial.elements import mass_matrix

        if any(j.armature for j in model.joints):
            from . import _absolute_supports
            raise InputError(f"model '{model.name}': newton_euler cannot run it: "
                             f"{_absolute_supports(model)}")

        xdd, lam = solve_kkt_dense(mass_matrix(model, x), D, F, b)
    else:
        xdd, lam = solve_kkt(C.inv_mass_diag, D, F, b, None if C.mass_positive else C.mass_diag)
    return Dynamics(xdd, lam, phi, D)


def project_absolute(model, y, t, tol):
    """Project y = (x, xd) onto Phi(x, t) = 0 and D xd = -Phi_t (minimum M-norm changes).

    Newton on Phi(x) = 0; once the residual is within tolerance, one solve gives both the
    Newton correction of x and the velocity projection, and Newton goes on while that
    correction is larger than the tolerance (linalg.projection_settled), so that xd is
    projected at the converged x (the last, settled correction is not taken). S is cut off at PROJECTION_RTOL (rounding), not at the
    multipliers' RANK_RTOL: near a singular pose the rows along which S is small still fix
    x and xd (native/kernel.c's project does the same in q)."""
    C = model.compiled
    if C.n_rows == 0:
        return y
    n = model.n_coordinates
    x, xd = y[:n].copy(), y[n:]
    Minv = C.inv_mass_diag
    zero = np.zeros(n)
    scale = 1.0 + np.abs(x).max()
    prev = prev_step = np.inf
    for it in range(12):
        phi, D, _, phi_t = constraints.evaluate(model, x, zero, t, need_conv=False)
        err = np.abs(phi).max()
        if not projection_done(model, t, it, err, prev, tol, scale):
            dx = min_norm_correction(Minv, D, phi, PROJECTION_RTOL)
        else:
            both = min_norm_correction(Minv, D, np.column_stack([phi, D @ xd + phi_t]),
                                       PROJECTION_RTOL)
            dx = both[:, 0]
            step = np.abs(dx).max(initial=0.0)
            if projection_settled(it, step, prev_step, tol, scale):
                # the settled correction is not taken (as _minimal.project): taken, it gave
                # B0 a 1e-8 m/s kick at the pose at 4.66 s (N = 40) that the phase then grew.
                # The kinetic energy the hard cut removes beyond the multipliers' cut-off is
                # given back (linalg.kept_energy, as _minimal.project)
                gain = 1.0
                if not model.drives:
                    r = D @ xd + phi_t
                    gain = kept_energy(lambda v: 0.5 * v @ (v / Minv), xd, both[:, 1],
                                       min_norm_correction(Minv, D, r, RANK_RTOL))
                return np.concatenate([x, gain * (xd - both[:, 1])])
        x -= dx
        prev, prev_step = err, np.abs(dx).max(initial=0.0)
    raise AssertionError("unreachable: projection_done accepts or raises at the last iterate")


def dae_terms(model, x, xd, t, u):
    """The index-3 DAE M xdd + D' lam = f - Dv' s, Phi(x, t) = 0 at (x, xd, t) (formulations.dae):
    M the constant diagonal diag(m, m, J), f from elements.applied_forces, the rows from
    constraints.evaluate."""
    from .dae import DaeTerms

    phi, D, conv, phi_t = constraints.evaluate(model, x, xd, t)
    return DaeTerms(model.compiled.mass_diag, applied_forces(model, x, xd, t, u), phi, D,
                    phi_t, conv)
