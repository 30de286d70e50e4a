"""Newton-Euler with Lagrange multipliers in absolute coordinates (seed 000 ch.1 eq. 8, 12).

    [ M  D' ] [ xdd ]   [ f - Dv' s ]
    [ D  0  ] [ lam ] = [ -conv     ]

x = (x, y, phi) per body, M = diag(m, m, J), D = dphi/dx, conv = D_{k,pq} xd_p xd_q (+ the
drives' -f''(t)). Baumgarte stabilisation replaces -conv by -conv - 2 alpha phi' - beta^2 phi.
"""
from dataclasses import dataclass

import numpy as np

from .. import constraints
from ..elements import applied_forces
from ..linalg import solve_kkt

COORDINATES = "absolute"


@dataclass(frozen=True)
class Dynamics:
    """Result of one solve: accelerations, multipliers and the rows they came from."""

    qdd: np.ndarray     # (n,) xdd [m/s2, rad/s2]
    lam: np.ndarray     # (m,) multipliers (sign: M xdd + D' lam = f)
    phi: np.ndarray     # (m,) constraint residual
    D: np.ndarray       # (m, n) constraint Jacobian


def coordinates(model):
    """Names of x: <body>.x, <body>.y, <body>.phi per body."""
    return tuple(f"{b.name}.{c}" for b in model.bodies for c in ("x", "y", "phi"))


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
    xdd, lam = solve_kkt(C.inv_mass_diag, D, F, b, None if C.mass_positive else C.mass_diag)
    return Dynamics(xdd, lam, phi, D)
