"""The spatial native kernel (fmu_mb/engine/native/spatial_kernel.c): forward dynamics of a
spatial tree by the articulated-body algorithm, with the force elements (TSDA, RSDA,
bushing, force, torque, with their inputs h), the cut joints that close loops as multiplier
rows (drift control by projection after each step, in C), and the explicit integrators
(rk4, dopri5, dop853 with scipy's coefficients and step-size control), in C, through ctypes.
Compiled and cached like the planar kernel (fmu_mb.engine.kernel), in its own library. Drives on revolute and prismatic joints with the
laws constant_rate, harmonic and polynomial are rows after the cut joints' (sk_set_drives),
couplers of two joint coordinates rows after the drives' (sk_set_couplers).

Coordinates are those of the spatial tmt (fmu_mb.mechanics.spatial.tree): revolute angles,
prismatic positions, the Euler parameters of spherical joints and of floating roots.
"""
import ctypes
import threading
import weakref
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import DriftError, InputError, IntegrationError, SingularSystemError
from ..mechanics.spatial import tree as st
from . import kernel as _kernel

SOURCE = Path(__file__).resolve().parent / "native" / "spatial_kernel.c"
_KIND = {"weld": 0, "revolute": 1, "prismatic": 2, "spherical": 3, "free": 4}
_DOF = {"weld": 0, "revolute": 1, "prismatic": 1, "spherical": 3, "free": 6}
#: cut joint kinds the kernel closes (fmu_mb.mechanics.spatial.constraints' rows)
_CUT = {"spherical": 0, "revolute": 1, "universal": 2, "cylindrical": 3, "prismatic": 4,
        "weld": 5, "distance": 6}
_ELEMENT = {"tsda": 0, "rsda": 1, "force": 2, "torque": 3, "bushing": 4, "cylinder": 0}
_STABILIZATION = {"none": 0, "projection": 1, "baumgarte": 2}
ED = 108
_ERRORS = {1: "the state became non-finite (NaN or infinity)",
           2: "the articulated inertia is singular (a massless subtree) or a spring or "
              "distance link has zero length",
           3: "the step size became too small",
           5: "invalid kernel arguments",
           6: "the drift projection did not converge (a singular or unreachable pose)"}


@lru_cache(maxsize=1)
def library():
    lib = ctypes.CDLL(str(_kernel.library_path(SOURCE)))
    P, I, D = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    lib.sk_create.restype = P
    lib.sk_create.argtypes = [I, I, I, P, P, P, P, D, D, D, I, I, P, P, I, P, P]
    lib.sk_free.restype = None
    lib.sk_free.argtypes = [P]
    lib.sk_set_tableau.argtypes = [I, I, I, P, P, P, P, P, P]
    lib.sk_accelerations.argtypes = [P, P, P, P, P]
    lib.sk_advance.argtypes = [P, I, P, P, P, P]
    lib.sk_project.argtypes = [P, P]
    lib.sk_set_stabilization.restype = None
    lib.sk_set_stabilization.argtypes = [P, I, D, D, D]
    lib.sk_set_pose_data.argtypes = [P, P]
    lib.sk_set_armature.argtypes = [P, P]
    lib.sk_kinematics.argtypes = [P, P, P, P, P]
    lib.sk_element_outputs.argtypes = [P, P, P, P, P]
    lib.sk_points.restype = None
    lib.sk_points.argtypes = [P, P, P, I, P, P, P]
    lib.sk_accelerations_full.argtypes = [P, P, P, P, P, P, P, P]
    lib.sk_rows.restype = I
    lib.sk_rows.argtypes = [P]
    lib.sk_multipliers.restype = None
    lib.sk_multipliers.argtypes = [P, P]
    lib.sk_set_time.restype = None
    lib.sk_set_time.argtypes = [P, D]
    lib.sk_set_drives.argtypes = [P, I, P, P, I, P]
    lib.sk_set_couplers.argtypes = [P, I, P, P]
    lib.sk_set_joint_friction.argtypes = [P, I, P, P, P]
    lib.sk_set_contacts.argtypes = [P, I, P, P]
    lib.sk_set_active.argtypes = [P, I, P]
    lib.sk_set_friction.argtypes = [P, P, P, P]
    lib.sk_step.argtypes = [P, I, P, P, P, I, P, P]
    lib.sk_events_create.restype = P
    lib.sk_events_create.argtypes = [P, P, I]
    lib.sk_events_free.restype = None
    lib.sk_events_free.argtypes = [P]
    lib.sk_advance_events.argtypes = [P, I, P, P, P, P]
    lib.sk_advance_events_to_impact.argtypes = [P, I, P, P, P, P, P]
    lib.sk_events_outputs.argtypes = [P, D, P, P, P, P, P]
    lib.sk_events_initial.argtypes = [P, D, P, P, P, D, D]
    lib.sk_events_initial_impact.argtypes = [P, D, P, P, P, D, D, I, D, D, D, P]
    lib.sk_events_accelerations.argtypes = [P, D, P, P, P, P, P, P, P, P, P]
    lib.sk_events_set_joint_friction.argtypes = [P, I, P, P, P, P, P, P]
    lib.sk_events_joint_outputs.argtypes = [P, D, P, P, P, P, P, P, P, P]
    _kernel._set_tableaus(lib, "sk_set_tableau")
    return lib


def supported(model, contacts=False):
    """None when the spatial kernel can run `model`, else the reason why not (a sentence).
    contacts=True: the kernel's part of a contact model (its contact-free dynamics and the
    contacts' rows, which the C event loop of native/spatial_events.c steps between events;
    the Python loop of fmu_mb.dynamics.integrate remains the reference)."""
    for d in model.drives:
        if _kernel._law(d.motion) is None:
            return (f"drive '{d.name}' follows a Motion of Python functions; the kernel "
                    f"evaluates the laws of constant_rate, harmonic and polynomial")
    if getattr(model, "contacts", None) and not contacts:
        return f"it has contacts {[c.name for c in model.contacts]}"
    for name in model.topology.cut_joints:
        kind = model.joint(name).kind
        if kind not in _CUT:
            return f"cut joint '{name}' is {kind}"
    for e in model.elements:
        if e.kind not in _ELEMENT:
            return f"element '{e.name}' is a {e.kind}"
    tm = st.tree_map(model)
    for row, j in zip(tm.rows, tm.joints):
        if row[0] not in _KIND:
            return (f"joint '{model.joints[j].name}' of the spanning tree is {row[0]} (the "
                    f"kernel's tree joints: revolute, prismatic, spherical, weld)")
    return None


def row_armature(model, tm):
    """(nb,) the armature of each tree row's joint (0 for the rest); InputError for armature
    on a joint that closes a loop (it has no coordinate)."""
    rows = set(int(j) for j in tm.joints)
    cut = [j.name for k, j in enumerate(model.joints) if j.armature and k not in rows]
    if cut:
        raise InputError(f"model '{model.name}': joints {cut} have armature but close a loop "
                         f"(armature acts on tree coordinates only)")
    return np.array([model.joints[j].armature if j >= 0 else 0.0 for j in tm.joints], float)


def _tree_rows(model, tm):
    """ri (nb, 6): kind, X, Y, q offset, ν offset, reversed; rd (nb, 24): s_X, s_Y, F_X, F_Y."""
    ri, rd, vo = [], [], 0
    for row, j in zip(tm.rows, tm.joints):
        kind, X, Y, fwd, sX, sY, _, _, Fd, o, _ = row
        if j < 0:
            FX = FY = np.eye(3)
        else:
            joint = model.joints[j]
            Fp, Fc = np.asarray(joint.frame_p, float), np.asarray(joint.frame_c, float)
            FX, FY = (Fp, Fc) if fwd else (Fc, Fp)
        ri.append([_KIND[kind], X, Y, o, vo, 0 if fwd else 1])
        rd.append(np.concatenate([sX, sY, FX.reshape(-1), FY.reshape(-1)]))
        vo += _DOF[kind]
    return (np.array(ri, dtype=np.intc).reshape(-1, 6), np.array(rd, float).reshape(-1, 24),
            vo)


def _elements(model):
    """ei (ne, 5): type, body a, body b, input index, body axes; ed (ne, ED)."""
    C = model.compiled
    ei, ed = [], []

    def put(kind, a, b, u, body_frame=False, sa=(0, 0, 0), sb=(0, 0, 0), Fa=None, Fb=None,
            k=0.0, c=0.0, e0=0.0, direction=(0, 0, 0), K=None, Cm=None, e06=None,
            gain=1.0):
        d = np.zeros(ED)
        d[0:3], d[3:6] = sa, sb
        d[6:15] = np.eye(3).reshape(-1) if Fa is None else np.asarray(Fa).reshape(-1)
        d[15:24] = np.eye(3).reshape(-1) if Fb is None else np.asarray(Fb).reshape(-1)
        d[24:27] = k, c, e0
        d[27:30] = direction
        if K is not None:
            d[30:66], d[66:102], d[102:108] = (np.asarray(K).reshape(-1),
                                               np.asarray(Cm).reshape(-1), e06)
        elif kind == "tsda":
            d[30] = gain                   # the input's gain (-1: a cylinder, s = -F)
        ei.append([_ELEMENT[kind], a, b, int(u), int(body_frame)])
        ed.append(d)

    g = C.tsda
    for i in range(len(g.pairs)):
        put("tsda", g.pairs.p[i], g.pairs.c[i], g.u[i], sa=g.sp[i], sb=g.sc[i], k=g.k[i],
            c=g.c[i], e0=g.e0[i], gain=g.gain[i])
    g = C.rsda
    for i in range(len(g.pairs)):
        put("rsda", g.pairs.p[i], g.pairs.c[i], g.u[i], sa=g.sp[i], sb=g.sc[i], Fa=g.Fp[i],
            Fb=g.Fc[i], k=g.k[i], c=g.c[i], e0=g.e0[i])
    g = C.bushing
    for i in range(len(g.pairs)):
        put("bushing", g.pairs.p[i], g.pairs.c[i], -1, sa=g.sp[i], sb=g.sc[i], Fa=g.Fp[i],
            Fb=g.Fc[i], K=g.K[i], Cm=g.C[i], e06=g.e0[i])
    for i in range(len(C.frc_body)):
        put("force", C.frc_body[i], C.frc_body[i], C.frc_u[i], C.frc_body_frame[i],
            sb=C.frc_point[i], k=C.frc_value[i], direction=C.frc_dir[i])
    for i in range(len(C.trq_body)):
        put("torque", C.trq_reaction[i], C.trq_body[i], C.trq_u[i], C.trq_body_frame[i],
            k=C.trq_value[i], direction=C.trq_dir[i])
    return (np.array(ei, dtype=np.intc).reshape(-1, 5), np.array(ed, float).reshape(-1, ED))


def _drives(model):
    """di (nd, 6): kind (1 revolute, 2 prismatic), parent, child, law code, offset, count;
    dd (nd, 24): s_p, s_c, F_p, F_c (the joint's points and frames); dp the laws' numbers."""
    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = len(model.bodies)
    di, dd, dp = [], [], []
    for d in model.drives:
        j = model.joint(d.joint)
        code, values = _kernel._law(d.motion)
        di.append([1 if j.kind == "revolute" else 2, idx[j.parent], idx[j.child], code,
                   len(dp), len(values)])
        dd.append(np.concatenate([np.asarray(j.parent_point, float),
                                  np.asarray(j.child_point, float),
                                  np.asarray(j.frame_p, float).reshape(-1),
                                  np.asarray(j.frame_c, float).reshape(-1)]))
        dp += values
    return (np.array(di, dtype=np.intc).reshape(-1, 6), np.array(dd, float).reshape(-1, 24),
            np.array(dp or [0.0], dtype=float))


def joint_friction_rows(model, names):
    """(ji (k, 3), jd (k, 24), nu (k,)) of the joints `names` for sk_set_joint_friction: kind
    (1 revolute, 2 prismatic), parent, child; their points and frames (as _drives' dd); the
    place of each one's coordinate among the velocity coordinates (for the slip forces)."""
    tm = st.tree_map(model)
    ri, _, _ = _tree_rows(model, tm)
    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = len(model.bodies)
    jidx = {j.name: k for k, j in enumerate(model.joints)}
    tj = list(tm.joints)
    ji, jd, nu = [], [], []
    for name in names:
        j = model.joint(name)
        if j.kind not in ("revolute", "prismatic") or jidx[name] not in tj:
            raise InputError(f"model '{model.name}': joint '{name}' is not a revolute or "
                             f"prismatic tree joint; its rate has no kernel row")
        ji.append([1 if j.kind == "revolute" else 2, idx[j.parent], idx[j.child]])
        jd.append(np.concatenate([np.asarray(j.parent_point, float),
                                  np.asarray(j.child_point, float),
                                  np.asarray(j.frame_p, float).reshape(-1),
                                  np.asarray(j.frame_c, float).reshape(-1)]))
        nu.append(int(ri[tj.index(jidx[name]), 4]))
    return (np.array(ji, dtype=np.intc).reshape(-1, 3), np.array(jd, float).reshape(-1, 24),
            np.array(nu, dtype=np.intp))


def _couplers(model):
    """ci (ncp, 6): kind (1 revolute, 2 prismatic), parent, child of the coupled joint, then
    of its master; cd (ncp, 50): both joints' points and frames (as _drives' dd), ratio,
    offset (model.couplers order)."""
    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = len(model.bodies)
    ci, cd = [], []
    for c in model.couplers:
        ints, dbl = [], []
        for j in (model.joint(c.joint), model.joint(c.master)):
            ints += [1 if j.kind == "revolute" else 2, idx[j.parent], idx[j.child]]
            dbl += [*j.parent_point, *j.child_point,
                    *np.asarray(j.frame_p, float).reshape(-1),
                    *np.asarray(j.frame_c, float).reshape(-1)]
        ci.append(ints)
        cd.append(dbl + [float(c.ratio), float(c.offset)])
    return (np.array(ci, dtype=np.intc).reshape(-1, 6), np.array(cd, float).reshape(-1, 50))


def _contacts(model):
    """ki (nc, 3): kind (1 point-plane, 2 point-point, 3 revolute limit, 4 prismatic limit,
    5 rim on a plane: F_c holds the circle's axis and radius; 6 shape pair: native/pairs.h),
    body p, body c; kd (nc, 36):
    s_p, s_c, F_p, F_c, normal (p's axes), offset, side: the
    gaps of fmu_mb.mechanics.spatial.contacts, and of a point-plane contact its tangent basis
    t1, t2 (p's axes) and Coulomb's mu (fmu_mb.mechanics.friction), model.contacts order."""
    from ..mechanics.friction import tangent_basis
    from ..mechanics.shapes import KIND_CODES
    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = len(model.bodies)
    eye = np.eye(3).reshape(-1)
    ki, kd = [], []
    for c in model.contacts:
        if c.kind == "point_plane":
            ki.append([1, idx[c.other], idx[c.body]])
            t1, t2 = tangent_basis(np.asarray(c.normal, float))
            kd.append(np.concatenate([c.other_point, c.point, eye, eye, c.normal,
                                      [c.offset, 1.0], t1, t2, [c.friction]]))
        elif c.kind == "rim_plane":             # the circle's axis and radius in F_c
            ki.append([5, idx[c.other], idx[c.body]])
            t1, t2 = tangent_basis(np.asarray(c.normal, float))
            kd.append(np.concatenate([c.other_point, c.point, eye, c.axis, [c.offset],
                                      np.zeros(5), c.normal, [0.0, 1.0], t1, t2,
                                      [c.friction]]))
        elif c.kind == "shape_pair":            # shape a on other, b on body: pairs.h
            a, b = c.shapes
            ki.append([6, idx[c.other], idx[c.body]])
            kd.append(np.concatenate([a.position, b.position,
                                      np.asarray(a.rotation, float).reshape(-1),
                                      np.asarray(b.rotation, float).reshape(-1),
                                      (tuple(a.size) + (0.0,) * 3)[:3], [0.0, 1.0],
                                      (tuple(b.size) + (0.0,) * 3)[:3],
                                      [KIND_CODES[a.kind], KIND_CODES[b.kind], c.feature,
                                       c.friction]]))
        elif c.kind == "point_point":
            ki.append([2, idx[c.body], idx[c.other]])
            kd.append(np.concatenate([c.point, c.other_point, eye, eye, [0.0, 0.0, 0.0],
                                      [c.offset, c.side], np.zeros(7)]))
        else:
            j = model.joint(c.joint)
            ki.append([3 if j.kind == "revolute" else 4, idx[j.parent], idx[j.child]])
            kd.append(np.concatenate([j.parent_point, j.child_point,
                                      np.asarray(j.frame_p, float).reshape(-1),
                                      np.asarray(j.frame_c, float).reshape(-1),
                                      [0.0, 0.0, 0.0], [c.offset, c.side], np.zeros(7)]))
    return (np.array(ki, dtype=np.intc).reshape(-1, 3),
            np.array(kd, dtype=float).reshape(-1, 36))


def _cut_joints(model):
    """ci (nc, 3): kind, parent, child; cd (nc, 25): s_p, s_c, F_p, F_c, length."""
    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = len(model.bodies)
    ci, cd = [], []
    for name in model.topology.cut_joints:
        j = model.joint(name)
        ci.append([_CUT[j.kind], idx[j.parent], idx[j.child]])
        cd.append(np.concatenate([np.asarray(j.parent_point, float),
                                  np.asarray(j.child_point, float),
                                  np.asarray(j.frame_p, float).reshape(-1),
                                  np.asarray(j.frame_c, float).reshape(-1),
                                  [float(j.length or 0.0)]]))
    return (np.array(ci, dtype=np.intc).reshape(-1, 3), np.array(cd, float).reshape(-1, 25))


class SpatialKernel:
    """The kernel instance of one spatial Model, with preallocated buffers."""

    def __init__(self, model):
        why = supported(model, contacts=True)
        if why is not None:
            raise InputError(f"model '{model.name}': formulation 'recursive' runs spatial "
                             f"trees of revolute, prismatic, spherical and weld joints and "
                             f"floating bodies, loops closed by cut joints, with gravity, "
                             f"TSDA, RSDA, bushings, forces and torques; {why}. Use "
                             f"formulation 'tmt' or 'newton_euler'")
        lib = library()
        tm = st.tree_map(model)
        C = model.compiled
        self._ri, self._rd, nv = _tree_rows(model, tm)
        self._ei, self._ed = _elements(model)
        self._ci, self._cd = _cut_joints(model)
        self._mass = np.ascontiguousarray(C.mass, dtype=float)
        self._J = np.ascontiguousarray(C.inertia.reshape(-1, 9), dtype=float)
        nb, n = tm.nb, tm.n
        if len(self._ri) != nb:
            raise InputError(f"model '{model.name}': the tree places {len(self._ri)} of {nb} "
                             f"bodies")
        gx, gy, gz = model.gravity
        self.n_inputs = len(model.inputs)
        handle = lib.sk_create(nb, n, nv, self._ri.ctypes.data, self._rd.ctypes.data,
                               self._mass.ctypes.data, self._J.ctypes.data, float(gx),
                               float(gy), float(gz), len(self._ei), self.n_inputs,
                               self._ei.ctypes.data, self._ed.ctypes.data, len(self._ci),
                               self._ci.ctypes.data, self._cd.ctypes.data)
        if not handle:
            raise MemoryError(f"model '{model.name}': cannot allocate the spatial kernel")
        self._finalizer = weakref.finalize(self, lib.sk_free, handle)
        self.lib, self.handle, self.n, self.name = lib, handle, n, model.name
        if model.drives:
            di, dd, dp = _drives(model)
            if lib.sk_set_drives(handle, len(di), di.ctypes.data, dd.ctypes.data, len(dp),
                                 dp.ctypes.data):
                raise InputError(f"model '{model.name}': the kernel refused the drives' laws")
            self._drive_data = (di, dd, dp)
        if getattr(model, "couplers", ()):
            ci, cd = _couplers(model)
            if lib.sk_set_couplers(handle, len(ci), ci.ctypes.data, cd.ctypes.data):
                raise InputError(f"model '{model.name}': the kernel refused the couplers")
            self._coupler_data = (ci, cd)
        self.n_contacts = len(model.contacts)
        if model.contacts:
            ki, kd = _contacts(model)
            if lib.sk_set_contacts(handle, len(ki), ki.ctypes.data, kd.ctypes.data):
                raise InputError(f"model '{model.name}': the kernel refused the contacts")
            self._contact_data = (ki, kd)
        self.m = int(lib.sk_rows(handle))
        self._active = np.zeros(self.n_contacts + 1, dtype=np.intc)
        self._rq = np.array([np.concatenate([row[6], row[7], [row[10]]]) for row in tm.rows],
                            float).reshape(-1, 9)
        lib.sk_set_pose_data(handle, self._rq.ctypes.data)
        self._arm = row_armature(model, tm)
        if self._arm.any() and lib.sk_set_armature(handle, self._arm.ctypes.data):
            raise InputError(f"model '{model.name}': the kernel refused the armature")
        self.nb = nb
        self._x = np.zeros(7 * nb + 1)
        self._xd = np.zeros(7 * nb + 1)
        self._xdd = np.zeros(7 * nb + 1)
        self._mk_body = np.ascontiguousarray(C.markers.p, dtype=np.intc)
        self._mk_pts = np.ascontiguousarray(C.marker_points, dtype=float).reshape(-1, 3)
        self._mk_out = np.zeros((len(self._mk_body), 6))
        self._el_out = np.zeros((len(self._ei) + 1, 8))
        # model.elements order -> (kernel row, number of outputs)
        order = ([g for g in (C.tsda.names, C.rsda.names, C.bushing.names)]
                 + [C.frc_names, C.trq_names])
        row = {name: i for i, name in enumerate(n for names in order for n in names)}
        width = {"tsda": 2, "rsda": 2, "bushing": 6, "force": 1, "torque": 1, "cylinder": 2}
        self._el_map = [(row[e.name], width[e.kind]) for e in model.elements]
        self._lock = threading.Lock()
        self._y = np.zeros(2 * n + 1)
        self._qdd = np.zeros(n + 1)
        self._u = np.zeros(self.n_inputs + 1)
        self._lam = np.zeros(self.m + 3 * self.n_contacts + 1)
        self._par = np.zeros(10)
        self._nfev = np.zeros(1, dtype=np.intc)
        self._stab = None

    def _error(self, rc, t, what, max_steps=0):
        msg = _ERRORS.get(rc, f"kernel error {rc}")
        if rc == 7:
            return _kernel.budget_error(self.name, t, what, max_steps)
        cls = {2: SingularSystemError, 6: DriftError}.get(rc, IntegrationError)
        return cls(f"model '{self.name}': {what} at t = {t:.9g} s: {msg}")

    def _set_u(self, u):
        if self.n_inputs and u is not None:
            self._u[:self.n_inputs] = u

    def _stabilization(self, mode, baumgarte=(0.0, 0.0), projection_tol=1e-13):
        key = (mode, float(baumgarte[0]), float(baumgarte[1]), float(projection_tol))
        if key != self._stab:
            self.lib.sk_set_stabilization(self.handle, _STABILIZATION[mode], *key[1:])
            self._stab = key

    def _load_for_accelerations(self, q, qd, u, baumgarte, t=0.0):
        """Under the lock: the drift control of an acceleration call (baumgarte (alpha, beta)
        [1/s] on the loop rows, None: none; the projection tolerance kept), (q, qd) and u
        loaded; returns the address of y = (q, qd)."""
        n = self.n
        tol = self._stab[3] if self._stab else 1e-13
        self._stabilization("none" if baumgarte is None else "baumgarte",
                            (0.0, 0.0) if baumgarte is None else baumgarte, tol)
        self.lib.sk_set_time(self.handle, float(t))
        self._y[:n], self._y[n:2 * n] = q, qd
        self._set_u(u)
        return self._y.ctypes.data

    def accelerations(self, q, qd, t=0.0, u=None, baumgarte=None):
        """qdd (n,) at (q, qd) with inputs u; baumgarte (alpha, beta) [1/s] on the loop
        rows (None: none)."""
        n = self.n
        with self._lock:
            y = self._load_for_accelerations(q, qd, u, baumgarte, t)
            rc = self.lib.sk_accelerations(self.handle, y, y + 8 * n, self._u.ctypes.data,
                                           self._qdd.ctypes.data)
            if rc:
                raise self._error(rc, t, "the accelerations cannot be computed")
            return self._qdd[:n].copy()

    def accelerations_full(self, q, qd, t=0.0, u=None, baumgarte=None):
        """(qdd, x, xd, xdd) at (q, qd) with inputs u: the joint and the body accelerations
        (x = (r, p) per body as the spatial tmt's T(q))."""
        n, m = self.n, 7 * self.nb
        with self._lock:
            y = self._load_for_accelerations(q, qd, u, baumgarte, t)
            rc = self.lib.sk_accelerations_full(self.handle, y, y + 8 * n, self._u.ctypes.data,
                                                self._qdd.ctypes.data, self._x.ctypes.data,
                                                self._xd.ctypes.data, self._xdd.ctypes.data)
            if rc:
                raise self._error(rc, t, "the accelerations cannot be computed")
            return (self._qdd[:n].copy(), self._x[:m].copy(), self._xd[:m].copy(),
                    self._xdd[:m].copy())

    def kinematics(self, q, qd):
        """x = (r, p) and xd = (r', p') of the bodies (7 nb each), as the spatial tmt's
        T(q) and Tq qd (unit Euler parameters in q)."""
        n, m = self.n, 7 * self.nb
        with self._lock:
            self._y[:n], self._y[n:2 * n] = q, qd
            y = self._y.ctypes.data
            rc = self.lib.sk_kinematics(self.handle, y, y + 8 * n, self._x.ctypes.data,
                                        self._xd.ctypes.data)
            if rc:
                raise self._error(rc, 0.0, "the kinematics cannot be computed")
            return self._x[:m].copy(), self._xd[:m].copy()

    def markers(self, q, qd):
        """(n_markers, 6): each marker's global position and velocity (as
        fmu_mb.mechanics.spatial.elements.marker_outputs)."""
        n = self.n
        with self._lock:
            self._y[:n], self._y[n:2 * n] = q, qd
            y = self._y.ctypes.data
            self.lib.sk_points(self.handle, y, y + 8 * n, len(self._mk_body),
                               self._mk_body.ctypes.data, self._mk_pts.ctypes.data,
                               self._mk_out.ctypes.data)
            return self._mk_out.copy()

    def element_outputs(self, q, qd, u=None):
        """Per element in model.elements order its output values (as
        fmu_mb.mechanics.spatial.elements.element_outputs)."""
        n = self.n
        with self._lock:
            self._y[:n], self._y[n:2 * n] = q, qd
            self._set_u(u)
            y = self._y.ctypes.data
            rc = self.lib.sk_element_outputs(self.handle, y, y + 8 * n, self._u.ctypes.data,
                                             self._el_out.ctypes.data)
            if rc:
                raise self._error(rc, 0.0, "the element outputs cannot be computed")
            return [list(self._el_out[i, :w]) for i, w in self._el_map]

    def _set_active(self, active):
        """Under the lock: the contacts `active` (indices) become rows gap = 0."""
        na = len(active)
        self._active[:na] = active
        if self.lib.sk_set_active(self.handle, na, self._active.ctypes.data):
            raise InputError(f"model '{self.name}': the kernel refused the active contacts "
                             f"{list(active)}")

    def contact_accelerations(self, q, qd, t, u, active, baumgarte=None):
        """(qdd, lam_c) with the persistent contacts `active` (indices into model.contacts)
        as rows gap = 0: lam_c (len(active),) their multipliers (contact force -lam_c)."""
        n = self.n
        with self._lock:
            self._set_active(active)
            try:
                y = self._load_for_accelerations(q, qd, u, baumgarte, t)
                rc = self.lib.sk_accelerations(self.handle, y, y + 8 * n,
                                               self._u.ctypes.data, self._qdd.ctypes.data)
                if rc:
                    raise self._error(rc, t, "the accelerations cannot be computed")
                self.lib.sk_multipliers(self.handle, self._lam.ctypes.data)
                return (self._qdd[:n].copy(),
                        self._lam[self.m:self.m + len(active)].copy())
            finally:
                self._set_active(())

    def friction_accelerations(self, q, qd, t, u, active, stick, slide, s0):
        """(qdd, lam_c, lam_t) with the persistent contacts `active` (indices) as rows gap = 0,
        the sticking ones (stick (nc,) bool) with their tangential rows, the sliding ones
        (slide (nc,) bool) with the friction force along their slip direction (recorded s0
        (nc, 2)): lam_c (len(active),), lam_t (number sticking, 2) (fmu_mb.dynamics.friction)."""
        n, nc = self.n, self.n_contacts
        st = np.ascontiguousarray(stick, dtype=np.uint8)
        sl = np.ascontiguousarray(slide, dtype=np.uint8)
        s0 = np.ascontiguousarray(s0, dtype=float).reshape(nc, 2)
        with self._lock:
            if self.lib.sk_set_friction(self.handle, st.ctypes.data, sl.ctypes.data,
                                        s0.ctypes.data):
                raise InputError(f"model '{self.name}': the kernel refused the friction phase")
            self._set_active(active)
            try:
                y = self._load_for_accelerations(q, qd, u, None, t)
                rc = self.lib.sk_accelerations(self.handle, y, y + 8 * n,
                                               self._u.ctypes.data, self._qdd.ctypes.data)
                if rc:
                    raise self._error(rc, t, "the accelerations cannot be computed")
                self.lib.sk_multipliers(self.handle, self._lam.ctypes.data)
                na = len(active)
                ns = int(sum(1 for i in active if st[i]))
                return (self._qdd[:n].copy(), self._lam[self.m:self.m + na].copy(),
                        self._lam[self.m + na:self.m + na + 2 * ns].reshape(-1, 2).copy())
            finally:
                self.lib.sk_set_friction(self.handle, None, None, None)
                self._set_active(())

    def contact_step(self, method, t, t_end, y, f, h, u, rtol, atol, max_step, stab, active):
        """One accepted dopri5/dop853 step (sk_step) from (t, y) with f = f(t, y) (or None)
        and the persistent contacts `active` as rows: (t_new, y_new (not normalised), K
        stages (s + 1, 2 n), h_next, h_taken); stab = (stabilization, (alpha, beta),
        projection_tol) (Baumgarte acts in the stages)."""
        n = self.n
        s = 12 if method == "dop853" else 6
        K = np.zeros((s + 1, 2 * n))
        if f is not None:
            K[0] = f
        par = np.array([t, t_end, h, rtol, atol, max_step, 0.0])
        with self._lock:
            self._set_active(active)
            try:
                self._stabilization(*stab)
                self._y[:2 * n] = y
                self._set_u(u)
                rc = self.lib.sk_step(self.handle, _kernel.METHOD_CODES[method],
                                      par.ctypes.data, self._y.ctypes.data,
                                      self._u.ctypes.data, int(f is not None), K.ctypes.data,
                                      self._nfev.ctypes.data)
                if rc:
                    raise self._error(rc, float(par[0]), f"the {method} integrator failed")
                return float(par[0]), self._y[:2 * n].copy(), K, float(par[2]), float(par[6])
            finally:
                self._set_active(())

    def contact_project(self, q, qd, t, tol, active):
        """project() with the persistent contacts `active` as rows gap = 0."""
        with self._lock:
            self._set_active(active)
            try:
                return self._project_unlocked(q, qd, t, tol)
            finally:
                self._set_active(())

    def multipliers(self):
        """lam of the kernel's cut rows from the last evaluation."""
        with self._lock:
            self.lib.sk_multipliers(self.handle, self._lam.ctypes.data)
            return self._lam[:self.m].copy()

    def project(self, q, qd, t=0.0, tol=1e-13):
        """(q, qd) with the Euler parameters normalised and the loop rows closed to
        |phi| <= tol (1 + max |r|)."""
        with self._lock:
            return self._project_unlocked(q, qd, t, tol)

    def _project_unlocked(self, q, qd, t, tol):
        n = self.n
        mode = self._stab[0] if self._stab else "projection"
        self._stabilization(mode, self._stab[1:3] if self._stab else (0.0, 0.0), tol)
        self._y[:n], self._y[n:2 * n] = q, qd
        self.lib.sk_set_time(self.handle, float(t))
        rc = self.lib.sk_project(self.handle, self._y.ctypes.data)
        if rc:
            raise self._error(rc, t, "the projection failed")
        return self._y[:n].copy(), self._y[n:2 * n].copy()

    def advance(self, method, t, t_end, q, qd, h, rtol, atol, max_step, step, u=None,
                stab=("projection", (0.0, 0.0), 1e-13), max_steps=0):
        """(q, qd, h, nfev) at t_end; stab = (stabilization, (alpha, beta), projection_tol)."""
        n = self.n
        code = _kernel.METHOD_CODES[method]
        with self._lock:
            self._stabilization(stab[0], stab[1], stab[2])
            self._y[:n], self._y[n:2 * n] = q, qd
            self._set_u(u)
            self._par[:] = (t, t_end, h, rtol, atol, max_step if np.isfinite(max_step)
                            else 1e300, step or 0.0, t, max_steps, 0.0)
            rc = self.lib.sk_advance(self.handle, code, self._par.ctypes.data,
                                     self._y.ctypes.data, self._u.ctypes.data,
                                     self._nfev.ctypes.data)
            if rc:
                raise self._error(rc, float(self._par[7]), "the integration failed",
                                  max_steps)
            return (self._y[:n].copy(), self._y[n:2 * n].copy(), float(self._par[2]),
                    int(self._nfev[0]))

    def stepper(self, method, rtol, atol, max_step, step, stab, max_steps=0):
        """advance() with the solver settings bound once, for co-simulation steps: returns
        run(t, t_end, q, qd, h, u) -> (y, h) with y = (q, qd) at t_end in one read-only
        array. u must be a float array of the model's inputs (validated by the caller)."""
        return _kernel.bound_advance(self, self.lib.sk_advance, method, rtol, atol, max_step,
                                     step, self._stabilization, stab, max_steps)


_KERNELS = weakref.WeakKeyDictionary()


def spatial_kernel(model):
    """The SpatialKernel of `model` (one per model)."""
    k = _KERNELS.get(model)
    if k is None:
        k = _KERNELS[model] = SpatialKernel(model)
    return k


class SpatialContactEvents(_kernel.ContactEvents):
    """The contact event loop of a spatial model in C (native/event_loop.h over this kernel,
    native/spatial_events.c, `sk_advance_events`): the planar ContactEvents' interface and
    semantics (impacts by seed 000 ch.3 eq. 15 with Newton's restitution law, persistent
    contacts and their release, event location on the dense output), a whole interval in one
    foreign call. It owns a private copy of the kernel (the persistent contacts are rows of
    that copy), so it shares no workspace with `spatial_kernel(model)`."""

    def __init__(self, model):
        base = spatial_kernel(model)
        lib = library()
        e = (np.ascontiguousarray(model.compiled.contacts.restitution, dtype=float)
             if model.contacts else np.zeros(1))
        handle = lib.sk_events_create(base.handle, e.ctypes.data, len(model.inputs))
        ji, jd, jq, jnu, jb, jlim = joint_friction_data(model)
        if handle and len(ji) and lib.sk_events_set_joint_friction(
                handle, len(ji), ji.ctypes.data, jd.ctypes.data, jq.ctypes.data,
                jnu.ctypes.data, jb.ctypes.data, jlim.ctypes.data):
            lib.sk_events_free(handle)
            raise MemoryError(f"model '{model.name}': cannot set up the joints' friction "
                              f"in the contact event loop")
        self._setup(model, base, lib, handle, lib.sk_events_free, lib.sk_advance_events,
                    lib.sk_events_outputs)
        self.nj = len(ji)
        if self.nj:                  # flat records: nc x 9 for the contacts, 3 per joint
            self.n_rec = len(_kernel.EVENT_RECORD) + len(_kernel.FRICTION_RECORD)
            self._rec = np.zeros(self.nc * self.n_rec + 3 * self.nj)
        self._initial_fn = lib.sk_events_initial     # ContactEvents.initial
        self._initial_impact_fn = lib.sk_events_initial_impact
        self._error_contact_fn = None                # (its errors name no contact)


def joint_friction_data(model):
    """(ji (nj, 3), jd (nj, 24), jq (nj,), jnu (nj,), bound (nj,), jlim (nc,)) of the joints
    with Coulomb friction (friction.joint_friction order) for sk_events_set_joint_friction:
    kind, parent, child and the points and frames of their rate rows (joint_friction_rows),
    their coordinates' places in q and among the velocity coordinates, their bounds [N.m or
    N], and per contact the frictional joint it limits (a joint limit), else -1. A joint
    that is a cut joint of a loop is refused naming it. (A tree row that runs from the
    joint's child to its parent has the joint's coordinate too: native/spatial_kernel.c
    turns its relative motion with the sign of the row, so the joint's rate row and its
    velocity coordinate agree.)"""
    from ..mechanics.friction import joint_friction

    names, _, bound = joint_friction(model)
    if not names:
        z = np.zeros(0, np.intc)
        return (z.reshape(0, 3), np.zeros((0, 24)), z, z, np.zeros(0), z)
    ji, jd, jnu = joint_friction_rows(model, names)
    tm = st.tree_map(model)
    ri, _, _ = _tree_rows(model, tm)
    tj = list(tm.joints)
    jidx = {j.name: k for k, j in enumerate(model.joints)}
    rows = [tj.index(jidx[nm]) for nm in names]
    jq = np.array([ri[r, 3] for r in rows], dtype=np.intc)
    jlim = np.array([names.index(c.joint) if c.kind == "joint_limit" and c.joint in names
                     else -1 for c in model.contacts], dtype=np.intc)
    return (np.ascontiguousarray(ji, np.intc), np.ascontiguousarray(jd, float), jq,
            np.ascontiguousarray(jnu, np.intc), np.ascontiguousarray(bound, float), jlim)


_EVENT_LOOPS = weakref.WeakKeyDictionary()


def spatial_contact_events(model):
    """The SpatialContactEvents of `model` (made once per Model)."""
    ev = _EVENT_LOOPS.get(model)
    if ev is None:
        ev = _EVENT_LOOPS[model] = SpatialContactEvents(model)
    return ev
