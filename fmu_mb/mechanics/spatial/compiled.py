"""The compiled block of a spatial model: index arrays and joint frames grouped by kind, so
that constraints.py and elements.py evaluate every item of a kind in one vectorised call.
Built once by the ModelBuilder (compile_spatial) from the declared items."""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from . import kinematics as kin
from .constraints import ROWS
from .inertia import max_abs_eigenvalue

#: the joint coordinates of each kind: "revolute" an angle, "prismatic" a position
COORDINATES = {"revolute": ("revolute",), "prismatic": ("prismatic",),
               "cylindrical": ("revolute", "prismatic"),
               "universal": ("universal1", "universal2")}


@dataclass(frozen=True, eq=False)
class Group:
    """k items of one kind between pairs of bodies with a frame on each side.

    pairs : kinematics.Pairs; sp, sc : (k, 3) points [m]; Fp, Fc : (k, 3, 3) frames (columns
    x, y, z, body axes); rows : (k, r) constraint rows (or coordinate positions); length :
    (k,) distance-joint length or coordinate offset; names : item names; force elements: k, c,
    e0 (free value), u (input index or -1); bushings: K, C (k, 6, 6), e0 (k, 6).
    """

    kind: str
    pairs: kin.Pairs
    sp: np.ndarray
    sc: np.ndarray
    Fp: np.ndarray
    Fc: np.ndarray
    rows: np.ndarray = None
    length: np.ndarray = None
    names: tuple = ()
    k: np.ndarray = None
    c: np.ndarray = None
    e0: np.ndarray = None
    u: np.ndarray = None
    K: np.ndarray = None
    C: np.ndarray = None
    gain: np.ndarray = None     # TSDA: gain of the input h (-1 for a cylinder, F = h = -s)

    def frames(self, bodies):
        """kinematics.JointFrames of the items at the state of `bodies` (kinematics.Bodies)."""
        return kin.JointFrames(self.pairs, self.sp, self.sc, self.Fp, self.Fc, bodies)


def empty_group(kind):
    z3, z33 = np.zeros((0, 3)), np.zeros((0, 3, 3))
    return Group(kind, kin.Pairs.make([], []), z3, z3, z33, z33, np.zeros((0, 1), np.intp),
                 np.zeros(0), (), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0, np.intp),
                 np.zeros((0, 6, 6)), np.zeros((0, 6, 6)), np.zeros(0))


def make_group(kind, items, idx, **extra):
    """A Group from (parent, child, sp, sc, Fp, Fc) tuples (body names)."""
    if not items:
        return empty_group(kind)
    p, c, sp, sc, Fp, Fc = zip(*items)
    arrays = {k: np.asarray(v) for k, v in extra.items()}
    return Group(kind, kin.Pairs.make([idx[b] for b in p], [idx[b] for b in c]),
                 np.asarray(sp, float).reshape(-1, 3), np.asarray(sc, float).reshape(-1, 3),
                 np.asarray(Fp, float).reshape(-1, 3, 3), np.asarray(Fc, float).reshape(-1, 3, 3),
                 **arrays)


@dataclass(frozen=True, eq=False)
class CompiledSpatial:
    """Index arrays of a spatial model (the counterpart of model.Compiled)."""

    nb: int
    mass: np.ndarray            # (nb,) [kg]
    inertia: np.ndarray         # (nb, 3, 3) about the centre of mass, body axes [kg.m2]
    inv_mass_diag: np.ndarray   # (7 nb,) inverse weights of the projections' metric
    n_rows: int
    joint_groups: tuple         # Group per joint kind
    norm_rows: np.ndarray       # (nb,) rows of p . p - 1
    drives: tuple               # (row, Group of one joint, Motion)
    couplers: tuple             # (row, Group of the joint, Group of the master, ratio, offset)
    joint_rows: tuple           # per joint: its row indices
    coord_joints: tuple         # per joint coordinate its joint's index (COORDINATES order)
    coord_groups: tuple         # Group per kind; rows[:, 0] = position in the coordinates
    tsda: Group
    rsda: Group
    bushing: Group
    frc_body: np.ndarray
    frc_point: np.ndarray
    frc_dir: np.ndarray
    frc_body_frame: np.ndarray
    frc_value: np.ndarray
    frc_u: np.ndarray
    frc_names: tuple
    trq_body: np.ndarray
    trq_reaction: np.ndarray
    trq_dir: np.ndarray
    trq_body_frame: np.ndarray
    trq_value: np.ndarray
    trq_u: np.ndarray
    trq_names: tuple
    markers: kin.Pairs
    marker_points: np.ndarray
    contacts: Optional[object] = None
    mass_positive: bool = field(default=False)
    spatial = True


def _frame(j, side):
    return np.asarray(j.frame_p if side == 0 else j.frame_c, float)


def compile_spatial(mb):
    """CompiledSpatial of a ModelBuilder holding spatial items."""
    bodies = mb._bodies
    nb = len(bodies)
    idx = {b.name: b.index for b in bodies}
    idx["ground"] = nb
    mass = np.array([b.mass for b in bodies])
    inertia = np.array([b.inertia for b in bodies], float).reshape(nb, 3, 3)
    big = max(mass.max(initial=0.0), 1e-300)
    wr = np.where(mass > 0, mass, 1e-6 * big)
    # (max_abs_eigenvalue: scalar operations that the engine repeats in C when a parameter
    # changes a mass or an inertia, fmu_mb.engine.data.derive_metric)
    Jmax = np.array([max_abs_eigenvalue(J) for J in inertia]) if nb else mass
    wp = np.where(Jmax > 0, 4.0 * Jmax, 1e-6 * big)
    weight = np.concatenate([np.repeat(wr, 3).reshape(nb, 3), np.repeat(wp, 4).reshape(nb, 4)],
                            axis=1).reshape(-1)

    row, joint_rows, by_kind = 0, [], {}
    for j in mb._joints:
        n = ROWS[j.kind]
        rows = np.arange(row, row + n, dtype=np.intp)
        joint_rows.append(rows)
        by_kind.setdefault(j.kind, []).append((j, rows))
        row += n
    groups = []
    for kind, items in by_kind.items():
        groups.append(make_group(
            kind, [_item(j) for j, _ in items], idx, rows=np.array([r for _, r in items]),
            length=np.array([j.length for j, _ in items]), names=tuple(j.name for j, _ in items)))
    jmap = {j.name: j for j in mb._joints}
    drives = []
    for d in mb._drives:
        j = jmap[d.joint]
        drives.append((row, make_group(j.kind, [_item(j)], idx, length=np.zeros(1)), d.motion))
        row += 1
    couplers = []
    for c in mb._couplers:
        a, b = jmap[c.joint], jmap[c.master]
        couplers.append((row, make_group(a.kind, [_item(a)], idx, length=np.zeros(1)),
                         make_group(b.kind, [_item(b)], idx, length=np.zeros(1)),
                         float(c.ratio), float(c.offset)))
        row += 1
    norm_rows = np.arange(row, row + nb, dtype=np.intp)
    row += nb
    coord_joints, coord_items = [], {}
    for k, j in enumerate(mb._joints):          # a cylindrical joint has both coordinates
        for kind in COORDINATES.get(j.kind, ()):
            coord_items.setdefault(kind, []).append((j, len(coord_joints)))
            coord_joints.append(k)
    coord_groups = tuple(make_group(kind, [_item(j) for j, _ in items], idx,
                                    rows=np.array([[pos] for _, pos in items], np.intp),
                                    length=np.zeros(len(items)))
                         for kind, items in coord_items.items())

    inames = [i.name for i in mb._inputs]

    def uidx(e):
        return inames.index(e.input) if e.input else -1

    els = mb._elements
    tsda = [e for e in els if e.kind in ("tsda", "cylinder")]     # cylinders: s = -F
    rsda = [e for e in els if e.kind == "rsda"]
    bush = [e for e in els if e.kind == "bushing"]
    frc = [e for e in els if e.kind == "force"]
    trq = [e for e in els if e.kind == "torque"]
    eye = np.eye(3)
    tsda_g = make_group("tsda", [(e.a, e.b, e.a_point, e.b_point, eye, eye) for e in tsda], idx,
                        names=tuple(e.name for e in tsda), k=[e.stiffness for e in tsda],
                        c=[e.damping for e in tsda], e0=[e.free_value for e in tsda],
                        u=np.array([uidx(e) for e in tsda], np.intp),
                        gain=np.array([-1.0 if e.kind == "cylinder" else _tsda_gain(e)
                                       for e in tsda]))
    rsda_g = make_group("rsda", [_item(jmap[e.joint]) for e in rsda], idx,
                        names=tuple(e.name for e in rsda), k=[e.stiffness for e in rsda],
                        c=[e.damping for e in rsda], e0=[e.free_value for e in rsda],
                        u=np.array([uidx(e) for e in rsda], np.intp))
    bush_g = make_group("bushing", [(e.a, e.b, e.a_point, e.b_point, e.frame_a, e.frame_b)
                                    for e in bush], idx, names=tuple(e.name for e in bush),
                        K=np.array([e.K for e in bush]).reshape(-1, 6, 6),
                        C=np.array([e.C for e in bush]).reshape(-1, 6, 6),
                        e0=np.array([e.e0 for e in bush]).reshape(-1, 6))

    def arr(v, dtype=float, shape=None):
        a = np.array(v, dtype=dtype)
        return a.reshape(shape) if shape else a

    contacts = None
    if mb._contacts:
        from .contacts import compile_contacts   # (a model without contacts never loads it)
        contacts = compile_contacts(mb._contacts, idx, jmap, make_group)

    return CompiledSpatial(
        contacts=contacts, nb=nb, mass=mass, inertia=inertia, inv_mass_diag=1.0 / weight, n_rows=row,
        joint_groups=tuple(groups), norm_rows=norm_rows, drives=tuple(drives),
        couplers=tuple(couplers),
        joint_rows=tuple(joint_rows), coord_joints=tuple(coord_joints),
        coord_groups=coord_groups, tsda=tsda_g, rsda=rsda_g, bushing=bush_g,
        frc_body=arr([idx[e.b] for e in frc], np.intp),
        frc_point=arr([e.b_point for e in frc], shape=(-1, 3)),
        frc_dir=arr([e.direction for e in frc], shape=(-1, 3)),
        frc_body_frame=arr([e.frame == "body" for e in frc], bool),
        frc_value=arr([e.value for e in frc]), frc_u=arr([uidx(e) for e in frc], np.intp),
        frc_names=tuple(e.name for e in frc),
        trq_body=arr([idx[e.b] for e in trq], np.intp),
        trq_reaction=arr([idx[e.a] for e in trq], np.intp),
        trq_dir=arr([e.direction for e in trq], shape=(-1, 3)),
        trq_body_frame=arr([e.frame == "body" for e in trq], bool),
        trq_value=arr([e.value for e in trq]), trq_u=arr([uidx(e) for e in trq], np.intp),
        trq_names=tuple(e.name for e in trq),
        markers=kin.Pairs.make([idx[m.body] for m in mb._markers],
                               [idx[m.body] for m in mb._markers]),
        marker_points=arr([m.point for m in mb._markers], shape=(-1, 3)))


def _tsda_gain(e):
    """The gain of a TSDA's input h: 1, or the one `gains` holds for it (a prismatic joint's
    actuator of an imported robot: -gear, so that h pushes along the joint axis)."""
    return float(e.gains[0][1]) if e.gains and e.gains[0][0] == e.input else 1.0


def _item(j):
    return (j.parent, j.child, j.parent_point, j.child_point, _frame(j, 0), _frame(j, 1))
