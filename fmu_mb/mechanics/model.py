"""The immutable Model and the items it is made of.

A Model is produced by `ModelBuilder.build()` and never changes afterwards; to change a
parameter, build a new Model. It holds the declared items (bodies, joints, drives, elements,
points, parameters, inputs), the topology, the assembled initial absolute coordinates, and a
`Compiled` block of index arrays that the formulations evaluate vectorised.

Coordinates: x = (x, y, phi) per moving body in declaration order [m, m, rad]; in a spatial
model (three gravity components) x = (r, p) per body, the centre of mass [m] and the Euler
parameters (mechanics.spatial), compiled to spatial.compiled.CompiledSpatial.
"""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..memo import per_object
from .kinematics import PairSet
from .motion import Motion

Vec2 = tuple[float, float]

GROUND = "ground"


@dataclass(frozen=True)
class Body:
    """A planar rigid body: mass [kg], inertia about its centre of mass [kg.m2]. A zero
    inertia makes a point mass; zero mass and inertia a massless link (its coordinates are then
    fixed by constraints alone, and M is singular: the KKT system is solved in full)."""

    name: str
    mass: float
    inertia: float
    index: int
    position: Vec2 = (0.0, 0.0)     # initial guess (or value, for a free body) [m]
    angle: float = 0.0              # [rad]
    velocity: Vec2 = (0.0, 0.0)     # [m/s]
    angular_velocity: float = 0.0   # [rad/s]
    orientation: tuple = (1.0, 0.0, 0.0, 0.0)  # spatial: Euler parameters (e0, e1, e2, e3)
    declared: int = 0               # planar: 1 position given, 2 angle given (assembly seeds)


@dataclass(frozen=True)
class Joint:
    """A joint between a parent and a child body.

    kind: "revolute" (2 rows, 1 DOF: angle), "prismatic" (2 rows, 1 DOF: position),
    "weld" (3 rows), "distance" (1 row: massless link of `length`).
    Joint coordinate: revolute angle = phi_child - phi_parent - angle0 [rad];
    prismatic position = (r_child(child_point) - r_parent(parent_point)) . axis [m].
    """

    name: str
    kind: str
    parent: str
    child: str
    parent_point: Vec2
    child_point: Vec2
    axis: Vec2 = (1.0, 0.0)         # prismatic: sliding direction in the parent frame
    angle0: float = 0.0             # relative angle phi_c - phi_p at zero joint angle [rad]
    length: float = 0.0             # distance joint [m]
    dim: int = 2                    # 3: a spatial joint (mechanics.spatial)
    frame_p: tuple = ()             # spatial: joint frame (3 x 3, columns x, y, z) in the
    frame_c: tuple = ()             # parent's and the child's body axes
    armature: float = 0.0           # spatial revolute or prismatic tree joint: reflected
                                    # rotor inertia on its coordinate [kg.m2 or kg]
    friction: float = 0.0           # revolute or prismatic joint: Coulomb friction bound on
                                    # its coordinate [N.m or N] (0: frictionless)

    @property
    def n_rows(self) -> int:
        if self.dim == 3:
            from .spatial.constraints import ROWS
            return ROWS[self.kind]
        return {"revolute": 2, "prismatic": 2, "weld": 3, "distance": 1}[self.kind]

    @property
    def freedom(self) -> int:
        """Relative degrees of freedom f_G of the joint."""
        if self.dim == 3:
            from .spatial.constraints import FREEDOM
            return FREEDOM[self.kind]
        return {"revolute": 1, "prismatic": 1, "weld": 0, "distance": 2}[self.kind]

    @property
    def coordinate(self) -> Optional[str]:
        return {"revolute": "angle", "prismatic": "position"}.get(self.kind)


@dataclass(frozen=True)
class Drive:
    """A driving constraint q_joint(x) - f(t) = 0; its multiplier gives the driving effort."""

    name: str
    joint: str
    motion: Motion


@dataclass(frozen=True)
class Coupler:
    """A coupling constraint between the coordinates of two revolute or prismatic joints of a
    spatial model (a URDF mimic joint): q_joint - ratio q_master - offset = 0 (a revolute
    coordinate's difference wrapped into (-pi, pi]); its multiplier is the generalised force
    -lam that holds `joint` [N.m or N]."""

    name: str
    joint: str
    master: str
    ratio: float
    offset: float


@dataclass(frozen=True)
class Element:
    """A force element.

    kind "tsda": translational spring-damper-actuator between two points (seed 003),
        element force s = k (l - l0) + c l' + h, positive in tension [N].
    kind "rsda": rotational spring-damper-actuator between two bodies (seed 003),
        theta = phi_b - phi_a, torque s = k (theta - theta0) + c theta' + h [N.m]; like the
        spring it acts to *decrease* theta (on body b: -s, on body a: +s).
    kind "force": force (value + h) along `direction` at a point of body b [N]; direction in
        the global frame (frame "global") or in the body frame (frame "body").
    kind "torque": pure torque (value + h) on body b, counter-clockwise positive, and its
        reaction on body a unless a is the ground [N.m].
    kind "cylinder": hydraulic cylinder between two pins (ModelBuilder.cylinder): a TSDA
        with k = 0, c = friction and s = -(sum of gain * input) (pushing positive force
        F = -s); free_value = min_length, value = max_length [m]; `gains` holds the
        (input name, gain) pairs (force input: 1, head pressure: A_piston, rod pressure:
        -A_rod); the end stops are two contacts <name>_lower and <name>_upper.
    `input` is the name of the model input that carries h (None: no input).
    """

    name: str
    kind: str
    a: str
    b: str
    a_point: Vec2 = (0.0, 0.0)
    b_point: Vec2 = (0.0, 0.0)
    stiffness: float = 0.0
    damping: float = 0.0
    free_value: float = 0.0         # l0 [m] or theta0 [rad]
    value: float = 0.0              # constant part of a force or torque
    direction: Vec2 = (1.0, 0.0)
    frame: str = "global"
    input: Optional[str] = None
    joint: Optional[str] = None     # spatial RSDA: the revolute joint it acts on
    frame_a: tuple = ()             # spatial bushing: frames (3 x 3) on a and b, body axes,
    frame_b: tuple = ()
    K: tuple = ()                   # bushing stiffness and damping (6 x 6) and e0 (6,)
    C: tuple = ()
    e0: tuple = ()
    gains: tuple = ()               # cylinder: ((input name, gain), ...)


@dataclass(frozen=True)
class Marker:
    """A named point on a body; outputs <name>.x, .y, .vx, .vy (global frame)."""

    name: str
    body: str
    point: Vec2


@dataclass(frozen=True)
class Contact:
    """A unilateral contact with gap D_c(x) >= 0 and Newton's restitution (seed 000 sec. 1.4).

    kind "point_line": point `point` of `body` against the line through `other_point` of
        `other` (the ground or a body) with unit normal `normal` (in `other`'s frame);
        gap = (r_point - r_line) . n - offset (offset: a radius) [m].
    kind "point_point": points of `body` (a) and `other` (b); with l = |r_b - r_a|,
        gap = l - offset (side +1: the points stay apart, e.g. two balls) or offset - l
        (side -1: the points stay within offset, e.g. a string) [m].
    kind "joint_limit": joint coordinate q of `joint` against a bound (offset);
        gap = side (q - offset), side +1 for a lower and -1 for an upper limit [rad or m].
    method "impact": classical impact equations (seed 000 eq. 20) with event location;
    method "reduction": Drenovac's Reduction Method (seed 002) on the joint coordinate of
        `singular_joint` with the det-M criterion `criterion` (scaled by criterion_scale),
        multiplied by `sharpening` after every pass.
    friction: Coulomb's coefficient mu >= 0 at the contact point (point_line and point_plane
        contacts; 0 frictionless; docs/contacts-friction.md).
    kind "rim_plane" (spatial): the circle of radius `offset` centred at `point` of `body`
        normal to `axis` (body axes), a cylinder's end, against the plane through
        `other_point` with unit `normal` fixed to the ground; the contact point moves on the
        body (fmu_mb.mechanics.spatial.rim, docs/shapes.md).
    kind "shape_pair" (spatial): feature `feature` of shapes[0] (on `other`) against
        shapes[1] (on `body`), two moving shapes (sphere, capsule, box); the contact points
        move on both bodies (fmu_mb.mechanics.spatial.pairs, docs/shapes.md).
    """

    name: str
    kind: str
    body: str
    other: str
    point: Vec2 = (0.0, 0.0)
    other_point: Vec2 = (0.0, 0.0)
    normal: Vec2 = (0.0, 1.0)
    offset: float = 0.0
    side: float = 1.0
    joint: Optional[str] = None
    restitution: float = 1.0
    method: str = "impact"
    singular_joint: Optional[str] = None
    criterion: float = 1e-4
    criterion_scale: float = 1.0
    sharpening: float = 0.5
    friction: float = 0.0
    axis: tuple = ()                # rim_plane: the circle's unit axis in body axes
    shapes: tuple = ()              # shape_pair: (ShapeItem a on other, ShapeItem b on body)
    feature: int = -1               # shape_pair: the narrowphase's feature id


@dataclass(frozen=True)
class Parameter:
    """A named model parameter (becomes an FMU parameter)."""

    name: str
    value: object
    default: object
    unit: str
    description: str
    choices: Optional[tuple] = None
    structural: bool = False        # changes the model's shape (e.g. a number of links)
    min: Optional[float] = None     # valid range of a number (inclusive); None: unbounded
    max: Optional[float] = None


@dataclass(frozen=True)
class Input:
    """A model input h (actuator force or torque), held constant over a communication step."""

    name: str
    unit: str
    description: str


@dataclass(frozen=True)
class InitialCondition:
    """Initial joint coordinate and/or rate; None leaves it to the assembly, which starts
    from `guess` (or 0) for the joint's coordinate."""

    joint: str
    value: Optional[float] = None
    rate: Optional[float] = None
    guess: Optional[float] = None


@dataclass(frozen=True)
class Topology:
    """Graph facts (seed 001): n_B bodies, n_G joints, n_L = n_G - n_B loops, Gruebler DOF
    3 n_B - sum(3 - f_G) - drives, and the true DOF 3 n_B - rank(D) at the assembled state."""

    n_bodies: int
    n_joints: int
    n_loops: int
    gruebler_dof: int
    dof: int
    n_constraints: int
    redundant: int
    tree_joints: tuple
    cut_joints: tuple
    loops: tuple                    # per cut joint: the bodies of its loop


@dataclass(frozen=True, eq=False)
class Compiled:
    """Index arrays for vectorised evaluation (built once by the builder)."""

    nb: int
    mass_diag: np.ndarray           # (3 nb,) diag(m, m, J) per body
    inv_mass_diag: np.ndarray       # (3 nb,) 1 / mass, or the projection metric's inverse
                                    # weights where a mass entry is zero
    mass_positive: bool             # every entry of mass_diag > 0 (Schur complement usable)
    # constraint rows
    n_rows: int
    pd: PairSet                     # revolute + weld: point difference, 2 rows each
    pd_rows: np.ndarray             # (k, 2)
    ang: PairSet                    # weld + prismatic: relative angle - angle0
    ang_offset: np.ndarray
    ang_rows: np.ndarray
    prj: PairSet                    # prismatic: normal distance
    prj_w0: np.ndarray
    prj_rows: np.ndarray
    dst: PairSet                    # distance joints
    dst_length: np.ndarray
    dst_rows: np.ndarray
    drives: tuple                   # (row, kind "angle" | "position", PairSet, w0/offset, Motion)
    joint_rows: tuple               # per joint: row indices
    # joint coordinates (revolute angle, prismatic position), in model.joints order
    coord_joints: tuple             # joint indices that have a coordinate
    coord_ang: PairSet
    coord_ang_offset: np.ndarray
    coord_ang_pos: np.ndarray       # positions in the coordinate vector
    coord_prj: PairSet
    coord_prj_w0: np.ndarray
    coord_prj_pos: np.ndarray
    # force elements
    tsda: PairSet
    tsda_k: np.ndarray
    tsda_c: np.ndarray
    tsda_l0: np.ndarray
    tsda_u: np.ndarray              # input index or -1
    rsda: PairSet
    rsda_k: np.ndarray
    rsda_c: np.ndarray
    rsda_theta0: np.ndarray
    rsda_u: np.ndarray
    frc_body: np.ndarray
    frc_point: np.ndarray
    frc_dir: np.ndarray
    frc_body_frame: np.ndarray      # bool
    frc_value: np.ndarray
    frc_u: np.ndarray
    trq_body: np.ndarray
    trq_reaction: np.ndarray        # body index (nb = ground: no reaction)
    trq_value: np.ndarray
    trq_u: np.ndarray
    markers: PairSet                # p = body (c unused)
    contacts: object = None         # contacts.ContactBlock (None: no contacts)
    spatial = False                 # (spatial models compile to spatial.CompiledSpatial)
    tsda_gain: object = None        # (n_tsda, n_inputs) input gains of cylinder rows, or None


@dataclass(frozen=True, eq=False)
class Model:
    """An immutable planar or spatial multibody model (see module docstring)."""

    name: str
    gravity: Vec2
    bodies: tuple
    joints: tuple
    drives: tuple
    elements: tuple
    markers: tuple
    parameters: tuple
    inputs: tuple
    initial: tuple
    topology: Topology
    compiled: Compiled = field(repr=False)
    x0: np.ndarray = field(repr=False)
    xd0: np.ndarray = field(repr=False)
    t0: float = 0.0
    description: str = ""
    contacts: tuple = ()            # Contact items (unilateral constraints)
    assembly_note: str = ""         # a pose assembled far from the declared one (assembly)
    visuals: tuple = field(default=(), repr=False)   # importers.robot.Visual of an imported
                                                     # robot: shapes for the viewer
    shapes: tuple = ()              # shapes.ShapeItem: collision shapes in body axes
    shape_pairs: tuple = ()         # shapes.ShapePair: the pairs that may touch, their contacts
    couplers: tuple = ()            # Coupler items (spatial: joint-coordinate couplings)
    undeclared_outputs: frozenset = frozenset()   # output names an FMU does not declare
                                                  # (computed all the same; an imported
                                                  # robot's joint reactions not asked for)

    # ----------------------------------------------------------------- lookups
    @property
    def spatial(self) -> bool:
        """True for a spatial model (3-component gravity; q = (r, p) per body)."""
        return len(self.gravity) == 3

    @property
    def coordinates_per_body(self) -> int:
        return 7 if self.spatial else 3

    @property
    def n_coordinates(self) -> int:
        return self.coordinates_per_body * len(self.bodies)

    def body(self, name: str) -> Body:
        return _lookup(self.bodies, name, "body", _by_name(self)[0])

    def joint(self, name: str) -> Joint:
        return _lookup(self.joints, name, "joint", _by_name(self)[1])

    def contact(self, name: str) -> Contact:
        return _lookup(self.contacts, name, "contact", _by_name(self)[2])

    def parameter(self, name: str) -> Parameter:
        return _lookup(self.parameters, name, "parameter", _by_name(self)[3])

    @property
    def parameter_values(self) -> dict:
        return {p.name: p.value for p in self.parameters}

    @property
    def input_names(self) -> tuple:
        return tuple(i.name for i in self.inputs)

    def body_slice(self, name: str) -> slice:
        """Entries of body `name` in x (3 per planar body, 7 per spatial body)."""
        i, n = self.body(name).index, self.coordinates_per_body
        return slice(n * i, n * i + n)

    def input_vector(self, u=None) -> np.ndarray:
        """Input values as an array in `model.inputs` order.

        u : None, a mapping name -> value, or a sequence of len(model.inputs) values.
        Raises InputError for an unknown name, a wrong length or a non-finite value.
        """
        from ..errors import InputError

        if isinstance(u, np.ndarray) and u.shape == (len(self.inputs),) and \
                u.dtype == float and np.isfinite(u).all():
            return u.copy()                          # the common case (FMU, simulate)
        names = self.input_names
        out = np.zeros(len(names))
        if u is None:
            return out
        if isinstance(u, dict):
            for key, val in u.items():
                if key not in names:
                    raise InputError(f"model '{self.name}': unknown input '{key}'; inputs are "
                                     f"{list(names)}")
                out[names.index(key)] = _finite(self, key, val)
            return out
        arr = np.asarray(u, dtype=float).reshape(-1)
        if arr.shape != (len(names),):
            raise InputError(f"model '{self.name}': expected {len(names)} input values "
                             f"{list(names)}, received {arr.shape[0]}")
        for key, val in zip(names, arr):
            _finite(self, key, val)
        return arr


def _finite(model, key, val):
    from ..errors import InputError, plain

    try:
        v = float(val)
    except (TypeError, ValueError):
        raise InputError(f"model '{model.name}': input '{key}' must be a number, "
                         f"received {plain(val)}") from None
    if not np.isfinite(v):
        raise InputError(f"model '{model.name}': input '{key}' must be finite, received {v}")
    return v


@per_object
def _by_name(model):
    """name -> item of the model's bodies, joints, contacts and parameters (the first of
    each name), so that a lookup by name does not scan the items."""
    out = []
    for items in (model.bodies, model.joints, model.contacts, model.parameters):
        index = {}
        for item in items:
            index.setdefault(item.name, item)
        out.append(index)
    return tuple(out)


def _lookup(items, name, what, index=None):
    """The first of `items` called `name` (index: those items by name, _by_name)."""
    if index is not None and isinstance(name, str) and name in index:
        return index[name]
    for item in items:
        if item.name == name:
            return item
    from ..errors import ModelError

    raise ModelError(f"unknown {what} '{name}'; {what}s are {[i.name for i in items]}")
