"""The articulated-body algorithm in tree joint coordinates, compiled (fmu_mb/dynamics/native/kernel.c).

Featherstone's recursive O(N) forward dynamics for open trees, written in the absolute body
coordinates of seed 000 (x = (x, y, phi) per centre of mass, M = diag(m, m, J)): the joint
kinematics xdd_b = X xdd_parent + S qdd + c of seed 001's relative kinematics, then one pass
from the leaves (articulated inertias and bias forces) and one from the root (qdd). It solves
the same equations as tmt (Mbar qdd = fbar with Mbar = Tq' M Tq) without forming Mbar, in C,
and the explicit integrators (rk4, dopri5, dop853 with scipy's coefficients and step-size
control) run in C too: `native_advance` integrates a whole communication interval in one call.

Scope: open trees of revolute, prismatic and weld joints and floating bodies, with gravity,
TSDA, RSDA, forces and torques. Cut joints, drives and contacts need tmt or newton_euler (a
clear InputError says so). q and the outputs are those of tmt: joint coordinates in
`tree_coordinates(model)` order, reactions recovered from the motion (`lam`).
"""
import numpy as np

from ..kernel import tree_kernel
from ...mechanics.tree import tree_coordinates, tree_map
from . import _minimal
from ._minimal import COORDINATES, Dynamics  # noqa: F401  (part of the namespace)
from ..state import State


def coordinates(model):
    """Names of q: '<joint>.angle' / '<joint>.position' of the tree joints."""
    return tree_coordinates(model)


def accelerations(model, q, qd, t, u, baumgarte=None):
    """qdd at (q, qd, t) with inputs u (no constraint rows: baumgarte has nothing to act on)."""
    qdd, x, xd, xdd = tree_kernel(model).accelerations(q, qd, u, t)
    return Dynamics(qdd, np.zeros(0), tree_map(model).cut_rows, x, xd, xdd, t, u)


def absolute(model, q, qd):
    """(x, xd) of the bodies from the kernel's forward kinematics."""
    return tree_kernel(model).kinematics(np.asarray(q, float), np.asarray(qd, float))


def initial_state(model):
    import sys
    return _minimal.initial_state(model, sys.modules[__name__])


def project(model, y, t, tol):
    """Open trees have no constraint rows: nothing to project."""
    return y


def native_advance(model, state, t_end, u, settings):
    """Integrate state to t_end in C; returns (q, qd, h). None when the method has no C
    implementation (radau: advance() then calls `accelerations` from scipy's stepper)."""
    if settings.method not in ("rk4", "dopri5", "dop853"):
        return None
    rtol = max(settings.rtol, 100 * np.finfo(float).eps)     # scipy's clamp, same control
    q, qd, h, _ = tree_kernel(model).advance(
        settings.method, float(state.t), float(t_end), state.q, state.qd, float(state.h), u,
        rtol, settings.atol, settings.max_step, settings.step)
    return q, qd, h


def cosim_stepper(model, settings):
    """native_advance with the settings bound once (integrate.stepper): a function
    step(state, t_end, u) -> State for a validated float input array u and t_end > state.t;
    None when the method has no C implementation."""
    if settings.method not in ("rk4", "dopri5", "dop853"):
        return None
    k = tree_kernel(model)
    run = k.stepper(settings.method, settings.rtol, settings.atol, settings.max_step,
                    settings.step)
    n = k.n
    make = State.make
    # a kernel with loop rows keeps one drift-control mode, which other calls change
    stab = getattr(k, "stabilization", None) if getattr(k, "m", 0) else None
    mode = (settings.stabilization, settings.baumgarte, settings.projection_tol)

    def step(state, t_end, u):
        if stab is not None:
            stab(*mode)
        y, h = run(state.t, t_end, state.q, state.qd, state.h, u)
        return make(t_end, y[:n], y[n:], h, state.coords, state.extra)
    return step


lam = _minimal.lam
