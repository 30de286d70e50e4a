"""Time integration with drift control: `advance(model, state, t_end, u, settings)`.

The index-1 form (seed 000 eq. 12) is an ODE in y = (x, xd). Methods:

- "rk4": classical Runge-Kutta, fixed step (the interval is split into equal steps of at
  most `settings.step`, so any communication step works);
- "dopri5" (Dormand-Prince 5(4)) and "dop853" (8(5,3)): adaptive, error-controlled, with
  dense output (scipy's RK45 and DOP853 steppers);
- "auto" (default): dopri5, or dop853 for a call whose interval dopri5's last step-size
  proposal would split into 2 or more steps (`auto_method`); contact models run dopri5;
- "radau": implicit Radau IIA of order 5 for stiff models (scipy's Radau);
- "euler": explicit forward Euler, fixed step (first order; for teaching and for the drift
  figure of seed 000 sec. 1.5);
- "generalized_alpha" and "trapezoidal": fixed-step implicit methods on the index-3 DAE
  itself (fmu_mb.dynamics.implicit; seed 004), for stiff elements, singular poses and
  co-simulation with a fixed cost per step.

Drift control (seed 000 sec. 1.5 shows the drift of the index-reduced DAE):
"projection" (default) projects x onto Phi(x, t) = 0 by Newton with minimum M-norm steps and
then xd onto D xd = -Phi_t after every step; "baumgarte" adds -2 alpha Phi' - beta^2 Phi to
the acceleration constraint; "none" integrates the raw index-1 ODE.

Inputs u are held constant over the call (zero-order hold, as in FMI co-simulation).
`advance` is a pure function: it returns a new State and never changes its arguments, so a
failed call leaves the caller's state intact.
"""
import math
import weakref
from dataclasses import dataclass, replace

import numpy as np

from ..errors import ImpactError, InputError, IntegrationError, plain
from . import friction as _fr
from .formulations import candidates, get_formulation
from .implicit import DAE_FORMS, IMPLICIT_METHODS, advance_implicit
from .state import State
from .work import charge
from ..linalg import LazyModule

METHODS = ("auto", "rk4", "dopri5", "dop853", "radau", "euler") + IMPLICIT_METHODS
#: method "auto": dop853 for an interval when dopri5's last step-size proposal is below the
#: interval / AUTO_SPLIT (2 or more dopri5 steps of 6 right-hand sides against one dop853 step
#: of 12 at a smaller error); the proposal then grows by AUTO_GROW per interval so that
#: dopri5 is tried again. The compiled engine has the same rule (engine.c, do_step).
AUTO_SPLIT = 1.5
AUTO_GROW = 1.1
#: the event loop's Zeno guard on the rate of events: more than ZENO_COUNT events of one
#: contact or frictional joint within ZENO_SPAN [s] of simulated time (max(1, |t|) ZENO_SPAN
#: at large t) end the call with the Zeno error (native/zeno.h: EV_ZENO_COUNT, EV_ZENO_SPAN).
#: The windows span calls (communication steps): see _ZENO_WINDOWS
ZENO_COUNT = 10000
ZENO_SPAN = 1e-3
#: model -> (t, y bytes, {contact index or joint name: (window start, events in it)}): the
#: rate windows at the end (t, y = (q, qd)) of the last _advance_contacts call on the model
#: that succeeded. A call that starts from that very state (t and y bit for bit) goes on with
#: them; any other start (another or a restored state, time going back) restarts them, as
#: the compiled loop's (native/event_loop.h): they are not part of a State, and a restored
#: State inherits no counts
_ZENO_WINDOWS = weakref.WeakKeyDictionary()
FIXED_STEP = ("rk4", "euler") + IMPLICIT_METHODS
STABILIZATIONS = ("projection", "baumgarte", "none")
ASSEMBLY_CHECKS = ("warn", "error")     # Settings.assembly
_SCIPY = {"dopri5": "RK45", "dop853": "DOP853", "radau": "Radau"}   # scipy's steppers
_scipy_integrate = LazyModule("scipy.integrate")      # not imported by the compiled path
_RESOLVED = weakref.WeakKeyDictionary()     # model -> {(Settings, coords): Settings}


@dataclass(frozen=True)
class Settings:
    """Solver settings.

    method : one of METHODS ("auto": dopri5 or dop853 per call, see auto_method); formulation : "auto" (the fastest formulation that runs the
    model, `formulation_for(model)` says which) or one of formulations.FORMULATIONS; step :
    fixed step of rk4, euler, generalized_alpha and trapezoidal [s] (an interval is split into
    equal steps no longer than this); rtol, atol : tolerances of the adaptive methods;
    max_step : largest adaptive step [s]; stabilization : one of STABILIZATIONS;
    baumgarte : (alpha, beta) [1/s]; projection_tol : target |Phi| after projection [m, rad].
    Implicit methods: rho_inf : spectral radius of generalized_alpha at h / T -> inf, in
    [0, 1] (1: no numerical dissipation); newton_tol : relative tolerance of the Newton
    iteration on positions and velocities; dae_form : constraint rows, one of DAE_FORMS
    ("auto": index3 for generalized_alpha, index2 for trapezoidal).
    Contacts: contact_tol : gap below which a contact counts as closed at an impact and
    penetration that triggers event location [m or rad]; contact_velocity : rebound gap rate
    below which a contact becomes persistent [m/s or rad/s]; event_tol : time tolerance of
    the event location on the dense output [s]. max_steps : most integrator steps one
    advance() call may take (0: no limit); an FMU sets it so that every doStep returns in
    bounded time (IntegrationError beyond it). assembly : what an FMU does at initialisation
    when the assembly closed the loops far from the bodies' declared poses (Model.assembly_note:
    another assembly branch), one of ASSEMBLY_CHECKS: "warn" logs it, "error" refuses.
    """

    method: str = "auto"
    formulation: str = "auto"
    step: float = 1e-3
    rtol: float = 1e-9
    atol: float = 1e-11
    max_step: float = math.inf
    stabilization: str = "projection"
    baumgarte: tuple = (10.0, 10.0)
    projection_tol: float = 1e-13
    contact_tol: float = 1e-9
    contact_velocity: float = 1e-3
    event_tol: float = 1e-15
    rho_inf: float = 0.9
    newton_tol: float = 1e-10
    dae_form: str = "auto"
    max_steps: int = 0
    assembly: str = "warn"

    def __post_init__(self):
        _choice("method", self.method, METHODS)
        _choice("assembly", self.assembly, ASSEMBLY_CHECKS)
        _choice("stabilization", self.stabilization, STABILIZATIONS)
        _choice("dae_form", self.dae_form, DAE_FORMS)
        if self.formulation != "auto":
            get_formulation(self.formulation)
        if not (isinstance(self.rho_inf, (int, float)) and 0.0 <= self.rho_inf <= 1.0):
            raise InputError(f"solver setting 'rho_inf' must be a number in [0, 1], received "
                             f"{self.rho_inf!r}")
        if self.method == "trapezoidal" and self.dae_form == "index3":
            raise InputError("solver setting 'dae_form': 'index3' needs numerical dissipation "
                             "(the trapezoidal rule on Phi = 0 lets the multipliers oscillate "
                             "without bound); use method 'generalized_alpha' with rho_inf < 1, "
                             "or dae_form 'index2' or 'ggl'")
        if self.method in IMPLICIT_METHODS and self.stabilization == "baumgarte":
            raise InputError(f"solver setting 'stabilization': 'baumgarte' acts on the "
                             f"acceleration-level constraints, which method "
                             f"'{self.method}' does not use; valid values for it are "
                             f"['projection', 'none']")
        for name in ("step", "rtol", "atol", "max_step", "projection_tol", "contact_tol",
                     "contact_velocity", "event_tol", "newton_tol"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v > 0 and not math.isnan(v)):
                raise InputError(f"solver setting '{name}' must be a number > 0, "
                                 f"received {plain(v)}")
        for name in ("contact_tol", "contact_velocity", "event_tol"):
            v = getattr(self, name)
            if not math.isfinite(v):           # (the engine refuses them alike)
                raise InputError(f"solver setting '{name}' must be a finite number > 0, "
                                 f"received {plain(v)}")

    def formulation_for(self, model):
        """The formulation that runs `model` with these settings (what "auto" picks)."""
        return self.for_model(model).formulation

    def for_model(self, model, coords=None):
        """These settings with "auto" replaced by the formulation it picks for `model`: the
        first of formulations.candidates(model, coords) that check_settings accepts with the
        other settings (a method a formulation cannot run moves on to the next)."""
        if self.formulation != "auto":
            return self
        cache = _RESOLVED.setdefault(model, {})
        hit = cache.get((self, coords))
        if hit is None:
            names = candidates(model, coords)
            if self.method in IMPLICIT_METHODS and coords != "absolute":
                # the implicit methods' Newton iteration is smaller in the tree coordinates and
                # their error at a given step lower (tmt: 5.1e-6 rad against newton_euler's
                # 1.3e-5 rad on the slider-crank at h = 1e-4 s, tests/test_implicit.py)
                names = ["tmt"] + [n for n in names if n != "tmt"]
            for name in names:
                hit = replace(self, formulation=name)
                try:
                    check_settings(model, hit)
                    break
                except InputError:
                    continue
            else:
                hit = replace(self, formulation=names[0])   # its error shows when it runs
            cache[(self, coords)] = hit
        return hit


def _choice(name, value, valid):
    if value not in valid:
        raise InputError(f"solver setting '{name}': unknown value {value!r}; valid values are "
                         f"{list(valid)}")


def initial_state(model, settings=None):
    """The model's assembled initial state in the coordinates of settings.formulation."""
    settings = settings or Settings()
    settings = settings.for_model(model)
    check_spatial(model, settings)
    form = get_formulation(settings.formulation)
    state = form.initial_state(model)
    if _fr.has_friction(model):
        state = _initial_contacts(model, state, settings)
    if _fr.has_joint_friction(model):
        state = _initial_joints(model, state, settings)
    if model.contacts:
        state = _initial_impact(model, state, settings)
    return state


def _initial_impact(model, state, settings):
    """A frictionless contact closed at the start (gap <= contact_tol, not a Reduction
    contact) at rest (|gap rate| < contact_velocity) starts persistent, as a frictional one
    does (_initial_contacts), and is released at once when its force would pull. A contact
    closed at the start, not persistent and approaching (gap rate < 0) has its impact at the
    start time, the one of smallest gap with every contact within contact_tol as at an impact
    event, as a model exchange host's event iteration finds it (native/event_loop.h
    ev_initial_impact): from a gap of zero the gap's sign at the start would be rounding, and
    the impact at t0 or after a penetration of contact_tol."""
    from .formulations import recursive

    if settings.formulation == "recursive" and recursive.NATIVE_EVENTS and not any(
            c.method == "reduction" for c in model.contacts):     # the compiled loop's rule
        from .formulations.recursive import _extra, _records

        if model.spatial:
            from ..engine.spatial_kernel import spatial_contact_events as contact_events
        else:
            from ..engine.kernel import contact_events
        st, rec = _records(model, state.extra)
        q, qd, rec = contact_events(model).initial_impact(
            state.t, state.q, state.qd, model.input_vector(None), rec, settings)
        return replace(state, q=q, qd=qd, extra=_extra(st, rec, state.extra))
    from .impact import Status

    impact = _contact_kit(model, settings)
    st = Status(model, state.extra)
    gap, Dc, _ = impact.contact_rows(model, state.q, state.qd)
    vn = Dc @ state.qd
    closed = (gap <= settings.contact_tol) & ~model.compiled.contacts.reduction
    # the frictional ones: _initial_contacts
    rest = (closed & (np.abs(vn) < settings.contact_velocity)
            & ~(model.compiled.contacts.friction > 0.0))
    for i in np.flatnonzero(rest):
        st.data[st.names[i]]["active"] = True
    hit = closed & (vn < 0.0) & ~st.active()
    if not hit.any() and not rest.any():
        return state
    uvec = model.input_vector(None)
    y = np.concatenate([state.q, state.qd])
    # as one event iteration (native/event_loop.h ev_event_update): the impact, the release
    # of the contacts whose force would pull, then one projection onto the phase left, when
    # the impact or the release changed it
    phase = _contact_phase(st)
    i = None
    if hit.any():
        i = int(np.argmin(np.where(hit, gap, np.inf)))
        y = _handle_event(model, st, "impact", i, state.t, y, settings, impact, uvec)
    y = _release_tensile(model, st, state.t, y, uvec, impact)
    if i is not None or _contact_phase(st) != phase:
        y = _project_event(model, st, "impact", i, state.t, y, settings, impact)
    n = state.q.shape[0]
    return replace(state, q=y[:n].copy(), qd=y[n:].copy(), extra=st.to_extra(state.extra))


def _contact_phase(st):
    """The contacts' phase in the records st: active, sticking and slip direction of each."""
    return [(d["active"], d["stick"], tuple(d["sdir"])) for d in st.data.values()]


def _contact_kit(model, settings):
    """The contact functions of the Python event loop in settings.formulation's coordinates
    (impact_minimal.contact_kit; spatial models' joint coordinates: _spatial_contacts')."""
    from .impact_minimal import contact_kit

    if model.spatial and settings.formulation != "newton_euler":   # spatial joint coordinates
        from .formulations._spatial_contacts import contact_kit as spatial_kit
        return spatial_kit(settings.formulation)
    return contact_kit(settings.formulation)


def _event_loop(model):
    """The model runs the event loop: it has contacts or joints with Coulomb friction."""
    return bool(model.contacts) or _fr.has_joint_friction(model)


def _set_joints(model, st, xd_joint, velocity, only_unset=False):
    """Each frictional joint sticks when |qd_j| < velocity, else slips along sign(qd_j)
    (xd_joint: the rates of compiled.coord_joints); only_unset: only those not set yet."""
    names, pos, _ = _fr.joint_friction(model)
    for nm, k in zip(names, pos):
        rec = st.joints[nm]
        if only_unset and rec["set"]:
            continue
        v = float(xd_joint[k])
        rec["stick"] = abs(v) < velocity
        if not rec["stick"]:
            rec["sdir"] = 1.0 if v > 0.0 else -1.0
        rec["set"] = True


def _initial_joints(model, state, settings):
    """A frictional joint starts sticking when its rate is below contact_velocity, else
    slipping against it; then the phase start's rule (a sticking joint whose torque exceeds
    its bound slips)."""
    from ..mechanics import constraints
    from .impact import NE_KIT, Status

    st = Status(model, state.extra)
    x, xd = get_formulation(settings.formulation).absolute(model, state.q, state.qd)
    _set_joints(model, st, constraints.joint_coordinates(model, x, xd)[1],
                settings.contact_velocity)
    y = np.concatenate([x, xd])
    _release_tensile(model, st, state.t, y, model.input_vector(None), NE_KIT)
    return replace(state, extra=st.to_extra(state.extra))


def _initial_contacts(model, state, settings):
    """A frictional contact closed at the start (gap <= contact_tol, |gap rate| <
    contact_velocity) starts persistent: sticking when |v_t| < contact_velocity, else slipping
    along v_t (docs/contacts-friction.md)."""
    from .impact import Status, contact_rows, slip_velocities

    check_settings(model, settings)
    if settings.formulation == "recursive":      # the compiled loop's own rule (ev_initial)
        from .formulations.recursive import _extra, _records

        if model.spatial:
            from ..engine.spatial_kernel import spatial_contact_events as contact_events
        else:
            from ..engine.kernel import contact_events
        st, rec = _records(model, state.extra)
        rec = contact_events(model).initial(state.t, state.q, state.qd,
                                                    model.input_vector(None), rec,
                                                    settings.contact_tol,
                                                    settings.contact_velocity)
        return replace(state, extra=_extra(st, rec, state.extra))
    st = Status(model, state.extra)
    x, xd = get_formulation(settings.formulation).absolute(model, state.q, state.qd)
    gap, Dc, _ = contact_rows(model, x, xd)
    vn = Dc @ xd
    vt = slip_velocities(model, x, xd)
    for i, c in enumerate(model.contacts):
        if c.friction > 0.0 and gap[i] <= settings.contact_tol and \
                abs(vn[i]) < settings.contact_velocity:
            rec = st.data[c.name]
            nv = float(np.sqrt(vt[i] @ vt[i]))
            rec["active"] = True
            rec["stick"] = nv < settings.contact_velocity
            if not rec["stick"]:
                rec["sdir"] = [float(v) for v in vt[i] / nv]
    if st.active().any():       # a sticking force outside the cone slips from the start
        from .impact import NE_KIT

        y = np.concatenate([x, xd])
        _release_tensile(model, st, state.t, y, model.input_vector(None), NE_KIT)
    return replace(state, extra=st.to_extra(state.extra))


def check_spatial(model, settings):
    """Spatial models run in newton_euler, tmt, lagrange, recursive and minimal, with the
    explicit and adaptive methods (the implicit ones have no spatial DAE terms yet)."""
    if model.spatial and settings.formulation not in ("newton_euler", "tmt", "lagrange",
                                                       "recursive", "minimal"):
        raise InputError(f"model '{model.name}' is spatial: formulation "
                         f"'{settings.formulation}' is planar only; use formulation "
                         f"'newton_euler' or 'tmt'")
    if model.spatial and model.contacts and settings.formulation == "minimal":
        raise InputError(f"model '{model.name}' is spatial with contacts "
                         f"{[c.name for c in model.contacts]}: formulation 'minimal' does "
                         f"not handle contacts; use 'newton_euler', 'tmt', 'lagrange' or "
                         f"'recursive'")
    if model.spatial and settings.method in IMPLICIT_METHODS:
        raise InputError(f"model '{model.name}' is spatial: method '{settings.method}' runs "
                         f"planar models only so far; use an explicit or adaptive method: "
                         f"{[m for m in METHODS if m not in IMPLICIT_METHODS]}")


def check_settings(model, settings):
    """Raise InputError when `settings` cannot run `model`: in tmt and lagrange the singular
    joint of a Reduction-Method contact must be a tree joint (a coordinate of q); recursive
    runs trees, closed loops, contacts and drives whose law it evaluates in C (see
    fmu_mb.engine.kernel.supported)."""
    settings = settings.for_model(model)
    check_spatial(model, settings)
    driven = [d.joint for d in model.drives
              if getattr(model.joint(d.joint), "friction", 0.0) > 0.0]
    if driven:
        raise InputError(f"model '{model.name}': joints {driven} have Coulomb friction and a "
                         f"drive; the drive prescribes the coordinate, so the friction has no "
                         f"rate to act on (its sticking row would repeat the drive's): give "
                         f"friction=0 on driven joints")
    if _fr.has_joint_friction(model) and any(j.armature for j in model.joints):
        raise InputError(f"model '{model.name}': joints "
                         f"{[j.name for j in model.joints if j.friction > 0.0]} have Coulomb "
                         f"friction and joints {[j.name for j in model.joints if j.armature]} "
                         f"armature: friction runs in formulation 'newton_euler' only so far, "
                         f"armature in the joint-coordinate formulations only; drop one "
                         f"(importers: friction=False)")
    compiled_joints = (settings.formulation == "recursive"
                       and settings.method in ("rk4", "dopri5", "dop853"))
    if _fr.has_joint_friction(model) and not compiled_joints and (
            settings.formulation != "newton_euler" or settings.method in IMPLICIT_METHODS):
        fr = [j.name for j in model.joints if j.friction > 0.0]
        raise InputError(f"model '{model.name}': its joints {fr} have Coulomb friction, "
                         f"which runs in formulation 'newton_euler' with an explicit or "
                         f"adaptive method (the event loop in Python), and in formulation "
                         f"'recursive' with methods rk4, dopri5 and dop853 "
                         f"(the compiled event loop); formulation '{settings.formulation}' "
                         f"with method '{settings.method}' does not run it")
    if model.contacts and settings.method in IMPLICIT_METHODS:
        raise InputError(f"model '{model.name}' has contacts; method '{settings.method}' "
                         f"does not run the contact event loop (it needs dense output and "
                         f"the contact rows in its Newton iteration). Use an explicit or "
                         f"adaptive method: {[m for m in METHODS if m not in IMPLICIT_METHODS]}")
    if settings.formulation == "recursive" and settings.method in IMPLICIT_METHODS:
        raise InputError(f"method '{settings.method}' needs the DAE terms of the "
                         f"formulation; 'recursive' integrates in compiled code without "
                         f"them: use formulation 'tmt' (the same joint coordinates)")
    if settings.formulation == "recursive" and model.spatial:
        from ..engine.spatial_kernel import SpatialKernel, supported

        if supported(model) is not None:
            SpatialKernel(model)                    # raises the InputError naming why
        return
    if settings.formulation == "recursive":
        from ..engine.kernel import supported

        why = supported(model)
        if why is not None:
            raise InputError(f"model '{model.name}': formulation 'recursive' runs trees "
                             f"of revolute, prismatic and weld joints and loops closed by cut "
                             f"joints; {why}. Use formulation 'tmt' or 'newton_euler'")
    if _fr.has_friction(model) and settings.formulation != "newton_euler" and not (
            settings.formulation == "recursive"
            and settings.method in ("rk4", "dopri5", "dop853", "auto")):
        fr = [c.name for c in model.contacts if c.friction > 0.0]
        raise InputError(f"model '{model.name}': its contacts {fr} have Coulomb friction, "
                         f"which runs in formulation 'newton_euler' and in 'recursive' with "
                         f"method rk4, dopri5 or dop853 (the compiled event loop) so far; "
                         f"formulation '{settings.formulation}' with method "
                         f"'{settings.method}' is frictionless")
    if model.contacts and settings.formulation == "minimal":
        raise InputError(f"model '{model.name}' has contacts: formulation 'minimal' does not "
                         f"handle them; use 'tmt' or 'newton_euler'")
    if model.contacts and settings.formulation != "newton_euler":
        from .impact_minimal import singular_position

        for i, c in enumerate(model.contacts):
            if c.method == "reduction":
                singular_position(model, i, settings.formulation)


def auto_method(h, span):
    """Method "auto" for one call over an interval of length span from a state whose
    step-size hint is h: ("dop853", min(span, 10 h), h * AUTO_GROW) when 0 < h < span /
    AUTO_SPLIT (the interval would take dopri5 2 or more steps; dop853 starts at the largest
    step the controller may grow to from h), else ("dopri5", h, None): (method, the hint to
    start with, the hint to leave after the call, None: the method's own)."""
    if 0.0 < h < span / AUTO_SPLIT:
        return "dop853", min(span, 10.0 * h), h * AUTO_GROW
    return "dopri5", h, None


def advance(model, state, t_end, u=None, settings=None):
    """Integrate from state.t to t_end with inputs u held constant; return the new State.

    Raises InputError (bad t_end or u), IntegrationError (step failure, non-finite state),
    DriftError (projection cannot restore the constraints, e.g. a lock-up).
    """
    settings = settings or Settings()
    uvec = model.input_vector(u)
    t0 = state.t
    if not isinstance(t_end, (int, float)) or not math.isfinite(t_end):
        raise InputError(f"advance: t_end must be a finite number, received {plain(t_end)}")
    if t_end < t0:
        raise InputError(f"advance: t_end = {t_end!r} is before the current time {t0!r}; "
                         f"expected t_end >= t")
    if not (np.isfinite(state.q).all() and np.isfinite(state.qd).all()):
        raise InputError(f"advance: the state at t = {t0!r} holds non-finite coordinates; "
                         f"expected finite q and qd")
    if t_end == t0:
        return state
    if settings.formulation == "auto":
        settings = settings.for_model(model, state.coords)
    check_spatial(model, settings)
    if settings.method == "auto":
        if _event_loop(model):                   # the event loop: dopri5
            settings = replace(settings, method="dopri5")
        else:
            method, h0, h_after = auto_method(state.h, t_end - t0)
            out = advance(model, replace(state, h=h0), t_end, u,
                          replace(settings, method=method))
            return out if h_after is None else replace(out, h=float(h_after))
    if _event_loop(model):
        check_settings(model, settings)
        return _advance_contacts(model, state, float(t_end), uvec, settings)
    form = get_formulation(settings.formulation)
    _budget(form, model, state, t_end, uvec, settings)
    if settings.method in IMPLICIT_METHODS:
        check_settings(model, settings)
        return advance_implicit(model, state, float(t_end), uvec, settings, form)
    if form.native_advance is not None:
        res = form.native_advance(model, state, t_end, uvec, settings)
        if res is not None:
            q, qd, h = res
            return State(float(t_end), q, qd, h, state.coords, state.extra)
    n = state.q.shape[0]
    baum = settings.baumgarte if settings.stabilization == "baumgarte" else None

    def rhs(t, y):
        charge()
        qdd = form.accelerations(model, y[:n], y[n:], t, uvec, baumgarte=baum).qdd
        return np.concatenate([y[n:], qdd])

    project = settings.stabilization == "projection"
    y = np.concatenate([state.q, state.qd])
    if settings.method in ("rk4", "euler"):
        y, h = _rk4(rhs, t0, y, t_end, settings.step, model, form, project, settings)
    else:
        y, h = _adaptive(rhs, t0, y, t_end, state.h, model, form, project, settings)
    return replace(state, t=float(t_end), q=y[:n].copy(), qd=y[n:].copy(), h=float(h))


def stepper(model, settings=None):
    """advance() prepared once for one model and settings, for co-simulation:
    step(state, t_end, u) -> State, the same result as advance(model, state, t_end, u,
    settings). The settings are validated and the formulation chosen here, once; the caller
    passes u as a finite float array of len(model.inputs) (an FMU validates each input when
    it is set). Where the formulation integrates in compiled code (recursive), a step is one
    foreign call; otherwise, and for t_end <= state.t or a non-finite t_end (whose errors
    advance() reports), it is advance() itself."""
    settings = (settings or Settings()).for_model(model)
    check_settings(model, settings)
    if settings.method == "auto":
        if _event_loop(model):                   # the event loop: dopri5
            settings = replace(settings, method="dopri5")
        else:
            steps = {m: stepper(model, replace(settings, method=m))
                     for m in ("dopri5", "dop853")}

            def step_auto(state, t_end, u):
                if not state.t < t_end < math.inf:
                    return advance(model, state, t_end, u, settings)
                method, h0, h_after = auto_method(state.h, t_end - state.t)
                out = steps[method](replace(state, h=h0), t_end, u)
                return out if h_after is None else replace(out, h=float(h_after))
            return step_auto
    form = get_formulation(settings.formulation)
    fast = None
    if form.cosim_stepper is not None:     # (contacts: recursive's C event loop, or None)
        fast = form.cosim_stepper(model, settings)
    if fast is None:
        return lambda state, t_end, u: advance(model, state, t_end, u, settings)
    inf = math.inf
    budget = bool(settings.max_steps)

    def step(state, t_end, u):
        if state.t < t_end < inf:
            if budget:
                _budget(form, model, state, t_end, u, settings)
            return fast(state, float(t_end), u)
        return advance(model, state, t_end, u, settings)
    return step


def _check(y, t, model):
    if not np.all(np.isfinite(y)):
        raise IntegrationError(f"model '{model.name}': the state became non-finite at "
                               f"t = {t:.9g} s (NaN or infinity); the step was rejected")


def _budget(form, model, state, t_end, uvec, settings):
    """Fail fast, before integrating, when a fixed-step method (rk4, euler, the implicit
    methods) needs more than settings.max_steps steps for the interval: their step count is
    known in advance. The adaptive methods count their steps as they go (scipy's stepper loop
    here, the compiled loop in C) and stop at the budget; a count guessed from the last or a
    first step size would refuse intervals the step-size control covers with a few growing
    steps (a model at rest, a long doStep after short ones)."""
    if settings.max_steps and settings.method in FIXED_STEP:
        t0 = state.t
        _over_budget(settings, model, t0, t_end, math.ceil((t_end - t0) / settings.step),
                     settings.step)


def _over_budget(settings, model, t, t_end, steps, h):
    """IntegrationError when `steps` integrator steps exceed settings.max_steps."""
    if settings.max_steps and steps > settings.max_steps:
        raise IntegrationError(
            f"model '{model.name}': integrating from t = {t:.9g} s to {t_end:.9g} s needs more "
            f"than {settings.max_steps} integrator steps (step size about {h:.3g} s); the "
            f"call was stopped; take shorter communication steps or check the inputs")


def _rk4(rhs, t, y, t_end, step, model, form, project, settings):
    """rk4 or euler (settings.method) in equal steps of at most `step`."""
    nsteps = max(1, math.ceil((t_end - t) / step - 1e-9))
    _over_budget(settings, model, t, t_end, nsteps, step)
    dt = (t_end - t) / nsteps
    for k in range(nsteps):
        tk = t + k * dt
        y = _fixed_step(settings.method, rhs, tk, y, dt, rhs(tk, y))
        tn = t_end if k == nsteps - 1 else t + (k + 1) * dt
        _check(y, tn, model)
        if project:
            charge()
            y = form.project(model, y, tn, settings.projection_tol)
    return y, dt


def _adaptive(rhs, t, y, t_end, h, model, form, project, settings):
    cls = getattr(_scipy_integrate, _SCIPY[settings.method])
    first = min(h, t_end - t) if h > 0 else None
    try:
        solver = cls(rhs, t, y, t_end, rtol=settings.rtol, atol=settings.atol,
                     max_step=settings.max_step, first_step=first)
    except ValueError as exc:
        raise IntegrationError(f"model '{model.name}': cannot start the integrator at "
                               f"t = {t:.9g} s: {exc}") from None
    steps = 0
    hint = None
    while solver.status == "running":
        steps += 1
        _over_budget(settings, model, t, t_end, steps, solver.h_abs)
        # the controller's proposal; a last step shortened to end at t_end and accepted
        # leaves the larger of its own proposal and this one (integrators.h alike)
        prop, t_before = min(solver.h_abs, settings.max_step), solver.t
        msg = solver.step()
        if solver.t >= t_end and t_end - t_before < prop and solver.h_abs < prop:
            hint = prop
        if solver.status == "failed":
            raise IntegrationError(f"model '{model.name}': the {settings.method} integrator "
                                   f"failed at t = {solver.t:.9g} s: {msg}")
        _check(solver.y, solver.t, model)
        if project:
            charge()
            yp = form.project(model, solver.y, solver.t, settings.projection_tol)
            if not np.array_equal(yp, solver.y):
                solver.y = yp
                solver.f = rhs(solver.t, yp)
    return solver.y, solver.h_abs if hint is None else hint


def _fixed_step(method, rhs, t, y, dt, k1):
    """One step of rk4 or forward Euler (y1 = y + dt y'(t), seed 000 eq. 21) from y at t."""
    if method == "euler":
        return y + dt * k1
    k2 = rhs(t + dt / 2, y + dt / 2 * k1)
    k3 = rhs(t + dt / 2, y + dt / 2 * k2)
    k4 = rhs(t + dt, y + dt * k3)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


# ---------------------------------------------------------------------- contacts and events
class _Stepper:
    """One interface over the scipy steppers and rk4: step(), set_y(), dense(), t, y, h."""

    def __init__(self, settings, rhs, t, y, t_end, h, model):
        self.rhs, self.t_end, self.model = rhs, t_end, model
        if settings.method in ("rk4", "euler"):
            self.solver = None
            self.method = settings.method
            self.nsteps = max(1, math.ceil((t_end - t) / settings.step - 1e-9))
            _over_budget(settings, model, t, t_end, self.nsteps, settings.step)
            self.t0, self.k = t, 0
            self.dt = (t_end - t) / self.nsteps
            self.t, self.y, self.f = t, y, rhs(t, y)
            self.h = self.dt
            return
        first = min(h, t_end - t) if h > 0 else None
        try:
            self.solver = getattr(_scipy_integrate, _SCIPY[settings.method])(
                rhs, t, y, t_end, rtol=settings.rtol, atol=settings.atol,
                max_step=settings.max_step, first_step=first)
        except ValueError as exc:
            raise IntegrationError(f"model '{model.name}': cannot start the integrator at "
                                   f"t = {t:.9g} s: {exc}") from None
        self.method = settings.method
        self.t, self.y, self.h = t, y, (h if h > 0 else 0.0)

    def step(self):
        if self.solver is None:
            t, y, dt, rhs = self.t, self.y, self.dt, self.rhs
            k1 = self.f
            self.t_old, self.y_old, self.f_old = t, y, k1
            self.k += 1
            self.t = self.t_end if self.k == self.nsteps else self.t0 + self.k * dt
            self.y = _fixed_step(self.method, rhs, t, y, dt, k1)
            _check(self.y, self.t, self.model)
            self.f = rhs(self.t, self.y)
            return
        s = self.solver
        msg = s.step()
        if s.status == "failed":
            raise IntegrationError(f"model '{self.model.name}': the {self.method} integrator "
                                   f"failed at t = {s.t:.9g} s: {msg}")
        _check(s.y, s.t, self.model)
        self.t_old, self.t, self.y, self.h = s.t_old, s.t, s.y, s.h_abs
        self._dense = s.dense_output()

    def set_y(self, y):
        if np.array_equal(y, self.y):
            return
        self.y = y
        if self.solver is None:
            self.f = self.rhs(self.t, y)
        else:
            self.solver.y = y
            self.solver.f = self.rhs(self.t, y)

    def dense(self):
        if self.solver is not None:
            return self._dense
        t0, t1, y0, y1, f0, f1 = self.t_old, self.t, self.y_old, self.y, self.f_old, self.f
        dt = t1 - t0

        def sol(t):                              # cubic Hermite between the step ends
            s = (t - t0) / dt
            h00, h10 = 2 * s ** 3 - 3 * s ** 2 + 1, s ** 3 - 2 * s ** 2 + s
            h01, h11 = -2 * s ** 3 + 3 * s ** 2, s ** 3 - s ** 2
            return h00 * y0 + h10 * dt * f0 + h01 * y1 + h11 * dt * f1
        return sol


def _advance_contacts(model, state, t_end, uvec, settings):
    """advance() for models with contacts: integrate, locate events on the dense output,
    apply impacts / persistent-contact changes / Reduction passes, restart. The contact
    functions come from the formulation (impact.contact_kit), so the loop is the same in
    absolute and in joint coordinates."""
    if settings.formulation == "recursive":     # the whole loop in C where it applies
        from .formulations import recursive

        out = recursive.native_events(model, state, t_end, uvec, settings)
        if out is not None:
            return out
        if _fr.has_friction(model):
            raise InputError(f"model '{model.name}': Coulomb friction in formulation "
                             f"'recursive' runs in the compiled event loop only (methods rk4, "
                             f"dopri5, dop853); use formulation 'newton_euler'")
    from scipy.optimize import brentq

    from .impact import Status

    impact = _reusing_accelerations(_contact_kit(model, settings))
    st = Status(model, state.extra)
    nq = state.q.shape[0]
    y = np.concatenate([state.q, state.qd])
    if st.joints:                 # a state made elsewhere: its frictional joints from the rates
        _set_joints(model, st, impact.joint_coordinates(model, state.q, state.qd)[1],
                    settings.contact_velocity, only_unset=True)
    t, h = state.t, state.h
    baum = settings.baumgarte if settings.stabilization == "baumgarte" else None
    project = settings.stabilization == "projection"
    reduction = (model.compiled.contacts.reduction if model.contacts
                 else np.zeros(0, bool))
    repeats, t_last, steps, t_win, n_win = 0, None, 0, 0.0, 0
    frictional = _fr.any_friction(model)
    n_events = len(model.contacts) + len(st.joints)
    last = _ZENO_WINDOWS.get(model)   # contact index or joint name -> (window start, events)
    zeno = (dict(last[2]) if last is not None and last[0] == t and last[1] == y.tobytes()
            else {})
    while t < t_end:
        y = _release_tensile(model, st, t, y, uvec, impact)
        active = st.active()
        locks = impact.locks(model, st)
        fric = _fr.phase_of(model, st, active) if frictional else None
        fkw = {} if fric is None else {"fric": fric}
        ip = st.passing()
        pas, t_pass_end = None, math.inf
        if ip is not None:
            P = st.data[st.names[ip]]["pass"]
            pas = (impact.singular_position(model, ip), P[0], P[2], P[3])
            t_pass_end = P[1]

        def rhs(tt, yy, active=active, pas=pas, locks=locks, fkw=fkw):
            charge()
            dyn = impact.accelerations(model, yy[:nq], yy[nq:], tt, uvec, active, pas, baum,
                                       locks, **fkw)
            return np.concatenate([yy[nq:], dyn.qdd])

        def proj(tt, yy, active=active, pas=pas, locks=locks, fkw=fkw):
            charge()
            return impact.project(model, yy, tt, settings.projection_tol, active, pas, locks,
                                  **fkw)

        native = get_formulation(settings.formulation).native_stepper   # compiled steps
        stepper = (native(model, settings, t, y, t_end, h, uvec, active) if native is not None
                   and pas is None and not locks and fric is None else None)
        stepper = stepper or _Stepper(settings, rhs, t, y, t_end, h, model)
        event = None
        while event is None and stepper.t < t_end:
            y_old = stepper.y
            steps += 1
            _over_budget(settings, model, state.t, t_end, steps, stepper.h)
            stepper.step()
            if project and not getattr(stepper, "projects", False):
                stepper.set_y(proj(stepper.t, stepper.y))
            event = _find_event(model, st, stepper.dense(), stepper.t_old, y_old, stepper.t,
                                active, pas, t_pass_end, reduction, uvec, settings, impact,
                                brentq, locks, fric)
            if fric is not None and (fric.slip.any() or fric.jslip.any()):
                _slide_loss(model, st, stepper.dense(), stepper.t_old,
                            stepper.t if event is None else event[0], uvec, active, impact,
                            fric)
        h = stepper.h
        if event is None:
            y, t = stepper.y, stepper.t
            break
        te, kind, i, ye = event
        # Zeno guard: more than 100 events per contact, each within 10 ns of the last, or
        # within 10 us (events crawling on through a chatter)
        close = t_last is not None and te - t_last <= 1e-8 * max(1.0, abs(te))
        repeats = repeats + 1 if close else 0
        if t_last is None or te - t_win > 1e-5 * max(1.0, abs(te)):
            t_win, n_win = te, 0
        n_win += 1
        # and more than ZENO_COUNT events of one contact or joint within ZENO_SPAN of
        # simulated time, across calls (a chatter whose events are too far apart for the
        # windows above)
        key = i[1] if isinstance(i, tuple) else i
        zt, zn = zeno.get(key, (te, 0))
        if not zn or te - zt > ZENO_SPAN * max(1.0, abs(te)):
            zt, zn = te, 0
        zeno[key] = (zt, zn + 1)
        if repeats > 100 * n_events or n_win > 100 * n_events or zn + 1 > ZENO_COUNT:
            what = (f"joint '{i[1]}'" if isinstance(i, tuple) else
                    f"contact '{st.names[i]}'")
            raise IntegrationError(f"model '{model.name}': {what} switches "
                                   f"state endlessly at t = {te:.9g} s (Zeno behaviour); "
                                   f"raise Settings.contact_velocity")
        t_last = te
        y = proj(te, ye) if project else ye
        y = _apply_event(model, st, kind, i, te, y, settings, impact, uvec)
        t = te
    _ZENO_WINDOWS[model] = (float(t_end), y.tobytes(), zeno)
    return replace(state, t=float(t_end), q=y[:nq].copy(), qd=y[nq:].copy(), h=float(h),
                   extra=st.to_extra(state.extra))


#: accelerations kept by _reusing_accelerations (the event functions' first sample of a step
#: is the state whose right-hand side the integrator evaluated last)
REUSED_ACCELERATIONS = 16


def _reusing_accelerations(impact):
    """The contact kit `impact` whose accelerations() returns the result of one of its last
    REUSED_ACCELERATIONS calls with the same arguments (the same numbers, the same phase
    objects) instead of solving again; for the duration of one advance() call."""
    from types import SimpleNamespace

    solve = impact.accelerations
    last = []                    # [(key, fric, ContactDynamics)], the newest last

    def accelerations(model, x, xd, t, u, active, pas=None, baumgarte=None, locks=None,
                      **kw):
        fric = kw.get("fric")
        key = (id(model), x.tobytes(), xd.tobytes(), t, np.asarray(u).tobytes(),
               np.asarray(active).tobytes(), pas, baumgarte,
               None if not locks else tuple(sorted(locks.items())), id(fric), tuple(kw))
        for k, f, dyn in last:
            if k == key and f is fric:
                return dyn
        dyn = solve(model, x, xd, t, u, active, pas, baumgarte, locks, **kw)
        last.append((key, fric, dyn))
        if len(last) > REUSED_ACCELERATIONS:
            del last[0]
        return dyn
    return SimpleNamespace(**{**vars(impact), "accelerations": accelerations})


def _apply_event(model, st, kind, i, te, y, settings, impact, uvec):
    """The event's change of y and of the records st (_handle_event); with the projection
    drift control then y projected onto the new phase's rows, the kinetic energy this removes
    (a rebound below contact_velocity) added to an impact's or a pass's loss."""
    y = _handle_event(model, st, kind, i, te, y, settings, impact, uvec)
    return _project_event(model, st, kind, i, te, y, settings, impact)


def _project_event(model, st, kind, i, te, y, settings, impact):
    """With the projection drift control, y after an event (kind, contact i) projected onto
    the rows of the phase in st, the kinetic energy this removes added to an impact's or a
    pass's loss; y as it is otherwise."""
    if settings.stabilization != "projection":
        return y
    T0 = _kinetic(model, y, impact)
    act = st.active()
    fr = _fr.phase_of(model, st, act) if _fr.any_friction(model) else None
    charge()
    y = impact.project(model, y, te, settings.projection_tol, act, impact.pass_tuple(model, st),
                       impact.locks(model, st), **({} if fr is None else {"fric": fr}))
    if kind in ("impact", "pass_end") and i is not None and not isinstance(i, tuple):
        st.data[st.names[i]]["energy_loss"] += max(T0 - _kinetic(model, y, impact), 0.0)
    return y


def _kinetic(model, y, impact):
    n = y.shape[0] // 2
    return impact.kinetic(model, y[:n], y[n:])


def _joint_rest_states(model, st, t, y, uvec, impact, fric, dyn, rest_rate):
    """Set the stick/slip states of the frictional joints at rest (sticking, or slipping with
    |qd_j| <= rest_rate) by friction.rest_states: with several joints coupled through the mass
    matrix, a joint whose sticking torque exceeds its bound may have to slip against that
    torque, or stick although the simple rule would let it slip."""
    n = y.shape[0] // 2
    names = _fr.joint_friction(model)[0]
    qd = impact.joint_coordinates(model, y[:n], y[n:])[1][fric.jpos]
    rest = fric.jstick | (fric.jslip & (np.abs(qd) <= rest_rate))
    active = st.active()
    free = replace(fric, jstick=fric.jstick & ~rest, jslip=fric.jslip & ~rest)
    locks = impact.locks(model, st)
    pas = impact.pass_tuple(model, st)

    def qdd_of(f):
        d = impact.accelerations(model, y[:n], y[n:], t, uvec, active, pas, locks=locks,
                                 fric=replace(free, jforce=f))
        _, _, Jq, cq = impact.joint_coordinates(model, y[:n], y[n:])
        return Jq[fric.jpos] @ d.qdd + cq[fric.jpos]
    stick, s0 = _fr.rest_states(free, rest, qdd_of)
    for j in np.flatnonzero(rest):
        rec = st.joints[names[j]]
        rec["stick"] = bool(stick[j])
        rec["sdir"] = float(s0[j])


def _release_tensile(model, st, t, y, uvec, impact, rest_rate=1e-6):
    """Release persistent contacts whose force would be tensile (most tensile first); with
    friction, then every sticking contact whose force is outside the cone slips (slip
    direction s0 = lam_t / |lam_t|), until the phase is consistent."""
    n = y.shape[0] // 2
    frictional = _fr.any_friction(model)
    for _ in range(8 * (len(model.contacts) + len(st.joints)) + 8):
        active = st.active()
        if not active.any() and not st.joints:
            return y
        fric = _fr.phase_of(model, st, active) if frictional else None
        fkw = {} if fric is None else {"fric": fric}
        dyn = impact.accelerations(model, y[:n], y[n:], t, uvec, active,
                                   impact.pass_tuple(model, st), locks=impact.locks(model, st),
                                   **fkw)
        lam_c = np.where(active, dyn.lam_c, -np.inf)
        i = int(np.argmax(lam_c)) if len(lam_c) else 0
        if len(lam_c) and lam_c[i] > 0.0:
            if fric is not None and fric.slip[i]:
                _painleve_check(model, st, i, t, y, uvec, impact)
            _release(model, st, i, y[:n], impact)
            continue
        if fric is None or not (fric.stick.any() or fric.jstick.any()):
            return y
        ft = np.sqrt(np.einsum("ik,ik->i", dyn.lam_t, dyn.lam_t))
        excess = np.where(fric.stick, ft - fric.mu * -dyn.lam_c, -np.inf)
        out = np.flatnonzero(excess > 0.0)
        jout = np.flatnonzero(fric.jstick & (np.abs(dyn.lam_j) > fric.jbound * (1.0 + 1e-9)))
        if not len(out) and not len(jout):
            return y
        for j in out:                 # every sticking contact outside its cone slips
            rec = st.data[st.names[j]]
            rec["stick"] = False
            rec["sdir"] = [float(v) for v in dyn.lam_t[j] / ft[j]]
        if len(jout):                 # the joints at rest: the coupled friction problem
            _joint_rest_states(model, st, t, y, uvec, impact, fric, dyn, rest_rate)
    raise ImpactError(f"model '{model.name}': the persistent contacts {list(st.names)} and "
                      f"frictional joints {list(st.joints)} find "
                      f"no consistent stick/slip/open state at t = {t:.9g} s (a contact "
                      f"problem without a solution, Painleve-type)")


def _painleve_check(model, st, i, t, y, uvec, impact):
    """A slipping contact i whose normal force would be tensile and whose gap, released,
    would accelerate into penetration has no consistent state (Painleve's paradox):
    ImpactError naming it."""
    n = y.shape[0] // 2
    active = st.active()
    active[i] = False
    fric = _fr.phase_of(model, st, active)
    dyn = impact.accelerations(model, y[:n], y[n:], t, uvec, active,
                               **({} if fric is None else {"fric": fric}))
    _, Dc, conv = impact.contact_rows(model, y[:n], y[n:])
    acc = float(Dc[i] @ dyn.qdd + conv[i])
    # below 1e-9 m/s^2 or 1e-9 of its terms the acceleration is rounding of 0: a contact
    # redundant with the ones still closed (a corner of a flat face), which hold its gap
    scale = abs(float(conv[i])) + float(np.abs(Dc[i]) @ np.abs(dyn.qdd))
    if acc < -1e-9 * (1.0 + scale):
        c = model.contacts[i]
        raise ImpactError(f"model '{model.name}': contact '{c.name}' has no consistent "
                          f"state at t = {t:.9g} s (Painleve's paradox): slipping with "
                          f"friction {c.friction:g} its normal force would pull, and "
                          f"released its gap would accelerate into the surface "
                          f"({acc:.6g}); a smaller friction coefficient or another "
                          f"contact model is needed")


def _slide_loss(model, st, dense, t0, t1, uvec, active, impact, fric):
    """Add the energy dissipated by sliding friction over [t0, t1] (the power mu f_n s . v_t
    of each slipping contact, 3-point Gauss-Legendre on the dense output) to slide_loss."""
    if not t1 > t0:
        return
    n = len(model.contacts)
    acc = np.zeros(n)
    jacc = np.zeros(len(fric.jslip))
    half, mid = (t1 - t0) / 2.0, (t1 + t0) / 2.0
    for xg, wg in ((-math.sqrt(0.6), 5.0 / 9.0), (0.0, 8.0 / 9.0), (math.sqrt(0.6), 5.0 / 9.0)):
        tt = mid + half * xg
        yy = np.asarray(dense(tt), float)
        nq = yy.shape[0] // 2
        if fric.slip.any():
            dyn = impact.accelerations(model, yy[:nq], yy[nq:], tt, uvec, active, fric=fric)
            vt = impact.slip_velocities(model, yy[:nq], yy[nq:])
            for j in np.flatnonzero(fric.slip):
                s = _fr.slip_direction(vt[j], fric.s0[j])
                acc[j] += wg * fric.mu[j] * -dyn.lam_c[j] * float(s @ vt[j])
        if fric.jslip.any():          # the slipping joints' power F_c s0 qd_j
            qdj = impact.joint_coordinates(model, yy[:nq], yy[nq:])[1][fric.jpos]
            jacc += wg * np.where(fric.jslip, fric.jbound * fric.js0 * qdj, 0.0)
    for j in np.flatnonzero(fric.slip):
        st.data[st.names[j]]["slide_loss"] += float(half * acc[j])
    for j, nm in enumerate(_fr.joint_friction(model)[0]):
        if fric.jslip[j]:
            st.joints[nm]["loss"] += float(half * jacc[j])


def _release(model, st, i, x, impact):
    rec = st.data[st.names[i]]
    rec["active"] = False
    c = model.contacts[i]
    if c.kind == "joint_limit" and c.joint in st.joints:   # the joint leaves the limit at
        st.joints[c.joint]["stick"] = True                 # rest: it sticks (phase start)
    if model.contacts[i].method == "reduction":   # start below the criterion's new value
        c = model.contacts[i]
        rec["d"] = min(rec["d"], impact.criterion(model, x, i) * c.sharpening)


def _find_event(model, st, dense, t0, y0, t1, active, pas, t_pass_end, reduction, uvec,
                settings, impact, brentq, locks, fric=None):
    """Earliest event in (t0, t1]: (t_event, kind, contact index, y at t_event) or None.

    kinds: "impact" (a gap of an inactive contact reaches zero), "release" (the force of a
    persistent contact reaches zero, about to become tensile), "criterion" (det-M criterion
    of a Reduction contact reaches d), "pass_end" (a Reduction pass is over).
    """
    n = y0.shape[0] // 2
    tol = settings.contact_tol
    # a gap within thr of zero is searched from its flight phase too: just after an impact
    # its sign is rounding, and a root right there would be an impact without impulse at the
    # same instant, again and again (the Zeno guard's error)
    thr = 1e-3 * tol
    # a slip starting from a stopped slip speed (v_t . s0 <= 0 at the start: a contact whose
    # slip the others hold, or just after a stick -> slip event) counts as reversed beyond
    # -small only: above that the slip acceleration is rounding of 0
    small = 1e-3 * settings.contact_velocity
    rest = _fr.REST_ARM
    samples = [t0 + (t1 - t0) * k / 4 for k in range(1, 4)] + [t1]
    ys = [dense(s) for s in samples[:-1]] + [None]
    ys[-1] = dense(t1) if settings.method != "rk4" else dense(t1)
    found = []
    watch = ~active & ~reduction
    red = reduction & ~active
    if pas is not None:
        red[:] = False

    nc = len(model.contacts)
    nj = 0
    slipping = np.zeros(len(watch), bool)
    if fric is not None:        # friction: per contact a second value (module friction),
        nj = len(fric.jstick)   # then one per frictional joint
        slipping = np.concatenate([slipping, fric.slip, np.zeros(nj, bool)])
        watch = np.concatenate([watch, np.zeros(nc + nj, bool)])
        red = np.concatenate([red, np.zeros(nc + nj, bool)])
        frs = fric.stick | fric.slip
        active = np.concatenate([active, frs, np.ones(nj, bool)])

    def values(yy, tt):
        charge()
        out = np.full(len(watch), np.inf)
        if watch.any():
            g = impact.gaps(model, yy[:n])
            out[:nc][watch[:nc]] = g[watch[:nc]]
        if fric is not None and nj:
            act = active[:nc]
            dyn = impact.accelerations(model, yy[:n], yy[n:], tt, uvec, act, pas,
                                       locks=locks, fric=fric)
            qdj = impact.joint_coordinates(model, yy[:n], yy[n:])[1][fric.jpos]
            # sticking: the bound's margin F_c - |lam_j|; slipping along s0: qd_j s0; a
            # joint held by a persistent limit (neither) has no event of its own: its rate
            # is the limit row's rounding of 0, and it leaves the limit at the limit's release
            out[2 * nc:] = np.where(fric.jstick, fric.jbound - np.abs(dyn.lam_j),
                                    np.where(fric.jslip, qdj * fric.js0, np.inf))
        if active[:nc].any():
            if fric is None:
                dyn = impact.accelerations(model, yy[:n], yy[n:], tt, uvec, active, pas,
                                           locks=locks)
                out[active] = -dyn.lam_c[active]    # contact force, >= 0 while pushing
            else:
                act = active[:nc]
                if not nj:
                    dyn = impact.accelerations(model, yy[:n], yy[n:], tt, uvec, act, pas,
                                               locks=locks, fric=fric)
                out[:nc][act] = -dyn.lam_c[act]
                ft = np.sqrt(np.einsum("ik,ik->i", dyn.lam_t, dyn.lam_t))
                vt = impact.slip_velocities(model, yy[:n], yy[n:])
                for i in np.flatnonzero(fric.stick):   # inside the cone: mu f_n - |f_t|
                    out[nc + i] = fric.mu[i] * -dyn.lam_c[i] - ft[i]
                for i in np.flatnonzero(fric.slip):    # slipping along s0: v_t . s0
                    out[nc + i] = float(vt[i] @ fric.s0[i])
        for i in np.flatnonzero(red[:nc]):
            out[i] = impact.criterion(model, yy[:n], i) - st.data[st.names[i]]["d"]
        return out

    v0 = values(y0, t0)
    prev_t, prev_v = t0, v0
    for s, yy in zip(samples, ys):
        v = values(yy, s)
        # a gap crossing zero, or (starting from ~0, just after an impact) beyond -tol; a
        # gap within thr of zero at both samples is rounding of a gap at rest on its surface
        # (a joint sticking at its stop), no crossing
        # a slip crossing zero from under way (v_t . s0 > REST_ARM: a slip at rest, its
        # speed rounding, has no sign), or reversed beyond -small
        hit = np.where(watch, (v < 0.0) & ((prev_v > 0.0) | (v < -tol))
                       & ((prev_v > thr) | (v <= -thr)),
                       np.where(slipping, (v < 0.0) & ((prev_v > rest) | (v < -small)),
                                v < 0.0))
        if hit.any():
            for i in np.flatnonzero(hit):
                a = prev_t
                if not prev_v[i] > thr and watch[i]:
                    # just after an impact the gap starts at ~0: look for the flight phase
                    for k in range(1, 60):
                        tk = prev_t + (s - prev_t) * 2.0 ** -k
                        if tk <= prev_t:
                            break
                        if values(dense(tk), tk)[i] > 0:
                            a = tk
                            break
                armed = prev_v[i] > (rest if slipping[i] else 0.0)
                shift = 0.0 if a > prev_t or armed else (
                    tol if watch[i] and prev_v[i] + tol > 0 else
                    small if slipping[i] and prev_v[i] + small > 0 else None)
                if shift is None:
                    te = prev_t
                else:
                    def f(tt, i=i, shift=shift):
                        return values(dense(tt), tt)[i] + shift
                    te = brentq(f, a, s, xtol=settings.event_tol, rtol=4 * np.finfo(
                        float).eps)
                kind = "impact" if watch[i] else ("release" if active[i] else "criterion")
                if 2 * nc <= i:
                    kind = "jslip" if fric.jstick[i - 2 * nc] else "jstick"
                elif i >= nc:
                    kind = "slip" if fric.stick[i - nc] else "stick"
                found.append((te, kind, int(i)))
            break
        prev_t, prev_v = s, v
    if t0 < t_pass_end <= t1:
        found.append((t_pass_end, "pass_end", st.passing()))
    if not found:
        return None
    te, kind, i = min(found)
    ye = dense(te) if te < t1 else dense(t1)
    if kind in ("jslip", "jstick"):       # a frictional joint: ("joint", its name)
        i = ("joint", _fr.joint_friction(model)[0][i - 2 * nc])
    elif kind != "pass_end":
        i = i % nc
    return te, kind, i, np.asarray(ye, dtype=float)


def _friction_event(model, st, kind, i, te, y, settings, impact, uvec):
    """stick -> slip: the contact slips along s0 = lam_t / |lam_t| of its sticking force at
    te (the friction force opposes the slip), and with it every sticking contact reaching its
    cone at the same instant (friction.tied_exits: redundant contacts leave together, not one
    by one in the order rounding picks). slip -> stick (v_t . s0 = 0): it sticks when
    |v_t| <= 1e-3 contact_velocity, and so does every other slipping contact whose slip
    stopped with it (the phase start then lets those whose sticking force is outside the
    cone slip again, reversed); a spatial slip whose direction turned away from s0 (|v_t|
    larger) records s0 = v_t / |v_t| and slips on."""
    n = y.shape[0] // 2
    rec = st.data[st.names[i]]
    active = st.active()
    if kind == "slip":
        fric = _fr.phase_of(model, st, active)
        dyn = impact.accelerations(model, y[:n], y[n:], te, uvec, active,
                                   fric=fric)
        for k in _fr.tied_exits(fric, dyn.lam_c, dyn.lam_t, i):
            lt = dyn.lam_t[k]
            nl = float(np.sqrt(lt @ lt))
            rc = st.data[st.names[k]]
            rc["stick"] = False
            if nl > 0.0:
                rc["sdir"] = [float(v) for v in lt / nl]
        return y
    vts = impact.slip_velocities(model, y[:n], y[n:])
    nv = float(np.sqrt(vts[i] @ vts[i]))
    if nv > 1e-3 * settings.contact_velocity:
        rec["sdir"] = [float(v) for v in vts[i] / nv]
        return y
    # every slipping contact that stopped with it sticks too (the phase start lets those
    # outside their cone slip again)
    mu = _fr.mu_of(model)
    for k, nm in enumerate(st.names):
        r = st.data[nm]
        if k == i or (r["active"] and mu[k] > 0.0 and not r["stick"]
                      and float(np.sqrt(vts[k] @ vts[k])) <= 1e-3 * settings.contact_velocity):
            r["stick"] = True
    return y


def _joint_event(model, st, kind, name, te, y, settings, impact, uvec):
    """stick -> slip of a frictional joint (|lam_j| reached its bound): it slips along s0 =
    sign(lam_j). slip -> stick (qd_j s0 = 0): it sticks when |qd_j| <= 1e-3 contact_velocity
    (the phase start lets it slip again, reversed, when the sticking torque exceeds the
    bound), else it slips on along sign(qd_j)."""
    n = y.shape[0] // 2
    names, pos, _ = _fr.joint_friction(model)
    k = names.index(name)
    rec = st.joints[name]
    if kind == "jslip":
        active = st.active()
        fric = _fr.phase_of(model, st, active)
        dyn = impact.accelerations(model, y[:n], y[n:], te, uvec, active, fric=fric)
        rec["stick"] = False
        rec["sdir"] = 1.0 if dyn.lam_j[k] > 0.0 else -1.0
        return y
    v = float(impact.joint_coordinates(model, y[:n], y[n:])[1][pos[k]])
    if abs(v) <= 1e-3 * settings.contact_velocity:
        rec["stick"] = True
    else:
        rec["sdir"] = 1.0 if v > 0.0 else -1.0
    return y


def _handle_event(model, st, kind, i, te, y, settings, impact, uvec=None):
    if kind in ("jslip", "jstick"):
        return _joint_event(model, st, kind, i[1], te, y, settings, impact, uvec)
    y = _handle_contact_event(model, st, kind, i, te, y, settings, impact, uvec)
    if kind == "impact" and st.joints:    # the joints' rates jumped: stick or slip anew
        n = y.shape[0] // 2
        _set_joints(model, st, impact.joint_coordinates(model, y[:n], y[n:])[1],
                    settings.contact_velocity)
    return y


def _handle_contact_event(model, st, kind, i, te, y, settings, impact, uvec=None):
    n = y.shape[0] // 2
    x, xd = y[:n], y[n:].copy()
    name = st.names[i]
    rec = st.data[name]
    if kind == "release":
        _release(model, st, i, x, impact)
        rec["stick"] = False
        return y
    if kind in ("slip", "stick"):
        return _friction_event(model, st, kind, i, te, y, settings, impact, uvec)
    if kind == "impact":
        gap = impact.gaps(model, x)
        reduction = model.compiled.contacts.reduction
        closed = (gap <= settings.contact_tol) & ~reduction
        closed[i] = True
        res = impact.impact(model, x, xd, te, closed)
        xd = res.xd
        for k in np.flatnonzero(closed):
            r = st.data[st.names[k]]
            if res.impacted[k]:
                r["impacts"] += 1
                r["last_time"] = float(te)
                r["last_impulse"] = float(res.p[k])
            r["energy_loss"] += float(max(res.energy_loss[k], 0.0))
            r["active"] = bool(res.v_plus[k] < settings.contact_velocity)
            if res.vt_plus is not None:     # friction: stick when the slip is below
                vt = res.vt_plus[k]         # contact_velocity, else slip along it
                nv = float(np.sqrt(vt @ vt))
                r["stick"] = bool(r["active"] and model.contacts[k].friction > 0.0
                                  and nv < settings.contact_velocity)
                if nv > 0.0 and not r["stick"]:
                    r["sdir"] = [float(v) for v in vt / nv]
        return np.concatenate([x, xd])
    k = impact.singular_position(model, i)
    _, Dc, _ = impact.contact_rows(model, x, xd)
    if kind == "criterion":                       # seed 002 sec. 4: start a pass
        q, qd, _, _ = impact.joint_coordinates(model, x, xd)
        q_s, v_s = float(q[k]), float(qd[k])
        if v_s == 0.0 or q_s * v_s > 0.0:         # not approaching the singular point
            rec["d"] *= model.contacts[i].sharpening
            return y
        dt = abs(q_s / v_s)
        T0 = impact.kinetic(model, x, xd)
        v_gap = float(Dc[i] @ xd)
        xd = impact.set_joint_rate(model, x, xd, te, k, 2.0 * v_s)
        rec["pass"] = [float(te), float(te + dt), q_s, 2.0 * v_s, v_s, v_gap, float(T0)]
        return np.concatenate([x, xd])
    # pass_end (seed 002 sec. 4 and 5): the singular rate back to v*, then k on the impact line
    t_s, t_e, q_s, v_m, v_s, v_gap, T0 = rec["pass"]
    xd = impact.set_joint_rate(model, x, xd, te, k, v_s)
    xd = impact.restitute(model, x, xd, te, i, model.contacts[i].restitution)
    _, Dc, _ = impact.contact_rows(model, x, xd)
    rec["pass"] = None
    rec["passes"] += 1
    rec["impacts"] += 1
    rec["last_time"] = float(t_s + (t_e - t_s) / 2.0)
    rec["last_impulse"] = float(impact.effective_mass(model, x, i) * abs(Dc[i] @ xd - v_gap))
    rec["energy_loss"] += float(max(T0 - impact.kinetic(model, x, xd), 0.0))
    rec["d"] *= model.contacts[i].sharpening
    if abs(Dc[i] @ xd) < settings.contact_velocity:   # persistent: lock the singular joint
        rec["active"] = True
        rec["lock"] = float(impact.joint_coordinates(model, x, xd)[0][k])
    return np.concatenate([x, xd])
