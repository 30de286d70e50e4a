"""Spatial tree joint coordinates: x = T(q) along the spanning tree, its Jacobian Tq and the
convective term g = (d/dt Tq) qd (seed 001: relative kinematics, kinematic differentials).

Coordinates q per tree joint (declared order), then per floating root body:

- revolute: `J.angle` theta about the joint z axis;
- prismatic: `J.position` s along z;
- cylindrical: `J.angle`, `J.position`;
- universal: `J.angle1` about the parent's z axis, `J.angle2` about the child's z axis
  (p_rel = qz(angle1) U qz(angle2), U the constant quarter-turn frame change that takes the
  child's z axis to the parent's x axis: angle1 = 0 is not the reference pose);
- spherical: `J.e0 .. J.e3`, the Euler parameters of the child joint frame relative to the
  parent joint frame, with the normalisation row p_rel . p_rel = 1;
- weld: none;
- floating root (no tree joint to the ground): `B.x .y .z .e0 .. .e3`, its absolute (r, p)
  with the normalisation row.

Why Euler parameters for the spherical and floating joints: A(p) is quadratic in p, so the
chain p_child = p_parent (x) f_p (x) p_rel (x) f_c* (quaternion products, bilinear) and
r = r_parent + A(p) s are polynomials in q: Tq and g are exact, there is no singular pose (a
rotation vector or Cardan angles have one), and the norm is one constraint row that the
projection keeps, as the body Euler parameters of newton_euler. Its qd is the time derivative
of q, so the integrators and the FMU state are unchanged.

Each quantity is carried as a jet (value v, Jacobian J = dv/dq, rate v' = J qd, conv
c = (d/dt J) qd, so v'' = J qdd + c); quaternion products and rotations are bilinear and the
jets follow the product rule. Per tree joint from the placed body X to the other body Y:

    forward (X the joint's parent):  p_Y = p_X (x) f_X (x) s p_rel (x) f_Y*
                                     r_Y = r_X + A(p_X) (s_X + F_X d) - A(p_Y) s_Y
    reverse (X the joint's child):   p_Y = p_X (x) f_X (x) s p_rel* (x) f_Y*
                                     r_Y = r_X + A(p_X) s_X - A(p_Y) (s_Y + F_Y d)

with f the Euler parameters of the joint frames F (body axes), d the joint translation in the
parent joint frame and s = +-1 fixed once so that T(q0) reproduces the assembled Euler
parameters' sign.
"""
import heapq
from dataclasses import dataclass

import numpy as np

from ...errors import AssemblyError
from ...memo import per_object
from . import rotations as rot

NQ = 7
#: coordinates of each joint kind (floating roots: 7)
NCOORD = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2, "spherical": 4,
          "weld": 0, "free": 7}
_NAMES = {"revolute": ("angle",), "prismatic": ("position",),
          "cylindrical": ("angle", "position"), "universal": ("angle1", "angle2"),
          "spherical": ("e0", "e1", "e2", "e3"), "weld": (),
          "free": ("x", "y", "z", "e0", "e1", "e2", "e3")}
#: U of the universal joint: takes e3 to e1 and e1 to e3 (a half turn about (1, 0, 1)/sqrt 2)
_U = np.array([0.0, 1.0, 0.0, 1.0]) / np.sqrt(2.0)
_ONE = np.array([1.0, 0.0, 0.0, 0.0])


def _left(a):
    """L(a) (4, 4) with a (x) b = L(a) b."""
    a0, a1, a2, a3 = a
    return np.array([[a0, -a1, -a2, -a3], [a1, a0, -a3, a2], [a2, a3, a0, -a1],
                     [a3, -a2, a1, a0]])


def _right(b):
    """R(b) (4, 4) with a (x) b = R(b) a."""
    b0, b1, b2, b3 = b
    return np.array([[b0, -b1, -b2, -b3], [b1, b0, b3, -b2], [b2, -b3, b0, b1],
                     [b3, b2, -b1, b0]])


_CONJ = np.array([1.0, -1.0, -1.0, -1.0])


class Jet:
    """A quantity with its derivatives, packed in X (d, n + 3): column 0 the value v, columns
    1..n the Jacobian J = dv/dq, column n + 1 the rate v' = J qd, column n + 2 the convective
    part c = (d/dt J) qd (so v'' = J qdd + c). Constants are plain arrays (d,)."""

    __slots__ = ("X",)

    def __init__(self, X):
        self.X = X

    @property
    def v(self):
        return self.X[:, 0]

    @property
    def J(self):
        return self.X[:, 1:-2]

    @property
    def r(self):
        return self.X[:, -2]

    @property
    def c(self):
        return self.X[:, -1]

    def conj(self):
        return Jet(_CONJ[:, None] * self.X)

    def __add__(self, o):
        if isinstance(o, Jet):
            return Jet(self.X + o.X)
        X = self.X.copy()
        X[:, 0] += o
        return Jet(X)

    def __sub__(self, o):
        return Jet(self.X - o.X)

    def scaled(self, k):
        return Jet(k * self.X)


def const(v, n):
    v = np.asarray(v, float)
    X = np.zeros((v.shape[0], n + 3))
    X[:, 0] = v
    return Jet(X)


def qmul(a, b):
    """The jet of the quaternion product a (x) b (either a Jet or a constant (4,))."""
    if not isinstance(a, Jet):
        return Jet(_left(a) @ b.X)
    if not isinstance(b, Jet):
        return Jet(_right(b) @ a.X)
    av, bv = a.X[:, 0], b.X[:, 0]
    X = _right(bv) @ a.X + _left(av) @ b.X
    X[:, 0] *= 0.5                                     # the value appears in both terms
    X[:, -1] += 2.0 * (_left(a.X[:, -2]) @ b.X[:, -2])
    return Jet(X)


def _matrix(p):
    """A(p) (3, 3), the quadratic form (any p)."""
    e0, e1, e2, e3 = p
    return np.array([
        [e0 * e0 + e1 * e1 - e2 * e2 - e3 * e3, 2 * (e1 * e2 - e0 * e3), 2 * (e1 * e3 + e0 * e2)],
        [2 * (e1 * e2 + e0 * e3), e0 * e0 - e1 * e1 + e2 * e2 - e3 * e3, 2 * (e2 * e3 - e0 * e1)],
        [2 * (e1 * e3 - e0 * e2), 2 * (e2 * e3 + e0 * e1), e0 * e0 - e1 * e1 - e2 * e2 + e3 * e3]])


def _jac_full(p, s):
    """d(A(p) s)/dp (3, 4) of the quadratic form (rotations.rotate_jacobian for one p)."""
    e0, e = p[0], p[1:]
    s1, s2, s3 = s
    J = np.empty((3, 4), dtype=np.result_type(p, s))
    J[:, 0] = 2.0 * (e0 * np.asarray(s) + np.array([e[1] * s3 - e[2] * s2, e[2] * s1 - e[0] * s3,
                                                     e[0] * s2 - e[1] * s1]))
    st = np.array([[0.0, -s3, s2], [s3, 0.0, -s1], [-s2, s1, 0.0]])
    J[:, 1:] = 2.0 * ((e @ s) * np.eye(3) + np.outer(e, s) - np.outer(s, e) - e0 * st)
    return J


def rotate(p, s):
    """The jet of A(p) s (p a jet, s a jet or a constant (3,)): A(p) is quadratic in p, so
    d/dp (A(p) s) p = 2 A(p) s and the convective part is
    Jac(p, s) p_c + 2 A(p') s + 2 Jac(p, s') p' + A(p) s_c."""
    pv, pr = p.X[:, 0], p.X[:, -2]
    A = _matrix(pv)
    if not isinstance(s, Jet):
        Jp = _jac_full(pv, s)
        X = Jp @ p.X
        X[:, 0] = A @ s
        X[:, -1] += 2.0 * (_matrix(pr) @ s)
        return Jet(X)
    sv, sr = s.X[:, 0], s.X[:, -2]
    X = _jac_full(pv, sv) @ p.X + A @ s.X
    X[:, 0] = A @ sv
    X[:, -1] += 2.0 * (_matrix(pr) @ sv + _jac_full(pv, sr) @ pr)
    return Jet(X)


def _coord(q, qd, i, n):
    X = np.zeros((1, n + 3), dtype=np.result_type(q, qd))
    X[0, 0], X[0, 1 + i], X[0, -2] = q[i], 1.0, qd[i]
    return Jet(X)


def _half_angle_quat(th):
    """qz(theta) = (cos theta/2, 0, 0, sin theta/2) as a jet of a scalar jet theta."""
    t = th.X[0]
    h = 0.5 * t[0]
    c, s = np.cos(h), np.sin(h)
    w = 0.5 * t[-2]
    X = np.zeros((4, t.shape[0]), dtype=t.dtype)
    X[0], X[3] = -0.5 * s * t, 0.5 * c * t
    X[0, 0], X[3, 0] = c, s
    X[0, -1] = -c * w * w - 0.5 * s * t[-1]
    X[3, -1] = -s * w * w + 0.5 * c * t[-1]
    return Jet(X)


def _along_z(s):
    X = np.zeros((3, s.X.shape[1]), dtype=s.X.dtype)
    X[2] = s.X[0]
    return Jet(X)


def _block(q, qd, o, k, n):
    X = np.zeros((k, n + 3), dtype=np.result_type(q, qd))
    X[:, 0], X[:, -2] = q[o:o + k], qd[o:o + k]
    X[np.arange(k), 1 + o + np.arange(k)] = 1.0
    return Jet(X)


def relative(kind, q, qd, o, n):
    """(p_rel, d) jets of a joint of `kind` whose coordinates start at q[o]."""
    zero3 = const(np.zeros(3), n)
    if kind == "revolute":
        return _half_angle_quat(_coord(q, qd, o, n)), zero3
    if kind == "prismatic":
        return const(_ONE, n), _along_z(_coord(q, qd, o, n))
    if kind == "cylindrical":
        return _half_angle_quat(_coord(q, qd, o, n)), _along_z(_coord(q, qd, o + 1, n))
    if kind == "universal":
        a = _half_angle_quat(_coord(q, qd, o, n))
        b = _half_angle_quat(_coord(q, qd, o + 1, n))
        return qmul(qmul(a, _U), b), zero3
    if kind == "spherical":
        return _block(q, qd, o, 4, n), zero3
    if kind == "weld":
        return const(_ONE, n), zero3
    if kind == "free":
        return _block(q, qd, o + 3, 4, n), _block(q, qd, o, 3, n)
    raise ValueError(kind)


@dataclass(frozen=True, eq=False)
class SpatialTreeMap:
    """Constant data of the spatial spanning tree. rows: per tree joint (placement order) a
    tuple (kind, X, Y, forward, sX, sY, fX, fY, FX or FY (the frame d is measured in), offset
    of its coordinates in q, sign); n coordinates named `names`; `joints` the model.joints
    index of each row (-1: floating root); norm: offsets of the Euler-parameter coordinate
    sets (one normalisation row each); cut_rows: compiled rows of cut joints, drives and
    couplers."""

    nb: int
    n: int
    rows: tuple
    names: tuple
    joints: tuple
    norm: np.ndarray
    cut_rows: np.ndarray


def _frame_quat(F):
    return rot.from_matrix(np.asarray(F, float))


@per_object
def tree_map(model):
    """The SpatialTreeMap of a spatial model (the spanning tree of model.topology)."""
    nb = len(model.bodies)
    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = nb
    jidx = {j.name: k for k, j in enumerate(model.joints)}
    tree = [model.joints[jidx[name]] for name in model.topology.tree_joints]
    order = _placement_order(tree, [b.name for b in model.bodies])
    # coordinates: tree joints in declared order, then the floating roots
    offset, names, o = {}, [], 0
    in_order = {id(r[0]) for r in order}
    for k, j in enumerate(model.joints):
        if id(j) in in_order:
            offset[j.name] = o
            names += [f"{j.name}.{c}" for c in _NAMES[j.kind]]
            o += NCOORD[j.kind]
    rows, joints, norm = [], [], []
    for j, X, Y, fwd in order:
        if j is None:
            offset[("free", Y)] = o
            names += [f"{Y}.{c}" for c in _NAMES["free"]]
            norm.append(o + 3)
            rows.append(("free", idx[X], idx[Y], True, np.zeros(3), np.zeros(3), _ONE, _ONE,
                         np.eye(3), o, 1.0))
            joints.append(-1)
            o += 7
            continue
        Fp, Fc = np.asarray(j.frame_p, float), np.asarray(j.frame_c, float)
        sp, sc = np.asarray(j.parent_point, float), np.asarray(j.child_point, float)
        if fwd:
            sX, sY, fX, fY, Fd = sp, sc, _frame_quat(Fp), _frame_quat(Fc), Fp
        else:
            sX, sY, fX, fY, Fd = sc, sp, _frame_quat(Fc), _frame_quat(Fp), Fp
        if j.kind == "spherical":
            norm.append(offset[j.name])
        rows.append((j.kind, idx[X], idx[Y], fwd, sX, sY, fX, fY, Fd, offset[j.name], 1.0))
        joints.append(jidx[j.name])
    cut = [r for name in model.topology.cut_joints
           for r in model.compiled.joint_rows[jidx[name]]]
    cut += [row for row, *_ in model.compiled.drives]
    cut += [row for row, *_ in model.compiled.couplers]
    tm = SpatialTreeMap(nb, o, tuple(rows), tuple(names), tuple(joints),
                        np.array(norm, dtype=np.intp), np.array(sorted(cut), dtype=np.intp))
    return _fix_signs(model, tm)


def _row(j, placed):
    """(j, X, Y, forward) of tree joint j that places its body Y from its placed body X, or
    None unless exactly one of its bodies is placed."""
    if j.parent in placed and j.child not in placed:
        return (j, j.parent, j.child, True)
    if j.child in placed and j.parent not in placed:
        return (j, j.child, j.parent, False)
    return None


def _placement_order(tree, bodies):
    """The rows' order [(joint or None, X, Y, forward)]: grown from the ground, then from each
    body (in `bodies` order) that is not placed yet as a floating root (joint None). Growing
    means passes over `tree` (the tree joints, in order) until one places nothing, each joint
    with one of its bodies placed and the other not placing the other as it is met (a body
    placed by a joint is usable by the joints after it in the same pass). Computed without
    the passes: a joint becomes placeable when the first of its bodies is placed, at pass p
    and tree index i; it is then met at (p, its index) when its index is after i, at
    (p + 1, its index) otherwise, and the joints are taken in that order (a heap)."""
    adj = {}
    for k, j in enumerate(tree):
        adj.setdefault(j.parent, []).append(k)
        adj.setdefault(j.child, []).append(k)
    order, placed, done = [], {"ground"}, set()
    for root in ["ground"] + list(bodies):
        if root in placed and root != "ground":
            continue
        if root != "ground":
            order.append((None, "ground", root, True))
            placed.add(root)
        heap = [(0, k) for k in adj.get(root, ())]
        heapq.heapify(heap)
        while heap:
            p, k = heapq.heappop(heap)
            if k in done:
                continue
            row = _row(tree[k], placed)
            if row is None:
                continue
            order.append(row)
            done.add(k)
            y = row[2]
            placed.add(y)
            for m in adj.get(y, ()):
                if m not in done:
                    heapq.heappush(heap, (p if m > k else p + 1, m))
    return order


def armature_diagonal(model, tm=None):
    """(n,) the armature of each tree coordinate (a revolute or prismatic joint's
    Joint.armature on its coordinate; 0 elsewhere), added to Mbar's diagonal."""
    tm = tree_map(model) if tm is None else tm
    out = np.zeros(tm.n)
    for j in model.joints:
        if j.armature:
            name = f"{j.name}.{_NAMES[j.kind][0]}"
            out[tm.names.index(name)] = j.armature
    return out


def _fix_signs(model, tm):
    """Choose the sign of each p_rel so that T(q0) gives the assembled Euler parameters
    themselves (not their negatives, the same rotation)."""
    q0 = initial_coordinates(model, tm)
    rows = list(tm.rows)
    X0 = model.x0.reshape(tm.nb, NQ)
    # the Euler parameters of T(q0) once: flipping row k negates the Euler parameters of its
    # body and of every body placed after it from that body (the quaternion products are
    # linear in each factor, and negation is exact in floating point), the positions not at
    # all; mult tracks that
    p = _orientations(tm, q0)
    mult = {tm.nb: 1.0}
    for k, row in enumerate(rows):
        X, Y = row[1], row[2]
        m = mult.get(X, 1.0)
        if m * (p[Y] @ X0[Y, 3:]) < 0:
            rows[k] = row[:-1] + (-row[-1],)
            m = -m
        mult[Y] = m
    return SpatialTreeMap(tm.nb, tm.n, tuple(rows), tm.names, tm.joints, tm.norm, tm.cut_rows)


def _pose(X, b, nb):
    if b == nb:
        return np.zeros(3), _ONE
    return X[b, :3], X[b, 3:]


def initial_coordinates(model, tm):
    """q of the assembled pose model.x0: per joint from the relative pose of its frames."""
    X = model.x0.reshape(tm.nb, NQ)
    q = np.zeros(tm.n)
    # the rotation matrices of every body (index nb: the ground) and of each row's child
    # joint frame, each set in one vectorised call (row for row the same numbers as one
    # call per matrix: rotations.matrix is elementwise over its leading axis)
    A = rot.matrix(np.vstack([X[:, 3:], _ONE[None]]))
    frames = [r[7] if r[3] else r[6] for r in tm.rows]
    F = rot.matrix(np.array(frames, float).reshape(-1, 4))
    for k, (kind, Xb, Yb, fwd, sX, sY, fX, fY, Fd, o, _) in enumerate(tm.rows):
        if kind == "free":
            q[o:o + 7] = X[Yb]
            continue
        P, C = (Xb, Yb) if fwd else (Yb, Xb)
        sp, sc = (sX, sY) if fwd else (sY, sX)
        Fp = Fd
        rP, _ = _pose(X, P, tm.nb)
        rC, _ = _pose(X, C, tm.nb)
        Ap, Ac, Fc = A[P], A[C], F[k]
        R = (Ap @ Fp).T @ (Ac @ Fc)
        d = (Ap @ Fp).T @ (rC + Ac @ sc - rP - Ap @ sp)
        if kind in ("revolute", "cylindrical"):
            q[o] = np.arctan2(R[1, 0], R[0, 0])
        if kind == "prismatic":
            q[o] = d[2]
        if kind == "cylindrical":
            q[o + 1] = d[2]
        if kind == "spherical":
            q[o:o + 4] = rot.from_matrix(R)
        if kind == "universal":
            a1 = np.arctan2(R[1, 2], R[0, 2])
            U = rot.matrix(_U[None])[0]
            c, s = np.cos(a1), np.sin(a1)
            Rz1 = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
            M2 = U.T @ Rz1.T @ R
            q[o], q[o + 1] = a1, np.arctan2(M2[1, 0], M2[0, 0])
    # round-off of the frame products (1e-16) is no coordinate: an exact reference pose gives
    # exact zeros (the integrator's first-step estimate scales with |q|)
    q[np.abs(q) < 1e-13] = 0.0
    return q


def _qprod(a, b):
    """The quaternion product a (x) b of two (4,) sequences, as a tuple of floats."""
    a0, a1, a2, a3 = a
    b0, b1, b2, b3 = b
    return (a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3, a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
            a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1, a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0)


def _qz(theta):
    h = 0.5 * float(theta)
    return (np.cos(h), 0.0, 0.0, np.sin(h))


def _orientations(tm, q):
    """(nb, 4) the Euler parameters of the bodies at T(q): the values of _transform's
    quaternion chain p_Y = p_X (x) f_X (x) s p_rel (x) f_Y* alone (no positions, no
    derivatives), for the signs of _fix_signs."""
    pose = {tm.nb: (1.0, 0.0, 0.0, 0.0)}
    out = np.zeros((tm.nb, 4))
    for kind, Xb, Yb, fwd, sX, sY, fX, fY, Fd, o, sign in tm.rows:
        if kind in ("revolute", "cylindrical"):
            prel = _qz(q[o])
        elif kind == "universal":
            prel = _qprod(_qprod(_qz(q[o]), _U), _qz(q[o + 1]))
        elif kind == "spherical":
            prel = tuple(q[o:o + 4])
        elif kind == "free":
            prel = tuple(q[o + 3:o + 7])
        else:                                   # prismatic, weld
            prel = (1.0, 0.0, 0.0, 0.0)
        if sign < 0:
            prel = tuple(-v for v in prel)
        if kind == "free":
            pY = prel
        else:
            if not fwd:
                prel = (prel[0], -prel[1], -prel[2], -prel[3])
            pY = _qprod(_qprod(_qprod(pose[Xb], fX), prel), _CONJ * fY)
        pose[Yb] = pY
        out[Yb] = pY
    return out


def transform(model, q, qd):
    """x = T(q) (7 nb,), xd = Tq qd, Tq (7 nb, n), g = (d/dt Tq) qd of a spatial model."""
    tm = tree_map(model)
    if q.shape != (tm.n,) or qd.shape != (tm.n,):
        raise ValueError(f"model '{model.name}': expected q and qd of shape ({tm.n},) "
                         f"{list(tm.names)}, received {q.shape} and {qd.shape}")
    return _transform(tm, q, qd)


def _transform(tm, q, qd, upto=None):
    nb, n = tm.nb, tm.n
    ground = (const(np.zeros(3), n), const(_ONE, n))
    pose = {nb: ground}
    dt = np.result_type(q, qd)          # complex q: fmu_mb.dynamics.formulations.lagrange
    x, xd = np.zeros(NQ * nb, dt), np.zeros(NQ * nb, dt)
    Tq, g = np.zeros((NQ * nb, n), dt), np.zeros(NQ * nb, dt)
    for kind, Xb, Yb, fwd, sX, sY, fX, fY, Fd, o, sign in tm.rows[:upto]:
        prel, d = relative(kind, q, qd, o, n)
        rX, pX = pose[Xb]
        if sign < 0:
            prel = prel.scaled(-1.0)
        if kind == "free":
            pY, rY = prel, d
        else:
            if not fwd:
                prel = prel.conj()
            pY = qmul(qmul(qmul(pX, fX), prel), _CONJ * fY)
            dd = _rot_const(Fd, d)
            if fwd:
                rY = rX + rotate(pX, dd + sX) - rotate(pY, sY)
            else:
                rY = rX + rotate(pX, sX) - rotate(pY, dd + sY)
        pose[Yb] = (rY, pY)
        sl = slice(NQ * Yb, NQ * Yb + NQ)
        x[sl] = np.concatenate([rY.v, pY.v])
        xd[sl] = np.concatenate([rY.r, pY.r])
        Tq[sl] = np.vstack([rY.J, pY.J])
        g[sl] = np.concatenate([rY.c, pY.c])
    return x, xd, Tq, g


def _rot_const(F, d):
    """F d for a constant matrix F and a vector jet d."""
    return Jet(F @ d.X)


def check_assembly(model, q0):
    tm = tree_map(model)
    x, _, _, _ = _transform(tm, q0, np.zeros(tm.n))
    err = np.abs(x - model.x0).max(initial=0.0)
    if err > 1e-8 * (1.0 + np.abs(model.x0).max(initial=0.0)):
        raise AssemblyError(f"model '{model.name}': T(q0) does not reproduce the assembled "
                            f"pose (error {err:.3g})")
