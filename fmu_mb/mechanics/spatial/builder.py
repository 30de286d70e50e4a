"""The spatial half of ModelBuilder (mixed into fmu_mb.mechanics.builder.ModelBuilder): the
calls of a model whose gravity has three components. Points and axes of a joint are given
either globally at the reference pose (at=, axis=: the declared positions and orientations of
the bodies, as in Exudyn or Simscape) or in body axes (parent_point=, child_point=,
parent_axis=, child_axis=). The joint frames on parent and child (columns x, y, z) coincide
at the reference pose; z is the joint axis. With parent_axis= the parent's frame is built in
the parent's own axes (rotations.frame_from_axis), with child_axis= the child's likewise."""
import numpy as np

from ...errors import ModelError, plain
from ..model import GROUND, Body, Contact, Coupler, Element, Joint
from ..validation import number
from . import rotations as rot


def inertia_tensor(where, inertia):
    """(3, 3) tuple from (Ixx, Iyy, Izz) or a symmetric 3 x 3 positive semi-definite matrix."""
    try:
        a = np.asarray(inertia, dtype=float)
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape not in ((3,), (3, 3)) or not np.all(np.isfinite(a)):
        raise ModelError(f"{where}: inertia must be (Ixx, Iyy, Izz) or a 3 x 3 matrix about "
                         f"the centre of mass in body axes [kg.m2], received {plain(inertia)}")
    J = np.diag(a) if a.shape == (3,) else a
    if not np.allclose(J, J.T, atol=1e-12 * max(1.0, np.abs(J).max())):
        raise ModelError(f"{where}: the inertia matrix must be symmetric, received {J.tolist()}")
    w = np.linalg.eigvalsh(J)
    tol = 1e-12 * max(1.0, w.max())
    if w.min() < -tol or any(w[i] + w[j] < w[k] - tol for i, j, k in
                             ((0, 1, 2), (1, 2, 0), (0, 2, 1))):
        raise ModelError(f"{where}: the inertia matrix must be positive semi-definite and "
                         f"satisfy the triangle inequality of principal moments, received "
                         f"principal moments {w.tolist()}")
    return tuple(map(tuple, J))


def orientation_quaternion(where, value):
    """Unit quaternion (e0, e1, e2, e3) from a quaternion (4 numbers, normalised) or a 3 x 3
    rotation matrix (body axes -> global)."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        a = None
    if a is not None and a.shape == (4,) and np.all(np.isfinite(a)) and np.linalg.norm(a) > 0:
        return tuple(a / np.linalg.norm(a))
    if a is not None and a.shape == (3, 3) and np.all(np.isfinite(a)):
        if not np.allclose(a @ a.T, np.eye(3), atol=1e-9) or np.linalg.det(a) < 0:
            raise ModelError(f"{where}: orientation matrix must be a rotation (orthonormal, "
                             f"det +1), received {a.tolist()}")
        return tuple(rot.from_matrix(a))
    raise ModelError(f"{where}: orientation must be a quaternion (e0, e1, e2, e3) or a 3 x 3 "
                     f"rotation matrix (see fmu_mb.cardan for Cardan angles), received "
                     f"{value!r}")


def vec3(where, arg, value, unit=False):
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ModelError(f"{where}: {arg} must be a finite 3-vector (x, y, z), received "
                         f"{plain(value)}")
    if unit:
        n = np.linalg.norm(a)
        if n < 1e-12:
            raise ModelError(f"{where}: {arg} must be a nonzero vector, received {plain(value)}")
        a = a / n
    return tuple(float(v) for v in a)


def _restitution(where, value):
    e = number(where, "restitution", value)
    if not 0.0 <= e <= 1.0:
        raise ModelError(f"{where}: restitution must be in [0, 1], received {e}")
    return e


def _matmul3(A, B):
    """A @ B for a 3 x 3 A and B of shape (3,) or (3, 3), summed in one fixed order
    ((a0 b0 + a1 b1) + a2 b2, no fused multiply-add): the same numbers on every machine
    (numpy's @ goes through BLAS kernels whose order and FMA depend on the CPU) and as the
    parameter compiler's traced twin of the joint geometry (fmu_mb.engine.params)."""
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    if B.ndim == 1:
        return (A[:, 0] * B[0] + A[:, 1] * B[1]) + A[:, 2] * B[2]
    return (A[:, 0:1] * B[0:1, :] + A[:, 1:2] * B[1:2, :]) + A[:, 2:3] * B[2:3, :]


def _frame_tuple(F):
    return tuple(map(tuple, np.asarray(F, float)))


class SpatialItems:
    """Spatial builder calls; ModelBuilder dispatches to them when self.spatial is True."""

    # -------------------------------------------------------------- reference pose
    def _pose(self, body):
        """(r, A) of a body at the reference pose (its declared position and orientation),
        read-only arrays computed once per body (every joint asks for both of its bodies)."""
        if body == GROUND:
            return np.zeros(3), np.eye(3)
        cache = self.__dict__.setdefault("_pose_cache", {})
        hit = cache.get(body)
        if hit is None:
            b = self._body_named(body)
            r, A = np.array(b.position), rot.matrix(np.array([b.orientation]))[0]
            r.setflags(write=False)
            A.setflags(write=False)
            hit = cache[body] = (r, A)
        return hit

    def _local_point(self, body, at):
        r, A = self._pose(body)
        return tuple(_matmul3(A.T, np.asarray(at) - r))

    def _local_frame(self, body, F):
        return _frame_tuple(_matmul3(self._pose(body)[1].T, F))

    # -------------------------------------------------------------- bodies
    def _body3(self, name, mass, inertia, position, orientation, velocity, angular_velocity):
        where = f"body '{name}'"
        self._claim(name, "body")
        mass = number(where, "mass", mass, nonneg=True)
        J = inertia_tensor(where, inertia)
        if mass == 0.0 and np.abs(J).max() > 0.0:
            raise ModelError(f"{where}: a body with zero mass must have zero inertia "
                             f"(a massless link), received inertia {J}")
        q = orientation_quaternion(where, (1.0, 0.0, 0.0, 0.0) if orientation is None
                                   else orientation)
        self._bodies.append(Body(
            name, mass, J, len(self._bodies), vec3(where, "position", position),
            0.0, vec3(where, "velocity", velocity),
            vec3(where, "angular_velocity", angular_velocity), q))
        return name

    # -------------------------------------------------------------- joints
    def _joint3(self, name, kind, parent, child, *, at=None, axis=None, axis2=None,
                parent_point=None, child_point=None, parent_axis=None, child_axis=None,
                length=None):
        where = f"{kind} '{name}'"
        self._claim(name, "joint")
        parent = self._body_ref(where, "parent", parent)
        child = self._body_ref(where, "child", child)
        if parent == child:
            raise ModelError(f"{where}: parent and child are the same body '{parent}'; "
                             f"expected two different bodies")
        if at is not None:
            if parent_point is not None or child_point is not None:
                raise ModelError(f"{where}: give at= (global point at the reference pose) or "
                                 f"parent_point=/child_point= (body axes), not both")
            at = np.array(vec3(where, "at", at))
            sp, sc = self._local_point(parent, at), self._local_point(child, at)
        else:
            sp = vec3(where, "parent_point", (0, 0, 0) if parent_point is None else parent_point)
            sc = vec3(where, "child_point", (0, 0, 0) if child_point is None else child_point)
        Ap, Ac = self._pose(parent)[1], self._pose(child)[1]
        if axis is not None and parent_axis is not None:
            raise ModelError(f"{where}: give axis= (global) or parent_axis= (parent axes), "
                             f"not both")
        if kind in ("spherical", "distance"):
            Fp, Fc = Ap.T, Ac.T             # the global axes at the reference pose
        else:
            if axis is not None:
                z = np.array(vec3(where, "axis", axis, unit=True))
            elif parent_axis is not None:       # body axes: the frame is the parent's own
                zl = np.array(vec3(where, "parent_axis", parent_axis, unit=True))
                z = Ap @ zl
            elif kind == "weld":
                z = np.array([0.0, 0.0, 1.0])
            else:
                raise ModelError(f"{where}: give the joint axis: axis=(ax, ay, az) in global "
                                 f"axes at the reference pose, or parent_axis= in the "
                                 f"parent's axes")
            F = rot.frame_from_axis(z)
            Fp = rot.frame_from_axis(zl) if parent_axis is not None else _matmul3(Ap.T, F)
            Fc = _matmul3(_matmul3(Ac.T, Ap), Fp)
            if kind == "universal":
                if axis2 is None:
                    raise ModelError(f"{where}: give the second (child's) axis axis2= in "
                                     f"global axes at the reference pose")
                z2 = np.array(vec3(where, "axis2", axis2, unit=True))
                if abs(z2 @ z) > 1e-9:
                    raise ModelError(f"{where}: the two axes of a universal joint must be "
                                     f"perpendicular, received axis={plain(tuple(z))}, "
                                     f"axis2={plain(tuple(z2))}")
                # parent frame (x = axis2, z = axis), child frame (x = axis, z = axis2) at the
                # reference pose: the joint's two angles are measured from these
                Fp = Ap.T @ np.stack([z2, np.cross(z, z2), z], axis=1)
                Fc = Ac.T @ np.stack([z, np.cross(z2, z), z2], axis=1)
            elif child_axis is not None:
                zc = np.array(vec3(where, "child_axis", child_axis, unit=True))
                Fc = rot.frame_from_axis(zc)
        if kind == "distance":
            d = (self._pose(child)[0] + Ac @ np.array(sc)
                 - self._pose(parent)[0] - Ap @ np.array(sp))
            length = (float(np.linalg.norm(d)) if length is None
                      else number(where, "length", length, positive=True))
            if length <= 0.0:
                raise ModelError(f"{where}: the two points coincide at the reference pose; "
                                 f"give length=")
        self._joints.append(Joint(name, kind, parent, child, sp, sc, axis=(0.0, 0.0, 1.0),
                                  length=length or 0.0, dim=3, frame_p=_frame_tuple(Fp),
                                  frame_c=_frame_tuple(Fc)))
        return name

    def spherical(self, name, parent, child, *, at=None, parent_point=None, child_point=None):
        """Spherical (ball) joint: the points coincide (3 rows); spatial models only."""
        self._need_spatial("spherical")
        return self._joint3(name, "spherical", parent, child, at=at,
                            parent_point=parent_point, child_point=child_point)

    def universal(self, name, parent, child, *, at=None, axis=None, axis2=None,
                  parent_point=None, child_point=None):
        """Universal (Cardan) joint: the points coincide and `axis` (fixed in the parent) stays
        perpendicular to `axis2` (fixed in the child); both global at the reference pose."""
        self._need_spatial("universal")
        return self._joint3(name, "universal", parent, child, at=at, axis=axis, axis2=axis2,
                            parent_point=parent_point, child_point=child_point)

    def cylindrical(self, name, parent, child, *, at=None, axis=None, parent_point=None,
                    child_point=None, parent_axis=None, child_axis=None):
        """Cylindrical joint: rotation about and translation along `axis` (4 rows)."""
        self._need_spatial("cylindrical")
        return self._joint3(name, "cylindrical", parent, child, at=at, axis=axis,
                            parent_point=parent_point, child_point=child_point,
                            parent_axis=parent_axis, child_axis=child_axis)

    def fixed(self, name, parent, child, *, at=None, parent_point=None, child_point=None):
        """Fixed joint (weld): the child keeps its reference pose relative to the parent."""
        return self.weld(name, parent, child, at=at, parent_point=parent_point,
                         child_point=child_point)

    def armature(self, joint, value):
        """Armature of a revolute or prismatic joint: a reflected rotor inertia [kg.m2 or kg]
        added to the diagonal of the joint-space mass matrix on its coordinate (MuJoCo's
        armature); the joint must be a joint of the spanning tree. Formulations in joint
        coordinates (recursive, tmt, lagrange, minimal) run it; newton_euler refuses it."""
        self._need_spatial("armature")
        where = f"armature of joint '{joint}'"
        j = self._joint_ref(where, "joint", joint)
        if j.kind not in ("revolute", "prismatic"):
            raise ModelError(f"{where}: a {j.kind} joint; expected a revolute or prismatic "
                             f"joint")
        a = number(where, "value", value, nonneg=True)
        k = self._joints.index(j)
        from dataclasses import replace
        self._joints[k] = replace(j, armature=a)
        return joint

    def coupler(self, name, joint, master, ratio=1.0, offset=0.0):
        """Coupling constraint q_joint = ratio * q_master + offset between the coordinates of
        two revolute or prismatic joints (a URDF mimic joint): one constraint row, solved
        with the cut joints' and drives' rows; its multiplier is -(the generalised force
        that holds `joint`). Revolute coordinates are measured in (-pi, pi] and the
        residual is wrapped, so a ratio other than +-1 holds while the master's angle stays
        in (-pi, pi]."""
        self._need_spatial("coupler")
        where = f"coupler '{name}'"
        j = self._coordinate_joint(where, joint)
        m = self._coordinate_joint(where, master)
        if j.name == m.name:
            raise ModelError(f"{where}: joint and master are both '{j.name}'; expected two "
                             f"different joints")
        if any(c.joint == j.name for c in self._couplers):
            raise ModelError(f"{where}: joint '{j.name}' is already coupled")
        r, b = number(where, "ratio", ratio), number(where, "offset", offset)
        if r == 0.0:
            raise ModelError(f"{where}: ratio must be nonzero, received {ratio}")
        self._claim(name, "coupler")                   # (a refused call claims no name)
        self._couplers.append(Coupler(name, j.name, m.name, r, b))
        return name

    def _need_spatial(self, what):
        if not self.spatial:
            raise ModelError(f"{what} joints exist in spatial models only; give "
                             f"ModelBuilder(..., gravity=(gx, gy, gz)) for a spatial model")

    # -------------------------------------------------------------- elements
    def bushing(self, name, a, b, *, at=None, a_point=None, b_point=None, frame=None,
                stiffness=(0.0, 0.0, 0.0), rotational_stiffness=(0.0, 0.0, 0.0),
                damping=(0.0, 0.0, 0.0), rotational_damping=(0.0, 0.0, 0.0)):
        """Linear bushing (6-D spring-damper) between a frame on body a and one on body b,
        coincident at the reference pose: at= (global point) or a_point=/b_point= (body
        axes); frame= its axes (3 x 3, columns, global at the reference pose; default the
        global axes). Stiffness and damping: 3 diagonal entries or 3 x 3 matrices in frame
        a's axes [N/m, N.s/m, N.m/rad, N.m.s/rad]. Elongations e = (d . x_a, d . y_a, d . z_a,
        small rotation of b relative to a); s = K e + C e', acting on b against e."""
        self._need_spatial("bushing")
        where = f"bushing '{name}'"
        self._claim(name, "element")
        a = self._body_ref(where, "a", a)
        b = self._body_ref(where, "b", b)
        if a == b:
            raise ModelError(f"{where}: a and b are the same body '{a}'")
        if at is not None:
            at = np.array(vec3(where, "at", at))
            sa, sb = self._local_point(a, at), self._local_point(b, at)
        else:
            sa = vec3(where, "a_point", (0, 0, 0) if a_point is None else a_point)
            sb = vec3(where, "b_point", (0, 0, 0) if b_point is None else b_point)
        F = np.eye(3) if frame is None else np.asarray(frame, float)
        if F.shape != (3, 3) or not np.allclose(F.T @ F, np.eye(3), atol=1e-9):
            raise ModelError(f"{where}: frame must be a 3 x 3 rotation matrix (columns the "
                             f"bushing axes), received {frame!r}")

        def block(arg, v):
            m = np.asarray(v, dtype=float)
            m = np.diag(m) if m.shape == (3,) else m
            if m.shape != (3, 3) or not np.all(np.isfinite(m)):
                raise ModelError(f"{where}: {arg} must be 3 numbers or a 3 x 3 matrix, "
                                 f"received {plain(v)}")
            return m
        K = np.zeros((6, 6))
        Cm = np.zeros((6, 6))
        K[:3, :3], K[3:, 3:] = block("stiffness", stiffness), block("rotational_stiffness",
                                                                    rotational_stiffness)
        Cm[:3, :3], Cm[3:, 3:] = block("damping", damping), block("rotational_damping",
                                                                   rotational_damping)
        self._elements.append(Element(
            name, "bushing", a, b, sa, sb, frame_a=self._local_frame(a, F),
            frame_b=self._local_frame(b, F), K=_frame_tuple(K), C=_frame_tuple(Cm),
            e0=(0.0,) * 6, input=None))
        return name

    def _rsda3(self, name, joint, stiffness, free_angle, damping, input):
        where = f"rsda '{name}'"
        self._claim(name, "element")
        if joint is None:
            raise ModelError(f"{where}: in a spatial model an RSDA acts on a revolute joint; "
                             f"give joint=")
        j = self._joint_ref(where, "joint", joint)
        if j.kind != "revolute":
            raise ModelError(f"{where}: joint '{j.name}' is a {j.kind} joint; expected a "
                             f"revolute joint")
        self._elements.append(Element(
            name, "rsda", j.parent, j.child,
            stiffness=number(where, "stiffness", stiffness, nonneg=True),
            damping=number(where, "damping", damping, nonneg=True),
            free_value=number(where, "free_angle", free_angle), joint=j.name,
            input=self._input(where, name, input, "N.m", "actuator torque h of " + name)))
        return name

    def _load3(self, name, kind, body, point, at, direction, frame, value, input, reaction):
        where = f"{kind} '{name}'"
        self._claim(name, "element")
        if frame not in ("global", "body"):
            raise ModelError(f"{where}: frame must be 'global' or 'body', received {frame!r}")
        b = self._body_ref(where, "body", body, allow_ground=False)
        a = GROUND if reaction is None else self._body_ref(where, "reaction", reaction)
        if a == b:
            raise ModelError(f"{where}: body and reaction are the same body '{b}'")
        if at is not None:
            pt = self._local_point(b, np.array(vec3(where, "at", at)))
        else:
            pt = vec3(where, "point", (0, 0, 0) if point is None else point)
        unit = "N" if kind == "force" else "N.m"
        self._elements.append(Element(
            name, kind, a, b, b_point=pt, direction=vec3(where, "direction", direction,
                                                         unit=True),
            frame=frame, value=number(where, "value", value),
            input=self._input(where, name, input, unit, f"{kind} h of {name}")))
        return name

    # -------------------------------------------------------------- contacts
    def _contact3(self, name, body, point, at, other, plane_point, normal, radius,
                  restitution, friction=0.0):
        """ModelBuilder.contact in a spatial model: point (sphere) on a plane."""
        where = f"contact '{name}'"
        b = self._body_ref(where, "body", body, allow_ground=False)
        o = self._body_ref(where, "other", other)
        if b == o:
            raise ModelError(f"{where}: body and other are the same body '{b}'")
        if at is not None:
            if point is not None:
                raise ModelError(f"{where}: give at= (global point at the reference pose) or "
                                 f"point= (body axes), not both")
            pt = self._local_point(b, np.array(vec3(where, "at", at)))
        else:
            pt = vec3(where, "point", (0, 0, 0) if point is None else point)
        n = vec3(where, "normal", (0.0, 0.0, 1.0) if normal is None else normal, unit=True)
        pp = vec3(where, "plane_point", (0, 0, 0) if plane_point is None else plane_point)
        r = number(where, "radius", radius, nonneg=True)
        e = _restitution(where, restitution)
        self._claim(name, "contact")
        self._contacts.append(Contact(name, "point_plane", b, o, tuple(pt), pp, n, r,
                                      restitution=e, friction=friction))
        return name

    def _contact_points3(self, name, a, b, a_point, b_point, a_at, b_at, distance, side,
                         restitution):
        """ModelBuilder.contact_points in a spatial model: a distance limit between two
        points (side "apart": an end stop, "within": a rope)."""
        where = f"contact '{name}'"
        a = self._body_ref(where, "a", a)
        b = self._body_ref(where, "b", b)
        if a == b:
            raise ModelError(f"{where}: a and b are the same body '{a}'")
        if side not in ("apart", "within"):
            raise ModelError(f"{where}: side must be 'apart' or 'within', received {side!r}")

        def point(arg, body, local, glob):
            if glob is not None:
                if local is not None:
                    raise ModelError(f"{where}: give {arg}_at= (global) or {arg}_point= "
                                     f"(body axes), not both")
                return tuple(self._local_point(body, np.array(vec3(where, f"{arg}_at",
                                                                    glob))))
            return vec3(where, f"{arg}_point", (0, 0, 0) if local is None else local)
        pa, pb = point("a", a, a_point, a_at), point("b", b, b_point, b_at)
        d = number(where, "distance", distance, positive=True)
        e = _restitution(where, restitution)
        self._claim(name, "contact")
        self._contacts.append(Contact(name, "point_point", a, b, pa, pb, (0.0, 0.0, 0.0), d,
                                      1.0 if side == "apart" else -1.0, restitution=e))
        return name

    # -------------------------------------------------------------- hydraulic cylinder
    def _cylinder3(self, name, a, b, a_point, b_point, min_length, max_length, restitution,
                   friction, piston_area, rod_area, force_input):
        """ModelBuilder.cylinder in a spatial model: the force F = h - c l' along the line of
        the pins (a_point/b_point 3-vectors in body axes), pushing apart positive, a TSDA with
        s = -F; the stroke limits are the point-point contacts <name>_lower (side "apart") and
        <name>_upper ("within"), frictionless. Pressure inputs are planar only so far."""
        where = f"cylinder '{name}'"
        if piston_area is not None or rod_area is not None:
            raise ModelError(f"{where}: pressure inputs (piston_area, rod_area) exist in planar "
                             f"models only so far; in a spatial model give the force through "
                             f"the input h")
        a = self._body_ref(where, "a", a)
        b = self._body_ref(where, "b", b)
        if a == b:
            raise ModelError(f"{where}: a and b are the same body '{a}'")
        lmin = number(where, "min_length", min_length, positive=True)
        lmax = number(where, "max_length", max_length, positive=True)
        if not lmin < lmax:
            raise ModelError(f"{where}: expected min_length < max_length, received "
                             f"min_length={lmin}, max_length={lmax}")
        friction = number(where, "friction", friction, nonneg=True)
        e = _restitution(where, restitution)
        pa = vec3(where, "a_point", (0, 0, 0) if a_point is None else a_point)
        pb = vec3(where, "b_point", (0, 0, 0) if b_point is None else b_point)
        self._check_free([name, f"{name}_lower", f"{name}_upper"], "element")
        self._claim(name, "element")
        iname = None
        if force_input not in (False, None):
            iname = self._input(where, name, True if force_input is True else force_input,
                                "N", f"force h of cylinder {name}, pushing the pins apart "
                                f"positive")
        self._elements.append(Element(name, "cylinder", a, b, pa, pb, damping=friction,
                                      free_value=lmin, value=lmax, input=iname,
                                      gains=(((iname, 1.0),) if iname else ())))
        for cname, dist, side in ((f"{name}_lower", lmin, 1.0), (f"{name}_upper", lmax, -1.0)):
            self._claim(cname, "contact")
            self._contacts.append(Contact(cname, "point_point", a, b, pa, pb,
                                          (0.0, 0.0, 0.0), dist, side, restitution=e))
        return name
