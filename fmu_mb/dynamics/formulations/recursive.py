"""The articulated-body algorithm in tree joint coordinates, compiled (fmu_mb/engine/native/kernel.c),
with the rows of the cut joints that close loops.

Featherstone's recursive O(N) forward dynamics for open trees, written in the absolute body
coordinates of seed 000 (x = (x, y, phi) per centre of mass, M = diag(m, m, J)): the joint
kinematics xdd_b = X xdd_parent + S qdd + c of seed 001's relative kinematics, then one pass
from the leaves (articulated inertias and bias forces) and one from the root (qdd). It solves
the same equations as tmt (Mbar qdd = fbar with Mbar = Tq' M Tq) without forming Mbar, in C,
and the explicit integrators (rk4, dopri5, dop853 with scipy's coefficients and step-size
control) run in C too: `native_advance` integrates a whole communication interval in one call.

Closed loops (seed 000 ch.2 eq. 20 in the tree coordinates, as tmt): the cut joints' rows
phi(T(q)) = 0 with Dq = dphi/dq and conv_q, W = Mbar^-1 Dq' by one bias-free articulated
pass per row, the Schur complement S = Dq W (Cholesky; a truncated eigen-decomposition at
singular poses, as fmu_mb.linalg.schur_solve), qdd = qdd0 - W lam; drift control (Newton
projection with least kinetic-energy steps, Baumgarte, or none) in C after every step.

Drives on tree joints prescribe their coordinate, q_j = s(t) with the law evaluated in C
(constant_rate, harmonic, polynomial), by the hybrid articulated-body algorithm (the
prescribed joint passes its child's inertia on unreduced and its known acceleration enters
the bias); the drive's multiplier (effort -lam, tmt's lam of the row q_j - s(t)) comes from
an inverse-dynamics pass. Contacts: the whole event loop runs in C (native/events.c through
kernel.ContactEvents: event location on the dense output, impacts by seed 000 ch.3 eq. 15,
persistent contacts; `native_events` and the co-simulation stepper), the Python loop of
fmu_mb.dynamics.integrate remains for the Reduction Method, euler and radau.

Scope: trees of revolute, prismatic and weld joints and floating bodies, loops closed by cut
revolute, weld, prismatic and distance joints, drives of tree joints with a law given as
data, with gravity, TSDA, RSDA (hydraulic cylinders: TSDAs with input gains), forces and
torques; persistent contacts as extra rows (kernel.contact_kernel). Drives of Python
functions (Motion(f, f', f'')) and drives on cut joints need tmt or newton_euler
(`supports(model)` says why, and a clear InputError). q and the outputs are those of tmt: joint coordinates in
`tree_coordinates(model)` order, reactions recovered from the motion (`lam`).

Spatial models: the 3-D articulated-body algorithm of native/spatial_kernel.c
(fmu_mb.engine.spatial_kernel) in the coordinates of the spatial tmt (Euler parameters for
spherical joints and floating roots, normalised after each step in C); trees of revolute,
prismatic, spherical and weld joints and floating bodies, loops closed by cut joints of
every spatial kind (the same Schur complement and projection as the planar kernel), with
gravity, TSDA, RSDA, bushings, forces, torques and hydraulic cylinders; drives on revolute
and prismatic joints with the laws constant_rate, harmonic and polynomial as rows after the
cut joints' (evaluated in C); contacts with the whole event loop in C too (native/event_loop.h over the spatial
kernel, native/spatial_events.c; the Python loop with formulations/_spatial_contacts.py
remains reachable through NATIVE_EVENTS = False).
"""
import numpy as np

from ...engine.kernel import supported, tree_kernel
from ...mechanics.tree import tree_coordinates, tree_map
from . import _minimal
from ._minimal import COORDINATES, Dynamics  # noqa: F401  (part of the namespace)
from ..state import State


def coordinates(model):
    """Names of q: '<joint>.angle' / '<joint>.position' of the tree joints."""
    if model.spatial:
        from . import _spatial_tmt   # a planar model never loads it
        return _spatial_tmt.coordinates(model)
    return tree_coordinates(model)


def supports(model):
    """True when the kernel can run `model` (kernel.supported gives the reason when not)."""
    if model.spatial:
        from ...engine.spatial_kernel import supported as spatial_supported

        return spatial_supported(model, contacts=True) is None
    return supported(model) is None


def accelerations(model, q, qd, t, u, baumgarte=None):
    """qdd (and the cut multipliers lam) at (q, qd, t) with inputs u; baumgarte (alpha,
    beta) [1/s] acts on the loop rows."""
    if model.spatial:
        from ...engine.spatial_kernel import spatial_kernel

        qdd, x, xd, xdd = spatial_kernel(model).accelerations_full(q, qd, t, u, baumgarte)
        return Dynamics(qdd, np.zeros(0), np.zeros(0, np.intp), x, xd, xdd, t, u)
    k = tree_kernel(model)
    with k._lock:                        # the multipliers of this very solve
        qdd, x, xd, xdd = k._accelerations_unlocked(q, qd, u, t, baumgarte)
        lam = k._multipliers_unlocked() if k.m or k.nd else np.zeros(0)
    return Dynamics(qdd, lam, tree_map(model).cut_rows, x, xd, xdd, t, u)


def absolute(model, q, qd):
    """(x, xd) of the bodies from the kernel's forward kinematics."""
    if model.spatial:
        from ...engine.spatial_kernel import spatial_kernel

        return spatial_kernel(model).kinematics(np.asarray(q, float), np.asarray(qd, float))
    return tree_kernel(model).kinematics(np.asarray(q, float), np.asarray(qd, float))


def markers(model, q, qd):
    """(n_markers, 6) positions and velocities of the markers of a spatial model from the
    kernel; None for a planar one (the outputs compute them from x)."""
    if not model.spatial:
        return None
    from ...engine.spatial_kernel import spatial_kernel

    return spatial_kernel(model).markers(np.asarray(q, float), np.asarray(qd, float))


def element_values(model, q, qd, u):
    """Per element the output values of a spatial model from the kernel; None for a planar
    one (the outputs compute them from x)."""
    if not model.spatial:
        return None
    from ...engine.spatial_kernel import spatial_kernel

    return spatial_kernel(model).element_outputs(np.asarray(q, float), np.asarray(qd, float),
                                                 u)


def initial_state(model):
    if model.spatial:
        from . import _spatial_tmt   # a planar model never loads it
        return _spatial_tmt.initial_state(model)
    import sys
    return _minimal.initial_state(model, sys.modules[__name__])


def project(model, y, t, tol):
    """Project y = (q, qd) onto the loop rows (open trees: nothing to project; spatial: the
    Euler-parameter normalisation rows)."""
    if model.spatial:
        from ...engine.spatial_kernel import spatial_kernel

        n = y.shape[0] // 2
        q, qd = spatial_kernel(model).project(y[:n], y[n:], t, tol)
        return np.concatenate([q, qd])
    k = tree_kernel(model)
    if not (k.m or k.nd):
        return y
    n = k.n
    q, qd = k.project(y[:n], y[n:], t, tol)
    return np.concatenate([q, qd])


def native_advance(model, state, t_end, u, settings):
    """Integrate state to t_end in C; returns (q, qd, h). None when the method has no C
    implementation (radau: advance() then calls `accelerations` from scipy's stepper)."""
    if settings.method not in ("rk4", "dopri5", "dop853"):
        return None
    rtol = max(settings.rtol, 100 * np.finfo(float).eps)     # scipy's clamp, same control
    if model.spatial:
        from ...engine.spatial_kernel import spatial_kernel

        q, qd, h, _ = spatial_kernel(model).advance(
            settings.method, float(state.t), float(t_end), state.q, state.qd, float(state.h),
            rtol, settings.atol, settings.max_step, settings.step, u,
            (settings.stabilization, settings.baumgarte, settings.projection_tol),
            settings.max_steps)
        return q, qd, h
    q, qd, h, _ = tree_kernel(model).advance(
        settings.method, float(state.t), float(t_end), state.q, state.qd, float(state.h), u,
        rtol, settings.atol, settings.max_step, settings.step,
        (settings.stabilization, settings.baumgarte, settings.projection_tol),
        settings.max_steps)
    return q, qd, h


class NativeStepper:
    """The stepper interface of fmu_mb.dynamics.integrate's event loop (step, set_y, dense,
    t, y, h, t_old) over the kernel: each step is one dopri5/dop853 step in C (scipy's
    coefficients and error control), the drift control runs in C after it (`projects`),
    and the dense output is scipy's own interpolant built from the C stages (DOP853's three
    extra stages are C right-hand sides), so event location queries it as it queries
    scipy's steppers."""

    projects = True

    def __init__(self, model, settings, t, y, t_end, h, u, contacts=()):
        self._kernel(model, contacts)
        self.method, self.u, self.t_end = settings.method, u, t_end
        self.rtol = max(settings.rtol, 100 * np.finfo(float).eps)
        self.atol, self.max_step = settings.atol, settings.max_step
        self.project = settings.stabilization == "projection" and self._drifts()
        self.stab = (settings.stabilization, settings.baumgarte, settings.projection_tol)
        self.baumgarte = settings.baumgarte if settings.stabilization == "baumgarte" else None
        self.tol = settings.projection_tol
        self.t, self.y, self.h, self.f = t, np.asarray(y, float), (h if h > 0 else 0.0), None
        self.t_old, self._dense, self._step = None, None, None

    # the kernel's part (SpatialNativeStepper overrides these five)
    def _kernel(self, model, contacts):
        from ...engine.kernel import contact_kernel

        self.k = contact_kernel(model, contacts)

    def _drifts(self):
        """True when the state can leave its constraints (rows to project onto)."""
        return self.k.m > 0

    def _rhs(self, t, y):
        n = self.k.n
        return np.concatenate([y[n:], self.k.accelerations(y[:n], y[n:], self.u, t,
                                                           self.baumgarte)[0]])

    def _kernel_step(self, t_old, y_old, first):
        return self.k.step(self.method, t_old, self.t_end, y_old, self.f, first, self.u,
                           self.rtol, self.atol, self.max_step, self.stab)

    def _kernel_project(self, t, y):
        n = self.k.n
        return np.concatenate(self.k.project(y[:n], y[n:], t, self.tol))

    def step(self):
        t_old, y_old = self.t, self.y
        first = min(self.h, self.t_end - t_old) if self.h > 0 else 0.0
        t, y, K, h_next, h_taken = self._kernel_step(t_old, y_old, first)
        self._step, self._dense = (t_old, t, y_old, y, K, h_taken), None
        f = K[-1]
        if self.project:
            y = self._kernel_project(t, y)
            f = self._rhs(t, y)
        self.t_old, self.t, self.y, self.f, self.h = t_old, t, y, f, h_next

    def set_y(self, y):
        if not np.array_equal(y, self.y):
            self.y, self.f = y, self._rhs(self.t, y)

    def dense(self):
        if self._dense is None:
            self._dense = self._dense_output(*self._step)
        return self._dense

    def _dense_output(self, t_old, t, y_old, y, K, h):
        from scipy.integrate import RK45
        from scipy.integrate._ivp import dop853_coefficients as dc
        from scipy.integrate._ivp.rk import Dop853DenseOutput, RkDenseOutput

        if self.method == "dopri5":
            return RkDenseOutput(t_old, t, y_old, K.T @ RK45.P)
        Kx = np.empty((dc.N_STAGES_EXTENDED, y.shape[0]))
        Kx[:K.shape[0]] = K
        for j in range(dc.N_STAGES + 1, dc.N_STAGES_EXTENDED):
            Kx[j] = self._rhs(t_old + dc.C[j] * h, y_old + (Kx[:j].T @ dc.A[j, :j]) * h)
        F = np.empty((dc.INTERPOLATOR_POWER, y.shape[0]))
        dy = y - y_old
        F[0] = dy
        F[1] = h * Kx[0] - dy
        F[2] = 2 * dy - h * (K[-1] + Kx[0])
        F[3:] = h * (dc.D @ Kx)
        return Dop853DenseOutput(t_old, t, y_old, F)


class SpatialNativeStepper(NativeStepper):
    """NativeStepper over the spatial kernel (sk_step) with the phase's persistent contacts as
    rows: the Python event loop of a spatial model takes the steps the C loop takes (so the
    two differ only in event location and impacts); with projection every step ends with
    the kernel's projection (Euler parameters normalised, rows closed)."""

    def _kernel(self, model, contacts):
        from ...engine.spatial_kernel import spatial_kernel

        self.k, self.active = spatial_kernel(model), contacts

    def _drifts(self):
        return True             # (the Euler parameters' normalisation at the least)

    def _rhs(self, t, y):
        n = self.k.n
        qdd = self.k.contact_accelerations(y[:n], y[n:], t, self.u, self.active,
                                           self.baumgarte)[0]
        return np.concatenate([y[n:], qdd])

    def _kernel_step(self, t_old, y_old, first):
        return self.k.contact_step(self.method, t_old, self.t_end, y_old, self.f, first,
                                   self.u, self.rtol, self.atol, self.max_step, self.stab,
                                   self.active)

    def _kernel_project(self, t, y):
        n = self.k.n
        return np.concatenate(self.k.contact_project(y[:n], y[n:], t, self.tol, self.active))


def native_stepper(model, settings, t, y, t_end, h, u, active=None):
    """A NativeStepper for the event loop, or None when the method has no C step (rk4 and
    radau keep the Python stepper). active: the persistent contacts of the phase (bool per
    contact), whose gap rows the kernel keeps closed as loop rows."""
    if settings.method not in ("dopri5", "dop853"):
        return None
    contacts = () if active is None else tuple(int(i) for i in np.flatnonzero(active))
    if model.spatial:
        return SpatialNativeStepper(model, settings, t, y, t_end, h, u, contacts)
    return NativeStepper(model, settings, t, y, t_end, h, u, contacts)


#: the contact event loop in C (native_events); False runs the Python loop of
#: fmu_mb.dynamics.integrate with the kernel stepping (tests compare the two)
NATIVE_EVENTS = True
_REC = ("impacts", "last_time", "last_impulse", "energy_loss", "active")


def _events_apply(model, settings):
    """True when the C event loop runs `model` with `settings`: planar or spatial, rk4,
    dopri5 or dop853, no Reduction-Method contact (those stay in the Python loop)."""
    from ..friction import has_joint_friction

    return (NATIVE_EVENTS and (bool(model.contacts) or has_joint_friction(model))
            and settings.method in ("rk4", "dopri5", "dop853")
            and not any(c.method == "reduction" for c in model.contacts))


def _events_call(model, settings):
    """run(t, t_end, q, qd, h, u, rec) -> (y, h, rec) of the C loop with the settings bound
    (kernel.ContactEvents.stepper; spatial_kernel.SpatialContactEvents in 3-D)."""
    if model.spatial:
        from ...engine.spatial_kernel import spatial_contact_events as contact_events
    else:
        from ...engine.kernel import contact_events

    return contact_events(model).stepper(
        settings.method, max(settings.rtol, 100 * np.finfo(float).eps), settings.atol,
        settings.max_step, (settings.stabilization, settings.baumgarte,
                            settings.projection_tol),
        settings.contact_tol, settings.contact_velocity, settings.event_tol,
        settings.max_steps, settings.step)


def _records(model, extra):
    """(Status, rec (nc, 5)) from State.extra (kernel.EVENT_RECORD; a model with friction
    (nc, 9): + kernel.FRICTION_RECORD; with frictional joints one flat array: the contacts'
    (nc, 9) records, then per joint stick, s0, loss)."""
    from ..impact import Status
    from ...mechanics.friction import joint_friction
    from ..friction import has_friction

    st = Status(model, extra)
    if st.joints:
        rec = np.array([[float(st.data[nm][f]) for f in _REC]
                        + [float(st.data[nm]["stick"])]
                        + (list(st.data[nm]["sdir"]) + [0.0, 0.0])[:2]
                        + [float(st.data[nm]["slide_loss"])] for nm in st.names]).reshape(-1)
        jr = [[float(st.joints[nm]["stick"]), float(st.joints[nm]["sdir"]),
               float(st.joints[nm]["loss"])] for nm in joint_friction(model)[0]]
        return st, np.concatenate([rec, np.array(jr, float).reshape(-1)])
    if not has_friction(model):
        return st, np.array([[float(st.data[nm][f]) for f in _REC] for nm in st.names])
    return st, np.array([[float(st.data[nm][f]) for f in _REC]
                         + [float(st.data[nm]["stick"])]
                         + (list(st.data[nm]["sdir"]) + [0.0, 0.0])[:2]
                         + [float(st.data[nm]["slide_loss"])] for nm in st.names])


def _extra(st, rec, extra):
    if st.joints:                     # the flat records of a model with frictional joints
        nc = len(st.names)
        jr = rec[9 * nc:].reshape(-1, 3)
        for nm, r in zip(st.joints, jr):          # (model.joints order)
            d = st.joints[nm]
            d["stick"], d["sdir"], d["loss"], d["set"] = bool(r[0]), float(r[1]), float(r[2]), True
        rec = rec[:9 * nc].reshape(nc, 9)
    for nm, r in zip(st.names, rec):
        d = st.data[nm]
        d["impacts"], d["last_time"], d["last_impulse"] = int(r[0]), float(r[1]), float(r[2])
        d["energy_loss"], d["active"] = float(r[3]), bool(r[4])
        if len(r) > 5:
            d["stick"], d["slide_loss"] = bool(r[5]), float(r[8])
            d["sdir"] = [float(r[6]), float(r[7])][:len(d["sdir"])]
    return st.to_extra(extra)


def native_events(model, state, t_end, u, settings):
    """advance() of a contact model with the whole event loop in C
    (fmu_mb.engine.kernel.ContactEvents, spatial_kernel.SpatialContactEvents in 3-D): returns
    the new State, or None where the C loop does not apply (methods other than rk4, dopri5
    and dop853 (euler, radau), Reduction-Method contacts: the Python loop of
    integrate._advance_contacts runs them)."""
    if not _events_apply(model, settings):
        return None
    st, rec = _records(model, state.extra)
    y, h, rec = _events_call(model, settings)(float(state.t), float(t_end), state.q, state.qd,
                                               float(state.h), u, rec)
    n = state.q.shape[0]
    return State(float(t_end), y[:n], y[n:], h, state.coords, _extra(st, rec, state.extra))


def _events_stepper(model, settings):
    """cosim_stepper for a contact model: one C call per step; the contact records are
    parsed from State.extra only when it is not the one the last step returned, and a step
    without events returns that same extra."""
    if not _events_apply(model, settings):
        return None
    run = _events_call(model, settings)
    make = State.make
    n = len(coordinates(model))
    last = [None, None, None]          # extra returned last, its Status and records

    def step(state, t_end, u):
        extra = state.extra
        if extra is not None and extra is last[0]:
            st, rec = last[1], last[2]
        else:
            st, rec = _records(model, extra)
        y, h, rec_new = run(state.t, t_end, state.q, state.qd, state.h, u, rec)
        if rec_new is not rec or extra is None or extra is not last[0]:
            extra = _extra(st, rec_new, extra)
            last[:] = extra, st, rec_new
        y.flags.writeable = False
        return make(t_end, y[:n], y[n:], h, state.coords, extra)
    return step


def lam(model, dyn):
    if model.spatial:
        from . import _spatial_tmt   # a planar model never loads it
        return _spatial_tmt.lam(model, dyn)
    return _minimal.lam(model, dyn)


def cosim_stepper(model, settings):
    """native_advance with the settings bound once (integrate.stepper): a function
    step(state, t_end, u) -> State for a validated float input array u and t_end > state.t;
    None when the method has no C implementation."""
    from ..friction import has_joint_friction

    if model.contacts or has_joint_friction(model):
        return _events_stepper(model, settings)
    if settings.method not in ("rk4", "dopri5", "dop853"):
        return None
    if model.spatial:
        from ...engine.spatial_kernel import spatial_kernel

        k = spatial_kernel(model)
    else:
        k = tree_kernel(model)
    # the drift control of the loop rows travels with every call (set under the kernel's
    # lock: other instances of the model share the kernel)
    run = k.stepper(settings.method, settings.rtol, settings.atol, settings.max_step,
                    settings.step, (settings.stabilization, settings.baumgarte,
                                    settings.projection_tol), settings.max_steps)
    n = k.n
    make = State.make

    def step(state, t_end, u):
        y, h = run(state.t, t_end, state.q, state.qd, state.h, u)
        return make(t_end, y[:n], y[n:], h, state.coords, state.extra)
    return step
