"""Contact gap geometry: the compiled contacts (ContactBlock) and the gap rows.

Gap D_c(x) >= 0 per contact with Jacobian Dc = dD_c/dx and convective term conv (gap'' =
Dc xdd + conv), built from the vectorised primitives of kinematics.py, in absolute coordinates
x. The impact equations that use them are in fmu_mb.dynamics.impact.
"""
from dataclasses import dataclass

import numpy as np

from . import kinematics as kin
from . import constraints
from .kinematics import PairSet
from .planar_pairs import compile_pairs, pair_rows


@dataclass(frozen=True, eq=False)
class ContactBlock:
    """Compiled contacts (index arrays); pos arrays give the place in model.contacts order."""

    n: int
    pl: PairSet                 # point-line: p = line body, c = point body
    pl_w0: np.ndarray           # (k, 2) normals in the line body's frame
    pl_offset: np.ndarray       # (k,) radii
    pl_pos: np.ndarray
    pp: PairSet                 # point-point
    pp_offset: np.ndarray       # (k,) distances
    pp_side: np.ndarray         # (k,) +1 apart, -1 within
    pp_pos: np.ndarray
    ja: PairSet                 # revolute limits: relative angle
    ja_offset: np.ndarray       # angle0 + bound
    ja_side: np.ndarray
    ja_pos: np.ndarray
    jp: PairSet                 # prismatic limits: projection on the axis
    jp_w0: np.ndarray
    jp_offset: np.ndarray
    jp_side: np.ndarray
    jp_pos: np.ndarray
    restitution: np.ndarray     # (n,)
    reduction: np.ndarray       # (n,) bool: handled by the Reduction Method
    units: tuple                # per contact: unit of the gap ("m" or "rad")
    friction: np.ndarray = None  # (n,) Coulomb's mu (0: frictionless); mechanics.friction
    pairs: object = None        # shape-pair contacts (two moving shapes), planar_pairs.py


def compile_contacts(contacts, idx, joints):
    """ContactBlock from the builder's Contact items (idx: body name -> index)."""
    if not contacts:
        return None
    groups = {"pl": [], "pp": [], "ja": [], "jp": []}
    units = []
    for k, c in enumerate(contacts):
        if c.kind == "point_line":
            groups["pl"].append((idx[c.other], idx[c.body], c.other_point, c.point, c.normal,
                                 c.offset, 1.0, k))
            units.append("m")
        elif c.kind == "shape_pair":
            units.append("m")                # rows by planar_pairs.py (compile_pairs)
        elif c.kind == "point_point":
            groups["pp"].append((idx[c.body], idx[c.other], c.point, c.other_point, (0, 0),
                                 c.offset, c.side, k))
            units.append("m")
        else:
            j = joints[c.joint]
            if j.kind == "revolute":
                groups["ja"].append((idx[j.parent], idx[j.child], (0, 0), (0, 0), (0, 0),
                                     j.angle0 + c.offset, c.side, k))
                units.append("rad")
            else:
                groups["jp"].append((idx[j.parent], idx[j.child], j.parent_point,
                                     j.child_point, j.axis, c.offset, c.side, k))
                units.append("m")

    def ps(g):
        items = groups[g]
        if not items:
            return PairSet.make([], [], np.zeros((0, 2)), np.zeros((0, 2)))
        p, c, sp, sc = zip(*[it[:4] for it in items])
        return PairSet.make(p, c, sp, sc)

    def col(g, i, dtype=float):
        a = np.array([it[i] for it in groups[g]], dtype=dtype)
        if i == 4:
            a = a.reshape(-1, 2)
        a.setflags(write=False)
        return a

    return ContactBlock(
        len(contacts), ps("pl"), col("pl", 4), col("pl", 5), col("pl", 7, np.intp),
        ps("pp"), col("pp", 5), col("pp", 6), col("pp", 7, np.intp),
        ps("ja"), col("ja", 5), col("ja", 6), col("ja", 7, np.intp),
        ps("jp"), col("jp", 4), col("jp", 5), col("jp", 6), col("jp", 7, np.intp),
        np.array([c.restitution for c in contacts]),
        np.array([c.method == "reduction" for c in contacts]), tuple(units),
        np.array([float(c.friction) for c in contacts]), compile_pairs(contacts, idx))


def contact_rows(model, x, xd):
    """Gaps of every contact at (x, xd).

    Returns gap (nc,) [m or rad], Dc (nc, 3 nb) and conv (nc,) with gap'' = Dc xdd + conv.
    """
    if model.compiled.spatial:
        from .spatial.contacts import contact_rows as rows3   # a planar model never loads it
        return rows3(model, x, xd)
    B = model.compiled.contacts
    n = 3 * model.compiled.nb
    gap, conv = np.zeros(B.n), np.zeros(B.n)
    Dc = np.zeros((B.n, n + 3))
    xe, xde = constraints.extended(model, x), constraints.extended(model, xd)

    def put(pos, cols, val, J, cv):
        gap[pos] = val
        Dc[pos[:, None], cols] = J
        conv[pos] = cv

    if len(B.pl):
        val, J, cv = kin.projection(B.pl, xe, xde, B.pl_w0)
        put(B.pl_pos, B.pl.cols, val - B.pl_offset, J, cv)
    if len(B.pp):
        val, J, cv = kin.distance(B.pp, xe, xde)
        s = B.pp_side
        put(B.pp_pos, B.pp.cols, s * (val - B.pp_offset), s[:, None] * J, s * cv)
    if len(B.ja):
        val, J, cv = kin.relative_angle(B.ja, xe, xde)
        s = B.ja_side
        put(B.ja_pos, B.ja.cols, s * (val - B.ja_offset), s[:, None] * J, s * cv)
    if len(B.jp):
        val, J, cv = kin.projection(B.jp, xe, xde, B.jp_w0)
        s = B.jp_side
        put(B.jp_pos, B.jp.cols, s * (val - B.jp_offset), s[:, None] * J, s * cv)
    if B.pairs is not None:          # shape pairs: the contact points move on both bodies
        pr = pair_rows(B.pairs, x, xd)
        for j, i in enumerate(pr.pos):
            gap[i], conv[i] = pr.gap[j], pr.conv[j]
            Dc[i, 3 * pr.ba[j]:3 * pr.ba[j] + 3] += pr.J[j, 0]
            Dc[i, 3 * pr.bb[j]:3 * pr.bb[j] + 3] += pr.J[j, 1]
    return gap, Dc[:, :n], conv


def gaps(model, x):
    """Gap values only (nc,) [m or rad]."""
    return contact_rows(model, x, np.zeros_like(x))[0]
