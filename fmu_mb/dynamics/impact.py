"""Unilateral contacts: gap functions, impact equations, persistent contact, Reduction Method.

Gap D_c(x) >= 0 per contact with Jacobian Dc = dD_c/dx and convective term conv (gap'' =
Dc xdd + conv), built from the vectorised primitives of kinematics.py. At an impact (seed 000
sec. 1.4, eq. 20) positions stay, and the velocities after impact xd+ with joint impulses r_k
and contact impulses r_c solve

    [ M    D'   Dc' ] [ xd+ ]   [ M xd-          ]
    [ D    0    0   ] [ r_k ] = [ -phi_t         ]
    [ Dc   0    0   ] [ r_c ]   [ -e Dc xd-      ]

for the contacts in the active set; the set is found by an active-set method for the
complementarity problem (a contact whose impulse would pull leaves the set, a closed contact
that would penetrate joins it) and the result is checked: no penetration velocity, no pulling
impulse. The impulse on the bodies is -Dc' r_c, so a pushing impulse has r_c < 0; we report its
magnitude p = -r_c >= 0.

A contact whose rebound velocity is below `Settings.contact_velocity` becomes persistent: a
bilateral row Dc xdd = -conv whose multiplier lam_c gives the contact force -lam_c, released
when that force would become tensile. Drenovac's Reduction Method (seed 002) replaces the
impact equations for contacts declared with method "reduction" (see `start_pass`).

Everything here is in absolute coordinates x (newton_euler; spatial models: x = (r, p) per
body, the Euler-parameter mass matrix M(x) and linalg.solve_kkt_dense, frictionless contacts of
fmu_mb.mechanics.spatial.contacts); fmu_mb.dynamics.impact_minimal gives the
same functions in tree joint coordinates, and its `contact_kit(formulation)` picks the set
the event loop in integrate.py uses. The gap geometry (ContactBlock, contact_rows, gaps)
lives in fmu_mb.mechanics.contacts.
"""
from dataclasses import dataclass

import numpy as np

from ..mechanics import constraints
from ..mechanics import kinematics as kin
from ..mechanics.elements import applied_forces
from ..errors import ImpactError
from ..mechanics.contacts import ContactBlock, compile_contacts, contact_rows, gaps  # noqa: F401
from ..linalg import (contact_split, contact_splitter, kkt_dense_solver, kkt_solver,
                      min_norm_correction, projection_done, solve_kkt, solve_kkt_dense)
from ..mechanics.friction import tangent_rows
from . import friction as _fr


def _spatial_mass(model, x):
    """The Euler-parameter mass matrix of a spatial model (mechanics.spatial.elements)."""
    from ..mechanics.spatial.elements import mass_matrix   # a planar model never loads it

    return mass_matrix(model, x)


# ---------------------------------------------------------------------- impact equations
@dataclass(frozen=True)
class ImpactResult:
    """Solution of seed 000 eq. 20 at one instant.

    xd : (n,) velocities after impact in the formulation's coordinates (x, or q with
    impact_minimal); r_k : (m,) impulses of the joint rows (all of them in x, the cut joints'
    and drives' in q) [N.s or N.m.s];
    r_c : (nc,) contact impulses (pushing < 0; zero for contacts outside the active set);
    p : (nc,) impulse magnitudes -r_c >= 0; v_minus, v_plus : (nc,) gap rates before/after;
    impacted : (nc,) bool, contacts that were approaching and received an impulse;
    energy_loss : (nc,) kinetic energy lost per contact, p (v- + v+) / -2 [J].
    """

    xd: np.ndarray
    r_k: np.ndarray
    r_c: np.ndarray
    p: np.ndarray
    v_minus: np.ndarray
    v_plus: np.ndarray
    impacted: np.ndarray
    energy_loss: np.ndarray
    p_t: np.ndarray = None          # (nc, kt) friction impulses (frictional impacts)
    vt_minus: np.ndarray = None     # (nc, kt) slip velocities before/after
    vt_plus: np.ndarray = None
    level: int = 0                  # the rule of friction.impact_law that gave the result


def impact(model, x, xd, t=0.0, closed=None, restitution=None, tol=1e-10):
    """Velocities after an impact at configuration x with velocities xd before it.

    closed : (nc,) bool, contacts that are closed (gap ~ 0); default: gap <= 1e-9.
    restitution : (nc,) Newton coefficients; default the model's.
    Solves eq. 20 for the active set of the complementarity problem: for each closed contact
    either p > 0 and v+ = -e min(v-, 0), or p = 0 and v+ >= -e min(v-, 0).
    Raises ImpactError when no admissible solution is found.
    """
    C = model.compiled
    gap, Dc, _ = contact_rows(model, x, xd)
    _, D, _, phi_t = constraints.evaluate(model, x, xd, t, need_conv=False)
    if C.spatial:           # M(x) = diag(m I, 4 G' J G): the normalisation rows keep p . p'
        M = _spatial_mass(model, x)
        F = M @ xd

        def solve(A, b, f=None):
            v, r = solve_kkt_dense(M, A, F if f is None else f, b)
            return v, contact_split(A, D.shape[0], r)

        def mass_times(v):
            return M @ v
    else:
        mass = None if C.mass_positive else C.mass_diag
        F = C.mass_diag * xd

        def solve(A, b, f=None):
            v, r = solve_kkt(C.inv_mass_diag, A, F if f is None else f, b, mass)
            return v, contact_split(A, D.shape[0], r)

        def mass_times(v):
            return C.mass_diag * v
    if _fr.has_friction(model):
        if closed is None:
            closed = gap <= 1e-9
        if np.any(np.asarray(closed, bool) & (_fr.mu_of(model) > 0.0)):
            Dt, _ = tangent_rows(model, x, xd)
            return _fr.frictional_impact(model, xd, gap, Dc, D, phi_t, solve, mass_times, Dt,
                                         closed, restitution, tol, ImpactResult)
    return solve_impact(model, xd, gap, Dc, D, phi_t, solve, closed, restitution, tol)


def solve_impact(model, v, gap, Dc, D, phi_t, solve, closed=None, restitution=None,
                 tol=1e-10):
    """The active-set solution of the impact equations in any coordinates v (x of
    newton_euler, q of tmt and lagrange): Dc (nc, n) gap rows, D (m, n) and phi_t (m,) the
    bilateral rows; solve(A, b) -> (v+, r) solves [M A'; A 0] [v+; r] = [M v-; b] with the
    formulation's mass matrix. Returns ImpactResult with xd = v+."""
    B = model.compiled.contacts
    if closed is None:
        closed = gap <= 1e-9
    closed = np.array(closed, bool)
    e = B.restitution if restitution is None else np.asarray(restitution, float)
    v_minus = Dc @ v
    target = -e * np.minimum(v_minus, 0.0)
    scale = tol * (1.0 + np.abs(v_minus).max(initial=0.0))
    active = closed & (v_minus < 0.0)
    seen = set()
    for _ in range(4 * B.n + 4):
        ia = np.flatnonzero(active)
        A = np.vstack([D, Dc[ia]])
        b = np.concatenate([-phi_t, target[ia]])
        v_plus_all, r = solve(A, b)
        r_c = np.zeros(B.n)
        r_c[ia] = r[D.shape[0]:]
        v_plus = Dc @ v_plus_all
        pulling = active & (r_c > scale)
        penetrating = closed & ~active & (v_plus < target - scale)
        if not pulling.any() and not penetrating.any():
            p = -r_c
            loss = -p * (v_minus + v_plus) / 2.0
            return ImpactResult(v_plus_all, r[:D.shape[0]], r_c, p, v_minus, v_plus,
                                (p > scale) & (v_minus < -scale), loss)
        key = tuple(ia)
        if key in seen:
            break
        seen.add(key)
        if pulling.any():                     # release the most pulling contact first
            active[np.argmax(np.where(pulling, r_c, -np.inf))] = False
        else:
            active[np.argmin(np.where(penetrating, v_plus - target, np.inf))] = True
    names = [model.contacts[i].name for i in np.flatnonzero(closed)]
    raise ImpactError(f"model '{model.name}': no admissible impact solution for the closed "
                      f"contacts {names} (velocities before impact {v_minus[closed]}); the "
                      f"contacts may be redundant or the impact ill-posed")


# ---------------------------------------------------------------------- contact status
class Status:
    """Mutable contact status during one advance(); saved in State.extra['contacts'].

    Per contact: impacts, last_time, last_impulse, energy_loss, active (persistent), stick
    (a frictional persistent contact sticks, else it slips), sdir (its recorded slip direction
    s0, kt values), slide_loss (energy dissipated by sliding friction [J]), and for
    Reduction-Method contacts d (current criterion), passes and the pass in progress
    [t_start, t_end, q_start, v_mean, v_star] or None.
    """

    FIELDS = ("impacts", "last_time", "last_impulse", "energy_loss", "active", "d",
              "passes", "pass", "lock", "stick", "sdir", "slide_loss")

    def __init__(self, model, extra):
        saved = (extra or {}).get("contacts", {})
        self.names = [c.name for c in model.contacts]
        self.data = {}
        kt = 2 if model.compiled.spatial else 1
        for c in model.contacts:
            s = saved.get(c.name, {})
            self.data[c.name] = {"impacts": int(s.get("impacts", 0)),
                                 "last_time": float(s.get("last_time", 0.0)),
                                 "last_impulse": float(s.get("last_impulse", 0.0)),
                                 "energy_loss": float(s.get("energy_loss", 0.0)),
                                 "active": bool(s.get("active", False)),
                                 "d": float(s.get("d", c.criterion)),
                                 "passes": int(s.get("passes", 0)),
                                 "lock": float(s.get("lock", 0.0)),
                                 "pass": (None if s.get("pass") is None
                                          else [float(v) for v in s["pass"]]),
                                 "stick": bool(s.get("stick", False)),
                                 "sdir": [float(v) for v in s.get("sdir", [0.0] * kt)],
                                 "slide_loss": float(s.get("slide_loss", 0.0))}
        # frictional joints: stick, the slip direction s0 (+-1), the energy dissipated [J],
        # set (the state was initialised from the joint rate)
        saved = (extra or {}).get("joint_friction", {})
        self.joints = {}
        for j in model.joints:
            if getattr(j, "friction", 0.0) > 0.0:
                s = saved.get(j.name, {})
                self.joints[j.name] = {"stick": bool(s.get("stick", False)),
                                       "sdir": float(s.get("sdir", 1.0)),
                                       "loss": float(s.get("loss", 0.0)),
                                       "set": bool(s.get("set", False))}

    def active(self):
        return np.array([self.data[n]["active"] for n in self.names], bool)

    def locks(self, model, position=None):
        """{contact index: (joint coordinate position, q_lock)} of locked Reduction contacts;
        position(model, i) gives the place of the singular coordinate (default: in the
        joint coordinates of newton_euler, `singular_position`)."""
        position = position or singular_position
        out = {}
        for i, c in enumerate(model.contacts):
            if c.method == "reduction" and self.data[c.name]["active"]:
                out[i] = (position(model, i), self.data[c.name]["lock"])
        return out

    def passing(self):
        """Index of the Reduction-Method contact in a pass, or None."""
        for i, n in enumerate(self.names):
            if self.data[n]["pass"] is not None:
                return i
        return None

    def to_extra(self, extra):
        out = dict(extra or {})
        out["contacts"] = {n: {k: (list(v) if k == "sdir" else v) for k, v in d.items()}
                           for n, d in self.data.items()}
        if self.joints:
            out["joint_friction"] = {n: dict(d) for n, d in self.joints.items()}
        return out


def pass_tuple(model, st, position=None):
    """(joint-coordinate position, t_start, q_start, v_mean) of the pass in progress, or None;
    position as in Status.locks."""
    ip = st.passing()
    if ip is None:
        return None
    P = st.data[st.names[ip]]["pass"]
    return ((position or singular_position)(model, ip), P[0], P[2], P[3])


def status_of(model, state):
    """Status read from state.extra (defaults when absent)."""
    return Status(model, state.extra)


# ---------------------------------------------------------------------- dynamics with contacts
@dataclass(frozen=True)
class ContactDynamics:
    """Accelerations with persistent contacts (and a Reduction pass) as bilateral rows.

    qdd : (n,) xdd; lam : (m,) joint multipliers; lam_c : (nc,) contact multipliers (zero for
    inactive contacts; contact force = -lam_c >= 0 when pushing); phi, D as in Dynamics.
    """

    qdd: np.ndarray
    lam: np.ndarray
    lam_c: np.ndarray
    phi: np.ndarray
    D: np.ndarray
    lam_t: np.ndarray = None     # (nc, kt) sticking contacts' tangential multipliers (f_t = -lam_t)
    lam_j: np.ndarray = None     # (nj,) sticking frictional joints' multipliers (torque -lam_j)


def extra_rows(model, x, xd, t, active, pas, locks=None, fric=None, trows=None):
    """Rows added to the joints' constraints: active contacts (gap = 0), Reduction contacts
    in persistent contact (singular coordinate locked: q_s = q_lock) and the singular
    coordinate of a Reduction pass (q_s = q_start + v_mean (t - t_start)).

    active : (nc,) bool; pas : None or (joint coordinate position, t_start, q_start, v_mean);
    locks : {contact index: (joint coordinate position, q_lock)} for active Reduction contacts.
    Returns res (k,), J (k, n), conv (k,), rate (k,) (the required J xd), in the order of
    np.flatnonzero(active) followed by the pass row, then the tangential rows of the sticking
    contacts of the friction phase fric (friction.Phase; res and rate 0: velocity rows).
    """
    if fric is not None and (fric.stick.any() or fric.jstick.any()):
        res, J, conv, rate = extra_rows(model, x, xd, t, active, pas, locks)
        if fric.stick.any():
            Dt, conv_t = tangent_rows(model, x, xd) if trows is None else trows
            Js, cs = _fr.stick_rows(fric, Dt, conv_t)
        else:
            Js, cs = np.zeros((0, x.shape[0])), np.zeros(0)
        if fric.jstick.any():         # then the sticking joints' rate rows
            Jq, cq = _joint_rows(model, x, xd, fric)
            Js = np.vstack([Js, Jq[fric.jstick]])
            cs = np.concatenate([cs, cq[fric.jstick]])
        z = np.zeros(Js.shape[0])
        return (np.concatenate([res, z]), np.vstack([J, Js]), np.concatenate([conv, cs]),
                np.concatenate([rate, z]))
    locks = locks or {}
    ia = np.flatnonzero(active)
    n = x.shape[0]
    if not len(ia) and pas is None:
        return np.zeros(0), np.zeros((0, n)), np.zeros(0), np.zeros(0)
    res, J, conv, rate = np.zeros(len(ia)), np.zeros((len(ia), n)), np.zeros(len(ia)), []
    if len(ia):
        gap, Dc, cv = contact_rows(model, x, xd)
        res[:], J[:], conv[:] = gap[ia], Dc[ia], cv[ia]
    rate = np.zeros(len(ia))
    if locks or pas is not None:
        q, _, Jq, cq = constraints.joint_coordinates(model, x, xd)
        for r, i in enumerate(ia):
            if i in locks:
                k, q_lock = locks[i]
                res[r], J[r], conv[r] = q[k] - q_lock, Jq[k], cq[k]
        if pas is not None:
            k, t0, q0, vm = pas
            res = np.append(res, q[k] - q0 - vm * (t - t0))
            J = np.vstack([J, Jq[k:k + 1]])
            conv = np.append(conv, cq[k])
            rate = np.append(rate, vm)
    return res, J, conv, rate


def accelerations(model, x, xd, t, u, active, pas=None, baumgarte=None, locks=None,
                  fric=None):
    """Solve M xdd + D' lam + Dc_A' lam_c = f, D xdd = -conv, Dc_A xdd = -conv_c.

    active : (nc,) bool persistent contacts; pas, locks : see extra_rows. For a locked
    Reduction contact lam_c is sign(q_lock) times the lock's multiplier, so that -lam_c > 0
    while the lock holds the string taut. fric : friction.Phase of the frictional active
    contacts (sticking rows, sliding forces; fmu_mb.dynamics.friction) or None.
    """
    if fric is not None:
        return _friction_accelerations(model, x, xd, t, u, active, pas, baumgarte, locks,
                                       fric)
    C = model.compiled
    phi, D, conv, phi_t = constraints.evaluate(model, x, xd, t)
    res, J, cv, rate = extra_rows(model, x, xd, t, active, pas, locks)
    A = np.vstack([D, J])
    b = -np.concatenate([conv, cv])
    if baumgarte is not None:
        alpha, beta = baumgarte
        b = b - 2.0 * alpha * (A @ xd - np.concatenate([-phi_t, rate])) \
            - beta * beta * np.concatenate([phi, res])
    F = applied_forces(model, x, xd, t, u)
    if C.spatial:
        xdd, lam = solve_kkt_dense(_spatial_mass(model, x), A, F, b)
    else:
        xdd, lam = solve_kkt(C.inv_mass_diag, A, F, b,
                             None if C.mass_positive else C.mass_diag)
    lam = contact_split(A, D.shape[0], lam)
    return contact_dynamics(model, xdd, lam, phi, D, active, locks)


def _joint_rows(model, x, xd, fric):
    """friction.joint_rows, spatial ones with the Euler-parameter columns projected on the
    tangent space as the contacts' rows (_tangent_space)."""
    Jq, cq = _fr.joint_rows(model, x, xd, fric)
    if model.compiled.spatial:
        Jq, cq = _tangent_space(x, xd, Jq, cq)
    return Jq, cq


def _friction_accelerations(model, x, xd, t, u, active, pas, baumgarte, locks, fric):
    """accelerations() with the friction phase fric (friction.sliding_solve)."""
    C = model.compiled
    phi, D, conv, phi_t = constraints.evaluate(model, x, xd, t)
    if model.contacts:
        trows = tangent_rows(model, x, xd)
    else:
        kt = 2 if C.spatial else 1
        trows = (np.zeros((0, kt, x.shape[0])), np.zeros((0, kt)))
    if C.spatial:
        Dt, ct = trows
        Dt2, ct2 = _tangent_space(x, xd, Dt.reshape(-1, Dt.shape[2]), ct.reshape(-1))
        trows = (Dt2.reshape(Dt.shape), ct2.reshape(ct.shape))
    res, J, cv, rate = extra_rows(model, x, xd, t, active, pas, locks, fric, trows)
    if C.spatial:
        nn = int(np.count_nonzero(active))        # the active contacts' gap rows
        J[:nn], cv[:nn] = _tangent_space(x, xd, J[:nn], cv[:nn])
    A = np.vstack([D, J])
    b = -np.concatenate([conv, cv])
    if baumgarte is not None:
        alpha, beta = baumgarte
        b = b - 2.0 * alpha * (A @ xd - np.concatenate([-phi_t, rate])) \
            - beta * beta * np.concatenate([phi, res])
    F = applied_forces(model, x, xd, t, u)
    if fric.jslip.any() or fric.jforce is not None:   # the slipping joints' friction forces
        F = F + _fr.joint_forces(fric, _joint_rows(model, x, xd, fric)[0])
    # one matrix A for every right-hand side of sliding_solve: factorised once
    if C.spatial:
        kkt = kkt_dense_solver(_spatial_mass(model, x), A)
    else:
        kkt = kkt_solver(C.inv_mass_diag, A, None if C.mass_positive else C.mass_diag)
    split = contact_splitter(A, D.shape[0])

    def solve(F, b):
        z, lam = kkt(F, b)
        return z, split(lam)
    xdd, lam = _fr.sliding_solve(solve, F, b, *_fr_columns(model, fric, trows[0], xd, active,
                                                           D.shape[0]))
    return contact_dynamics(model, xdd, lam, phi, D, active, locks, fric)


def _tangent_space(x, xd, J, conv):
    """Rows J (k, 7 nb) of contact quantities with their Euler-parameter columns projected on
    the tangent space of each p (the part along p, from the quadratic A(p), removed) and conv
    adjusted so that J xdd + conv is unchanged where p . p'' = -|p'|^2 (the normalisation rows
    hold): the same rows as the twist rows of the compiled kernel, so that the minimum-norm
    multipliers of redundant frictional rows are the same in C and Python."""
    J = np.array(J, float)
    conv = np.array(conv, float)
    nb = x.shape[0] // 7
    for b in range(nb):
        p, pd = x[7 * b + 3:7 * b + 7], xd[7 * b + 3:7 * b + 7]
        pp = float(p @ p)
        if pp == 0.0:
            continue
        Jp = J[:, 7 * b + 3:7 * b + 7]
        radial = Jp @ p / pp                     # (J_p . p) / |p|^2
        J[:, 7 * b + 3:7 * b + 7] = Jp - radial[:, None] * p[None, :]
        conv -= radial * float(pd @ pd)          # + (J_p . p)/|p|^2 (p . p''), p . p'' = -|p'|^2
    return J, conv


def _fr_columns(model, fric, Dt, qd, active, m):
    """(K, pos, names) of friction.sliding_solve: the sliding columns, their normal rows in
    lam (after the m joint rows, in active-set order) and their names."""
    js, K = _fr.sliding_columns(fric, Dt, qd)
    ia = list(np.flatnonzero(active))
    pos = np.array([m + ia.index(j) for j in js], np.intp)
    return K, pos, [model.contacts[j].name for j in js]


def contact_dynamics(model, qdd, lam, phi, D, active, locks, fric=None):
    """ContactDynamics from a solve with the joint rows (phi, D) first, then one extra row per
    active contact: the contact multipliers in model.contacts order, with the sign of a
    Reduction lock's side (any coordinates: x or q)."""
    m = D.shape[0]
    lam_c = np.zeros(len(model.contacts))
    ia = np.flatnonzero(active)
    lam_c[ia] = lam[m:m + len(ia)]
    for i, (k, q_lock) in (locks or {}).items():
        lam_c[i] *= 1.0 if q_lock >= 0 else -1.0
    if fric is None:
        return ContactDynamics(qdd, lam[:m], lam_c, phi, D)
    kt = fric.s0.shape[1]
    lam_j = np.zeros(len(fric.jstick))
    nj = int(np.count_nonzero(fric.jstick))
    end = len(lam) - nj
    if nj:
        lam_j[fric.jstick] = lam[end:]
    lam_t = np.zeros((len(model.contacts), kt))
    js = np.flatnonzero(fric.stick)
    if len(js):
        lam_t[js] = lam[end - kt * len(js):end].reshape(-1, kt)
    return ContactDynamics(qdd, lam[:m], lam_c, phi, D, lam_t, lam_j)


# ---------------------------------------------------------------------- Reduction Method
def reduced_mass_matrix(model, x):
    """Mbar = Tq' M Tq in the joint coordinates q (revolute and prismatic joints), with Tq =
    dx/dq from [D; Jq] Tq = [0; I]; needs the joint coordinates to be a minimal set."""
    C = model.compiled
    zero = np.zeros_like(x)
    _, D, _, _ = constraints.evaluate(model, x, zero, model.t0, need_conv=False)
    _, _, Jq, _ = constraints.joint_coordinates(model, x, zero)
    A = np.vstack([D, Jq])
    if A.shape[0] != A.shape[1]:
        raise ImpactError(f"model '{model.name}': the Reduction Method needs the joint "
                          f"coordinates to be a minimal set ({A.shape[1]} absolute coordinates,"
                          f" {D.shape[0]} constraint rows, {Jq.shape[0]} joint coordinates)")
    rhs = np.zeros((A.shape[0], Jq.shape[0]))
    rhs[D.shape[0]:] = np.eye(Jq.shape[0])
    Tq = np.linalg.solve(A, rhs)
    return Tq.T @ (C.mass_diag[:, None] * Tq)


def criterion(model, x, i):
    """Drenovac's m(t) = det(Mbar) / criterion_scale for contact i."""
    return float(np.linalg.det(reduced_mass_matrix(model, x))) / model.contacts[i].criterion_scale


def singular_position(model, i):
    """Position of contact i's singular joint in the joint-coordinate vector."""
    name = model.contacts[i].singular_joint
    k = [j.name for j in model.joints].index(name)
    return model.compiled.coord_joints.index(k)


def set_joint_rate(model, x, xd, t, k, value):
    """xd with joint rate k set to `value`, the other joint rates kept, D xd = -phi_t."""
    _, D, _, phi_t = constraints.evaluate(model, x, xd, t, need_conv=False)
    _, qd, Jq, _ = constraints.joint_coordinates(model, x, xd)
    qd = qd.copy()
    qd[k] = value
    A = np.vstack([D, Jq])
    return np.linalg.lstsq(A, np.concatenate([-phi_t, qd]), rcond=None)[0]


def restitute(model, x, xd, t, i, k):
    """Velocities with the gap rate of contact i scaled by k (seed 002 sec. 5: the impact-line
    velocity times k), by the impulse equations (eq. 20 with target k Dc xd)."""
    C = model.compiled
    _, D, _, phi_t = constraints.evaluate(model, x, xd, t, need_conv=False)
    _, Dc, _ = contact_rows(model, x, xd)
    A = np.vstack([D, Dc[i:i + 1]])
    b = np.concatenate([-phi_t, [k * (Dc[i] @ xd)]])
    xd_plus, _ = solve_kkt(C.inv_mass_diag, A, C.mass_diag * xd, b,
                           None if C.mass_positive else C.mass_diag)
    return xd_plus


def effective_mass(model, x, i):
    """1 / (Dc W Dc') with W the inverse masses (zero for massless coordinates)."""
    _, Dc, _ = contact_rows(model, x, np.zeros_like(x))
    md = model.compiled.mass_diag
    w = np.where(md > 0, 1.0 / np.where(md > 0, md, 1.0), 0.0)
    s = float(Dc[i] @ (w * Dc[i]))
    return 1.0 / s if s > 0 else 0.0


def project(model, y, t, tol, active, pas=None, locks=None, fric=None):
    """Project y = (x, xd) onto the joints' rows (as integrate.project_absolute) and the
    extra rows of the persistent contacts and a Reduction pass (minimum M-norm changes)."""
    C = model.compiled
    n = y.shape[0] // 2
    x, xd = y[:n].copy(), y[n:]
    Minv = C.inv_mass_diag
    zero = np.zeros(n)
    scale = 1.0 + np.abs(x).max()

    def rows(x):
        phi, D, _, phi_t = constraints.evaluate(model, x, zero, t, need_conv=False)
        res, J, _, rate = extra_rows(model, x, zero, t, active, pas, locks, fric)
        return (np.concatenate([phi, res]), np.vstack([D, J]),
                np.concatenate([-phi_t, rate]))
    if C.n_rows == 0 and not active.any() and pas is None:
        return y
    prev = np.inf
    for it in range(12):
        r, A, b = rows(x)
        err = np.abs(r).max(initial=0.0)
        # the stopping rule of the joints' projection (linalg.projection_done, as the compiled
        # loop's): the sticking contacts' rows (v_t = 0, residual 0) lock the positions, so
        # the gap and loop rows can be inconsistent with them by the rounding of the impact's
        # state, and Newton then stalls at that floor
        if projection_done(model, t, it, err, prev, tol, scale):
            break
        x -= min_norm_correction(Minv, A, r)
        prev = err
    if it:
        r, A, b = rows(x)
    if C.spatial:           # the velocity change of least kinetic energy (an inelastic impulse)
        M = _spatial_mass(model, x)
        return np.concatenate([x, solve_kkt_dense(M, A, M @ xd, b)[0]])
    xd = xd - min_norm_correction(Minv, A, A @ xd - b)
    return np.concatenate([x, xd])


def slip_velocities(model, x, xd):
    """(nc, kt) slip velocities v_t = Dt xd of every contact [m/s] (mechanics.friction)."""
    Dt, _ = tangent_rows(model, x, xd)
    return Dt @ xd


# ---------------------------------------------------------------------- contact kit
def _ne_kit():
    from types import SimpleNamespace

    from ..mechanics.elements import kinetic_energy

    return SimpleNamespace(
        gaps=gaps, contact_rows=contact_rows, accelerations=accelerations, impact=impact,
        project=project, kinetic=lambda model, x, xd: kinetic_energy(model, xd, x),
        singular_position=singular_position, criterion=criterion,
        joint_coordinates=constraints.joint_coordinates, set_joint_rate=set_joint_rate,
        restitute=restitute, effective_mass=effective_mass, pass_tuple=pass_tuple,
        slip_velocities=slip_velocities,
        locks=lambda model, st: st.locks(model))


NE_KIT = _ne_kit()
