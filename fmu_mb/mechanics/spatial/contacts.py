"""Spatial contact gaps: the compiled contacts of a spatial model and their gap rows.

The same contract as the planar fmu_mb.mechanics.contacts: a gap D_c(x) >= 0 per contact, its
Jacobian Dc = dD_c/dx (nc, 7 nb) and convective term conv (gap'' = Dc xdd + conv), so that the
impact equations of fmu_mb.dynamics.impact (seed 000 eq. 20, Newton's restitution law) and its
persistent contacts apply unchanged. Plane contacts may carry Coulomb friction (their
tangential rows: fmu_mb.mechanics.friction); the others act along the gap's gradient only (the
line between two points, a joint's coordinate).

Kinds (model.Contact with 3-vectors):
- "point_plane": point sc of `body` (side 1) against the plane through point sp of `other`
  (side 0) with unit normal n (other's axes) pointing to the free side:
  gap = n . (r_c(sc) - r_p(sp)) - radius [m]; a sphere of that radius centred at the point;
- "point_point": points of `body` (a, side 0) and `other` (b, side 1), l = |r_b - r_a|:
  gap = side (l - distance) [m] (side +1 apart: an end stop; -1 within: a rope);
- "rim_plane": the end circle of a cylinder (radius = offset, centre `point`, unit `axis`, in
  `body`'s axes) against a plane fixed to the ground: its rim point moves on the body
  (fmu_mb.mechanics.spatial.rim);
- "joint_limit": coordinate q of a revolute (angle about z, (-pi, pi]) or prismatic (position
  along z) joint: gap = side (q - bound) [rad or m].
"""
from dataclasses import dataclass

import numpy as np

from . import kinematics as kin
from ..friction import tangent_basis
from .constraints import coordinate_term, extended, extended_rate
from .rim import compile_rims, rim_rows


@dataclass(frozen=True, eq=False)
class SpatialContactBlock:
    """Compiled spatial contacts, grouped by kind; pos arrays give the place in model.contacts
    order. pl: plane contacts (Group with sp/sc, normal (k, 3) in the plane body's axes,
    radius (k,)); pp: point pairs (Group, offset, side); lim: per joint kind ("revolute",
    "prismatic") a Group of the limited joints, bound, side."""

    n: int
    pl: object
    pl_normal: np.ndarray
    pl_radius: np.ndarray
    pl_pos: np.ndarray
    pp: object
    pp_offset: np.ndarray
    pp_side: np.ndarray
    pp_pos: np.ndarray
    lim: tuple                  # ((kind, Group, bound, side, pos), ...)
    restitution: np.ndarray     # (n,)
    reduction: np.ndarray       # (n,) bool, all False (no Reduction Method in 3-D)
    units: tuple
    friction: np.ndarray = None     # (n,) Coulomb's mu (0: frictionless); mechanics.friction
    pl_t1: np.ndarray = None        # (k, 3) tangent basis of the plane contacts, plane body axes
    pl_t2: np.ndarray = None
    rim: object = None              # rim contacts (a cylinder's end circle on a plane), rim.py
    pairs: object = None            # shape-pair contacts (two moving shapes), pairs.py


def compile_contacts(contacts, idx, joints, make_group):
    """SpatialContactBlock from the builder's Contact items (idx: body name -> index, the
    ground nb; joints: name -> Joint; make_group: compiled.make_group, passed in so that the
    two modules do not import each other)."""
    eye = np.eye(3)
    pl, pp, lim, units = [], [], {}, []
    for k, c in enumerate(contacts):
        if c.kind == "point_plane":
            pl.append(((c.other, c.body, c.other_point, c.point, eye, eye), c.normal,
                       c.offset, k))
            units.append("m")
        elif c.kind == "point_point":
            pp.append(((c.body, c.other, c.point, c.other_point, eye, eye), c.offset, c.side,
                       k))
            units.append("m")
        elif c.kind == "rim_plane":
            units.append("m")                # rows by rim.py (compile_rims)
        elif c.kind == "shape_pair":
            units.append("m")                # rows by pairs.py (compile_pairs)
        else:
            j = joints[c.joint]
            item = (j.parent, j.child, j.parent_point, j.child_point,
                    np.asarray(j.frame_p, float), np.asarray(j.frame_c, float))
            lim.setdefault(j.kind, []).append((item, c.offset, c.side, k))
            units.append("rad" if j.kind == "revolute" else "m")

    def ro(a, dtype=float):
        a = np.asarray(a, dtype=dtype)
        a.setflags(write=False)
        return a

    return SpatialContactBlock(
        len(contacts), make_group("point_plane", [it[0] for it in pl], idx),
        ro([it[1] for it in pl]).reshape(-1, 3), ro([it[2] for it in pl]),
        ro([it[3] for it in pl], np.intp),
        make_group("point_point", [it[0] for it in pp], idx), ro([it[1] for it in pp]),
        ro([it[2] for it in pp]), ro([it[3] for it in pp], np.intp),
        tuple((kind, make_group(kind, [it[0] for it in items], idx),
               ro([it[1] for it in items]), ro([it[2] for it in items]),
               ro([it[3] for it in items], np.intp)) for kind, items in lim.items()),
        ro([c.restitution for c in contacts]), ro(np.zeros(len(contacts)), bool),
        tuple(units), ro([float(c.friction) for c in contacts]),
        ro([tangent_basis(it[1])[0] for it in pl]).reshape(-1, 3),
        ro([tangent_basis(it[1])[1] for it in pl]).reshape(-1, 3),
        compile_rims(contacts, idx, tangent_basis), _compile_pairs(contacts, idx))


def contact_rows(model, x, xd):
    """Gaps of every contact at (x, xd): gap (nc,) [m or rad], Dc (nc, 7 nb) and conv (nc,)
    with gap'' = Dc xdd + conv."""
    Bk = model.compiled.contacts
    xe, xde = extended(x), extended_rate(xd)
    B = kin.bodies(xe, xde)
    gap, conv = np.zeros(Bk.n), np.zeros(Bk.n)
    Dc = np.zeros((Bk.n, xe.shape[0]))

    def put(pos, cols, term):
        gap[pos] = term.val
        kin.put(Dc, pos, cols, term.J)
        conv[pos] = term.conv

    if len(Bk.pl_pos):
        g = Bk.pl
        jf = g.frames(B)
        n = kin.vector(g.pairs, B, 0, Bk.pl_normal, False)
        term = kin.dot(n, jf.d())
        put(Bk.pl_pos, g.pairs.cols, kin.Term(term.val - Bk.pl_radius, term.J, term.rate,
                                              term.conv))
    if len(Bk.pp_pos):
        g = Bk.pp
        d = g.frames(B).d()
        with np.errstate(invalid="ignore", divide="ignore"):
            ln = kin.norm(d)
        if not np.all(d.val.any(axis=1)):   # coincident points: |d| = 0, no direction; the
            z = ~d.val.any(axis=1)          # gap is defined, its rows are set to zero
            ln.J[z], ln.rate[z], ln.conv[z] = 0.0, 0.0, 0.0
        s = Bk.pp_side
        put(Bk.pp_pos, g.pairs.cols, kin.Term(s * (ln.val - Bk.pp_offset), s[:, None] * ln.J,
                                              s * ln.rate, s * ln.conv))
    for kind, g, bound, s, pos in Bk.lim:
        q = coordinate_term(kind, g.frames(B))
        put(pos, g.pairs.cols, kin.Term(s * (q.val - bound), s[:, None] * q.J, s * q.rate,
                                        s * q.conv))
    if Bk.rim is not None:
        rr = rim_rows(Bk.rim, x, xd)
        gap[rr.pos], conv[rr.pos] = rr.gap, rr.conv
        for j, (i, b) in enumerate(zip(rr.pos, rr.body)):
            Dc[i, 7 * b:7 * b + 7] = rr.J[j]
    if Bk.pairs is not None:
        from .pairs import pair_rows     # (only models with shape pairs load it)
        pr = pair_rows(Bk.pairs, x, xd)
        gap[pr.pos], conv[pr.pos] = pr.gap, pr.conv
        for j, i in enumerate(pr.pos):
            Dc[i, 7 * pr.ba[j]:7 * pr.ba[j] + 7] += pr.J[j, 0]
            Dc[i, 7 * pr.bb[j]:7 * pr.bb[j] + 7] += pr.J[j, 1]
    return gap, Dc[:, :-kin.NQ], conv


def _compile_pairs(contacts, idx):
    """pairs.compile_pairs, loaded only for models with shape-pair contacts."""
    if not any(c.kind == "shape_pair" for c in contacts):
        return None
    from .pairs import compile_pairs
    return compile_pairs(contacts, idx)
