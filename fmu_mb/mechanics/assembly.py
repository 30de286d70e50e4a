"""Consistent initial absolute coordinates from joint coordinates (assembly).

1. Place the bodies along the spanning tree with the given joint coordinates (0 where none is
   given), starting from the ground and from the bodies' declared poses.
2. Newton-Raphson on Phi(x, t0) = 0 together with q_j(x) = q_j0 for the given joint
   coordinates, with minimum M-norm steps (so unconstrained directions keep their guess).
   When that fails for a planar model with loops: Levenberg-Marquardt on the loop rows over
   the tree's joint coordinates (the given ones kept) from the tree placement, then from
   deterministic splitmix64 starts, and Newton again from the first closure
   (_closure_retry; the engine's C assembly, engine.c closure_retry, takes the same steps).
3. Velocities: the minimum-kinetic-energy xd with D xd = -Phi_t and qd_j = qd_j0 given.

A loop that cannot close raises AssemblyError naming the joint that does not fit: the best
the loop can do (least squares over the tree's joint coordinates, the tree joints exact) leaves
only that cut joint open, by the distance reported. An assembly that succeeds but looks
unintended warns (AssemblyWarning) naming the joint: a joint coordinate far from its given
guess (the loop closed on another branch), or a contact that starts closed beyond its range
(a cylinder beyond its stroke, a joint beyond its limit).
"""
import math
import threading
import warnings
from contextlib import contextmanager

import numpy as np

from . import constraints
from ..errors import AssemblyError, AssemblyWarning
from ..linalg import min_norm_correction, numerical_rank

# a joint is "far" from its guess beyond these (revolute [rad]; prismatic: times the model's
# size, the largest attachment-point coordinate)
FAR_ANGLE = math.pi / 4
FAR_LENGTH = 0.5
STARTS = 12         # random starts of the least-squares closure (diagnosis and retry)

TOL = 1e-12
MAX_ITER = 50
# the rank cut of the retry with fine steps (_min_norm_fine), relative to the largest
# eigenvalue of S = A M^-1 A': far below linalg.RANK_RTOL, far above round-off (~1e-16)
FINE_RTOL = 1e-13
REFINE = 3          # residual corrections of the fine velocity solve

_PROBE = threading.local()


@contextmanager
def probing():
    """In this thread, assemblies that fail do so cheaply: the retry from the loops' best
    closure starts from the tree placement only (no random starts) and the error is not
    diagnosed (a short message). For callers that only need to know whether a model builds
    (the parameter compiler's far checks, fmu_mb.engine.params): a failed four-bar at x10
    lengths then costs ~0.1 s instead of ~1.5 s, the same on every machine."""
    before = getattr(_PROBE, "on", False)
    _PROBE.on = True
    try:
        yield
    finally:
        _PROBE.on = before


def assemble(model, tree):
    """Return x0 (3 nb,), xd0 (3 nb,), rank(D) at x0 and the note on a pose assembled far
    from the declared one (declared_note; "" when none, also warned as AssemblyWarning).

    tree : [(joint name, name of the already placed side)] in placement order.
    """
    if model.spatial:
        from .spatial.placement import tree_placement

        x = tree_placement(model, tree)
    else:
        x = _tree_placement(model, tree)
    t0 = model.t0
    spec = [(i, ic) for i, ic in enumerate(_initial_by_coord(model)) if ic is not None]
    pos_spec = [(i, ic.value) for i, ic in spec if ic.value is not None]
    rate_spec = [(i, ic.rate) for i, ic in spec if ic.rate is not None]
    Minv = model.compiled.inv_mass_diag
    zero = np.zeros_like(x)
    scale = 1.0 + max(np.abs(x).max(initial=0.0), _size(model))
    x_placed = x
    closure = None
    x, r = _newton(model, x, t0, pos_spec, Minv, scale)
    if not _closed(r, scale):
        # massless coordinates (point masses, a massless cart) weigh 1e-6 x the largest mass
        # in the metric: S = A M^-1 A' then spans more than linalg's rank cut, which drops a
        # row that is not redundant (container_crane_driven with x0 != 0); again with the
        # fine cut
        x2, r2 = _newton(model, x_placed, t0, pos_spec, Minv, scale, fine=True)
        if _closed(r2, scale):
            x, r = x2, r2
    if not _closed(r, scale) and model.topology.cut_joints and not model.spatial:
        # Newton-Raphson failed from the tree placement: start again from a least-squares
        # closure of the loops (Levenberg-Marquardt from deterministic starts, the first that
        # closes and that Newton then polishes; the engine's C assembly does the same)
        try:
            x2, r2, closure = _closure_retry(model, tree, pos_spec, Minv, scale,
                                             0 if getattr(_PROBE, "on", False) else STARTS)
        except Exception:       # the retry must not hide the assembly error
            x2, closure = None, None
        if x2 is not None:
            x, r = x2, r2
    if not _closed(r, scale) and getattr(_PROBE, "on", False):
        raise AssemblyError(f"model '{model.name}': the initial conditions cannot be "
                            f"assembled (residual {np.abs(r).max(initial=0.0):.3g}; not "
                            f"diagnosed: a probe build)")
    if not _closed(r, scale):
        raise AssemblyError(_diagnose(model, tree, r, len(pos_spec), scale, closure))
    if not model.spatial:
        # body angles to the turn nearest their placement (Newton may wind them by 2 pi k)
        placed = _tree_placement(model, tree)
        x[2::3] = placed[2::3] + (x[2::3] - placed[2::3] + np.pi) % (2 * np.pi) - np.pi
        note = declared_note(model, tree, x, placed)
        if note:
            warnings.warn(note, AssemblyWarning, stacklevel=3)
    else:
        note = ""
    _check_result(model, x)

    phi, D, _, phi_t = constraints.evaluate(model, x, zero, t0, need_conv=False)
    _, _, Jq, _ = constraints.joint_coordinates(model, x, zero)
    A = np.vstack([D, Jq[[i for i, _ in rate_spec]]]) if rate_spec else D
    b = np.concatenate([-phi_t, [v for _, v in rate_spec]])
    guess = _velocity_guess(model, x)
    r = b - A @ guess
    if np.any(r) or not np.all(np.isfinite(A)):
        xd = guess + min_norm_correction(Minv, A, r, numpy_only=True)
    else:       # the guess meets the rows exactly (at rest, no rheonomic rows): no correction
        xd = guess + 0.0
    res = A @ xd - b
    tol = 1e-8 * (1.0 + np.abs(b).max(initial=0.0))
    if np.abs(res).max(initial=0.0) > tol:
        # the metric's spread beyond the rank cut (see the positions): the fine cut, and
        # corrections of the residual (S's small eigenvalues carry round-off ~1e-16 / 1e-10)
        xd2 = guess
        for _ in range(1 + REFINE):
            xd2 = xd2 + _min_norm_fine(Minv, A, b - A @ xd2)
        res2 = A @ xd2 - b
        if np.abs(res2).max(initial=0.0) <= tol:
            xd, res = xd2, res2
    if np.abs(res).max(initial=0.0) > tol:
        bad = [model.joints[model.compiled.coord_joints[i]].name for i, _ in rate_spec]
        raise AssemblyError(f"model '{model.name}': the initial rates of joints {bad} are "
                            f"inconsistent with the constraints (velocity residual "
                            f"{np.abs(res).max():.3g}); give fewer rates or consistent ones")
    return x, xd, numerical_rank(D), note


def _velocity_guess(model, x):
    """The bodies' declared velocities as xd: (v, omega) planar, (v, p') with
    p' = E(p)' omega / 2 spatial (omega in global axes)."""
    if not model.spatial:
        return np.array([v for body in model.bodies
                         for v in (*body.velocity, body.angular_velocity)], dtype=float)
    from .spatial.rotations import E_matrix

    X = x.reshape(-1, 7)
    w = np.array([b.angular_velocity for b in model.bodies], float).reshape(-1, 3)
    pd = 0.5 * np.einsum("kij,ki->kj", E_matrix(X[:, 3:]), w)
    v = np.array([b.velocity for b in model.bodies], float).reshape(-1, 3)
    return np.concatenate([v, pd], axis=1).reshape(-1)


def _newton(model, x, t0, pos_spec, Minv, scale, fine=False):
    """Newton-Raphson with minimum M-norm steps on Phi = 0 and the given coordinates
    (fine: the steps of _min_norm_fine)."""
    zero = np.zeros_like(x)
    step = _min_norm_fine if fine else _min_norm_numpy
    r = None                        # the residual at the current x, once evaluated
    for _ in range(MAX_ITER):
        r, A = _position_rows(model, x, zero, t0, pos_spec)
        if not np.all(np.isfinite(r)):
            break
        if np.abs(r).max(initial=0.0) < TOL * scale:
            break
        x = x - step(Minv, A, r)
        r = None
    if r is None:
        r, _ = _position_rows(model, x, zero, t0, pos_spec)
    return x, r


def _min_norm_numpy(Minv, A, r):
    """min_norm_correction by numpy alone: an FMU's start values (the assembly in its
    constructor) do not import scipy (~250 ms of a spatial FMU's start-up)."""
    return min_norm_correction(Minv, A, r, numpy_only=True)


def _min_norm_fine(Minv, A, r):
    """min_norm_correction with the rank cut FINE_RTOL instead of linalg.RANK_RTOL: the
    smallest M-norm dx with A dx = r, by the eigenvalues of S = A M^-1 A' (the engine's C
    assembly does the same, engine.c min_norm_fine)."""
    if A.shape[0] == 0:
        return np.zeros(Minv.shape[0])
    AMi = A * Minv
    S = AMi @ A.T
    if not np.all(np.isfinite(S)):
        return np.full(Minv.shape[0], np.nan)
    w, V = np.linalg.eigh(S)
    keep = w > FINE_RTOL * max(w.max(), 1e-300)
    y = V[:, keep] @ ((V[:, keep].T @ r) / w[keep])
    return AMi.T @ y


def _closed(r, scale):
    return bool(np.all(np.isfinite(r)) and np.abs(r).max(initial=0.0) <= 1e-9 * scale)


def _size(model):
    pts = [abs(v) for j in model.joints for v in (*j.parent_point, *j.child_point)]
    return max(pts, default=1.0)


def _initial_by_coord(model):
    """InitialCondition per joint coordinate (coord_joints order), None if not given."""
    given = {ic.joint: ic for ic in model.initial}
    return [given.get(model.joints[k].name) for k in model.compiled.coord_joints]


def _position_rows(model, x, xd, t, pos_spec):
    phi, D, _, _ = constraints.evaluate(model, x, xd, t, need_conv=False)
    if not pos_spec:
        return phi, D
    q, _, Jq, _ = constraints.joint_coordinates(model, x, xd)
    ii = [i for i, _ in pos_spec]
    r = np.concatenate([phi, q[ii] - np.array([v for _, v in pos_spec])])
    return r, np.vstack([D, Jq[ii]])


def _diagnose(model, tree, r, n_spec, scale, closure=None):
    """The message of a failed assembly: which joint does not fit and by how much. closure:
    the loops' best closure with the given values kept when already computed (the retry's,
    _closure_retry; else _best_closure(model, tree, keep_values=True)[0])."""
    m = model.compiled.n_rows
    loops = {cut: loop for cut, loop in zip(model.topology.cut_joints, model.topology.loops)}
    msg = f"model '{model.name}': the initial conditions cannot be assembled; "
    best = None
    if loops and not model.spatial:           # (the least-squares closure is planar)
        try:
            best = (closure if closure is not None
                    else _best_closure(model, tree, keep_values=True)[0])
            free = _best_closure(model, tree, keep_values=False)[0] if n_spec else best
        except Exception:           # the diagnosis must not hide the assembly error
            best = None
    if best is not None:
        tol = 1e-7 * scale
        open_ = [(name, res) for name, res in best if res > tol]
        if not open_ and n_spec:
            return msg + ("the loops can close, but not from the given start: give guesses "
                          "(mb.initial(joint, guess=...)) near the intended pose")
        if open_:
            if n_spec and not [1 for _, res in free if res > tol]:
                given = [ic.joint for ic in model.initial if ic.value is not None]
                return msg + ("; ".join(_open_text(model, loops, n, res) for n, res in open_)
                              + f"; the given joint coordinates cannot all be met: without "
                              f"the initial values of joints {given} the loops close; give "
                              f"fewer initial values or ones that let the loops close")
            return msg + "; ".join(_open_text(model, loops, n, res) + (
                " even at the best pose of the loop: a link of the loop is too long or "
                "too short by about that (check lengths and attachment points)")
                for n, res in open_)
    worst = []
    for joint, rows in zip(model.joints, model.compiled.joint_rows):
        res = np.abs(r[rows]).max(initial=0.0) if len(rows) else 0.0
        if not np.isfinite(res) or res > 1e-9:
            worst.append(f"joint '{joint.name}' residual {res:.3g}")
    msg += "; ".join(worst) if worst else "constraint rows stay violated"
    spec_res = np.abs(r[m:]).max(initial=0.0) if n_spec else 0.0
    if n_spec and spec_res > 1e-9:
        msg += (f"; the given joint coordinates cannot all be met (residual {spec_res:.3g}): "
                f"give fewer initial values or ones that let the loops close")
    return msg


def _open_text(model, loops, name, res):
    j = model.joint(name)
    loop = loops.get(name)
    where = f" residual {res:.3g}" + (f" (loop through bodies {list(loop)})" if loop else "")
    gap = {"revolute": f"its two points stay {res:.3g} m apart",
           "distance": f"its length misses by {res:.3g} m"}.get(
               j.kind, f"its rows stay open by {res:.3g} (m and rad)")
    return f"joint '{name}'{where} does not fit: {gap}"


def _best_closure(model, tree, keep_values, n_starts=STARTS):
    """Least squares over the tree coordinates (tree joints exact by construction) of the
    cut joints' rows; returns ([(cut joint name, its residual [m or rad])], x at the best
    closure)."""
    from scipy.optimize import least_squares

    from .tree import transform, tree_map

    tm = tree_map(model)
    x0 = _tree_placement(model, tree)
    q0 = _tree_q(model, tm, x0)
    fixed = np.zeros(tm.n, bool)
    if keep_values:
        given = {ic.joint for ic in model.initial if ic.value is not None}
        for i, k in enumerate(tm.joints):
            fixed[i] = model.joints[k].name in given
    rows = tm.cut_rows
    zero = np.zeros(tm.n)
    t0 = model.t0

    def f(qf):
        q = q0.copy()
        q[~fixed] = qf
        x, _, _, _ = transform(model, q, zero)
        phi, _, _, _ = constraints.evaluate(model, x, np.zeros_like(x), t0, need_conv=False)
        return phi[rows]

    if (~fixed).any():
        # several starts: the tree placement, then random joint coordinates (a stretched-out
        # chain is a stationary point of the distance, where a local method stops)
        starts = [qs[~fixed] for qs in _starts(model, tm, q0, n_starts)]
        best_x, best_cost = None, np.inf
        for qs in starts:
            sol = least_squares(f, qs, method="trf", xtol=1e-15, ftol=1e-15, gtol=1e-15,
                                max_nfev=200 * (1 + int((~fixed).sum())))
            if sol.cost < best_cost:
                best_x, best_cost = sol.x, sol.cost
            if best_cost < 1e-30:
                break
        qf = best_x
    else:
        qf = q0[~fixed]
    res = f(qf)
    q = q0.copy()
    q[~fixed] = qf
    x_best = transform(model, q, zero)[0]
    out = []
    jidx = {j.name: k for k, j in enumerate(model.joints)}
    pos = {int(rw): i for i, rw in enumerate(rows)}
    for name in model.topology.cut_joints:
        jr = model.compiled.joint_rows[jidx[name]]
        out.append((name, float(np.linalg.norm(res[[pos[int(rw)] for rw in jr]]))))
    return out, x_best


# The deterministic starts of the least-squares closure (the retry here and in the engine's
# C assembly, engine.c closure_retry, and the diagnosis): splitmix64 from state 0, one draw u
# in [0, 1) per tree coordinate and start (the top 53 bits), mapped to q0 + pi (2u - 1) for an
# angle (a revolute joint, a floating body's phi) and q0 + size (2u - 1) for a length (size:
# _size). Portable integer arithmetic: C and Python draw the same numbers on every machine.
_MASK64 = (1 << 64) - 1


def _splitmix64(state):
    """(next state, output) of splitmix64."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return state, z ^ (z >> 31)


def _starts(model, tm, q0, n_starts):
    """The tree placement's q0, then n_starts deterministic starts (see _splitmix64; every
    coordinate drawn, the caller keeps the given ones at q0)."""
    angle = [nm.endswith(".angle") or nm.endswith(".phi") for nm in tm.names]
    size = _size(model)
    out, state = [np.array(q0, float)], 0
    for _ in range(n_starts):
        qs = np.array(q0, float)
        for i in range(tm.n):
            state, z = _splitmix64(state)
            u = (z >> 11) * 2.0 ** -53
            qs[i] += (math.pi if angle[i] else size) * (2.0 * u - 1.0)
        out.append(qs)
    return out


# Levenberg-Marquardt of the retry (the same steps in engine.c closure_lm): cost f'f of the
# loop rows f(q) over the free tree coordinates, J = D_cut Tq; step (J'J + mu I) dq = -J'f;
# mu starts at LM_MU0 (1 + max diag J'J), an accepted step (cost decreases) divides it by
# LM_DOWN (not below 1e-15 (1 + max diag J'J)), a rejected one (or H + mu I not positive
# definite to Cholesky) multiplies it by LM_UP; stops at max|f| <= TOL scale, a rejected mu
# beyond 1e20 (1 + max diag J'J), an accepted step below 1e-15 (1 + max|q|) or lowering the
# cost by 1e-15 of it or less, or LM_MAXIT iterations.
LM_MU0 = 1e-3
LM_DOWN = 5.0
LM_UP = 4.0
LM_MAXIT = 200


def _closure_lm(model, tm, q, fixed, rows, scale):
    """q (tree coordinates) at the end of Levenberg-Marquardt on the loop rows, the rows' max
    |residual| there, the rows and their Jacobian over the free coordinates."""
    from .tree import transform

    zero = np.zeros(tm.n)
    t0 = model.t0
    free = ~fixed

    def rows_at(qq):
        x, _, Tq, _ = transform(model, qq, zero)
        phi, D, _, _ = constraints.evaluate(model, x, np.zeros_like(x), t0, need_conv=False)
        return phi[rows], D[rows] @ Tq[:, free]

    q = np.array(q, float)
    f, J = rows_at(q)
    if not np.all(np.isfinite(f)):
        return q, np.inf, f, J
    cost = float(f @ f)
    H = J.T @ J
    mu = LM_MU0 * (1.0 + float(np.max(np.diag(H), initial=0.0)))
    for _ in range(LM_MAXIT):
        if np.abs(f).max(initial=0.0) <= TOL * scale:
            break
        H = J.T @ J
        dmax = float(np.max(np.diag(H), initial=0.0))
        big, floor = 1e20 * (1.0 + dmax), 1e-15 * (1.0 + dmax)
        g = J.T @ f
        done = False
        while True:
            costn = np.inf
            Hm = H + mu * np.eye(H.shape[0])
            try:
                np.linalg.cholesky(Hm)          # (C: by this Cholesky; not definite: reject)
                dq = -np.linalg.solve(Hm, g)
            except np.linalg.LinAlgError:
                dq = None
            if dq is not None and np.all(np.isfinite(dq)):
                qn = q.copy()
                qn[free] += dq
                fn, Jn = rows_at(qn)
                costn = float(fn @ fn) if np.all(np.isfinite(fn)) else np.inf
            if costn < cost:
                small = (np.abs(dq).max(initial=0.0) <= 1e-15 * (1.0 + np.abs(q).max())
                         or cost - costn <= 1e-15 * cost)
                q, f, J, cost = qn, fn, Jn, costn
                mu = max(mu / LM_DOWN, floor)
                done = small
                break
            mu *= LM_UP
            if mu > big:
                done = True
                break
        if done:
            break
    return q, float(np.abs(f).max(initial=0.0)), f, J


def _closure_retry(model, tree, pos_spec, Minv, scale, n_starts):
    """The retry of a failed assembly: from each start in turn (the tree placement, then
    _starts), Levenberg-Marquardt on the loop rows with the given joint coordinates kept;
    the first closure (loop rows within 1e-7 scale) from which Newton assembles wins.
    Returns (x, r, None) or, when none closes, (None, None, [(cut joint name, its residual)]
    at the best closure found: the least max |loop row|; None if none was finite)."""
    from .tree import transform, tree_map

    tm = tree_map(model)
    x0 = _tree_placement(model, tree)
    q0 = _tree_q(model, tm, x0)
    given = {ic.joint for ic in model.initial if ic.value is not None}
    fixed = np.array([model.joints[k].name in given for k in tm.joints]
                     + [False] * (tm.n - len(tm.joints)), bool)
    rows = tm.cut_rows
    zero = np.zeros(tm.n)
    best, best_f = np.inf, None
    for qs in _starts(model, tm, q0, n_starts if (~fixed).any() else 0):
        qs[fixed] = q0[fixed]
        q, res, f, J = _closure_lm(model, tm, qs, fixed, rows, scale)
        if res < best:
            best, best_f = res, f
        if not res <= 1e-7 * scale:
            continue
        # a coordinate the loop rows do not depend on (a zero column: e.g. a floating body's
        # angle when it hangs by its centre) goes back to its placement: a drawn start must
        # not turn a declared pose
        idle = np.nonzero(~fixed)[0][np.all(J == 0.0, axis=0)]
        q[idle] = q0[idle]
        x2, r2 = _newton(model, transform(model, q, zero)[0], model.t0, pos_spec, Minv, scale)
        if _closed(r2, scale):
            return x2, r2, None
    if best_f is None:
        return None, None, None
    jidx = {j.name: k for k, j in enumerate(model.joints)}
    pos = {int(rw): i for i, rw in enumerate(rows)}
    return None, None, [(name, float(np.linalg.norm(
        best_f[[pos[int(rw)] for rw in model.compiled.joint_rows[jidx[name]]]])))
        for name in model.topology.cut_joints]


def _tree_q(model, tm, x):
    """Tree coordinates q of absolute coordinates x."""
    qall, _, _, _ = constraints.joint_coordinates(model, x, np.zeros_like(x))
    where = {k: i for i, k in enumerate(model.compiled.coord_joints)}
    q = [qall[where[k]] for k in tm.joints]
    for b in tm.free:
        q += list(x[3 * b:3 * b + 3])
    return np.array(q, dtype=float)


def declared_pose_far(model, tree, x, placed):
    """The first body placed at its declared pose (placement_seeds) that the assembly moved
    far from it, as (joint, body, assembled (x, y, angle), declared (x, y, angle)), or None.
    Far: the angle by more than FAR_ANGLE or the position by more than FAR_LENGTH times the
    model's size (the loops closed on another assembly branch). The engine's C assembly
    applies the same rule (engine.c declared_far)."""
    size = _size(model)
    index = {b.name: b.index for b in model.bodies}
    sides = dict(tree)
    for name, (seed, _) in placement_seeds(model, tree).items():
        if seed == SEED_AIM:            # the body declares no pose of its own
            continue
        j = model.joint(name)
        b = index[j.child if sides[name] == j.parent else j.parent]
        got, want = x[3 * b:3 * b + 3], placed[3 * b:3 * b + 3]
        if (abs(got[2] - want[2]) > FAR_ANGLE
                or math.hypot(got[0] - want[0], got[1] - want[1]) > FAR_LENGTH * size):
            return name, model.bodies[b].name, got, want
    return None


def declared_note(model, tree, x, placed):
    """One line on the first body the assembly moved far from its declared pose
    (declared_pose_far), or "" (planar; x: the assembled, placed: the placement's
    coordinates)."""
    far = declared_pose_far(model, tree, x, placed)
    if far is None:
        return ""
    joint, body, got, want = far
    return (f"model '{model.name}': body '{body}' assembled at ({got[0]:.4g}, {got[1]:.4g}) m, "
            f"{math.degrees(got[2]):.4g} deg, far from its declared pose ({want[0]:.4g}, "
            f"{want[1]:.4g}) m, {math.degrees(want[2]):.4g} deg: the loops closed on another "
            f"assembly branch; declare a pose nearer the intended one or give "
            f"mb.initial('{joint}', guess=...)")


def _check_result(model, x):
    """AssemblyWarning for a joint far from its given guess and for a contact (cylinder end
    stop, joint limit) that starts beyond its range."""
    guesses = {ic.joint: ic.guess for ic in model.initial if ic.guess is not None}
    if guesses:
        q, _, _, _ = constraints.joint_coordinates(model, x, np.zeros_like(x))
    size = _size(model)
    for i, k in enumerate(model.compiled.coord_joints):
        j = model.joints[k]
        if j.name not in guesses:
            continue
        g = guesses[j.name]
        if j.kind == "revolute":
            d = (q[i] - g + math.pi) % (2 * math.pi) - math.pi
            far, unit = abs(d) > FAR_ANGLE, "rad"
        else:
            d = q[i] - g
            far, unit = abs(d) > FAR_LENGTH * size, "m"
        if far:
            warnings.warn(
                f"model '{model.name}': joint '{j.name}' assembled at {q[i]:.4g} {unit}, "
                f"far from its guess {g:.4g} {unit}: the loop closed on another branch "
                f"(assembly mode); give a guess nearer the intended pose or check the "
                f"geometry", AssemblyWarning, stacklevel=4)
    if model.contacts:
        from .contacts import gaps

        gap = gaps(model, x)
        cyl = {f"{e.name}_{end}": e.name for e in model.elements if e.kind == "cylinder"
               for end in ("lower", "upper")}
        for c, gc, unit in zip(model.contacts, gap, model.compiled.contacts.units):
            if gc >= -1e-9 * (1.0 + size):
                continue
            if c.name in cyl:
                e = next(e for e in model.elements if e.name == cyl[c.name])
                length = e.free_value + gc if c.side > 0 else e.value - gc
                what = (f"cylinder '{e.name}' assembled at length {length:.4g} m, outside "
                        f"its range [{e.free_value:.4g}, {e.value:.4g}] m")
            elif c.joint is not None:
                what = (f"joint '{c.joint}' assembled beyond its limit '{c.name}' "
                        f"(gap {gc:.4g} {unit})")
            else:
                what = f"contact '{c.name}' starts penetrated (gap {gc:.4g} {unit})"
            warnings.warn(f"model '{model.name}': {what}; check the initial values and the "
                          f"geometry",
                          AssemblyWarning, stacklevel=4)


# how a tree joint's coordinate is found for the placement when it is neither given nor
# guessed (planar; engine.c tree_placement reads the same codes from IINIT's guess column)
SEED_ZERO = 0        # 0 (nothing declared to aim at)
SEED_ANGLE = 2       # revolute: the moving body's declared angle; prismatic: its position
SEED_POSITION = 3    # revolute: the moving body's declared position (no angle declared)
SEED_AIM = 4         # revolute, the moving body declares nothing: turn it so that its point
                     # of a revolute cut joint (DINIT's guess column: the joint's index) meets
                     # the other body's point, that body being the ground, declared or placed


def placement_seeds(model, tree):
    """{joint name: (SEED_*, cut joint index or -1)} for the tree joints whose coordinate the
    placement takes from declared poses: planar revolute and prismatic joints with neither a
    given value nor a guess. The moving body is the child when the parent is placed first,
    else the parent."""
    if model.spatial:
        return {}
    given = {ic.joint for ic in model.initial if ic.value is not None or ic.guess is not None}
    declared = {b.name: b.declared for b in model.bodies}
    tree_names = {name for name, _ in tree}
    cuts = [(k, j) for k, j in enumerate(model.joints)
            if j.name not in tree_names and j.kind == "revolute"]
    placed = {"ground"}
    seeds = {}
    for name, side in tree:
        j = model.joint(name)
        moving = j.child if side == j.parent else j.parent
        d = declared.get(moving, 0)
        if name not in given and j.kind in ("revolute", "prismatic"):
            if j.kind == "prismatic":
                seed = (SEED_ANGLE, -1) if d & 1 else None
            elif d & 2:
                seed = (SEED_ANGLE, -1)
            elif d & 1:
                seed = (SEED_POSITION, -1)
            else:
                seed = next(((SEED_AIM, k) for k, c in cuts if moving in (c.parent, c.child)
                             and _aim_target(c, moving, placed, declared)), None)
            if seed is not None:
                seeds[name] = seed
        placed.update((j.parent, j.child))
    return seeds


def _aim_target(cut, moving, placed, declared):
    """Whether the body at the other end of cut joint `cut` has a pose to aim at: the ground,
    a body placed before, or one with a declared position."""
    other = cut.child if cut.parent == moving else cut.parent
    return other in placed or bool(declared.get(other, 0) & 1)


def _wrap(a):
    """a to [-pi, pi) (engine.c: pymod(a + PI, 2 PI) - PI)."""
    return (a + math.pi) % (2 * math.pi) - math.pi


def _seeded_q(j, seed, child_moves, rp, ap, rc, ac, aim=None):
    """The coordinate of joint j that puts the moving body at its declared pose (rp, ap or
    rc, ac: the placed side's pose and the moving side's declared one); SEED_AIM: aim = (the
    moving body's point of the cut joint in its axes, the other body's point in world axes)."""
    sp, sc = np.array(j.parent_point, float), np.array(j.child_point, float)
    if j.kind == "revolute":
        if seed == SEED_AIM:
            # the moving body turns about the joint's point P until its cut-joint point lies
            # on the line from P to the target T: a = atan2(T - P) - atan2(s_cut - s_joint)
            s_cut, target = aim
            if child_moves:
                d, s = target - (rp + _rot(ap, sp)), s_cut - sc
            else:
                d, s = target - (rc + _rot(ac, sc)), s_cut - sp
            if not (np.any(d != 0.0) and np.any(s != 0.0)):
                return 0.0
            a = math.atan2(d[1], d[0]) - math.atan2(s[1], s[0])
            return _wrap(a - ap - j.angle0) if child_moves else _wrap(ac - j.angle0 - a)
        if seed == SEED_POSITION:
            # the joint's point P is fixed by the placed side; the moving body's centre lies
            # at P + rot(a, -s): a = atan2(declared centre - P) - atan2(-s)
            if child_moves:
                d, s = rc - (rp + _rot(ap, sp)), -sc
            else:
                d, s = rp - (rc + _rot(ac, sc)), -sp
            if not (np.any(d != 0.0) and np.any(s != 0.0)):
                return 0.0
            a = math.atan2(d[1], d[0]) - math.atan2(s[1], s[0])
            return _wrap(a - ap - j.angle0) if child_moves else _wrap(ac - j.angle0 - a)
        return _wrap(ac - ap - j.angle0)
    if child_moves:                           # prismatic: the slide along the parent's axis
        ap_, ac_ = ap, ap + j.angle0
    else:
        ap_, ac_ = ac - j.angle0, ac
    slide = rc + _rot(ac_, sc) - (rp + _rot(ap_, sp))
    axis = _rot(ap_, np.array(j.axis, float))
    return float(axis[0] * slide[0] + axis[1] * slide[1])


def placement_tree(model):
    """[(tree joint, the side placed before it)] in the placement order (the engine's IPLACE,
    fmu_mb.engine.data._placement: the parent when placed, else the child, else the body
    declared first)."""
    placed, tree = {"ground"}, []
    index = {b.name: b.index for b in model.bodies}
    for name in model.topology.tree_joints:
        j = model.joint(name)
        if j.parent in placed:
            side = j.parent
        elif j.child in placed:
            side = j.child
        else:
            side = j.parent if index[j.parent] < index[j.child] else j.child
        placed.update((j.parent, j.child))
        tree.append((name, side))
    return tree


def declared_coordinates(model):
    """{joint: (where its start came from, value)} for the planar tree joints: 'value' and
    'guess' as given (mb.initial), 'declared pose of <body>' or 'aimed at <cut joint>' from
    the declared poses (placement_seeds), '0' otherwise; spatial: given values and guesses."""
    record = {}
    if not model.spatial:
        _tree_placement(model, placement_tree(model), record)
    out = {}
    given = {ic.joint: ic for ic in model.initial}
    for j in model.joints:
        ic = given.get(j.name)
        if ic is not None and ic.value is not None:
            out[j.name] = ("value", ic.value)
        elif ic is not None and ic.guess is not None:
            out[j.name] = ("guess", ic.guess)
        elif j.name in record:
            out[j.name] = record[j.name]
    return out


def _tree_placement(model, tree, record=None):
    """Absolute coordinates from the tree joints' coordinates: the given value or guess, else
    the one that places the moving body at its declared pose (placement_seeds), else 0.
    record: a dict that receives {joint: (where the coordinate came from, value)}."""
    nb = len(model.bodies)
    pose = {b.name: [np.array(b.position, float), float(b.angle)] for b in model.bodies}
    pose["ground"] = [np.zeros(2), 0.0]
    given = {ic.joint: (ic.value if ic.value is not None else ic.guess)
             for ic in model.initial if ic.value is not None or ic.guess is not None}
    seeds = placement_seeds(model, tree)
    for name, placed in tree:
        j = model.joint(name)
        rp, ap = pose[j.parent]
        rc, ac = pose[j.child]
        q = given.get(name, 0.0)
        if name in seeds:
            seed, k = seeds[name]
            aim = None
            if seed == SEED_AIM:
                moving = j.child if placed == j.parent else j.parent
                cut = model.joints[k]
                mine, other = ((cut.parent_point, cut.child_point) if cut.parent == moving
                               else (cut.child_point, cut.parent_point))
                r_o, a_o = pose[cut.child if cut.parent == moving else cut.parent]
                aim = (np.array(mine, float), r_o + _rot(a_o, np.array(other, float)))
            q = _seeded_q(j, seed, placed == j.parent, rp, ap, rc, ac, aim)
            if record is not None:
                moving = j.child if placed == j.parent else j.parent
                record[name] = ((f"aimed at joint '{model.joints[k].name}'" if seed == SEED_AIM
                                 else f"declared pose of '{moving}'"), q)
        elif record is not None and j.kind in ("revolute", "prismatic"):
            record[name] = ("0", 0.0)
        sp, sc = np.array(j.parent_point), np.array(j.child_point)
        if placed == j.parent:
            ac = ap + j.angle0 + (q if j.kind == "revolute" else 0.0)
            slide = _rot(ap, np.array(j.axis)) * q if j.kind == "prismatic" else 0.0
            rc = rp + _rot(ap, sp) + slide - _rot(ac, sc)
            pose[j.child] = [rc, ac]
        else:
            ap = ac - j.angle0 - (q if j.kind == "revolute" else 0.0)
            slide = _rot(ap, np.array(j.axis)) * q if j.kind == "prismatic" else 0.0
            rp = rc + _rot(ac, sc) - slide - _rot(ap, sp)
            pose[j.parent] = [rp, ap]
    x = np.zeros(3 * nb)
    for b in model.bodies:
        r, a = pose[b.name]
        x[3 * b.index:3 * b.index + 3] = (r[0], r[1], a)
    return x


def _rot(a, s):
    c, sn = np.cos(a), np.sin(a)
    return np.array([c * s[0] - sn * s[1], sn * s[0] + c * s[1]])
