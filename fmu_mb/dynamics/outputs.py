"""Output variables: names, units and values; the same strings are simulate() columns and FMU
output names ("structured" FMI naming).

Per body B: B.x, B.y [m], B.phi [rad], B.vx, B.vy [m/s], B.omega [rad/s].
Per revolute joint J: J.angle [rad], J.rate [rad/s], J.fx, J.fy [N]; per prismatic joint:
J.position [m], J.rate [m/s], J.fx, J.fy [N], J.torque [N.m]; per weld: J.fx, J.fy, J.torque;
per distance joint: J.tension [N]. Reaction = force and torque of the parent on the child at
the child's joint point, global frame.
Per drive R: R.effort [N.m or N], the generalised force the drive applies along its joint
coordinate. Per TSDA E: E.force [N] (tension positive), E.length [m]; per hydraulic cylinder
E: E.force [N] (pushing positive), E.length, E.stroke [m], E.stroke_rate [m/s], E.fx, E.fy
[N] (its force on body b at the pin; the opposite acts on body a), E.end_stops
(integer: impacts at its two end stops so far); per RSDA: E.torque
[N.m], E.angle [rad]; per force element: E.force [N]; per torque element: E.torque [N.m].
Per point P: P.x, P.y [m], P.vx, P.vy [m/s].
Per contact C: C.gap [m or rad], C.impacts (integer: impacts so far), C.last_time [s] and
C.last_impulse [N.s or N.m.s] (time and impulse magnitude of the last impact), C.active
(boolean: in persistent contact), C.energy_loss [J] (kinetic energy lost in its impacts),
C.force [N or N.m] (force of the persistent contact, pushing positive; 0 when not active).
A model with Coulomb friction (docs/contacts-friction.md) adds per contact C.state (0 open,
1 stick, 2 slip), C.slip [m/s] (planar; spatial C.slip1, C.slip2: the slip velocity along the
tangent basis), C.slide_loss [J] (energy dissipated by sliding friction) and C.ft [N]
(spatial C.ft1, C.ft2: the friction force on `body` along the tangent basis). A joint J with
Coulomb friction adds J.friction [N.m or N] (the friction torque or force on its coordinate),
J.friction_state (1 stick, 2 slip, 0 held by a persistent joint limit) and J.friction_loss [J]
(energy dissipated).
Impacts inside a communication step show at its end.
energy.kinetic, energy.potential, energy.total [J]; constraint.residual (max |Phi|) and
constraint.velocity_residual (max |D xd + Phi_t|).

Spatial models (README "Spatial models"): per body B.x, B.y, B.z [m], B.e0 ... B.e3 (Euler
parameters), B.alpha, B.beta, B.gamma [rad] (Cardan angles, A = Rx Ry Rz), B.vx, B.vy, B.vz
[m/s], B.wx, B.wy, B.wz [rad/s] (angular velocity, global axes); per joint J.fx, J.fy, J.fz
[N] and J.tx, J.ty, J.tz [N.m] (parent on child at the child's joint point, global axes;
distance joints J.tension), cylinders E.force, .length, .stroke, .stroke_rate, .fx, .fy,
.fz, .end_stops, cylindrical J.angle, J.rate, J.position, J.velocity, universal
J.angle1, J.rate1, J.angle2, J.rate2; per bushing
E.fx ... E.tz (frame a's axes); per point P.x, P.y,
P.z, P.vx, P.vy, P.vz; per contact (frictionless) the planar contact outputs above.
"""
import weakref
from typing import NamedTuple

import numpy as np

from ..errors import FmuMbError
from ..mechanics import constraints
from ..mechanics import kinematics as kin
from ..mechanics.elements import (cylinder_outputs, element_outputs, kinetic_energy,
                                  potential_energy)
from ..memo import per_object
from .formulations import get_formulation, resolve


class OutputVar(NamedTuple):
    """One output: name, unit, description and kind ("real", "integer" or "boolean"; the
    value array holds every kind as float)."""

    name: str
    unit: str
    description: str
    kind: str = "real"


@per_object
def output_spec(model):
    """Tuple of OutputVar of every output, in value order."""
    return tuple(OutputVar(*o) for o, _ in _spec(model))


@per_object
def output_groups(model):
    """Per group (see Outputs), the indices of its outputs in output_spec order."""
    groups = {}
    for i, (_, g) in enumerate(_spec(model)):
        groups.setdefault(g, []).append(i)
    return {g: np.array(ix, dtype=np.intp) for g, ix in groups.items()}


@per_object
def _spec(model):
    """((name, unit, description[, kind]), group) of every output, in value order. Groups:
    motion (bodies), markers, coords (joint coordinates and rates), dynamics (reactions,
    drive efforts, contact forces), elements, contacts (gaps and impact records), energy
    (energies and constraint residuals)."""
    out = []

    def add(group, *entries):
        out.extend((e, group) for e in entries)

    if model.spatial:
        _spatial_spec(model, add)
        return tuple(out)
    for b in model.bodies:
        add("motion", (f"{b.name}.x", "m", f"x of the centre of mass of {b.name}"),
            (f"{b.name}.y", "m", f"y of the centre of mass of {b.name}"),
            (f"{b.name}.phi", "rad", f"angle of {b.name} from the x axis"),
            (f"{b.name}.vx", "m/s", f"x velocity of the centre of mass of {b.name}"),
            (f"{b.name}.vy", "m/s", f"y velocity of the centre of mass of {b.name}"),
            (f"{b.name}.omega", "rad/s", f"angular velocity of {b.name}"))
    for j in model.joints:
        if j.kind in ("revolute", "prismatic"):
            add("coords", *_joint_coord_spec(j))
        if j.kind == "distance":
            add("dynamics", (f"{j.name}.tension", "N", f"tension of link {j.name}"))
        else:
            add("dynamics", (f"{j.name}.fx", "N", f"x reaction force of {j.parent} on {j.child}"),
                (f"{j.name}.fy", "N", f"y reaction force of {j.parent} on {j.child}"))
        if j.kind in ("weld", "prismatic"):
            add("dynamics", (f"{j.name}.torque", "N.m", f"reaction torque of {j.parent} on "
                                                         f"{j.child}"))
    _drive_and_element_spec(model, add)
    for p in model.markers:
        add("markers", (f"{p.name}.x", "m", f"x of point {p.name}"),
            (f"{p.name}.y", "m", f"y of point {p.name}"),
            (f"{p.name}.vx", "m/s", f"x velocity of point {p.name}"),
            (f"{p.name}.vy", "m/s", f"y velocity of point {p.name}"))
    _contact_spec(model, add)
    _joint_friction_spec(model, add)
    _energy_spec(add)
    return tuple(out)


def _contact_spec(model, add):
    """The outputs of the contacts (planar and spatial; module docstring)."""
    from .friction import has_friction

    fr = has_friction(model)
    tk = ("1", "2") if model.spatial else ("",)
    for c, unit in zip(model.contacts, model.compiled.contacts.units if model.contacts else ()):
        rot = unit == "rad"
        add("contacts", (f"{c.name}.gap", unit, f"gap of contact {c.name}"),
            (f"{c.name}.impacts", "1", f"number of impacts of contact {c.name}", "integer"),
            (f"{c.name}.last_time", "s", f"time of the last impact of contact {c.name}"),
            (f"{c.name}.last_impulse", "N.m.s" if rot else "N.s",
             f"impulse magnitude of the last impact of contact {c.name}"),
            (f"{c.name}.active", "1", f"contact {c.name} is in persistent contact",
             "boolean"),
            (f"{c.name}.energy_loss", "J", f"kinetic energy lost in impacts of {c.name}"))
        if fr:
            add("contacts", (f"{c.name}.state", "1", f"state of contact {c.name}: 0 open, "
                                                      f"1 stick, 2 slip", "integer"),
                *[(f"{c.name}.slip{k}", "m/s", f"slip velocity of contact {c.name} along "
                                                f"tangent {k or 1}") for k in tk],
                (f"{c.name}.slide_loss", "J", f"energy dissipated by sliding friction at "
                                               f"{c.name}"))
        add("dynamics", (f"{c.name}.force", "N.m" if rot else "N",
                         f"force of the persistent contact {c.name}, pushing positive"),
            *[(f"{c.name}.ft{k}", "N", f"friction force of contact {c.name} along tangent "
                                        f"{k or 1}") for k in (tk if fr else ())])


def _joint_friction_spec(model, add):
    """The outputs of the joints with Coulomb friction (module docstring)."""
    for j in model.joints:
        if getattr(j, "friction", 0.0) > 0.0:
            unit, what = ("N.m", "torque") if j.kind == "revolute" else ("N", "force")
            add("dynamics", (f"{j.name}.friction", unit, f"Coulomb friction {what} on the "
                                                         f"coordinate of joint {j.name}"),
                (f"{j.name}.friction_state", "1", f"friction state of joint {j.name}: "
                                                  f"1 stick, 2 slip, 0 held by a joint "
                                                  f"limit", "integer"),
                (f"{j.name}.friction_loss", "J", f"energy dissipated by the Coulomb "
                                                 f"friction of joint {j.name}"))


def _spatial_spec(model, add):
    """The outputs of a spatial model (module docstring), in value order."""
    for b in model.bodies:
        n = b.name
        add("motion", *[(f"{n}.{c}", "m", f"{c} of the centre of mass of {n}") for c in "xyz"],
            *[(f"{n}.e{i}", "1", f"Euler parameter e{i} of {n}") for i in range(4)],
            *[(f"{n}.{c}", "rad", f"Cardan angle {c} of {n} (A = Rx(alpha) Ry(beta) Rz(gamma))")
              for c in ("alpha", "beta", "gamma")],
            *[(f"{n}.v{c}", "m/s", f"{c} velocity of the centre of mass of {n}") for c in "xyz"],
            *[(f"{n}.w{c}", "rad/s", f"angular velocity of {n} about the global {c} axis")
              for c in "xyz"])
    for j in model.joints:
        if j.kind in ("revolute", "prismatic"):
            add("coords", *_joint_coord_spec(j))
        elif j.kind == "cylindrical":
            add("coords", (f"{j.name}.angle", "rad", f"angle of joint {j.name}"),
                (f"{j.name}.rate", "rad/s", f"angular rate of joint {j.name}"),
                (f"{j.name}.position", "m", f"position of joint {j.name}"),
                (f"{j.name}.velocity", "m/s", f"sliding rate of joint {j.name}"))
        elif j.kind == "universal":
            add("coords", (f"{j.name}.angle1", "rad", f"angle about the first axis of {j.name}"),
                (f"{j.name}.rate1", "rad/s", f"rate about the first axis of {j.name}"),
                (f"{j.name}.angle2", "rad", f"angle about the second axis of {j.name}"),
                (f"{j.name}.rate2", "rad/s", f"rate about the second axis of {j.name}"))
        if j.kind == "distance":
            add("dynamics", (f"{j.name}.tension", "N", f"tension of link {j.name}"))
        else:
            add("dynamics", *[(f"{j.name}.f{c}", "N", f"{c} reaction force of {j.parent} on "
                                                      f"{j.child}") for c in "xyz"],
                *[(f"{j.name}.t{c}", "N.m", f"{c} reaction torque of {j.parent} on {j.child}")
                  for c in "xyz"])
    _drive_and_element_spec(model, add)
    for p in model.markers:
        add("markers", *[(f"{p.name}.{c}", "m", f"{c} of point {p.name}") for c in "xyz"],
            *[(f"{p.name}.v{c}", "m/s", f"{c} velocity of point {p.name}") for c in "xyz"])
    _contact_spec(model, add)
    _joint_friction_spec(model, add)
    _energy_spec(add)


def _joint_coord_spec(j):
    """The coordinate and rate outputs of a revolute or prismatic joint (planar or spatial)."""
    if j.kind == "revolute":
        return ((f"{j.name}.angle", "rad", f"angle of joint {j.name}"),
                (f"{j.name}.rate", "rad/s", f"angular rate of joint {j.name}"))
    return ((f"{j.name}.position", "m", f"position of joint {j.name}"),
            (f"{j.name}.rate", "m/s", f"sliding rate of joint {j.name}"))


def _drive_and_element_spec(model, add):
    """Drive efforts and force-element outputs, planar and spatial (cylinders are planar,
    bushings spatial)."""
    for d in model.drives:
        unit = "N.m" if model.joint(d.joint).kind == "revolute" else "N"
        add("dynamics", (f"{d.name}.effort", unit,
                         f"driving effort of {d.name} on joint {d.joint}"))
    for e in model.elements:
        if e.kind == "tsda":
            add("elements", (f"{e.name}.force", "N", f"force of {e.name}, tension positive"),
                (f"{e.name}.length", "m", f"length of {e.name}"))
        elif e.kind == "rsda":
            add("elements", (f"{e.name}.torque", "N.m", f"torque of {e.name}"),
                (f"{e.name}.angle", "rad", f"relative angle of {e.name}"))
        elif e.kind == "cylinder":
            add("elements", (f"{e.name}.force", "N", f"force of cylinder {e.name}, pushing "
                                                     f"positive"),
                (f"{e.name}.length", "m", f"pin-to-pin length of cylinder {e.name}"),
                (f"{e.name}.stroke", "m", f"stroke of cylinder {e.name} (length - min)"),
                (f"{e.name}.stroke_rate", "m/s", f"stroke rate of cylinder {e.name}"),
                (f"{e.name}.fx", "N", f"x force of cylinder {e.name} on {e.b} at its pin"),
                (f"{e.name}.fy", "N", f"y force of cylinder {e.name} on {e.b} at its pin"),
                *([(f"{e.name}.fz", "N", f"z force of cylinder {e.name} on {e.b} at its "
                                          f"pin")] if model.spatial else []),
                (f"{e.name}.end_stops", "1", f"end-stop impacts of cylinder {e.name} so far",
                 "integer"))
        elif e.kind == "bushing":
            add("elements", *[(f"{e.name}.f{c}", "N", f"force s_{c} of bushing {e.name}, "
                                                      f"frame a axes") for c in "xyz"],
                *[(f"{e.name}.t{c}", "N.m", f"torque s_{c} of bushing {e.name}, frame a axes")
                  for c in "xyz"])
        elif e.kind == "force":
            add("elements", (f"{e.name}.force", "N", f"force {e.name}"))
        else:
            add("elements", (f"{e.name}.torque", "N.m", f"torque {e.name}"))


def _energy_spec(add):
    add("energy", ("energy.kinetic", "J", "kinetic energy"),
        ("energy.potential", "J", "potential energy (gravity and springs)"),
        ("energy.total", "J", "kinetic plus potential energy"),
        ("constraint.residual", "1", "largest constraint residual |Phi| [m or rad]"),
        ("constraint.velocity_residual", "1",
         "largest velocity constraint residual |D xd + Phi_t| [m/s or rad/s]"))


def declared_outputs(model):
    """((index in output_spec, OutputVar), ...) of the outputs an FMU of `model` declares:
    every output but those in model.undeclared_outputs (an imported robot's joint reactions
    not asked for), in output_spec order."""
    hidden = getattr(model, "undeclared_outputs", frozenset())
    return tuple((i, v) for i, v in enumerate(output_spec(model)) if v.name not in hidden)


def output_names(model):
    """Tuple of the names of every output, in value order (output_spec's names, without
    making its OutputVars)."""
    return tuple(o[0] for o, _ in _spec(model))


def output_values(model, state, u, formulation="auto"):
    """Values of every output at `state` with inputs u (array), in output_spec order."""
    return Outputs(model, state, u, formulation).values()


_ENGINES = weakref.WeakKeyDictionary()      # model -> its Engine (None: the engine cannot)
_GROUP_OF = {}                              # Outputs group -> the engine's groups


def _engine_groups():
    from ..engine.engine import GROUP_OF

    _GROUP_OF.update(GROUP_OF)
    return _GROUP_OF


def _engine_for(model):
    """The engine library's instance for `model` (made once), or None when it cannot run
    it (contacts, a drive of a Python function, no C compiler)."""
    try:
        return _ENGINES[model]
    except KeyError:
        pass
    eng = None
    try:
        from ..engine.data import supported

        if supported(model) is None:
            from ..engine.engine import Engine

            eng = Engine(model)
    except Exception:           # noqa: BLE001 (any failure: the Python outputs serve)
        eng = None
    _ENGINES[model] = eng
    return eng


class Outputs:
    """The outputs of one state, computed by group on first use (an FMU's getReal of a joint
    angle does not solve for reactions). `value(i)` is output i of output_spec; `values()`
    all of them. Joint coordinates and rates of tree joints are read from a joint-coordinate
    state directly (they are its q and qd); everything else goes through the absolute
    coordinates x = T(q). In the recursive formulation, for a model the compiled engine runs,
    the engine library computes the groups (fmu_mb.engine.engine, the same C code as the
    native FMU: equal to the Python groups to ~1e-13, tests/test_engine.py, in microseconds
    instead of hundreds of them); a state it refuses falls back to the Python groups.
    compiled=False: the Python groups always (the reference of tests/test_engine.py)."""

    def __init__(self, model, state, u, formulation="auto", compiled=True):
        self.model, self.state, self.u = model, state, u
        name = resolve(formulation, model, state.coords)
        self.form = get_formulation(name)
        self._groups = output_groups(model)
        self._vals = None
        self._done = set()
        self._cache = {}
        self._direct = _direct_coordinates(model) if state.coords == "joint" else None
        self._eng = (_engine_for(model) if compiled and name == "recursive"
                     and state.coords == "joint" else None)

    def value(self, i):
        if self._direct is not None:           # a tree joint's coordinate or rate: q, qd
            hit = self._direct.get(i)
            if hit is not None:
                return float((self.state.qd if hit[0] else self.state.q)[hit[1]])
        g = _owners(self.model)[i]
        if g not in self._done:
            self._compute(g)
        return self._vals[i]

    def values(self):
        if self._eng is not None and len(self._done) < len(self._groups):
            self._from_engine(set(self._groups))
        for g in self._groups:
            if g not in self._done:
                self._compute(g)
        if self._vals is None:                      # a model without outputs
            return np.zeros(0)
        return self._vals.copy()

    def _compute(self, g):
        if self._vals is None:
            self._vals = np.full(len(output_spec(self.model)), np.nan)
        if self._eng is not None and self._from_engine({g}):
            return
        self._vals[self._groups[g]] = getattr(self, "_" + g)()
        self._done.add(g)

    def _from_engine(self, wanted):
        """The groups `wanted` (and those that come with them) from the engine library, into
        self._vals; False when it refuses the state (the Python groups serve from then on)."""
        group_of = _GROUP_OF or _engine_groups()
        bits = 0
        for g in wanted:
            bits |= group_of[g]
        if self._vals is None:
            self._vals = np.full(len(output_spec(self.model)), np.nan)
        try:
            self._eng.outputs_at(self.state, self.u, bits, out=self._vals)
        except FmuMbError:
            self._eng = None
            return False
        for g in self._groups:
            if group_of[g] & ~bits == 0:
                self._done.add(g)
        return True

    # ------------------------------------------------------------ shared intermediates
    def _get(self, key):
        if key not in self._cache:
            self._cache[key] = getattr(self, "_make_" + key)()
        return self._cache[key]

    def _make_absolute(self):
        return self.form.absolute(self.model, self.state.q, self.state.qd)

    def _make_constraints(self):
        x, xd = self._get("absolute")
        return constraints.evaluate(self.model, x, xd, self.state.t, need_conv=False)

    def _make_status(self):
        from . import impact

        return impact.status_of(self.model, self.state)

    def _make_dynamics(self):
        model, state, u = self.model, self.state, self.u
        from .friction import any_friction, has_joint_friction, phase_of

        if model.contacts or has_joint_friction(model):   # one solve in absolute coordinates
            from . import impact

            x, xd = self._get("absolute")
            status = self._get("status")
            fric = phase_of(model, status, status.active()) if any_friction(model) else None
            dyn = impact.accelerations(model, x, xd, state.t, u, status.active(),
                                       impact.pass_tuple(model, status),
                                       locks=status.locks(model),
                                       **({} if fric is None else {"fric": fric}))
            return dyn, dyn.lam
        dyn = self.form.accelerations(model, state.q, state.qd, state.t, u)
        return dyn, self.form.lam(model, dyn)

    # ------------------------------------------------------------ groups
    def _motion(self):
        x, xd = self._get("absolute")
        nb = len(self.model.bodies)
        if self.model.spatial:
            from ..mechanics.spatial import elements as spatial_elements
            return spatial_elements.body_outputs(self.model, x, xd).reshape(-1)
        out = np.empty((nb, 6))
        out[:, :3] = x.reshape(nb, 3)
        out[:, 3:] = xd.reshape(nb, 3)
        return out.reshape(-1)

    def _markers(self):
        model = self.model
        fast = getattr(self.form, "markers", None)
        if fast is not None and self.state.coords == "joint":
            out = fast(model, self.state.q, self.state.qd)
            if out is not None:
                return out.reshape(-1)
        x, xd = self._get("absolute")
        if model.spatial:
            from ..mechanics.spatial import elements as spatial_elements
            return spatial_elements.marker_outputs(model, x, xd).reshape(-1)
        xe, xde = constraints.extended(model, x), constraints.extended(model, xd)
        C = model.compiled
        r, v = kin.points(xe, xde, C.markers.p, C.markers.sp)
        return np.concatenate([r, v], axis=1).reshape(-1)

    def _coords(self):
        model, state = self.model, self.state
        plan = _coordinate_plan(model) if state.coords == "joint" else None
        if plan is not None:         # tree joints: q, qd; cut revolute joints: phi_c - phi_p
            tree_pos, tree_src, cut_pos, ic, ip, angle0 = plan
            q, qd = np.empty(len(model.compiled.coord_joints)), \
                np.empty(len(model.compiled.coord_joints))
            q[tree_pos], qd[tree_pos] = state.q[tree_src], state.qd[tree_src]
            if len(cut_pos):
                x, xd = self._get("absolute")
                xe, xde = constraints.extended(model, x), constraints.extended(model, xd)
                q[cut_pos] = xe[ic] - xe[ip] - angle0
                qd[cut_pos] = xde[ic] - xde[ip]
            return np.stack([q, qd], axis=1).reshape(-1)
        x, xd = self._get("absolute")
        q, qd, _, _ = constraints.joint_coordinates(model, x, xd)
        return np.stack([q, qd], axis=1).reshape(-1)

    def _dynamics(self):
        model = self.model
        x, _ = self._get("absolute")
        _, D, _, _ = self._get("constraints")
        dyn, lam = self._get("dynamics")
        vals = []
        if model.joints:
            reac = constraints.reactions(model, x, D, lam)
            for k, j in enumerate(model.joints):
                if j.kind == "distance":
                    vals.append(lam[model.compiled.joint_rows[k][0]])
                elif model.spatial:
                    vals += list(reac[k])
                else:
                    vals += [reac[k, 0], reac[k, 1]]
                    if j.kind in ("weld", "prismatic"):
                        vals.append(reac[k, 2])
        for row, *_ in model.compiled.drives:
            vals.append(-lam[row])
        if model.contacts:
            lam_c = getattr(dyn, "lam_c", np.zeros(len(model.contacts)))
            from .friction import has_friction

            if has_friction(model):
                ft = self._friction_forces(dyn)
                for i, v in enumerate(lam_c):
                    vals += [-v, *ft[i]]
            else:
                vals += [-v for v in lam_c]
        from ..mechanics.friction import joint_friction
        from .friction import has_joint_friction

        if has_joint_friction(model):   # friction torque -lam_j sticking, -F_c s0 slipping
            from .friction import phase_of

            status = self._get("status")
            ph = phase_of(model, status, status.active())
            for k, nm in enumerate(joint_friction(model)[0]):
                f, code = ((-dyn.lam_j[k], 1.0) if ph.jstick[k] else
                           (-ph.jbound[k] * ph.js0[k], 2.0) if ph.jslip[k] else (0.0, 0.0))
                vals += [f, code, status.joints[nm]["loss"]]
        return np.array(vals, dtype=float)

    def _friction_forces(self, dyn):
        """(nc, kt) friction forces on `body` along the tangent basis: -lam_t sticking,
        -mu f_n s slipping (friction module), 0 otherwise."""
        from . import friction as fr
        from .impact import slip_velocities

        model = self.model
        status = self._get("status")
        ph = fr.phase_of(model, status, status.active())
        kt = 2 if model.spatial else 1
        out = np.zeros((len(model.contacts), kt))
        if ph is None:
            return out
        x, xd = self._get("absolute")
        vt = slip_velocities(model, x, xd)
        for i in np.flatnonzero(ph.stick):
            out[i] = -dyn.lam_t[i]
        for i in np.flatnonzero(ph.slip):
            out[i] = ph.mu[i] * dyn.lam_c[i] * fr.slip_direction(vt[i], ph.s0[i])
        return out

    def _elements(self):
        vals = []
        fast = getattr(self.form, "element_values", None)
        cylinders = any(e.kind == "cylinder" for e in self.model.elements)
        if (fast is not None and self.model.spatial and self.state.coords == "joint"
                and not cylinders):
            for el in fast(self.model, self.state.q, self.state.qd, self.u):
                vals += list(el)
            return np.array(vals, dtype=float)
        x, xd = self._get("absolute")
        if self.model.spatial:
            for e, el in zip(self.model.elements, element_outputs(self.model, x, xd, self.u)):
                vals += list(el)
                if e.kind == "cylinder":    # end-stop impacts so far
                    data = self._get("status").data
                    vals.append(float(sum(data[f"{e.name}_{end}"]["impacts"]
                                          for end in ("lower", "upper"))))
            return np.array(vals, dtype=float)
        cyl = iter(cylinder_outputs(self.model, x, xd, self.u))
        for e, (s, el) in zip(self.model.elements,
                              element_outputs(self.model, x, xd, self.u)):
            if e.kind == "cylinder":
                data = self._get("status").data
                hits = sum(data[f"{e.name}_{end}"]["impacts"] for end in ("lower", "upper"))
                vals += [*next(cyl), float(hits)]
            else:
                vals += [s, el] if e.kind in ("tsda", "rsda") else [s]
        return np.array(vals, dtype=float)

    def _contacts(self):
        from . import impact

        x, _ = self._get("absolute")
        status = self._get("status")
        gap = impact.gaps(self.model, x)
        vals = []
        from .friction import has_friction

        fr = has_friction(self.model)
        if fr:
            vt = impact.slip_velocities(self.model, x, self._get("absolute")[1])
        for i, c in enumerate(self.model.contacts):
            r = status.data[c.name]
            vals += [gap[i], float(r["impacts"]), r["last_time"], r["last_impulse"],
                     float(r["active"]), r["energy_loss"]]
            if fr:
                state = 0.0 if not r["active"] else (1.0 if r["stick"] and c.friction > 0.0
                                                      else 2.0)
                vals += [state, *vt[i], r["slide_loss"]]
        return np.array(vals, dtype=float)

    def _energy(self):
        x, xd = self._get("absolute")
        phi, D, _, phi_t = self._get("constraints")
        T, V = kinetic_energy(self.model, xd, x), potential_energy(self.model, x)
        return np.array([T, V, T + V, np.abs(phi).max(initial=0.0),
                         np.abs(D @ xd + phi_t).max(initial=0.0)])


@per_object
def _owners(model):
    owner = [None] * len(output_spec(model))
    for g, ix in output_groups(model).items():
        for i in ix:
            owner[i] = g
    return tuple(owner)


@per_object
def _coordinate_plan(model):
    """How `Outputs._coords` reads the joint coordinates of a planar joint-coordinate state:
    (tree_pos, tree_src, cut_pos, ic, ip, angle0): the tree joints at positions tree_pos
    (model.compiled.coord_joints order) are q[tree_src]; the cut revolute joints at cut_pos
    are theta = phi_c - phi_p - angle0 with phi_c = x_ext[ic], phi_p = x_ext[ip] (the ground
    appended to x, as constraints.joint_coordinates computes them; rates alike). None for a
    spatial model or a loop closed by a cut prismatic joint (all computed from x then)."""
    if model.spatial:
        return None
    from ..mechanics.tree import tree_map

    C = model.compiled
    pos = {k: i for i, k in enumerate(tree_map(model).joints)}
    ang = {int(p): i for i, p in enumerate(C.coord_ang_pos)}
    tree_pos = [i for i, k in enumerate(C.coord_joints) if k in pos]
    cut_pos = [i for i, k in enumerate(C.coord_joints) if k not in pos]
    if any(i not in ang for i in cut_pos):
        return None
    rows = [ang[i] for i in cut_pos]
    ix = lambda a: np.array(a, dtype=np.intp)  # noqa: E731
    return (ix(tree_pos), ix([pos[C.coord_joints[i]] for i in tree_pos]), ix(cut_pos),
            ix([3 * int(C.coord_ang.c[r]) + 2 for r in rows]),
            ix([3 * int(C.coord_ang.p[r]) + 2 for r in rows]),
            np.array([C.coord_ang_offset[r] for r in rows], dtype=float))


@per_object
def _direct_coordinates(model):
    """{output index: (0 for the coordinate or 1 for the rate, position in q)} of the tree
    joints' coordinates a joint-coordinate state holds directly (the same numbers as
    _coords; a cut joint's coordinate is not among them)."""
    plan = _coordinate_plan(model)
    if plan is None:
        return {}
    ix = output_groups(model).get("coords", ())
    src = dict(zip(plan[0].tolist(), plan[1].tolist()))
    return {int(i): (k % 2, src[k // 2]) for k, i in enumerate(ix) if k // 2 in src}
