"""The TMT method in tree joint coordinates (seed 000 ch.3 eq. 9; seed 001).

    x = T(q),  xd = Tq qd,  xdd = Tq qdd + g                  (fmu_mb.mechanics.tree.transform)
    Mbar = Tq' M Tq,  fbar = Tq' (f - Dv' s - M g)
    [ Mbar  Dq' ] [ qdd ]   [ fbar    ]
    [ Dq    0   ] [ lam ] = [ -conv_q ]     (cut joints and drives; seed 000 ch.2 eq. 20)

q are the tree joint coordinates (fmu_mb.mechanics.tree.tree_coordinates); spatial models
run through _spatial_tmt (fmu_mb.mechanics.spatial.tree). The multipliers of every
Newton-Euler row are recovered from the motion (`lam`), so reaction outputs are the same as
with newton_euler.
"""
import numpy as np

from ...mechanics.elements import applied_forces
from ...mechanics.tree import transform, tree_coordinates
from . import _minimal
from . import _spatial_tmt as _spatial
from ._minimal import COORDINATES, Dynamics  # noqa: F401  (part of the namespace)


def coordinates(model):
    """Names of q: '<joint>.angle' / '<joint>.position' of the tree joints."""
    if model.spatial:
        return _spatial.coordinates(model)
    return tree_coordinates(model)


def reduced_equations(model, q, qd, t, u):
    """Mbar (n, n) and fbar (n,) of Mbar qdd = fbar (+ cut rows), and x, xd, Tq, g."""
    if model.spatial:
        return _spatial.reduced_equations(model, q, qd, t, u)
    x, xd, Tq, g = transform(model, q, qd)
    M = model.compiled.mass_diag
    f = applied_forces(model, x, xd, t, u)
    MT = M[:, None] * Tq
    return Tq.T @ MT, Tq.T @ (f - M * g), x, xd, Tq, g


def accelerations(model, q, qd, t, u, baumgarte=None):
    """Solve the TMT equations for qdd (and the cut multipliers) at (q, qd, t), inputs u."""
    if model.spatial:
        return _spatial.accelerations(model, q, qd, t, u, baumgarte)
    Mbar, fbar, x, xd, Tq, g = reduced_equations(model, q, qd, t, u)
    phi, Dq, conv, phi_t = _minimal.cut_rows(model, x, xd, Tq, g, t)
    qdd, lam_cut = _minimal.solve(model, Mbar, fbar, phi, Dq, conv, phi_t, qd, baumgarte)
    return Dynamics(qdd, lam_cut, _minimal.tree_map(model).cut_rows, x, xd, Tq @ qdd + g,
                    t, u)


def absolute(model, q, qd):
    """(x, xd) = (T(q), Tq qd)."""
    if model.spatial:
        return _spatial.absolute(model, q, qd)
    x, xd, _, _ = transform(model, np.asarray(q, float), np.asarray(qd, float))
    return x, xd


def initial_state(model):
    if model.spatial:
        return _spatial.initial_state(model)
    import sys
    return _minimal.initial_state(model, sys.modules[__name__])


def project(model, y, t, tol):
    if model.spatial:
        return _spatial.project(model, y, t, tol)
    return _minimal.project(model, y, t, tol, transform)


def kinematics(model, q, qd):
    """x, xd, Tq, g of the tree (planar tree.transform or spatial.tree.transform)."""
    if model.spatial:
        return _spatial.kinematics(model, q, qd)
    return transform(model, q, qd)


def lam(model, dyn):
    """Every Newton-Euler multiplier, recovered from the motion of dyn."""
    if model.spatial:
        return _spatial.lam(model, dyn)
    return _minimal.lam(model, dyn)


def dae_terms(model, q, qd, t, u):
    """The index-3 DAE of this formulation (formulations.dae), from reduced_equations."""
    return _minimal.dae_terms(model, q, qd, t, u, reduced_equations)
