"""Spatial kinematics of body-fixed points and directions, vectorised over pairs of bodies.

Absolute coordinates per body: q_b = (r, p), r the centre of mass [m] and p the Euler
parameters (rotations.py); velocity coordinates q_b' = (r', p'). The ground is an extra body
at index nb with r = 0, p = (1, 0, 0, 0), so every primitive works on the extended vectors.

Each primitive is a `Term`: its value, its Jacobian J with respect to the 14 coordinates
[r_p, p_p, r_c, p_c] of a pair (columns `Pairs.cols`), its rate J q' and its convective
term conv = J' q' (so value'' = J q'' + conv, seed 000's D_{k,pq} q'_p q'_q). A point is
r + A(p) s and a direction A(p) a, both quadratic in p, so J is the exact derivative and
conv = 2 A(p') s. Constraint rows, joint coordinates and the elongations of force elements
are products of these (`dot`, `norm`, `angle`), composed by the product rule: one tested
set of functions serves all of them.
"""
from dataclasses import dataclass

import numpy as np

from . import rotations as rot

NQ = 7
_EYE3 = np.eye(3)


@dataclass(frozen=True, eq=False)
class Pairs:
    """k pairs (parent p, child c) of bodies; cols (k, 14) are the columns in the extended
    coordinate vector of [r_p, p_p, r_c, p_c]."""

    p: np.ndarray
    c: np.ndarray
    cols: np.ndarray

    @classmethod
    def make(cls, p, c):
        p = np.asarray(p, dtype=np.intp).reshape(-1)
        c = np.asarray(c, dtype=np.intp).reshape(-1)
        cols = np.concatenate([NQ * p[:, None] + np.arange(NQ),
                               NQ * c[:, None] + np.arange(NQ)], axis=1)
        for a in (p, c, cols):
            a.setflags(write=False)
        return cls(p, c, cols)

    def __len__(self):
        return len(self.p)


@dataclass(frozen=True, eq=False)
class Term:
    """val (k, ...) with J (k, ..., 14), rate (k, ...) and conv (k, ...)."""

    val: np.ndarray
    J: np.ndarray
    rate: np.ndarray
    conv: np.ndarray

    def __sub__(self, other):
        return Term(self.val - other.val, self.J - other.J, self.rate - other.rate,
                    self.conv - other.conv)

    def __add__(self, other):
        return Term(self.val + other.val, self.J + other.J, self.rate + other.rate,
                    self.conv + other.conv)

    def scale(self, c):
        return Term(c * self.val, c * self.J, c * self.rate, c * self.conv)


_LAST = [(None, None)]      # (key, Bodies), read and replaced as one tuple (threads)


def bodies(x_ext, xd_ext):
    """Bodies of (x_ext, xd_ext), reusing the last one for the same numbers (constraints and
    applied forces of one right-hand side evaluate the same state)."""
    key = x_ext.tobytes() + xd_ext.tobytes()
    last_key, last = _LAST[0]
    if last_key == key:
        return last
    B = Bodies(x_ext, xd_ext)
    _LAST[0] = (key, B)
    return B


class Bodies:
    """Per body of the extended vectors (ground last): r, p, r', p' and, computed once per
    evaluation, the rotation matrices A (nb + 1, 3, 3), their derivatives dA (nb + 1, 3, 3, 4)
    (dA[:, :, j, :] = d(A e_j)/dp) and A(p') (the quadratic form at p', for conv = 2 A(p') s).
    Every vector A s then costs one small product."""

    def __init__(self, x_ext, xd_ext):
        b, bd = x_ext.reshape(-1, NQ), xd_ext.reshape(-1, NQ)
        self.r, self.p, self.rd, self.pd = b[:, :3], b[:, 3:], bd[:, :3], bd[:, 3:]
        n = b.shape[0]
        unit = np.tile(np.eye(3), (n, 1))
        pp = np.repeat(self.p, 3, axis=0)
        self.A = rot.rotate(pp, unit).reshape(n, 3, 3).transpose(0, 2, 1)
        self.dA = rot.rotate_jacobian(pp, unit).reshape(n, 3, 3, 4).transpose(0, 2, 1, 3)
        self.Ad = rot.rotate(np.repeat(self.pd, 3, axis=0), unit).reshape(n, 3, 3) \
            .transpose(0, 2, 1)
        # the same, laid out for batched products with local vectors S (k, m, 3)
        self.At = np.ascontiguousarray(self.A.transpose(0, 2, 1))
        self.dA2 = np.ascontiguousarray(self.dA.transpose(0, 2, 1, 3)).reshape(n, 3, 12)
        self.Adt = np.ascontiguousarray(self.Ad.transpose(0, 2, 1))
        # A' = dA/dp p' (transposed): the rate of A s is S @ A'^T
        self.Arate_t = np.ascontiguousarray(
            np.einsum("nijq,nq->nji", self.dA, self.pd))


def vectors(pairs, bodies, side, S):
    """A s, d(A s)/dp, its rate and 2 A(p') s of m local vectors S (k, m, 3) per pair on the
    parent (side 0) or child (side 1): arrays (k, m, 3), (k, m, 3, 4), (k, m, 3), (k, m, 3)."""
    idx = pairs.p if side == 0 else pairs.c
    B = bodies
    k, m = S.shape[0], S.shape[1]
    As = S @ B.At[idx]
    Jp = (S @ B.dA2[idx]).reshape(k, m, 3, 4)
    rate = S @ B.Arate_t[idx]
    conv = 2.0 * (S @ B.Adt[idx])
    return idx, As, Jp, rate, conv


def _term(bodies, side, idx, As, Jp, rate, conv, point):
    k = As.shape[0]
    J = np.zeros((k, 3, 2 * NQ))
    o = side * NQ
    J[:, :, o + 3:o + 7] = Jp
    if point:
        J[:, :, o:o + 3] = _EYE3
        return Term(bodies.r[idx] + As, J, bodies.rd[idx] + rate, conv)
    return Term(As, J, rate, conv)


def vector(pairs, bodies, side, s, point):
    """Point r + A s (point=True) or direction A s of local vectors s (k, 3) on the parent
    (side 0) or child (side 1) of each pair: a Term of shape (k, 3). bodies : Bodies."""
    idx, As, Jp, rate, conv = vectors(pairs, bodies, side, s[:, None, :])
    return _term(bodies, side, idx, As[:, 0], Jp[:, 0], rate[:, 0], conv[:, 0], point)


def dot(a, b):
    """Scalar product of two vector Terms (k, 3): a Term (k,)."""
    val = (a.val * b.val).sum(axis=1)
    J = (b.val[:, None, :] @ a.J)[:, 0, :] + (a.val[:, None, :] @ b.J)[:, 0, :]
    rate = (a.rate * b.val + a.val * b.rate).sum(axis=1)
    conv = (a.conv * b.val + 2.0 * a.rate * b.rate + a.val * b.conv).sum(axis=1)
    return Term(val, J, rate, conv)


def norm(d):
    """Length |d| of a vector Term (k, 3): a Term (k,). Undefined at |d| = 0."""
    length = np.sqrt(np.einsum("ki,ki->k", d.val, d.val))
    e = d.val / length[:, None]
    J = np.einsum("ki,kij->kj", e, d.J)
    rate = np.einsum("ki,ki->k", e, d.rate)
    conv = (np.einsum("ki,ki->k", e, d.conv)
            + (np.einsum("ki,ki->k", d.rate, d.rate) - rate ** 2) / length)
    return Term(length, J, rate, conv)


def angle(c, s):
    """theta = atan2(s, c) of two scalar Terms: a Term (k,) with value in (-pi, pi]."""
    r2 = c.val ** 2 + s.val ** 2
    J = (c.val[:, None] * s.J - s.val[:, None] * c.J) / r2[:, None]
    rate = (c.val * s.rate - s.val * c.rate) / r2
    conv = ((c.val * s.conv - s.val * c.conv) / r2
            - 2.0 * rate * (c.val * c.rate + s.val * s.rate) / r2)
    return Term(np.arctan2(s.val, c.val), J, rate, conv)


def put(out, rows, cols, J):
    """Write Jacobian rows J (k, 14) into out[rows] at the pairs' columns (the two bodies of a
    pair differ, so no column repeats within a row)."""
    out[rows[:, None], cols] = J


def add(f, cols, values):
    """f[cols] += values with repeated columns summed (several items on one body)."""
    f += np.bincount(cols.reshape(-1), values.reshape(-1), minlength=f.shape[0])


class JointFrames:
    """The joint frames of k joints: points sp, sc (k, 3) and frames Fp, Fc (k, 3, 3) (columns
    x, y, z in body axes) on parent and child; they coincide at the reference pose. Gives the
    Terms the constraint rows and joint coordinates are made of."""

    def __init__(self, pairs, sp, sc, Fp, Fc, bodies):
        self.pairs, self.sp, self.sc, self.Fp, self.Fc = pairs, sp, sc, Fp, Fc
        self.bodies = bodies
        self._cache = {}

    def _side(self, side):
        """The joint point and the three frame axes of one side, in one batch."""
        key = ("side", side)
        if key not in self._cache:
            s, F = (self.sp, self.Fp) if side == 0 else (self.sc, self.Fc)
            S = np.concatenate([s[:, None, :], F.transpose(0, 2, 1)], axis=1)
            self._cache[key] = vectors(self.pairs, self.bodies, side, S)
        return self._cache[key]

    def _slot(self, side, m, point):
        idx, As, Jp, rate, conv = self._side(side)
        return _term(self.bodies, side, idx, As[:, m], Jp[:, m], rate[:, m], conv[:, m],
                     point)

    def axis(self, side, i):
        """Frame axis i (0, 1, 2: x, y, z) of the parent (side 0) or child (side 1)."""
        key = ("axis", side, i)
        if key not in self._cache:
            self._cache[key] = self._slot(side, i + 1, False)
        return self._cache[key]

    def d(self):
        """Point difference r_c(sc) - r_p(sp) (k, 3)."""
        if "d" not in self._cache:
            self._cache["d"] = self._slot(1, 0, True) - self._slot(0, 0, True)
        return self._cache["d"]

    def rotation_angle(self):
        """Angle of the child's x axis about the parent's z axis, from the parent's x axis."""
        xc = self.axis(1, 0)
        return angle(dot(self.axis(0, 0), xc), dot(self.axis(0, 1), xc))

    def small_rotation(self):
        """Small rotation vector of the child's frame relative to the parent's, parent axes:
        theta_x = (z_p . y_c - y_p . z_c) / 2 and cyclic; three Terms (k,)."""
        out = []
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            out.append((dot(self.axis(0, k), self.axis(1, j))
                        - dot(self.axis(0, j), self.axis(1, k))).scale(0.5))
        return out
