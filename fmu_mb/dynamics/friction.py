"""Coulomb friction at persistent contacts and at impacts (docs/contacts-friction.md).

A persistent contact (its gap row closed) with mu > 0 sticks or slips:

- stick: its tangential rows Dt (fmu_mb.mechanics.friction) join the constraint rows
  (v_t' = 0); their multipliers lam_t give the friction force f_t = -lam_t, valid while
  |f_t| <= mu f_n (f_n = -lam_n, the cone: the 2-norm in 3-D);
- slip: the friction force f_t = -mu f_n s acts along the slip direction s (below), a
  generalised force Dt' f_t = k lam_n with k = mu Dt' s, linear in the contact's own normal
  multiplier. The accelerations solve

      M qdd + A' lam = F + sum_j k_j lam_n,j,     A qdd = b

  as one symmetric solve per right-hand side: (z0, l0) for F and (z_j, l_j) for each k_j
  (b = 0), then c = lam_n of the sliding contacts from (I - E L) c = E l0 (E picks their normal
  rows, L = [l_j]), qdd = z0 + Z c, lam = l0 + L c. With redundant rows every symmetric solve
  gives the minimum-norm multipliers, so lam is the minimum-norm multiplier of the applied
  forces plus the sliding forces it generates. A singular I - E L is a contact problem without
  a unique solution (Painleve): ImpactError naming the sliding contacts.

Slip direction: s = sigma v_t / |v_t| with sigma = +1 when v_t . s0 >= 0, else -1, and s = s0
when |v_t| <= REST_SLIP (at rest: a rounding-level velocity has no direction); s0 is the
contact's slip direction recorded when the slip phase started (planar: +-1, so s = s0 for the
whole phase). The factor sigma makes s continuous through v_t = 0 on a
straight approach, so the phase's right-hand side stays smooth up to and past the slip-to-stick
event v_t . s0 = 0, which the event loop locates on the dense output.

Joint friction (ModelBuilder.joint_friction: a bound F_c [N.m or N] on the coordinate q_j of a
revolute or prismatic joint) follows the same law on the joint rate qd_j = Jq_j xd: sticking,
the row Jq_j xdd + conv_j = 0 joins the constraint rows and its multiplier lam_j gives the
friction torque -lam_j, valid while |lam_j| <= F_c; slipping, the constant generalised force
-F_c s0 Jq_j' acts (s0 = +-1 the sign of the rate when the slip started, kept for the phase;
a joint's bound is no multiplier, so the solve stays symmetric). Events: F_c - |lam_j|
(stick -> slip, s0 = sign(lam_j)) and qd_j s0 (slip -> stick).
"""
from dataclasses import dataclass, field

import numpy as np

from ..errors import ImpactError
from ..mechanics.friction import joint_friction as joint_friction  # the joints' data, re-exported


@dataclass(frozen=True)
class Phase:
    """The friction phase of a contact phase: stick (nc,) and slip (nc,) bool (active contacts
    with mu > 0), s0 (nc, kt) the recorded slip directions, mu (nc,); the frictional joints
    (joint_friction(model) order): jstick, jslip (nj,) bool, js0 (nj,) +-1, jbound (nj,) [N.m
    or N], jpos (nj,) their places in compiled.coord_joints."""

    stick: np.ndarray
    slip: np.ndarray
    s0: np.ndarray
    mu: np.ndarray
    jstick: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    jslip: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    js0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    jbound: np.ndarray = field(default_factory=lambda: np.zeros(0))
    jpos: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    jforce: np.ndarray = None     # (nj,) given forces on the joint coordinates (rest_states)

    def any(self):
        return bool(self.stick.any() or self.slip.any() or self.jstick.any()
                    or self.jslip.any())


def mu_of(model):
    return model.compiled.contacts.friction


def has_friction(model):
    """A contact of model has Coulomb friction."""
    return bool(model.contacts) and bool(np.any(mu_of(model) > 0.0))


def has_joint_friction(model):
    return any(getattr(j, "friction", 0.0) > 0.0 for j in model.joints)


def any_friction(model):
    """Contact or joint friction: the model runs the event loop's friction phases."""
    return has_friction(model) or has_joint_friction(model)


def phase_of(model, st, active):
    """Phase from the Status st for the active set `active`; None when no active contact and
    no joint has friction (the frictionless path, unchanged)."""
    nc = len(model.contacts)
    kt = 2 if model.compiled.spatial else 1
    mu = mu_of(model) if nc else np.zeros(0)
    fr = active & (mu > 0.0)
    names, pos, bound = joint_friction(model)
    if not fr.any() and not names:
        return None
    stick = np.array([st.data[nm]["stick"] for nm in st.names], bool) & fr
    s0 = np.array([st.data[nm]["sdir"] for nm in st.names], float).reshape(nc, kt)
    if not names:
        return Phase(stick, fr & ~stick, s0, mu)
    jstick = np.array([st.joints[nm]["stick"] for nm in names], bool)
    js0 = np.array([st.joints[nm]["sdir"] for nm in names], float)
    free = ~held_joints(model, names, active)
    return Phase(stick, fr & ~stick, s0, mu, jstick & free, ~jstick & free, js0, bound, pos)


def held_joints(model, names, active):
    """(nj,) bool: the frictional joints `names` held by a persistent joint limit. The limit's
    row fixes the rate as a sticking row would (the two rows are redundant): such a joint has
    no friction row and no friction force; the limit carries the whole reaction."""
    held = np.zeros(len(names), bool)
    for i, c in enumerate(model.contacts):
        if c.kind == "joint_limit" and active[i] and c.joint in names:
            held[names.index(c.joint)] = True
    return held


def joint_rows(model, x, xd, ph):
    """(Jq (nj, n), conv (nj,)) the joint-rate rows of the frictional joints of phase ph in
    absolute coordinates (qd_j = Jq_j xd, qdd_j = Jq_j xdd + conv_j)."""
    from ..mechanics import constraints

    _, _, Jq, cq = constraints.joint_coordinates(model, x, xd)
    return Jq[ph.jpos], cq[ph.jpos]


def joint_forces(ph, Jq):
    """(n,) the generalised force of the slipping joints: -F_c s0 Jq_j' summed."""
    f = np.zeros(Jq.shape[1])
    for j in np.flatnonzero(ph.jslip):
        f -= ph.jbound[j] * ph.js0[j] * Jq[j]
    if ph.jforce is not None:
        f += ph.jforce @ Jq
    return f


def rest_states(ph, rest, qdd_of):
    """The friction states of the joints at rest (rest (nj,) bool: rate ~0) consistent with
    their coupling: the friction forces f on their coordinates minimise
    1/2 f' A f + c' f with |f_j| <= F_c (the dual of Coulomb's law at acceleration level, a
    convex box-constrained problem with a unique qdd), where qdd_R = c + A f are their
    accelerations with the other joints' and contacts' states fixed: qdd_of(f) (nj values,
    the forces f (nj,) on the joints in `rest`, 0 elsewhere) gives them. Returns (stick (nj,)
    bool, s0 (nj,)): sticking where |f_j| < F_c or the acceleration is 0, else slipping
    along s0 = -sign(f_j) (the acceleration's sign). For one joint this is the rule
    'stick while |lam_j| <= F_c, else slip along sign(lam_j)'."""
    from scipy.optimize import lsq_linear

    idx = np.flatnonzero(rest)
    nj = len(ph.jbound)
    z = np.zeros(nj)
    c = qdd_of(z)[idx]
    A = np.empty((len(idx), len(idx)))
    scale = max(1.0, float(np.abs(ph.jbound[idx]).max()))
    for k, j in enumerate(idx):
        e = z.copy()
        e[j] = scale
        A[:, k] = (qdd_of(e)[idx] - c) / scale
    A = 0.5 * (A + A.T)
    w, V = np.linalg.eigh(A)
    keep = w > 1e-12 * max(1.0, float(np.abs(w).max()))
    # 1/2 f'Af + c'f = 1/2 |R f + d|^2 + const with R = sqrt(w) V', d = V'c / sqrt(w)
    R = (np.sqrt(w[keep])[:, None] * V[:, keep].T)
    d = (V[:, keep].T @ c) / np.sqrt(w[keep])
    bound = ph.jbound[idx]
    sol = lsq_linear(R, -d, bounds=(-bound, bound), method="bvls", tol=1e-14)
    f = np.clip(sol.x, -bound, bound)
    acc = c + A @ f
    stick = np.array(ph.jstick, bool).copy()
    s0 = np.array(ph.js0, float).copy()
    tiny = 1e-9 * (1.0 + float(np.abs(c).max(initial=0.0)))
    for k, j in enumerate(idx):
        at_bound = abs(f[k]) >= bound[k] * (1.0 - 1e-9)
        stick[j] = not (at_bound and abs(acc[k]) > tiny)
        if not stick[j]:
            s0[j] = 1.0 if acc[k] > 0.0 else -1.0
    return stick, s0



# A slip speed at or below REST_SLIP [m/s] is a slip at rest: its direction is the recorded s0
# (the tendency of its sticking force when the slip started), not the direction of a
# rounding-level velocity (nor the stiff turning of v_t / |v_t| at a tiny speed). A slip
# counts as under way, its slip -> stick event armed (integrate._find_event), once v_t . s0
# exceeded REST_ARM [m/s]: rounding of a slip held at rest by other contacts stays below.
REST_SLIP = 1e-6
REST_ARM = 1e-13


def slip_direction(v, s0):
    """s = sigma v / |v| (sigma = sign of v . s0, + at 0), s0 when |v| <= REST_SLIP (at
    rest)."""
    nv = float(np.sqrt(v @ v))
    if nv <= REST_SLIP:
        return np.array(s0, float)
    return (v / nv) if float(v @ s0) >= 0.0 else (-v / nv)


# Sticking contacts within TIE_CONE (relative to the largest mu f_n of the sticking contacts)
# of their cone when one of them reaches it leave the cone together (a tie: mirror-image
# contacts of a symmetric load reach their cones at one instant up to rounding).
TIE_CONE = 1e-9


def tied_exits(ph, lam_c, lam_t, i):
    """(k,) the contacts that start slipping at the stick -> slip event of contact i: i and
    every sticking contact k with |lam_t,k| >= mu_k f_n,k - TIE_CONE max_j mu_j f_n,j
    (lam_c, lam_t the multipliers of the phase ph at the event), contact order."""
    ft = np.sqrt(np.einsum("ik,ik->i", lam_t, lam_t))
    cone = np.where(ph.stick, ph.mu * -np.asarray(lam_c, float), 0.0)
    excess = ft - cone
    tie = TIE_CONE * max(float(cone.max(initial=0.0)), 0.0)
    out = ph.stick & (excess >= -tie)
    out[i] = True
    return np.flatnonzero(out)


def stick_rows(ph, Dt, conv_t):
    """(J (k, n), conv (k,)) of the sticking contacts' tangential rows, contact order."""
    if ph is None or not ph.stick.any():
        n = Dt.shape[2]
        return np.zeros((0, n)), np.zeros(0)
    ia = np.flatnonzero(ph.stick)
    return Dt[ia].reshape(-1, Dt.shape[2]), conv_t[ia].reshape(-1)


def sliding_columns(ph, Dt, qd):
    """(indices j, K (n, p)) of the sliding contacts and their force columns k_j = mu Dt' s."""
    if ph is None or not ph.slip.any():
        return np.zeros(0, np.intp), np.zeros((Dt.shape[2], 0))
    js = np.flatnonzero(ph.slip)
    K = np.empty((Dt.shape[2], len(js)))
    for c, j in enumerate(js):
        s = slip_direction(Dt[j] @ qd, ph.s0[j])
        K[:, c] = ph.mu[j] * (Dt[j].T @ s)
    return js, K


def sliding_solve(solve, F, b, K, pos, names):
    """(z, lam) of M z + A' lam = F + K lam[pos], A z = b, given solve(F, b) -> (z, lam) of the
    symmetric system (module docstring). pos (p,) the sliding contacts' normal rows in lam."""
    z0, l0 = solve(F, b)
    p = K.shape[1]
    if p == 0:
        return z0, l0
    zero = np.zeros_like(b)
    Z = np.empty((z0.shape[0], p))
    L = np.empty((l0.shape[0], p))
    for c in range(p):
        Z[:, c], L[:, c] = solve(K[:, c], zero)
    S = np.eye(p) - L[pos, :]
    try:
        c = np.linalg.solve(S, l0[pos])
    except np.linalg.LinAlgError:
        c = None
    if c is None or not np.all(np.isfinite(c)) or \
            np.linalg.cond(S) > 1e12:
        raise ImpactError(f"sliding contacts {list(names)}: the contact problem has no "
                           f"unique solution (Painleve: the sliding friction cancels the normal "
                           f"mass, cond(I - E L) = {np.linalg.cond(S):.3g})")
    return z0 + Z @ c, l0 + L @ c


# ---------------------------------------------------------------------- impacts
def frictional_impact(model, v, gap, Dc, D, phi_t, solve, mass_times, Dt, closed,
                      restitution=None, tol=1e-10, result=None):
    """The impact law with Coulomb friction (docs/contacts-friction.md, "Impacts"): Newton's
    restitution along the normals, a sticking or sliding friction impulse, the kinetic energy
    never increased. solve(A, b, f=None) solves [M A'; A 0][v+; r] = [f; b] (f default M v-),
    mass_times(v) = M v, Dt (nc, kt, n) the tangential rows, result: impact.ImpactResult (passed
    in: impact imports this module). Returns an ImpactResult with
    p_t, vt_minus, vt_plus and `level`: 0 the law with the restitution coefficients, 1 the law
    with e = 0 (level 0 would have gained energy, found no admissible active set, or its
    sticking rows and Newton's targets contradict each other: redundant rows), 2
    frictionless with e = 0 (so would 1; the inelastic frictionless impact never gains
    energy)."""
    from dataclasses import replace

    B = model.compiled.contacts
    e = B.restitution if restitution is None else np.asarray(restitution, float)
    closed = np.array(closed, bool)
    T0 = 0.5 * float(v @ mass_times(v))
    res = None
    for level, (ee, mu) in enumerate(((e, B.friction), (0.0 * e, B.friction),
                                      (0.0 * e, 0.0 * B.friction))):
        try:
            res = _active_set(model, v, Dc, D, phi_t, solve, Dt, closed, ee, mu, tol, result)
        except ImpactError:
            if level == 2:
                raise
            continue
        T1 = 0.5 * float(res.xd @ mass_times(res.xd))
        if T1 <= T0 + 1e-12 * abs(T0):
            return replace(res, level=level)
    return replace(res, level=2)


def _active_set(model, v, Dc, D, phi_t, solve, Dt, closed, e, mu, tol, ImpactResult):
    """impact.solve_impact's active set of the normal rows, with the friction impulses of the
    rule: every frictional contact of the set sticks (its tangential rows keep v_t+ = 0) until
    its sticking impulse leaves the cone |P_t| <= mu P_n; then every one outside it slides
    (P_t = -mu P_n s, s the direction of its sticking multipliers r_t / |r_t|, kept for this
    impact) and the set is solved again."""
    B = model.compiled.contacts
    nc, kt, n = Dt.shape
    m = D.shape[0]
    v_minus = Dc @ v
    vt_minus = Dt @ v
    target = -e * np.minimum(v_minus, 0.0)
    scale = tol * (1.0 + max(np.abs(v_minus).max(initial=0.0),
                             np.abs(vt_minus).max(initial=0.0)))
    # the set starts with the contacts approaching beyond rounding (a persistent contact's
    # gap rate is 0 up to rounding: it joins only if it would penetrate)
    active = closed & (v_minus < -scale)
    names = [c.name for c in model.contacts]
    seen = set()
    for _ in range(4 * nc + 4):
        ia = list(np.flatnonzero(active))
        slide = {}
        for _inner in range(nc + 1):
            sticks = [j for j in ia if mu[j] > 0.0 and j not in slide]
            A = np.vstack([D, Dc[ia]] + [Dt[j] for j in sticks])
            b = np.concatenate([-phi_t, target[ia], np.zeros(kt * len(sticks))])
            js = sorted(slide)
            K = np.zeros((n, len(js)))
            for c, j in enumerate(js):
                K[:, c] = mu[j] * (Dt[j].T @ slide[j])
            pos = np.array([m + ia.index(j) for j in js], np.intp)
            vp, r = sliding_solve(lambda f, bb: solve(A, bb, f), None, b, K, pos,
                                  [names[j] for j in js])
            r_n = np.zeros(nc)
            r_n[ia] = r[m:m + len(ia)]
            r_t = np.zeros((nc, kt))
            if sticks:
                r_t[sticks] = r[m + len(ia):].reshape(-1, kt)
            excess = {j: float(np.sqrt(r_t[j] @ r_t[j])) - mu[j] * max(-r_n[j], 0.0)
                      for j in sticks}
            out = [j for j in sticks if excess[j] > scale]
            if not out:
                break
            for j in out:             # every sticking contact outside its cone slides
                slide[j] = r_t[j] / np.sqrt(r_t[j] @ r_t[j])
        v_plus = Dc @ vp
        if np.abs(A @ vp - b).max(initial=0.0) > 1e3 * scale:
            raise ImpactError(f"model '{model.name}': the rows of the frictional impact "
                              f"cannot all hold (Newton's targets and sticking contradict "
                              f"each other)")
        pulling = active & (r_n > scale)
        penetrating = closed & ~active & (v_plus < target - scale)
        if not pulling.any() and not penetrating.any():
            p = -r_n
            p_t = -r_t
            for j, s in slide.items():
                p_t[j] = mu[j] * r_n[j] * s
            vt_plus = Dt @ vp
            loss = -(p * (v_minus + v_plus) + np.einsum("ik,ik->i", p_t, vt_minus + vt_plus)) / 2.0
            return ImpactResult(vp, r[:m], r_n, p, v_minus, v_plus,
                                (p > scale) & (v_minus < -scale), loss, p_t, vt_minus,
                                vt_plus)
        key = tuple(ia)
        if key in seen:
            break
        seen.add(key)
        # the most pulling (else penetrating) contact leaves (joins) the set; contacts within
        # scale of it count as tied, the first of them in contact order (symmetric corners:
        # not decided by rounding)
        if pulling.any():
            best = r_n[pulling].max()
            active[np.flatnonzero(pulling & (r_n >= best - scale))[0]] = False
        else:
            d = v_plus - target
            worst = d[penetrating].min()
            active[np.flatnonzero(penetrating & (d <= worst + scale))[0]] = True
    cl = [names[i] for i in np.flatnonzero(closed)]
    raise ImpactError(f"model '{model.name}': no admissible frictional impact solution for "
                      f"the closed contacts {cl} (velocities before impact "
                      f"{v_minus[closed]}); the contacts may be redundant or the impact "
                      f"ill-posed")
