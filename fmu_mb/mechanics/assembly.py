"""Consistent initial absolute coordinates from joint coordinates (assembly).

1. Place the bodies along the spanning tree with the given joint coordinates (0 where none is
   given), starting from the ground and from the bodies' declared poses.
2. Newton-Raphson on Phi(x, t0) = 0 together with q_j(x) = q_j0 for the given joint
   coordinates, with minimum M-norm steps (so unconstrained directions keep their guess).
3. Velocities: the minimum-kinetic-energy xd with D xd = -Phi_t and qd_j = qd_j0 given.

A loop that cannot close raises AssemblyError naming the joints whose rows stay violated and
the loop (bodies) they belong to.
"""
import numpy as np

from . import constraints
from ..errors import AssemblyError
from ..linalg import min_norm_correction, numerical_rank

TOL = 1e-12
MAX_ITER = 50


def assemble(model, tree):
    """Return x0 (3 nb,), xd0 (3 nb,) and rank(D) at x0.

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
    r = None
    for _ in range(MAX_ITER):
        r, A = _position_rows(model, x, zero, t0, pos_spec)
        if not np.all(np.isfinite(r)):
            break
        if np.abs(r).max(initial=0.0) < TOL * scale:
            break
        x = x - min_norm_correction(Minv, A, r)
    r, A = _position_rows(model, x, zero, t0, pos_spec)
    if not np.all(np.isfinite(r)) or np.abs(r).max(initial=0.0) > 1e-9 * scale:
        raise AssemblyError(_diagnose(model, r, len(pos_spec)))

    phi, D, _, phi_t = constraints.evaluate(model, x, zero, t0, need_conv=False)
    _, _, Jq, _ = constraints.joint_coordinates(model, x, zero)
    A = np.vstack([D, Jq[[i for i, _ in rate_spec]]]) if rate_spec else D
    b = np.concatenate([-phi_t, [v for _, v in rate_spec]])
    xd = _velocity_guess(model, x)
    xd = xd + min_norm_correction(Minv, A, b - A @ xd)
    res = A @ xd - b
    if np.abs(res).max(initial=0.0) > 1e-8 * (1.0 + np.abs(b).max(initial=0.0)):
        bad = [model.joints[model.compiled.coord_joints[i]].name for i, _ in rate_spec]
        raise AssemblyError(f"model '{model.name}': the initial rates of joints {bad} are "
                            f"inconsistent with the constraints (velocity residual "
                            f"{np.abs(res).max():.3g}); give fewer rates or consistent ones")
    return x, xd, numerical_rank(D)


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


def _diagnose(model, r, n_spec):
    C = model.compiled
    m = C.n_rows
    worst = []
    for joint, rows in zip(model.joints, C.joint_rows):
        res = np.abs(r[rows]).max(initial=0.0) if len(rows) else 0.0
        if not np.isfinite(res) or res > 1e-9:
            worst.append((joint.name, res))
    loops = {cut: loop for cut, loop in zip(model.topology.cut_joints, model.topology.loops)}
    parts = []
    for name, res in worst:
        loop = loops.get(name)
        where = f" (loop through bodies {list(loop)})" if loop else ""
        parts.append(f"joint '{name}' residual {res:.3g}{where}")
    spec_res = np.abs(r[m:]).max(initial=0.0) if n_spec else 0.0
    msg = (f"model '{model.name}': the initial conditions cannot be assembled; "
           + ("; ".join(parts) if parts else "constraint rows stay violated"))
    if n_spec and spec_res > 1e-9:
        msg += (f"; the given joint coordinates cannot all be met (residual {spec_res:.3g}): "
                f"give fewer initial values or ones that let the loops close")
    cut_loops = [f"{c}: {list(lp)}" for c, lp in loops.items()]
    if cut_loops:
        msg += f". Loops (cut joint: bodies) are {cut_loops}"
    return msg


def _tree_placement(model, tree):
    """Absolute coordinates from the tree joints' coordinates (given value or 0)."""
    nb = len(model.bodies)
    pose = {b.name: [np.array(b.position, float), float(b.angle)] for b in model.bodies}
    pose["ground"] = [np.zeros(2), 0.0]
    given = {ic.joint: (ic.value if ic.value is not None else ic.guess)
             for ic in model.initial if ic.value is not None or ic.guess is not None}
    for name, placed in tree:
        j = model.joint(name)
        q = given.get(name, 0.0)
        rp, ap = pose[j.parent]
        rc, ac = pose[j.child]
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
