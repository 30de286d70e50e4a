"""Kinematic analysis of fully driven mechanisms and inverse dynamics (seed 001: the inverse
problem and the reaction forces; seed 000 ch.1 eq. 12 read the other way round).

Kinematic analysis: when the drives leave no degree of freedom (rank D = 3 nb), the
constraints alone fix the motion:

    phi(x, t) = 0  (Newton),   D xd = -phi_t,   D xdd = -conv

Inverse dynamics: for a known motion (x, xd, xdd) the multipliers follow from Newton-Euler,

    D' lam = f - Dv' s - M xdd

(least squares, minimum norm for redundant rows; exact when the motion is consistent). The
drive rows give the driving efforts (-lam, along the driven joint coordinate), the joint rows
the reactions (constraints.reactions).
"""
from dataclasses import dataclass

import numpy as np

from ..mechanics import constraints
from ..mechanics.elements import applied_forces, mass_times
from ..errors import AssemblyError, ModelError
from ..linalg import numerical_rank, schur_solve


@dataclass(frozen=True, eq=False)
class KinematicState:
    """Positions x (3 nb,), velocities xd, accelerations xdd at time t [s] (absolute)."""

    t: float
    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray


@dataclass(frozen=True, eq=False)
class InverseDynamics:
    """Multipliers lam (n_rows,), driving efforts (n_drives,) [N.m or N] in model.drives
    order, reactions (n_joints, 3) [N, N, N.m] of parent on child at the child's joint point
    (spatial: (n_joints, 6), force and torque in global axes),
    and the largest residual |D' lam - (f - M xdd)| (0 for a consistent motion)."""

    lam: np.ndarray
    efforts: np.ndarray
    reactions: np.ndarray
    residual: float


def kinematic_analysis(model, t, x_guess=None, tol=1e-12):
    """Position, velocity and acceleration of a fully driven mechanism at time t [s].

    x_guess : (3 nb,) start of the Newton iteration (default model.x0; pass the previous
    solution when stepping through time). Raises ModelError when the drives leave freedom
    (rank D < 3 nb) and AssemblyError when the position equations do not converge.
    """
    n = model.n_coordinates
    x = np.array(model.x0 if x_guess is None else x_guess, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"kinematic_analysis: expected x_guess of shape ({n},), received "
                         f"{x.shape}")
    zero = np.zeros(n)
    for _ in range(50):
        phi, D, _, phi_t = constraints.evaluate(model, x, zero, t, need_conv=False)
        rank = numerical_rank(D)
        if rank < n:
            raise ModelError(f"model '{model.name}': not fully driven: the constraints and "
                             f"drives fix {rank} of {n} coordinates ({n - rank} degrees of "
                             f"freedom left); kinematic analysis needs rank D = {n}")
        if np.abs(phi).max(initial=0.0) < tol * (1.0 + np.abs(x).max()):
            break
        x = x - np.linalg.lstsq(D, phi, rcond=None)[0]
    else:
        raise AssemblyError(f"model '{model.name}': kinematic analysis did not converge at "
                            f"t = {t:.9g} s (residual {np.abs(phi).max():.3g})")
    phi, D, _, phi_t = constraints.evaluate(model, x, zero, t, need_conv=False)
    xd = np.linalg.lstsq(D, -phi_t, rcond=None)[0]
    _, D, conv, _ = constraints.evaluate(model, x, xd, t)
    xdd = np.linalg.lstsq(D, -conv, rcond=None)[0]
    return KinematicState(float(t), x, xd, xdd)


def kinematic_trajectory(model, times):
    """kinematic_analysis at each of `times` (ascending), continuing from the previous pose.
    Returns a list of KinematicState."""
    out, guess = [], None
    for t in times:
        ks = kinematic_analysis(model, float(t), guess)
        out.append(ks)
        guess = ks.x
    return out


def inverse_dynamics(model, t, x, xd, xdd, u=None):
    """Multipliers, driving efforts and joint reactions that the motion (x, xd, xdd) at time
    t needs, with inputs u (None, a mapping or an array in model.inputs order)."""
    n = model.n_coordinates
    for name, a in (("x", x), ("xd", xd), ("xdd", xdd)):
        if np.shape(a) != (n,):
            raise ValueError(f"inverse_dynamics: expected {name} of shape ({n},), received "
                             f"{np.shape(a)}")
    uvec = model.input_vector(u)
    _, D, _, _ = constraints.evaluate(model, x, xd, t, need_conv=False)
    r = applied_forces(model, x, xd, t, uvec) - mass_times(model, x, xdd)
    lam, _ = schur_solve(D @ D.T, D @ r)
    residual = float(np.abs(D.T @ lam - r).max(initial=0.0))
    efforts = np.array([-lam[row] for row, *_ in model.compiled.drives])
    return InverseDynamics(lam, efforts, constraints.reactions(model, x, D, lam), residual)
