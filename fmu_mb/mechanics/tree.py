"""The kinematic transformation x = T(q) along the spanning tree (seed 000 ch.3, seed 001).

q holds the coordinates of the tree joints that have one (revolute angle [rad], prismatic
position [m]) in the order the joints were declared, then x, y, phi of every body that roots a
floating subtree (no tree joint to the ground); `tree_coordinates(model)` names them.
Cut joints (model.topology.cut_joints) and drives stay constraint rows.

Tree joint k joins the body it was placed from ("placed", already known) to the "other" body,
with s_k = +1 when the placed body is the joint's parent and -1 when it is the child:

    phi_other = phi_placed + s_k (angle0_k + q_k)                       (revolute)
    r_other   = r_placed + A(phi_placed) s_placed - A(phi_other) s_other
                + s_k q_k A(phi_jp) axis_k                               (prismatic)

with phi_jp the angle of the joint's parent (P_k = r_other + A(phi_other) s_other is the joint
point; a floating root turns about its own centre of mass). Summed along the path to the
ground (the subtree matrix S, S[k, b] = 1 when body b lies beyond joint k) this gives every
body's pose.
Kinematic differentials (seed 001): column k of the Jacobian Tq is the velocity state with
qd_k = 1 and the others 0: the subtree of joint k turns about the joint point P_k with rate
s_k (revolute) or slides with s_k A(phi_jp) axis_k (prismatic). The convective acceleration
g = d(Tq)/dt qd (qdd = 0) is, per body b beyond joint k,

    revolute: s_k qd_k perp(v_b - v_Pk);   prismatic: s_k qd_k omega_jp perp(A(phi_jp) axis_k)

All of it is vectorised over joints and bodies with S.
"""
from dataclasses import dataclass, replace

import numpy as np

from ..memo import per_object



@dataclass(frozen=True, eq=False)
class TreeMap:
    """Constant index data of the spanning tree (built once per Model).

    nt tree joints in placement order, nb bodies, n tree coordinates:
    placed, other, parent : (nt,) body indices (nb = ground) of the placed side, the other
    side and the joint's parent; sign : (nt,) s_k; s_placed, s_other : (nt, 2) joint points
    in those bodies' frames; angle0 : (nt,); axis : (nt, 2) prismatic axes (parent frame);
    revolute, prismatic : (nt,) bool; coord : (nt,) position in q or -1; E : (nt, n) maps q
    to the tree joints; S : (nt, nb) subtree matrix; joints : (n,) model.joints indices of
    the joint coordinates; names : (n,) coordinate names; cut_rows : rows of the cut joints
    and drives in model.compiled; free : body indices of floating roots (3 coordinates each,
    after the joint coordinates).
    """

    nt: int
    nb: int
    n: int
    placed: np.ndarray
    other: np.ndarray
    parent: np.ndarray
    sign: np.ndarray
    s_placed: np.ndarray
    s_other: np.ndarray
    angle0: np.ndarray
    axis: np.ndarray
    revolute: np.ndarray
    prismatic: np.ndarray
    coord: np.ndarray
    E: np.ndarray
    S: np.ndarray
    joints: tuple
    names: tuple
    cut_rows: np.ndarray
    free: tuple
    crow: np.ndarray = None         # (n,) tree row of each coordinate
    ST: np.ndarray = None           # S' (nb, nt), contiguous
    a_rev: np.ndarray = None        # sign * revolute, sign * prismatic, sign * angle0
    a_pri: np.ndarray = None
    s_angle0: np.ndarray = None
    rot_body: np.ndarray = None     # (3 nt,) placed, other, parent bodies
    rot_point: np.ndarray = None    # (3 nt, 2) s_placed, s_other, axis


@per_object
def tree_map(model):
    """The TreeMap of `model`. A body that no tree joint connects to the ground roots a
    floating subtree: it gets three coordinates x, y, phi of its own (two prismatic and one
    revolute pseudo-joint from the ground, turning about its centre of mass)."""
    nb = len(model.bodies)
    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = nb
    jidx = {j.name: k for k, j in enumerate(model.joints)}
    tree = [model.joint(name) for name in model.topology.tree_joints]
    placed_set = {"ground"}
    rows, via, free = [], {}, []        # via: body index -> row that placed it

    def place(j, pl, ot, s):
        sp, so = ((j.parent_point, j.child_point) if s > 0 else (j.child_point, j.parent_point))
        via[idx[ot]] = len(rows)
        rows.append((idx[pl], idx[ot], idx[j.parent], s, sp, so, j.angle0, j.axis, j.kind,
                     jidx[j.name]))
        placed_set.add(ot)

    roots = ["ground"] + [b.name for b in model.bodies]
    for root in roots:
        if root in placed_set and root != "ground":
            continue
        if root != "ground":                                  # a floating subtree
            b = idx[root]
            free.append(b)
            for axis, kind in (((1.0, 0.0), "prismatic"), ((0.0, 1.0), "prismatic"),
                               ((1.0, 0.0), "revolute")):
                via[b] = len(rows)
                rows.append((nb, b, nb, 1.0, (0.0, 0.0), (0.0, 0.0), 0.0, axis, kind, None))
            placed_set.add(root)
        grown = True
        while grown:                                          # tree joints reachable now
            grown = False
            for j in tree:
                if jidx[j.name] in {r[9] for r in rows}:
                    continue
                if j.parent in placed_set and j.child not in placed_set:
                    place(j, j.parent, j.child, 1.0)
                    grown = True
                elif j.child in placed_set and j.parent not in placed_set:
                    place(j, j.child, j.parent, -1.0)
                    grown = True
    nt = len(rows)
    cols = list(zip(*rows)) if rows else [()] * 10
    kind = np.array(cols[8], dtype=object)
    coord_joints = sorted(r[9] for r in rows if r[9] is not None
                          and r[8] in ("revolute", "prismatic"))
    pos = {k: i for i, k in enumerate(coord_joints)}
    names = [f"{model.joints[k].name}.{model.joints[k].coordinate}" for k in coord_joints]
    coord, nfree = [], 0
    for r in rows:
        if r[9] is None:
            coord.append(len(coord_joints) + nfree)
            nfree += 1
        else:
            coord.append(pos.get(r[9], -1))
    for b in free:
        names += [f"{model.bodies[b].name}.{c}" for c in ("x", "y", "phi")]
    coord = np.array(coord, dtype=np.intp)
    n = len(names)
    E = np.zeros((nt, n))
    has = coord >= 0
    E[np.nonzero(has)[0], coord[has]] = 1.0
    S = np.zeros((nt, nb))
    for b in range(nb):
        k = via[b]
        while True:
            S[k, b] = 1.0
            if rows[k][9] is None:                            # floating root: its 3 rows
                S[k - 2:k, b] = 1.0
                break
            up = rows[k][0]
            if up == nb:
                break
            k = via[up]
    cut = [r for name in model.topology.cut_joints
           for r in model.compiled.joint_rows[jidx[name]]]
    cut += [row for row, *_ in model.compiled.drives]
    arr = lambda v, dt=float: np.array(v, dtype=dt)  # noqa: E731
    tm = TreeMap(nt, nb, n, arr(cols[0], np.intp), arr(cols[1], np.intp),
                 arr(cols[2], np.intp), arr(cols[3]), arr(cols[4]).reshape(-1, 2),
                 arr(cols[5]).reshape(-1, 2), arr(cols[6]), arr(cols[7]).reshape(-1, 2),
                 kind == "revolute", kind == "prismatic", coord, E, S,
                 tuple(coord_joints), tuple(names), np.array(sorted(cut), dtype=np.intp),
                 tuple(free))
    crow = np.empty(n, dtype=np.intp)
    crow[coord[has]] = np.nonzero(has)[0]
    sign = tm.sign
    tm = replace(tm, crow=crow, ST=np.ascontiguousarray(S.T),
                 a_rev=sign * tm.revolute, a_pri=sign * tm.prismatic,
                 s_angle0=sign * tm.angle0,
                 rot_body=np.concatenate([tm.placed, tm.other, tm.parent]),
                 rot_point=np.concatenate([tm.s_placed, tm.s_other, tm.axis]))
    for a in (tm.placed, tm.other, tm.parent, tm.sign, tm.s_placed, tm.s_other, tm.angle0,
              tm.axis, tm.coord, tm.E, tm.S, tm.cut_rows, tm.crow, tm.ST, tm.a_rev, tm.a_pri,
              tm.s_angle0, tm.rot_body, tm.rot_point):
        a.setflags(write=False)
    return tm


def tree_coordinates(model):
    """Names of the tree joint coordinates q: '<joint>.angle' or '<joint>.position'."""
    if model.spatial:
        from .spatial.tree import tree_map as spatial_tree_map

        return spatial_tree_map(model).names
    return tree_map(model).names


def transform(model, q, qd):
    """x = T(q), xd = Tq qd, Tq = dT/dq and g = T_{,pq} qd_p qd_q.

    q, qd : (n,) tree coordinates and rates. Returns x (3 nb,), xd (3 nb,), Tq (3 nb, n),
    g (3 nb,) [m, rad; per s; per s^2].
    """
    tm = tree_map(model)
    nb, nt, n = tm.nb, tm.nt, tm.n
    if q.shape != (n,) or qd.shape != (n,):
        raise ValueError(f"model '{model.name}': expected q and qd of shape ({n},) "
                         f"{list(tm.names)}, received {q.shape} and {qd.shape}")
    qt, qdt = np.zeros(nt), np.zeros(nt)
    qt[tm.crow], qdt[tm.crow] = q, qd
    phi, w = np.zeros(nb + 1), np.zeros(nb + 1)
    phi[:nb] = tm.ST @ (tm.s_angle0 + tm.a_rev * qt)
    w[:nb] = tm.ST @ (tm.a_rev * qdt)
    ang = phi[tm.rot_body]                                  # placed, other, parent
    c, sn = np.cos(ang), np.sin(ang)
    px, py = tm.rot_point[:, 0], tm.rot_point[:, 1]
    Rx, Ry = c * px - sn * py, sn * px + c * py             # A(phi) s
    aplx, aply = Rx[:nt], Ry[:nt]
    aotx, aoty = Rx[nt:2 * nt], Ry[nt:2 * nt]
    axx, axy = Rx[2 * nt:], Ry[2 * nt:]
    slide = tm.a_pri * qt
    contrib = np.empty((nt, 2))
    contrib[:, 0] = aplx - aotx + slide * axx
    contrib[:, 1] = aply - aoty + slide * axy
    r = np.zeros((nb + 1, 2))
    r[:nb] = tm.ST @ contrib
    o = tm.other
    Px, Py = r[o, 0] + aotx, r[o, 1] + aoty                 # joint points
    cr = tm.crow
    Sc = tm.S[cr]                                           # (n, nb)
    ar, ap = tm.a_rev[cr, None], tm.a_pri[cr, None]
    Tq3 = np.empty((nb, 3, n))
    Tq3[:, 0, :] = (Sc * (ar * (Py[cr, None] - r[None, :nb, 1]) + ap * axx[cr, None])).T
    Tq3[:, 1, :] = (Sc * (ar * (r[None, :nb, 0] - Px[cr, None]) + ap * axy[cr, None])).T
    Tq3[:, 2, :] = (Sc * ar).T
    Tq = Tq3.reshape(3 * nb, n)
    xd = Tq @ qd
    v = np.zeros((nb + 1, 2))
    v[:nb] = xd.reshape(nb, 3)[:, :2]
    wo = w[o]
    c_rev = tm.a_rev * qdt
    c_pw = tm.a_pri * qdt * w[tm.parent]
    terms = np.empty((nt, 5))
    terms[:, 0] = c_rev
    terms[:, 1] = c_rev * (v[o, 0] - aoty * wo)             # c_rev * velocity of P
    terms[:, 2] = c_rev * (v[o, 1] + aotx * wo)
    terms[:, 3] = -c_pw * axy                               # c_pri omega_jp perp(axis)
    terms[:, 4] = c_pw * axx
    sums = tm.ST @ terms
    ax_ = v[:nb, 0] * sums[:, 0] - sums[:, 1]
    ay_ = v[:nb, 1] * sums[:, 0] - sums[:, 2]
    x = np.empty(3 * nb)
    x[0::3], x[1::3], x[2::3] = r[:nb, 0], r[:nb, 1], phi[:nb]
    g = np.zeros(3 * nb)
    g[0::3], g[1::3] = -ay_ + sums[:, 3], ax_ + sums[:, 4]
    return x, xd, Tq, g
