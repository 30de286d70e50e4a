"""ModelBuilder: the declarative model API, one call per physical item.

    mb = ModelBuilder("double_pendulum", overrides, gravity=(9.81, 0.0))
    l1 = mb.param("l1", 0.55, "m", "length of rod 1")
    rod1 = mb.body("rod1", mass=1.0, inertia=rod_inertia(1.0, l1))
    mb.revolute("A", mb.ground, rod1, parent_point=(0, 0), child_point=(-l1 / 2, 0))
    mb.initial("A", value=0.3, rate=0.0)
    model = mb.build()

Everything is validated once, in the call that declares it or in build(); errors name the
item, the argument, the value received and what was expected. build() finds the spanning
tree and the cut joints, assembles consistent initial coordinates (assembly.py) and returns an
immutable Model.
"""
import math
import re
import sys
from collections import deque
from dataclasses import replace

import numpy as np

from . import assembly
from ..errors import ModelError, plain
from .kinematics import PairSet
from .model import (GROUND, Body, Compiled, Contact, Coupler, Drive, Element, InitialCondition, Input,
                    Joint, Marker, Model, Parameter, Topology)
from .motion import Motion
from .shape_builder import ShapeItems
from .spatial.builder import SpatialItems, vec3
from .validation import number as _number

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_RESERVED = {"time", "energy", "constraint", GROUND}


def rod_inertia(mass: float, length: float) -> float:
    """Inertia of a uniform slender rod about its centre, m l^2 / 12 [kg.m2]."""
    return mass * length ** 2 / 12.0


def disc_inertia(mass: float, radius: float) -> float:
    """Inertia of a uniform disc about its centre, m r^2 / 2 [kg.m2]."""
    return mass * radius ** 2 / 2.0


def box_inertia(mass: float, length: float, height: float) -> float:
    """Inertia of a uniform rectangular plate or box of side lengths `length` (along the
    body x axis) and `height` (along y) about its centre, for rotation in the plane:
    m (length^2 + height^2) / 12 [kg.m2]. Its depth (out of the plane) does not enter."""
    return mass * (length ** 2 + height ** 2) / 12.0


def cylinder_inertia(mass: float, length: float, radius: float,
                     inner_radius: float = 0.0) -> float:
    """Inertia of a uniform solid (or, with inner_radius, hollow) circular cylinder lying in
    the plane with its axis along the body x axis, about its centre, for rotation in the
    plane (about an axis across the cylinder): m (3 (r^2 + r_i^2) + length^2) / 12 [kg.m2].
    A cylinder standing on the plane (axis out of the plane) is a disc: disc_inertia."""
    if not 0.0 <= inner_radius < radius or length < 0.0 or mass < 0.0:
        raise ModelError(f"cylinder_inertia: expected mass >= 0, length >= 0 and "
                         f"0 <= inner_radius < radius, received mass={mass}, length={length}, "
                         f"radius={radius}, inner_radius={inner_radius}")
    return mass * (3.0 * (radius ** 2 + inner_radius ** 2) + length ** 2) / 12.0


class UnknownParameterError(ModelError):
    """An override names no parameter of the model (a usage error: the CLI exits 2)."""


class ModelBuilder(SpatialItems, ShapeItems):
    """Collects the items of a planar or spatial model; `build()` validates and returns a
    Model.

    Parameters
    ----------
    name : model name (an identifier; becomes the FMU's model name).
    overrides : mapping parameter name -> value given by the user (unknown names raise in
        build(), listing the declared parameters).
    gravity : (gx, gy) gravity acceleration vector [m/s2], any direction; three components
        (gx, gy, gz) make the model spatial (mechanics.spatial; README "Spatial models").
    description : the model description (an FMU's description); by default the docstring of
        the model file that creates the builder (a file loaded by load_model, `fmu-mb` or an
        FMU).
    """

    ground = GROUND

    def __init__(self, name, overrides=None, gravity=(0.0, -9.81), description=""):
        if not isinstance(name, str) or not _NAME.match(name):
            raise ModelError(f"model name: expected an identifier [A-Za-z_][A-Za-z0-9_]*, "
                             f"received {name!r}")
        self.name = name
        self.description = description or _model_file_docstring(sys._getframe(1))
        self._overrides = dict(overrides or {})
        self.spatial = np.ndim(gravity) == 1 and len(gravity) == 3
        self.gravity = (vec3(f"model '{name}'", "gravity", gravity) if self.spatial
                        else _vec2(f"model '{name}'", "gravity", gravity))
        self._params, self._bodies, self._joints, self._drives = [], [], [], []
        self._elements, self._markers, self._inputs, self._initial = [], [], [], {}
        self._names = {}
        self._contacts, self._couplers = [], []
        self._shapes, self._collide, self._pairs = [], {}, None   # shape_builder.ShapeItems
        self._declared_position = {}       # planar bodies given a position=

    # ------------------------------------------------------------------ parameters
    def param(self, name, default, unit="1", description="", *, min=None, max=None,
              choices=None, structural=False):
        """Declare a named parameter and return its value (the override if one was given).

        The type follows `default`: float, int, or str (then `choices` lists the allowed
        values). min/max bound numeric values. `structural` marks a parameter that changes
        the model's shape (number of bodies); an FMU exposes it as a constant.
        """
        where = f"parameter '{name}'"
        self._claim(name, "parameter", _INPUT_NAME)
        value = self._overrides.get(name, default)
        if isinstance(default, bool):
            raise ModelError(f"{where}: default must be a number or a string, received bool")
        if isinstance(default, str):
            choices = tuple(choices or ())
            if default not in choices:
                raise ModelError(f"{where}: default {default!r} is not one of {list(choices)}")
            if value not in choices:
                raise ModelError(f"{where}: expected one of {list(choices)}, received {plain(value)}")
        elif isinstance(default, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ModelError(f"{where}: expected an integer, received {plain(value)}")
            value = int(value)
        else:
            value = _number(where, "value", value)
            default = float(default)
        if min is not None and value < min:
            raise ModelError(f"{where}: expected a value >= {min}, received {plain(value)}")
        if max is not None and value > max:
            raise ModelError(f"{where}: expected a value <= {max}, received {plain(value)}")
        self._params.append(Parameter(name, value, default, unit, description,
                                      tuple(choices) if choices else None, structural,
                                      min, max))
        return value

    # ------------------------------------------------------------------ bodies
    def body(self, name, *, mass, inertia, position=None, angle=None,
             velocity=None, angular_velocity=None, orientation=None):
        """A rigid body: mass [kg] and inertia about the centre of mass [kg.m2].

        position/angle (and velocity/angular_velocity) are the initial pose of a free body.
        Planar: a body moved by a tree joint whose coordinate is neither given nor guessed
        (mb.initial) is placed at its declared pose: the joint's coordinate is the one that
        puts the body at its declared angle (revolute; from its declared position when only
        that is given) or position (prismatic); the assembly closes the loops from there, so
        the declared poses pick the assembly branch (fmu_mb.mechanics.assembly). A given
        value wins over the declared pose; an assembled pose far from the declared one gives
        an AssemblyWarning (and the FMU logs it at initialisation).
        Spatial: position and orientation are the reference pose of every body. Spatial: inertia
        (Ixx, Iyy, Izz) or a 3 x 3 matrix in body axes, position (x, y, z), orientation a
        quaternion (e0, e1, e2, e3) or a rotation matrix (fmu_mb.cardan(a, b, c) for Cardan
        angles), velocity and angular_velocity (global axes) 3-vectors.
        """
        if self.spatial:
            return self._body3(name, mass, inertia, (0, 0, 0) if position is None else position,
                               orientation, (0, 0, 0) if velocity is None else velocity,
                               (0, 0, 0) if angular_velocity is None else angular_velocity)
        if position is not None:
            self._declared_position[name] = position
        declared = (position is not None) | 2 * (angle is not None)
        position = (0.0, 0.0) if position is None else position
        angle = 0.0 if angle is None else angle
        velocity = (0.0, 0.0) if velocity is None else velocity
        angular_velocity = 0.0 if angular_velocity is None else angular_velocity
        where = f"body '{name}'"
        self._claim(name, "body")
        mass = _number(where, "mass", mass, nonneg=True)
        inertia = _number(where, "inertia", inertia, nonneg=True)
        if mass == 0.0 and inertia > 0.0:
            raise ModelError(f"{where}: a body with zero mass must have zero inertia "
                             f"(a massless link), received inertia {inertia}")
        self._bodies.append(Body(name, mass, inertia, len(self._bodies),
                                 _vec2(where, "position", position),
                                 _number(where, "angle", angle),
                                 _vec2(where, "velocity", velocity),
                                 _number(where, "angular_velocity", angular_velocity),
                                 declared=declared))
        return name

    # ------------------------------------------------------------------ joints
    def revolute(self, name, parent, child, *, parent_point=None, child_point=None,
                 angle0=0.0, at=None, axis=None, parent_axis=None, child_axis=None,
                 friction=0.0):
        """Revolute joint: child_point of child coincides with parent_point of parent.

        Joint angle = phi_child - phi_parent - angle0 [rad]. Spatial: at=/axis= (global, at
        the reference pose) or the points and parent_axis=/child_axis= in body axes; the angle
        (in (-pi, pi]) turns the child's joint frame about the axis from the parent's.
        friction: Coulomb friction torque bound on the angle [N.m] (joint_friction).
        """
        self._check_friction(f"revolute '{name}'", friction)
        if self.spatial:
            self._not_here(f"revolute '{name}'", "spatial", angle0=angle0 or None)
            self._joint3(name, "revolute", parent, child, at=at, axis=axis,
                         parent_point=parent_point, child_point=child_point,
                         parent_axis=parent_axis, child_axis=child_axis)
        else:
            self._not_here(f"revolute '{name}'", "planar", at=at, axis=axis,
                           parent_axis=parent_axis, child_axis=child_axis)
            self._joint(name, "revolute", parent, child, parent_point, child_point,
                        angle0=angle0)
        return self.joint_friction(name, friction) if friction else name

    def prismatic(self, name, parent, child, *, axis=None, parent_point=None,
                  child_point=None, angle0=0.0, at=None, parent_axis=None, child_axis=None,
                  friction=0.0):
        """Prismatic (translational) joint sliding along `axis` (parent frame).

        Joint position = (r_child(child_point) - r_parent(parent_point)) . axis [m]; the
        relative angle stays angle0. Spatial: axis= is global at the reference pose (or
        parent_axis= in the parent's axes); the relative orientation stays the reference one.
        friction: Coulomb friction force bound on the position [N] (joint_friction).
        """
        self._check_friction(f"prismatic '{name}'", friction)
        if self.spatial:
            self._not_here(f"prismatic '{name}'", "spatial", angle0=angle0 or None)
            self._joint3(name, "prismatic", parent, child, at=at, axis=axis,
                         parent_point=parent_point, child_point=child_point,
                         parent_axis=parent_axis, child_axis=child_axis)
        else:
            self._not_here(f"prismatic '{name}'", "planar", at=at, parent_axis=parent_axis,
                           child_axis=child_axis)
            axis = (1.0, 0.0) if axis is None else axis
            self._joint(name, "prismatic", parent, child, parent_point, child_point,
                        axis=axis, angle0=angle0)
        return self.joint_friction(name, friction) if friction else name

    @staticmethod
    def _check_friction(where, friction):
        return _number(where, "friction", friction, nonneg=True)

    def joint_friction(self, joint, value):
        """Coulomb friction on the coordinate of a revolute or prismatic joint: a torque
        [N.m] or force [N] bound `value` >= 0 (0: frictionless). The joint sticks (its rate
        held by a constraint row) while the reaction on its coordinate stays within the
        bound, and slips with the bound opposite its rate otherwise; the transitions are
        events (docs/contacts-friction.md, "Joint friction")."""
        where = f"friction of joint '{joint}'"
        j = self._joint_ref(where, "joint", joint)
        if j.kind not in ("revolute", "prismatic"):
            raise ModelError(f"{where}: a {j.kind} joint; expected a revolute or prismatic "
                             f"joint (friction acts on the joint's one coordinate)")
        f = _number(where, "value", value, nonneg=True)
        from dataclasses import replace
        k = self._joints.index(j)
        self._joints[k] = replace(j, friction=f)
        return joint

    def weld(self, name, parent, child, *, parent_point=None, child_point=None,
             angle0=0.0, at=None):
        """Fixed joint: the points coincide and the relative angle stays angle0 (spatial:
        the relative orientation stays the reference one)."""
        if self.spatial:
            self._not_here(f"weld '{name}'", "spatial", angle0=angle0 or None)
            return self._joint3(name, "weld", parent, child, at=at,
                                parent_point=parent_point, child_point=child_point)
        self._not_here(f"weld '{name}'", "planar", at=at)
        return self._joint(name, "weld", parent, child, parent_point, child_point,
                           angle0=angle0)

    def distance(self, name, parent, child, *, length=None, parent_point=None,
                 child_point=None):
        """Massless link of `length` [m] between two points (one constraint row); spatial:
        length defaults to the distance at the reference pose."""
        if self.spatial:
            return self._joint3(name, "distance", parent, child, parent_point=parent_point,
                                child_point=child_point, length=length)
        where = f"distance '{name}'"
        length = _number(where, "length", length, positive=True)
        return self._joint(name, "distance", parent, child, parent_point, child_point,
                           length=length)

    def _joint(self, name, kind, parent, child, parent_point, child_point, axis=(1.0, 0.0),
               angle0=0.0, length=0.0):
        where = f"{kind} '{name}'"
        self._claim(name, "joint")
        parent = self._body_ref(where, "parent", parent)
        child = self._body_ref(where, "child", child)
        if parent == child:
            raise ModelError(f"{where}: parent and child are the same body '{parent}'; "
                             f"expected two different bodies")
        parent_point = (0.0, 0.0) if parent_point is None else parent_point
        child_point = (0.0, 0.0) if child_point is None else child_point
        axis = _vec2(where, "axis", axis)
        norm = math.hypot(*axis)
        if norm < 1e-12:
            raise ModelError(f"{where}: axis must be a nonzero vector, received {axis}")
        self._joints.append(Joint(name, kind, parent, child,
                                  _vec2(where, "parent_point", parent_point),
                                  _vec2(where, "child_point", child_point),
                                  (axis[0] / norm, axis[1] / norm),
                                  _number(where, "angle0", angle0), length))
        return name

    def drive(self, name, joint, motion):
        """Driving constraint: the coordinate of `joint` follows motion f(t) (a Motion).

        The multiplier gives the driving effort (output <name>.effort) [N.m or N].
        """
        where = f"drive '{name}'"
        self._claim(name, "drive")
        j = self._coordinate_joint(where, joint)
        if not isinstance(motion, Motion):
            raise ModelError(f"{where}: motion must be a fmu_mb.Motion (see fmu_mb.mechanics.motion), "
                             f"received {type(motion).__name__}")
        self._drives.append(Drive(name, j.name, motion))
        return name

    # ------------------------------------------------------------------ elements
    def tsda(self, name, a, b, *, a_point=None, b_point=None, stiffness=0.0,
             free_length=0.0, damping=0.0, input=True):
        """Translational spring-damper-actuator (seed 003) between point a_point of body a
        and b_point of body b: s = k (l - l0) + c l' + h [N], positive in tension.

        input: True (input named '<name>.h'), a name, or False/None (no actuator).
        """
        where = f"tsda '{name}'"
        self._claim(name, "element")
        pt = vec3 if self.spatial else _vec2
        zero = (0.0,) * (3 if self.spatial else 2)
        el = Element(name, "tsda", self._body_ref(where, "a", a), self._body_ref(where, "b", b),
                     pt(where, "a_point", zero if a_point is None else a_point),
                     pt(where, "b_point", zero if b_point is None else b_point),
                     _number(where, "stiffness", stiffness, nonneg=True),
                     _number(where, "damping", damping, nonneg=True),
                     _number(where, "free_length", free_length, nonneg=True),
                     input=self._input(where, name, input, "N", "actuator force h of " + name))
        if el.a == el.b:
            raise ModelError(f"{where}: a and b are the same body '{el.a}'")
        self._elements.append(el)
        return name

    def rsda(self, name, a=None, b=None, *, joint=None, stiffness=0.0, free_angle=0.0,
             damping=0.0, input=True):
        """Rotational spring-damper-actuator (seed 003) between bodies a and b (or the parent
        and child of `joint`): theta = phi_b - phi_a, s = k (theta - theta0) + c theta' + h
        [N.m]; s acts to decrease theta (on b: -s, on a: +s).
        """
        if self.spatial:
            return self._rsda3(name, joint, stiffness, free_angle, damping, input)
        where = f"rsda '{name}'"
        self._claim(name, "element")
        if joint is not None:
            j = self._joint_ref(where, "joint", joint)
            a, b = j.parent, j.child
        if a is None or b is None:
            raise ModelError(f"{where}: give the bodies a and b, or joint=")
        a, b = self._body_ref(where, "a", a), self._body_ref(where, "b", b)
        if a == b:
            raise ModelError(f"{where}: a and b are the same body '{a}'")
        self._elements.append(Element(
            name, "rsda", a, b, stiffness=_number(where, "stiffness", stiffness, nonneg=True),
            damping=_number(where, "damping", damping, nonneg=True),
            free_value=_number(where, "free_angle", free_angle),
            input=self._input(where, name, input, "N.m", "actuator torque h of " + name)))
        return name

    def force(self, name, body, *, point=None, direction=None, frame="global",
              value=0.0, input=True, at=None):
        """Force (value + h) along unit `direction` at `point` of `body` [N].

        frame "global": direction fixed in space; "body": direction turns with the body.
        Spatial: 3-vectors; at= gives the point globally at the reference pose.
        """
        if self.spatial:
            return self._load3(name, "force", body, point, at, (1, 0, 0) if direction is None
                               else direction, frame, value, input, None)
        self._not_here(f"force '{name}'", "planar", at=at)
        point = (0.0, 0.0) if point is None else point
        direction = (1.0, 0.0) if direction is None else direction
        where = f"force '{name}'"
        self._claim(name, "element")
        if frame not in ("global", "body"):
            raise ModelError(f"{where}: frame must be 'global' or 'body', received {frame!r}")
        d = _vec2(where, "direction", direction)
        n = math.hypot(*d)
        if n < 1e-12:
            raise ModelError(f"{where}: direction must be a nonzero vector, received {d}")
        self._elements.append(Element(
            name, "force", GROUND, self._body_ref(where, "body", body, allow_ground=False),
            b_point=_vec2(where, "point", point), direction=(d[0] / n, d[1] / n), frame=frame,
            value=_number(where, "value", value),
            input=self._input(where, name, input, "N", "force h of " + name)))
        return name

    def torque(self, name, body, *, reaction=GROUND, value=0.0, input=True, axis=None,
               frame="global"):
        """Pure torque (value + h) on `body`, counter-clockwise positive [N.m], with the
        opposite torque on `reaction` (none when it is the ground). Spatial: about the unit
        `axis` in global or body (frame="body") axes."""
        if self.spatial:
            if axis is None:
                raise ModelError(f"torque '{name}': give the torque's axis=(ax, ay, az)")
            return self._load3(name, "torque", body, None, None, axis, frame, value, input,
                               reaction)
        self._not_here(f"torque '{name}'", "planar", axis=axis,
                       frame=None if frame == "global" else frame)
        where = f"torque '{name}'"
        self._claim(name, "element")
        b = self._body_ref(where, "body", body, allow_ground=False)
        a = self._body_ref(where, "reaction", reaction)
        if a == b:
            raise ModelError(f"{where}: body and reaction are the same body '{b}'")
        self._elements.append(Element(
            name, "torque", a, b, value=_number(where, "value", value),
            input=self._input(where, name, input, "N.m", "torque h of " + name)))
        return name

    def point(self, name, body, point=None, *, at=None):
        """A named point (marker) on a body; outputs <name>.x, .y, .vx, .vy (spatial: also
        .z, .vz; at= gives the point globally at the reference pose)."""
        where = f"point '{name}'"
        self._claim(name, "point")
        body = self._body_ref(where, "body", body, allow_ground=False)
        if self.spatial:
            pt = (self._local_point(body, np.array(vec3(where, "at", at))) if at is not None
                  else vec3(where, "point", (0, 0, 0) if point is None else point))
        else:
            self._not_here(where, "planar", at=at)
            pt = _vec2(where, "point", (0.0, 0.0) if point is None else point)
        self._markers.append(Marker(name, body, pt))
        return name

    # ------------------------------------------------------------------ contacts
    def contact(self, name, body, point=None, *, other=GROUND, line_point=None,
                normal=None, radius=0.0, restitution=1.0, plane_point=None, at=None,
                friction=0.0):
        """Unilateral contact of `point` of `body` (a circle of `radius` around it) with the
        line through `line_point` of `other` whose unit `normal` (other's frame) points to the
        free side: gap = (r_point - r_line) . n - radius >= 0 [m]. Newton's law with
        restitution e in [0, 1] at impacts (seed 000 sec. 1.4). Defaults: point and
        line_point (0, 0), normal (0, 1). friction: Coulomb's coefficient mu >= 0 at the
        contact point (the point of the circle nearest the line); 0 is frictionless
        (docs/contacts-friction.md: stick and slip phases, the impact law).

        Spatial models: the point (at= globally at the reference pose, or point= in body
        axes; a sphere of `radius` centred there) against the plane through `plane_point` of
        `other` (its axes, default (0, 0, 0)) with unit `normal` (other's axes, default
        (0, 0, 1)); friction as in the plane (the friction cone is isotropic)."""
        mu = _friction(f"contact '{name}'", friction)
        if self.spatial:
            self._not_here(f"contact '{name}'", "spatial", line_point=line_point)
            return self._contact3(name, body, point, at, other, plane_point, normal, radius,
                                  restitution, mu)
        self._not_here(f"contact '{name}'", "planar", plane_point=plane_point, at=at)
        point = (0.0, 0.0) if point is None else point
        line_point = (0.0, 0.0) if line_point is None else line_point
        normal = (0.0, 1.0) if normal is None else normal
        where = f"contact '{name}'"
        self._claim(name, "contact")
        n = _vec2(where, "normal", normal)
        norm = math.hypot(*n)
        if norm < 1e-12:
            raise ModelError(f"{where}: normal must be a nonzero vector, received {n}")
        b = self._body_ref(where, "body", body, allow_ground=False)
        o = self._body_ref(where, "other", other)
        if b == o:
            raise ModelError(f"{where}: body and other are the same body '{b}'")
        self._contacts.append(Contact(
            name, "point_line", b, o, _vec2(where, "point", point),
            _vec2(where, "line_point", line_point), (n[0] / norm, n[1] / norm),
            _number(where, "radius", radius, nonneg=True),
            restitution=_restitution(where, restitution), friction=mu))
        return name

    def contact_points(self, name, a, b, *, a_point=None, b_point=None,
                       distance, side="apart", restitution=1.0, method="impact",
                       singular_joint=None, criterion=1e-4, criterion_scale=1.0,
                       sharpening=0.5, a_at=None, b_at=None, friction=0.0):
        """Unilateral contact between a point of body a and a point of body b at distance
        l: side "apart" keeps l >= distance (two balls: distance = sum of radii), side
        "within" keeps l <= distance (a string of that length) [m].

        method "reduction" treats the slack-to-taut event by Drenovac's Reduction Method
        (seed 002) on the joint coordinate of `singular_joint` (e.g. the middle hinge of a
        string modelled by two massless rods): a pass starts when det(Mbar)/criterion_scale
        falls to `criterion` (d); d is multiplied by `sharpening` after every pass.

        Spatial models: a_point/b_point are 3-vectors in body axes (default the centre of
        mass), or a_at/b_at the points globally at the reference pose; method "impact"
        only; frictionless (an end stop or a rope acts along the line of the points).

        friction: must be 0 (a distance limit has no contact point between the two points;
        a point against a plane or line of another body, contact(..., other=body), is the
        frictional body-body contact).
        """
        where = f"contact '{name}'"
        if _friction(where, friction) != 0.0:
            raise ModelError(f"{where}: friction on a distance limit (contact_points) is not "
                             f"supported (it has no contact point); received friction = "
                             f"{friction}; use contact(..., other=<body>) for a frictional "
                             f"contact of a point (sphere) against a line or plane of another "
                             f"body")
        if self.spatial:
            if method != "impact":
                raise ModelError(f"{where}: spatial models take method 'impact' only (the "
                                 f"Reduction Method is planar), received {method!r}")
            return self._contact_points3(name, a, b, a_point, b_point, a_at, b_at, distance,
                                         side, restitution)
        self._not_here(where, "planar", a_at=a_at, b_at=b_at)
        a_point = (0.0, 0.0) if a_point is None else a_point
        b_point = (0.0, 0.0) if b_point is None else b_point
        self._claim(name, "contact")
        a = self._body_ref(where, "a", a)
        b = self._body_ref(where, "b", b)
        if a == b:
            raise ModelError(f"{where}: a and b are the same body '{a}'")
        if side not in ("apart", "within"):
            raise ModelError(f"{where}: side must be 'apart' or 'within', received {side!r}")
        if method not in ("impact", "reduction"):
            raise ModelError(f"{where}: method must be 'impact' or 'reduction', received "
                             f"{method!r}")
        sj = None
        if method == "reduction":
            if singular_joint is None:
                raise ModelError(f"{where}: method 'reduction' needs singular_joint=, the "
                                 f"joint whose coordinate is singular at the impact")
            j = self._joint_ref(where, "singular_joint", singular_joint)
            if j.coordinate is None:
                raise ModelError(f"{where}: singular_joint '{j.name}' is a {j.kind} joint; "
                                 f"expected a revolute or prismatic joint")
            sj = j.name
        sharpening = _number(where, "sharpening", sharpening, positive=True)
        if sharpening > 1.0:
            raise ModelError(f"{where}: sharpening must be in (0, 1], received {sharpening}")
        self._contacts.append(Contact(
            name, "point_point", a, b, _vec2(where, "a_point", a_point),
            _vec2(where, "b_point", b_point), (0.0, 0.0),
            _number(where, "distance", distance, positive=True),
            1.0 if side == "apart" else -1.0, restitution=_restitution(where, restitution),
            method=method, singular_joint=sj,
            criterion=_number(where, "criterion", criterion, positive=True),
            criterion_scale=_number(where, "criterion_scale", criterion_scale, positive=True),
            sharpening=sharpening))
        return name

    def joint_limit(self, name, joint, *, lower=None, upper=None, restitution=1.0):
        """End stop on the coordinate q of a revolute or prismatic joint: lower (gap =
        q - lower >= 0) and/or upper (gap = upper - q >= 0) [rad or m]; Newton's law on q'.

        With one bound the contact is called `name`; with both, two contacts
        `<name>_lower` and `<name>_upper` (each with its own outputs)."""
        where = f"joint_limit '{name}'"
        if lower is None and upper is None:
            raise ModelError(f"{where}: give exactly one of lower= or upper=, or both; "
                             f"received neither")
        j = self._coordinate_joint(where, joint)
        lo = None if lower is None else _number(where, "lower", lower)
        hi = None if upper is None else _number(where, "upper", upper)
        e = _restitution(where, restitution)
        if lo is not None and hi is not None:
            if not lo < hi:
                raise ModelError(f"{where}: expected lower < upper, received lower={lo}, "
                                 f"upper={hi}")
            ends = [(f"{name}_lower", lo, 1.0), (f"{name}_upper", hi, -1.0)]
        else:
            ends = [(name, lo, 1.0) if hi is None else (name, hi, -1.0)]
        self._check_free([n for n, _, _ in ends], "contact")
        for cname, bound, side in ends:
            self._claim(cname, "contact")
            self._contacts.append(Contact(cname, "joint_limit", j.child, j.parent,
                                          offset=bound, side=side, joint=j.name,
                                          restitution=e))
        return name

    # ------------------------------------------------------------------ hydraulic cylinder
    # a TSDA-like actuator between two pins with stroke end stops; kept in one
    # block: cylinder() and its helpers only.
    def cylinder(self, name, a, b, *, a_point=None, b_point=None,
                 min_length, max_length, restitution=0.2, friction=0.0, piston_area=None,
                 rod_area=None, force_input=True):
        """Hydraulic cylinder between pin a_point of body a (the barrel's pin) and pin
        b_point of body b (the rod eye): pin-to-pin length l from min_length to max_length [m],
        stroke = l - min_length.

        Force along the line of the pins, pushing the pins apart positive [N]:
            F = h + p_head A_piston - p_rod A_rod - c l'
        with h the input `<name>.h` (force_input=True; a name, or False for none),
        optional pressure inputs `<name>.p_head` and `<name>.p_rod` [Pa] when piston_area
        (and rod_area, the annulus area) [m2] are given, and viscous friction c = friction
        [N.s/m]. In the equations of motion it is a TSDA (seed 003) with s = -F (tension
        positive). The stroke limits are two unilateral point-point contacts between the
        pins (fmu_mb.mechanics.contacts) with Newton's restitution e = restitution:
        `<name>_lower` (fully retracted: l >= min_length, side "apart") and `<name>_upper`
        (fully extended: l <= max_length, side "within"); their outputs count the end-stop
        events. Outputs `<name>.force` (F), `.length`, `.stroke`, `.stroke_rate`,
        `.end_stops` (impacts at both stops so far).
        """
        where = f"cylinder '{name}'"
        if self.spatial:
            return self._cylinder3(name, a, b, a_point, b_point, min_length, max_length,
                                   restitution, friction, piston_area, rod_area, force_input)
        a_point = (0.0, 0.0) if a_point is None else a_point
        b_point = (0.0, 0.0) if b_point is None else b_point
        # validate everything first: a refused call declares nothing
        a = self._body_ref(where, "a", a)
        b = self._body_ref(where, "b", b)
        if a == b:
            raise ModelError(f"{where}: a and b are the same body '{a}'")
        lmin = _number(where, "min_length", min_length, positive=True)
        lmax = _number(where, "max_length", max_length, positive=True)
        if not lmin < lmax:
            raise ModelError(f"{where}: expected min_length < max_length, received "
                             f"min_length={lmin}, max_length={lmax}")
        friction = _number(where, "friction", friction, nonneg=True)
        e = _restitution(where, restitution)
        ap_, bp_ = _vec2(where, "a_point", a_point), _vec2(where, "b_point", b_point)
        if piston_area is None and rod_area is not None:
            raise ModelError(f"{where}: rod_area needs piston_area (the head side's area)")
        areas = []
        if piston_area is not None:
            ap = _number(where, "piston_area", piston_area, positive=True)
            ar = 0.0 if rod_area is None else _number(where, "rod_area", rod_area,
                                                      positive=True)
            if ar >= ap:
                raise ModelError(f"{where}: rod_area (the annulus, piston area minus rod "
                                 f"cross-section) must be < piston_area, received "
                                 f"rod_area={ar}, piston_area={ap}")
            areas = [(f"{name}.p_head", ap, f"head-side pressure of cylinder {name}")]
            if ar > 0.0:
                areas.append((f"{name}.p_rod", -ar, f"rod-side pressure of cylinder {name}"))
        self._check_free([name, f"{name}_lower", f"{name}_upper"], "element")
        taken = {i.name for i in self._inputs}
        for iname, _, _ in areas:
            if iname in taken:
                raise ModelError(f"{where}: input '{iname}' is already declared")
        self._claim(name, "element")
        gains = []
        if force_input not in (False, None):
            gains.append((self._input(where, name, True if force_input is True else
                                      force_input, "N", f"force h of cylinder {name}, "
                                      f"pushing the pins apart positive"), 1.0))
        for iname, gain, text in areas:
            gains.append((self._input(where, name, iname, "Pa", text), gain))
        self._elements.append(Element(name, "cylinder", a, b, ap_, bp_, damping=friction,
                                      free_value=lmin, value=lmax, gains=tuple(gains)))
        for cname, dist, side in ((f"{name}_lower", lmin, 1.0), (f"{name}_upper", lmax, -1.0)):
            self._claim(cname, "contact")
            self._contacts.append(Contact(cname, "point_point", a, b, ap_, bp_, (0.0, 0.0),
                                          dist, side, restitution=e))
        return name

    def _check_free(self, names, kind):
        """Raise before declaring anything when one of `names` is taken (an item that
        declares several names declares all or none)."""
        for n in names:
            if isinstance(n, str) and n in self._names:
                raise ModelError(f"{kind} '{n}': the name is already used by a "
                                 f"{self._names[n]}; names must be unique")

    # ------------------------------------------------------------------ initial conditions
    def initial(self, joint, value=None, rate=None, *, guess=None):
        """Initial coordinate [rad or m] and rate of a revolute or prismatic joint.

        Joints left out are found by the assembly; `guess` (not enforced) is the starting
        value of the joint's coordinate there, to pick an assembly mode (branch) of a loop.
        """
        where = f"initial condition of joint '{joint}'"
        j = self._joint_ref(where, "joint", joint)
        if j.coordinate is None:
            raise ModelError(f"{where}: a {j.kind} joint has no coordinate; expected a "
                             f"revolute or prismatic joint")
        if j.name in self._initial:
            raise ModelError(f"{where}: given twice")
        v = None if value is None else _number(where, "value", value)
        r = None if rate is None else _number(where, "rate", rate)
        gs = None if guess is None else _number(where, "guess", guess)
        if v is not None and gs is not None:
            raise ModelError(f"{where}: give value or guess, not both")
        self._initial[j.name] = InitialCondition(j.name, v, r, gs)

    # ------------------------------------------------------------------ build
    def build(self):
        """Validate, find the topology, assemble the initial state; return the Model."""
        declared = [p.name for p in self._params]
        unknown = sorted(set(self._overrides) - set(declared))
        if unknown:
            raise UnknownParameterError(f"model '{self.name}': unknown parameter(s) "
                                        f"{unknown}; parameters are {declared}")
        if not self._bodies:
            raise ModelError(f"model '{self.name}': no bodies; declare at least one with "
                             f"mb.body(...)")
        if len(self.gravity) != (3 if self.spatial else 2):
            raise ModelError(f"model '{self.name}': gravity {tuple(self.gravity)} does not match "
                             f"the model's kind ({'spatial' if self.spatial else 'planar'}, "
                             f"decided by the gravity given to ModelBuilder); give "
                             f"{'three' if self.spatial else 'two'} components, or construct "
                             f"the builder with the other kind")
        planar_only = [f"{e.name} ({e.kind})" for e in self._elements
                       if e.kind not in ("tsda", "rsda", "bushing", "force", "torque",
                                         "cylinder")]
        if self.spatial and planar_only:
            raise ModelError(f"model '{self.name}': elements {planar_only} exist in planar "
                             f"models only; spatial models take tsda, rsda, bushing, force, "
                             f"torque and cylinder")
        if self._pairs is None:
            self._pairs = self._lower_shapes()     # shape pairs -> contacts, once
        if self.spatial:
            from .spatial.compiled import compile_spatial   # a planar model never loads it
            compiled = compile_spatial(self)
        else:
            compiled = _compile(self)
        tree, cut, loops = _spanning_tree(self)
        nb = len(self._bodies)
        f6 = 6 if self.spatial else 3
        gruebler = (f6 * nb - sum(f6 - j.freedom for j in self._joints) - len(self._drives)
                    - len(self._couplers))
        topo = Topology(nb, len(self._joints), max(len(self._joints) - nb, 0), gruebler, 0,
                        compiled.n_rows, 0, tuple(name for name, _ in tree), tuple(cut),
                        tuple(loops))
        zeros = np.zeros((7 if self.spatial else 3) * nb)
        model = Model(self.name, self.gravity, tuple(self._bodies), tuple(self._joints),
                      tuple(self._drives), tuple(self._elements), tuple(self._markers),
                      tuple(self._params), tuple(self._inputs),
                      tuple(self._initial.values()), topo, compiled, zeros, zeros,
                      0.0, self.description, tuple(self._contacts),
                      shapes=tuple(self._shapes), shape_pairs=self._pairs,
                      couplers=tuple(self._couplers))
        x0, xd0, rank, note = assembly.assemble(model, tree)
        topo = replace(topo, dof=x0.shape[0] - rank, redundant=compiled.n_rows - rank)
        x0.setflags(write=False)
        xd0.setflags(write=False)
        if not self.spatial:
            self._warn_ignored_positions(model, tree, x0)
        return replace(model, x0=x0, xd0=xd0, topology=topo, assembly_note=note)

    def _warn_ignored_positions(self, model, tree, x0):
        """AssemblyWarning for a body given a position= that its tree joint places elsewhere:
        a given coordinate (mb.initial) that disagrees with it, or a position the joint cannot
        reach from its placed side. Bodies of a closed loop are left out: the loop closure
        places them, and their position= reads as a sketch (assembly.declared_note judges
        those)."""
        import warnings

        from ..errors import AssemblyWarning

        index = {b.name: b.index for b in model.bodies}
        in_loop = {name for loop in model.topology.loops for name in loop}   # placed by closure
        size = 1.0 + max(np.abs(x0[0::3]).max(initial=0.0), np.abs(x0[1::3]).max(initial=0.0))
        for name, placed in tree:
            j = model.joint(name)
            body = j.child if placed == j.parent else j.parent
            if body not in self._declared_position or name in self._initial or body in in_loop:
                continue
            want = np.asarray(self._declared_position[body], float)
            got = x0[3 * index[body]:3 * index[body] + 2]
            if np.linalg.norm(got - want) > 1e-6 * size:
                warnings.warn(
                    f"model '{self.name}': body '{body}' is placed by joint '{name}' at "
                    f"({got[0]:.6g}, {got[1]:.6g}), not at its declared position "
                    f"({want[0]:.6g}, {want[1]:.6g}): the joint's coordinate (given, or the "
                    f"one nearest the declared pose) cannot put it there; check the position "
                    f"and the joint's points, or set mb.initial('{name}', value=...)",
                    AssemblyWarning, stacklevel=3)

    # ------------------------------------------------------------------ helpers
    def _not_here(self, where, kind, **given):
        """ModelError for arguments the other kind of model takes (never silently ignored)."""
        bad = sorted(k for k, v in given.items() if v is not None)
        if bad:
            other = "planar" if kind == "spatial" else "spatial"
            raise ModelError(f"{where}: {', '.join(bad)} belong(s) to {other} models; this "
                             f"model is {kind} (gravity with "
                             f"{3 if kind == 'spatial' else 2} components)")

    def _claim(self, name, kind, pattern=_NAME):
        if not isinstance(name, str) or not pattern.match(name):
            if pattern is _INPUT_NAME:
                raise ModelError(f"{kind} name: expected an identifier [A-Za-z_][A-Za-z0-9_]* "
                                 f"or dotted identifiers like 'joint.q0', received {name!r}")
            raise ModelError(f"{kind} name: expected an identifier [A-Za-z_][A-Za-z0-9_]* "
                             f"(it becomes an FMU variable prefix), received {name!r}")
        if name in _RESERVED:
            raise ModelError(f"{kind} name {name!r} is reserved; reserved names are "
                             f"{sorted(_RESERVED)}")
        if name in self._names:
            raise ModelError(f"{kind} '{name}': the name is already used by a "
                             f"{self._names[name]}; names must be unique")
        self._names[name] = kind

    def _body_named(self, name):
        """The first body declared as `name` (a str), or None; the bodies by name are indexed
        as they are appended (a lookup does not scan them)."""
        seen, index = self.__dict__.get("_body_index", (0, {}))
        for b in self._bodies[seen:]:
            index.setdefault(b.name, b)
        self._body_index = (len(self._bodies), index)
        return index.get(name)

    def _body_ref(self, where, arg, value, allow_ground=True):
        if value == GROUND and allow_ground:
            return GROUND
        if not isinstance(value, str) or self._body_named(value) is None:
            names = [b.name for b in self._bodies]
            valid = ([GROUND] if allow_ground else []) + names
            raise ModelError(f"{where}: unknown {arg} body {value!r}; bodies are {valid}")
        return value

    def _coordinate_joint(self, where, value):
        """The revolute or prismatic joint called `value` (drives and limits need one)."""
        j = self._joint_ref(where, "joint", value)
        if j.coordinate is None:
            raise ModelError(f"{where}: joint '{j.name}' is a {j.kind} joint without a "
                             f"coordinate; expected a revolute or prismatic joint")
        return j

    def _joint_ref(self, where, arg, value):
        for j in self._joints:
            if j.name == value:
                return j
        raise ModelError(f"{where}: unknown {arg} {value!r}; joints are "
                         f"{[j.name for j in self._joints]}")

    def _input(self, where, name, value, unit, description):
        if value is False or value is None:
            return None
        iname = f"{name}.h" if value is True else value
        if not isinstance(iname, str) or not _INPUT_NAME.match(iname):
            raise ModelError(f"{where}: input name must be a dotted identifier like "
                             f"'{name}.h', received {value!r}")
        if any(i.name == iname for i in self._inputs):
            raise ModelError(f"{where}: input '{iname}' is already declared")
        self._inputs.append(Input(iname, unit, description))
        return iname


def _model_file_docstring(frame):
    """The docstring of the model file whose code is `frame` (a module loaded by
    fmu_mb.mechanics.loader or by an FMU, named fmu_mb_...), else ""."""
    g = frame.f_globals if frame is not None else {}
    if str(g.get("__name__", "")).startswith("fmu_mb_") and isinstance(g.get("__doc__"), str):
        return g["__doc__"].strip()
    return ""


# ---------------------------------------------------------------------- validation helpers
def _friction(where, value):
    mu = _number(where, "friction", value)
    if mu < 0.0:
        raise ModelError(f"{where}: friction must be a coefficient mu >= 0, received {mu}")
    return mu


def _restitution(where, value):
    e = _number(where, "restitution", value)
    if not 0.0 <= e <= 1.0:
        raise ModelError(f"{where}: restitution must be in [0, 1], received {e}")
    return e


def _vec2(where, arg, value):
    try:
        a, b = value
    except (TypeError, ValueError):
        raise ModelError(f"{where}: {arg} must be a pair (x, y), received {plain(value)}") from None
    return (_number(where, arg + "[0]", a), _number(where, arg + "[1]", b))


# ---------------------------------------------------------------------- topology
def _spanning_tree(mb):
    """Breadth-first spanning tree from the ground over revolute, prismatic and weld joints;
    distance joints and loop-closing joints are cut joints. Returns (tree, cut, loops) with
    loops[i] the bodies of the loop that cut joint i closes."""
    adj = {b.name: [] for b in mb._bodies}
    adj[GROUND] = []
    for j in mb._joints:
        if j.kind != "distance":
            adj[j.parent].append(j)
            adj[j.child].append(j)
    seen, parent_of, tree = set(), {}, []
    roots = [GROUND] + [b.name for b in mb._bodies]
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        parent_of[root] = None
        queue = deque([root])
        while queue:
            node = queue.popleft()
            for j in adj[node]:
                other = j.child if j.parent == node else j.parent
                if other not in seen:
                    seen.add(other)
                    parent_of[other] = node
                    tree.append((j.name, node))
                    queue.append(other)
    in_tree = {name for name, _ in tree}
    cut = [j.name for j in mb._joints if j.name not in in_tree]
    loops = []
    for name in cut:
        j = next(jj for jj in mb._joints if jj.name == name)
        pa, pb = _path(parent_of, j.parent), _path(parent_of, j.child)
        common = set(pa) & set(pb)
        join = [n for n in pa if n in common][:1]
        loop = ([n for n in pa if n not in common] + join
                + [n for n in reversed(pb) if n not in common])
        loops.append(tuple(loop))
    return tree, cut, loops


def _path(parent_of, node):
    out = []
    while node is not None:
        out.append(node)
        node = parent_of.get(node)
    return out


# ---------------------------------------------------------------------- compile
def _cylinder_gains(tsda, inames):
    """(n_tsda, n_inputs) matrix G with the TSDA force s = ... - G u for cylinder rows (their
    pushing force is sum gain * input), or None without cylinders."""
    if not any(e.kind == "cylinder" for e in tsda):
        return None
    G = np.zeros((len(tsda), len(inames)))
    for v, e in enumerate(tsda):
        for iname, gain in e.gains:
            G[v, inames.index(iname)] = gain
    G.setflags(write=False)
    return G


def _compile(mb):
    bodies = mb._bodies
    nb = len(bodies)
    idx = {b.name: b.index for b in bodies}
    idx[GROUND] = nb
    mass = np.array([[b.mass, b.mass, b.inertia] for b in bodies]).reshape(-1)
    # metric of the projections: the masses, with zero entries replaced by a small weight
    # (a massless coordinate is the cheapest one to move)
    weight = np.where(mass > 0, mass, 1e-6 * max(mass.max(), 1e-300))

    row = 0
    pd, ang, prj, dst, joint_rows = [], [], [], [], []
    for j in mb._joints:
        rows = list(range(row, row + j.n_rows))
        joint_rows.append(np.array(rows, dtype=np.intp))
        item = (idx[j.parent], idx[j.child], j.parent_point, j.child_point)
        if j.kind in ("revolute", "weld"):
            pd.append((item, rows[0:2]))
        if j.kind == "weld":
            ang.append((item, rows[2], j.angle0))
        if j.kind == "prismatic":
            prj.append((item, rows[0], (-j.axis[1], j.axis[0])))
            ang.append((item, rows[1], j.angle0))
        if j.kind == "distance":
            dst.append((item, rows[0], j.length))
        row += j.n_rows
    drives = []
    jmap = {j.name: j for j in mb._joints}
    for d in mb._drives:
        j = jmap[d.joint]
        ps = PairSet.make([idx[j.parent]], [idx[j.child]], [j.parent_point], [j.child_point])
        if j.kind == "revolute":
            drives.append((row, "angle", ps, j.angle0, d.motion))
        else:
            drives.append((row, "position", ps, np.array([j.axis]), d.motion))
        row += 1

    def pairs(items):
        if not items:
            return PairSet.make([], [], np.zeros((0, 2)), np.zeros((0, 2)))
        p, c, sp, sc = zip(*[it[0] for it in items])
        return PairSet.make(p, c, sp, sc)

    def arr(values, dtype=float):
        a = np.array(values, dtype=dtype)
        a.setflags(write=False)
        return a

    coord_ang, coord_prj, coord_joints = [], [], []
    for k, j in enumerate(mb._joints):
        if j.coordinate is None:
            continue
        pos = len(coord_joints)
        coord_joints.append(k)
        item = ((idx[j.parent], idx[j.child], j.parent_point, j.child_point), pos)
        if j.kind == "revolute":
            coord_ang.append((item[0], pos, j.angle0))
        else:
            coord_prj.append((item[0], pos, j.axis))

    els = mb._elements
    inames = [i.name for i in mb._inputs]

    def uidx(e):
        return inames.index(e.input) if e.input else -1

    tsda = [e for e in els if e.kind in ("tsda", "cylinder")]     # cylinders: TSDA rows
    rsda = [e for e in els if e.kind == "rsda"]
    frc = [e for e in els if e.kind == "force"]
    trq = [e for e in els if e.kind == "torque"]
    if mb._contacts:
        from .contacts import compile_contacts   # (a model without contacts never loads it)
        contacts = compile_contacts(mb._contacts, idx, jmap)
    else:
        contacts = None

    return Compiled(
        contacts=contacts,
        nb=nb, mass_diag=arr(mass), inv_mass_diag=arr(1.0 / weight),
        mass_positive=bool(np.all(mass > 0)), n_rows=row,
        pd=pairs(pd), pd_rows=arr([r for _, r in pd], np.intp).reshape(-1, 2),
        ang=pairs(ang), ang_offset=arr([a for *_, a in ang]),
        ang_rows=arr([r for _, r, _ in ang], np.intp),
        prj=pairs(prj), prj_w0=arr([w for *_, w in prj]).reshape(-1, 2),
        prj_rows=arr([r for _, r, _ in prj], np.intp),
        dst=pairs(dst), dst_length=arr([L for *_, L in dst]),
        dst_rows=arr([r for _, r, _ in dst], np.intp),
        drives=tuple(drives), joint_rows=tuple(joint_rows), coord_joints=tuple(coord_joints),
        coord_ang=pairs(coord_ang), coord_ang_offset=arr([a for *_, a in coord_ang]),
        coord_ang_pos=arr([p for _, p, _ in coord_ang], np.intp),
        coord_prj=pairs(coord_prj), coord_prj_w0=arr([w for *_, w in coord_prj]).reshape(-1, 2),
        coord_prj_pos=arr([p for _, p, _ in coord_prj], np.intp),
        tsda=PairSet.make([idx[e.a] for e in tsda], [idx[e.b] for e in tsda],
                          np.array([e.a_point for e in tsda]).reshape(-1, 2),
                          np.array([e.b_point for e in tsda]).reshape(-1, 2)),
        tsda_k=arr([e.stiffness for e in tsda]), tsda_c=arr([e.damping for e in tsda]),
        tsda_l0=arr([e.free_value for e in tsda]), tsda_u=arr([uidx(e) for e in tsda], np.intp),
        rsda=PairSet.make([idx[e.a] for e in rsda], [idx[e.b] for e in rsda],
                          np.zeros((len(rsda), 2)), np.zeros((len(rsda), 2))),
        rsda_k=arr([e.stiffness for e in rsda]), rsda_c=arr([e.damping for e in rsda]),
        rsda_theta0=arr([e.free_value for e in rsda]),
        rsda_u=arr([uidx(e) for e in rsda], np.intp),
        frc_body=arr([idx[e.b] for e in frc], np.intp),
        frc_point=arr([e.b_point for e in frc]).reshape(-1, 2),
        frc_dir=arr([e.direction for e in frc]).reshape(-1, 2),
        frc_body_frame=arr([e.frame == "body" for e in frc], bool),
        frc_value=arr([e.value for e in frc]), frc_u=arr([uidx(e) for e in frc], np.intp),
        trq_body=arr([idx[e.b] for e in trq], np.intp),
        trq_reaction=arr([idx[e.a] for e in trq], np.intp),
        trq_value=arr([e.value for e in trq]), trq_u=arr([uidx(e) for e in trq], np.intp),
        tsda_gain=_cylinder_gains(tsda, inames),
        markers=PairSet.make([idx[m.body] for m in mb._markers], [idx[m.body] for m in
                                                                   mb._markers],
                             np.array([m.point for m in mb._markers]).reshape(-1, 2),
                             np.array([m.point for m in mb._markers]).reshape(-1, 2)),
    )
