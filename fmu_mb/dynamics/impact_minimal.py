"""Contacts in the tree joint coordinates q of the tmt and lagrange formulations (seed 000
ch.2 eq. 22, ch.3 eq. 15).

The gap rows follow from those in absolute coordinates (fmu_mb.dynamics.impact.contact_rows) by the
chain rule through x = T(q), as the cut joints' rows do in _minimal.cut_rows:

    Dq_c = Dc Tq,      conv_q = Dc g + conv_c

At an impact q stays and, with the reduced mass matrix Mbar = Tq' M Tq,

    [ Mbar    Dq_cut'  Dq_c' ] [ qd+ ]   [ Mbar qd-     ]
    [ Dq_cut  0        0     ] [ r_k ] = [ -phi_t       ]
    [ Dq_c    0        0     ] [ r_c ]   [ -e Dq_c qd-  ]

for the active set of impact.solve_impact. Premultiplying seed 000 eq. 20 by Tq' removes
only the tree joints' impulses (D_tree Tq = 0), so r_c and the cut joints' r_k equal those
of newton_euler and Tq qd+ = xd+. Persistent contacts, the locks and the pass of the
Reduction Method are extra constraint rows in q (in q a joint coordinate's row is a unit row).
"""
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from . import impact as _ne
from ..mechanics.elements import kinetic_energy
from ..errors import InputError
from .formulations import _minimal, get_formulation
from ..mechanics.tree import tree_map


def contact_rows(model, form, q, qd):
    """gap (nc,) [m or rad], Dq_c (nc, n) and conv_q (nc,) with gap'' = Dq_c qdd + conv_q."""
    x, xd, Tq, g = form.kinematics(model, q, qd)
    gap, Dc, conv = _ne.contact_rows(model, x, xd)
    return gap, Dc @ Tq, Dc @ g + conv


def gaps(model, form, q):
    """Gap values (nc,) at q."""
    return _ne.gaps(model, form.kinematics(model, q, np.zeros_like(q))[0])


def singular_position(model, i, formulation="tmt"):
    """Position in q of the singular joint of Reduction contact i (a tree joint)."""
    c = model.contacts[i]
    k = [j.name for j in model.joints].index(c.singular_joint)
    tm = tree_map(model)
    if k not in tm.joints:
        raise InputError(f"model '{model.name}': contact '{c.name}' uses the Reduction Method "
                         f"on joint '{c.singular_joint}', a cut joint without a coordinate in "
                         f"the tree joint coordinates of formulation {formulation!r}; the "
                         f"Reduction Method needs the joint coordinates to be a minimal set "
                         f"(no closed loops) in every formulation")
    return tm.joints.index(k)


def extra_rows(model, q, t, x, xd, Tq, g, active, pas=None, locks=None):
    """The rows of impact.extra_rows in q: res (k,), J (k, n), conv (k,), rate (k,), in the
    order of np.flatnonzero(active) followed by the pass row."""
    locks = locks or {}
    ia = np.flatnonzero(active)
    n = q.shape[0]
    res, J, conv, rate = np.zeros(len(ia)), np.zeros((len(ia), n)), np.zeros(len(ia)), []
    if len(ia):
        gap, Dc, cv = _ne.contact_rows(model, x, xd)
        res[:], J[:], conv[:] = gap[ia], Dc[ia] @ Tq, Dc[ia] @ g + cv[ia]
    for r, i in enumerate(ia):
        if i in locks:
            k, q_lock = locks[i]
            res[r], J[r], conv[r] = q[k] - q_lock, np.eye(n)[k], 0.0
    rate = np.zeros(len(ia))
    if pas is not None:
        k, t0, q0, vm = pas
        res = np.append(res, q[k] - q0 - vm * (t - t0))
        J = np.vstack([J, np.eye(n)[k:k + 1]])
        conv, rate = np.append(conv, 0.0), np.append(rate, vm)
    return res, J, conv, rate


def accelerations(model, form, q, qd, t, u, active, pas=None, baumgarte=None, locks=None):
    """Solve Mbar qdd + Dq_cut' lam + Dq_A' lam_c = fbar with the cut rows and the extra rows
    (seed 000 ch.2 eq. 20). Returns impact.ContactDynamics (qdd in q; lam the cut rows'
    multipliers; lam_c as in impact.accelerations, the same values)."""
    Mbar, fbar, x, xd, Tq, g = form.equations(model, q, qd, t, u)
    phi, Dq, conv, phi_t = _minimal.cut_rows(model, x, xd, Tq, g, t)
    res, J, cv, rate = extra_rows(model, q, t, x, xd, Tq, g, active, pas, locks)
    qdd, lam = _minimal.solve(model, Mbar, fbar, np.concatenate([phi, res]),
                              np.vstack([Dq, J]), np.concatenate([conv, cv]),
                              np.concatenate([phi_t, -rate]), qd, baumgarte)
    return _ne.contact_dynamics(model, qdd, lam, phi, Dq, active, locks)


def _impact_system(model, form, q, qd, t):
    """x, Tq, the gap rows and cut rows in q, and solve(A, b) of [Mbar A'; A 0] with
    right-hand side [Mbar qd; b]."""
    x, xd, Tq, g = form.kinematics(model, q, qd)
    gap, Dc, _ = _ne.contact_rows(model, x, xd)
    _, Dq, _, phi_t = _minimal.cut_rows(model, x, xd, Tq, g, t)
    Mbar = Tq.T @ (model.compiled.mass_diag[:, None] * Tq)
    F = Mbar @ qd

    def solve(A, b):
        z = np.zeros(b.shape[0])
        return _minimal.solve(model, Mbar, F, z, A, -b, z, qd, None)
    return gap, Dc @ Tq, Dq, phi_t, solve


def impact(model, form, q, qd, t=0.0, closed=None, restitution=None, tol=1e-10):
    """qd+ after an impact at q (seed 000 ch.3 eq. 15 with the cut rows), the active set and
    the checks of impact.impact. Returns ImpactResult with xd = qd+ (n,)."""
    gap, Dq_c, Dq, phi_t, solve = _impact_system(model, form, q, qd, t)
    return _ne.solve_impact(model, qd, gap, Dq_c, Dq, phi_t, solve, closed, restitution, tol)


def restitute(model, form, q, qd, t, i, k):
    """qd with the gap rate of contact i scaled by k (impact.restitute in q)."""
    _, Dq_c, Dq, phi_t, solve = _impact_system(model, form, q, qd, t)
    A = np.vstack([Dq, Dq_c[i:i + 1]])
    return solve(A, np.concatenate([-phi_t, [k * (Dq_c[i] @ qd)]]))[0]


def set_joint_rate(model, form, q, qd, t, k, value):
    """qd with the rate of coordinate k set to `value` (the others kept)."""
    qd = np.array(qd, float)
    qd[k] = value
    return qd


def project(model, form, y, t, tol, active, pas=None, locks=None):
    """Project y = (q, qd) onto the cut rows and the extra rows: minimum-norm steps in q, and
    the velocity change of least kinetic energy (as newton_euler's minimum M-norm: when a
    contact becomes persistent this removes its rebound by an inelastic impulse)."""
    if not np.any(active) and pas is None:
        return form.project(model, y, t, tol)
    def extra(q, x, Tq):
        zx = np.zeros_like(x)
        res, J, _, rate = extra_rows(model, q, t, x, zx, Tq, zx, active, pas, locks)
        return res, J, rate
    return _minimal.project(model, y, t, tol, form.kinematics, extra, weighted=True)


def contact_kit(formulation):
    """The contact functions of a formulation, all in its coordinates q (x for newton_euler,
    tree joint coordinates for tmt and lagrange), with the signatures of impact.py's:
    gaps(model, q), contact_rows(model, q, qd), accelerations(model, q, qd, t, u, active,
    pas, baumgarte, locks), impact(model, q, qd, t, closed), project(model, y, t, tol, active,
    pas, locks), kinetic(model, q, qd), and for the Reduction Method singular_position,
    criterion, joint_coordinates, set_joint_rate, restitute, effective_mass, pass_tuple,
    locks(model, st)."""
    if formulation == "newton_euler":
        return _ne.NE_KIT
    if formulation == "recursive":     # the same q as tmt: its contact functions, C poses
        return _recursive_kit()
    return _kit(get_formulation(formulation).name)


@lru_cache(maxsize=None)
def _recursive_kit():
    """tmt's contact functions (the same q), with the persistent-contact phases in the
    compiled kernel: accelerations and the projection with the active contacts' gap rows
    closed in C (kernel.contact_kernel) when no Reduction pass or lock is involved."""
    rec = get_formulation("recursive")
    tmt_kit = _kit("tmt")
    kit = SimpleNamespace(**vars(tmt_kit))

    def gaps(model, q):
        from ..engine.kernel import contact_kernel

        g = contact_kernel(model, tuple(range(len(model.contacts)))).gaps(
            np.asarray(q, float))
        if g is None:                    # a row undefined at q: the Python rows say what
            return _ne.gaps(model, rec.absolute(model, q, np.zeros_like(q))[0])
        return g

    def accelerations(model, q, qd, t, u, active, pas=None, baumgarte=None, locks=None):
        if pas is not None or locks:
            return tmt_kit.accelerations(model, q, qd, t, u, active, pas, baumgarte, locks)
        from ..engine.kernel import contact_kernel

        ia = np.flatnonzero(active)
        k = contact_kernel(model, ia)
        with k._lock:                    # the multipliers of this very solve
            qdd, _, _, _ = k._accelerations_unlocked(q, qd, u, t, baumgarte)
            lam = k._multipliers_unlocked()
            lam_c = np.zeros(len(model.contacts))
            lam_c[ia] = k._contact_multipliers_unlocked()
        return _ne.ContactDynamics(qdd, lam, lam_c, None, None)

    def project(model, y, t, tol, active, pas=None, locks=None):
        if pas is not None or locks or not np.any(active):
            return tmt_kit.project(model, y, t, tol, active, pas, locks) if (
                pas is not None or locks) else rec.project(model, y, t, tol)
        from ..engine.kernel import contact_kernel

        k = contact_kernel(model, np.flatnonzero(active))
        n = k.n
        return np.concatenate(k.project(y[:n], y[n:], t, tol))

    kit.gaps, kit.accelerations, kit.project = gaps, accelerations, project
    return kit


@lru_cache(maxsize=None)
def _kit(name):
    form = get_formulation(name)

    def on_x(f):
        return lambda model, q, *args: f(model, form.kinematics(model, q, np.zeros_like(q))[0],
                                         *args)

    return SimpleNamespace(
        gaps=lambda model, q: gaps(model, form, q),
        contact_rows=lambda model, q, qd: contact_rows(model, form, q, qd),
        accelerations=lambda model, q, qd, *a, **k: accelerations(model, form, q, qd, *a, **k),
        impact=lambda model, q, qd, *a, **k: impact(model, form, q, qd, *a, **k),
        project=lambda model, y, *a, **k: project(model, form, y, *a, **k),
        kinetic=lambda model, q, qd: kinetic_energy(model, form.absolute(model, q, qd)[1]),
        singular_position=singular_position, criterion=on_x(_ne.criterion),
        joint_coordinates=lambda model, q, qd: (q, qd, None, None),
        set_joint_rate=lambda model, q, qd, *a: set_joint_rate(model, form, q, qd, *a),
        restitute=lambda model, q, qd, *a: restitute(model, form, q, qd, *a),
        effective_mass=on_x(_ne.effective_mass),
        pass_tuple=lambda model, st: _ne.pass_tuple(model, st, singular_position),
        locks=lambda model, st: st.locks(model, singular_position))
