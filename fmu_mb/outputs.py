"""Output variables: names, units and values; the same strings are simulate() columns and FMU
output names ("structured" FMI naming).

Per body B: B.x, B.y [m], B.phi [rad], B.vx, B.vy [m/s], B.omega [rad/s].
Per revolute joint J: J.angle [rad], J.rate [rad/s], J.fx, J.fy [N]; per prismatic joint:
J.position [m], J.rate [m/s], J.fx, J.fy [N], J.torque [N.m]; per weld: J.fx, J.fy, J.torque;
per distance joint: J.tension [N]. Reaction = force and torque of the parent on the child at
the child's joint point, global frame.
Per drive R: R.effort [N.m or N], the generalised force the drive applies along its joint
coordinate. Per TSDA E: E.force [N] (tension positive), E.length [m]; per RSDA: E.torque
[N.m], E.angle [rad]; per force element: E.force [N]; per torque element: E.torque [N.m].
Per point P: P.x, P.y [m], P.vx, P.vy [m/s].
Per contact C: C.gap [m or rad], C.impacts (integer: impacts so far), C.last_time [s] and
C.last_impulse [N.s or N.m.s] (time and impulse magnitude of the last impact), C.active
(boolean: in persistent contact), C.energy_loss [J] (kinetic energy lost in its impacts),
C.force [N or N.m] (force of the persistent contact, pushing positive; 0 when not active).
Impacts inside a communication step show at its end.
energy.kinetic, energy.potential, energy.total [J]; constraint.residual (max |Phi|) and
constraint.velocity_residual (max |D xd + Phi_t|).
"""
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from . import constraints
from . import kinematics as kin
from .elements import element_outputs, kinetic_energy, potential_energy
from .formulations import get_formulation


class OutputVar(NamedTuple):
    """One output: name, unit, description and kind ("real", "integer" or "boolean"; the
    value array holds every kind as float)."""

    name: str
    unit: str
    description: str
    kind: str = "real"


@lru_cache(maxsize=128)
def output_spec(model):
    """Tuple of OutputVar of every output, in value order."""
    out = []
    for b in model.bodies:
        out += [(f"{b.name}.x", "m", f"x of the centre of mass of {b.name}"),
                (f"{b.name}.y", "m", f"y of the centre of mass of {b.name}"),
                (f"{b.name}.phi", "rad", f"angle of {b.name} from the x axis"),
                (f"{b.name}.vx", "m/s", f"x velocity of the centre of mass of {b.name}"),
                (f"{b.name}.vy", "m/s", f"y velocity of the centre of mass of {b.name}"),
                (f"{b.name}.omega", "rad/s", f"angular velocity of {b.name}")]
    for j in model.joints:
        if j.kind == "revolute":
            out += [(f"{j.name}.angle", "rad", f"angle of joint {j.name}"),
                    (f"{j.name}.rate", "rad/s", f"angular rate of joint {j.name}")]
        elif j.kind == "prismatic":
            out += [(f"{j.name}.position", "m", f"position of joint {j.name}"),
                    (f"{j.name}.rate", "m/s", f"sliding rate of joint {j.name}")]
        if j.kind == "distance":
            out.append((f"{j.name}.tension", "N", f"tension of link {j.name}"))
        else:
            out += [(f"{j.name}.fx", "N", f"x reaction force of {j.parent} on {j.child}"),
                    (f"{j.name}.fy", "N", f"y reaction force of {j.parent} on {j.child}")]
        if j.kind in ("weld", "prismatic"):
            out.append((f"{j.name}.torque", "N.m", f"reaction torque of {j.parent} on "
                                                   f"{j.child}"))
    for d in model.drives:
        unit = "N.m" if model.joint(d.joint).kind == "revolute" else "N"
        out.append((f"{d.name}.effort", unit, f"driving effort of {d.name} on joint {d.joint}"))
    for e in model.elements:
        if e.kind == "tsda":
            out += [(f"{e.name}.force", "N", f"force of {e.name}, tension positive"),
                    (f"{e.name}.length", "m", f"length of {e.name}")]
        elif e.kind == "rsda":
            out += [(f"{e.name}.torque", "N.m", f"torque of {e.name}"),
                    (f"{e.name}.angle", "rad", f"relative angle of {e.name}")]
        elif e.kind == "force":
            out.append((f"{e.name}.force", "N", f"force {e.name}"))
        else:
            out.append((f"{e.name}.torque", "N.m", f"torque {e.name}"))
    for p in model.markers:
        out += [(f"{p.name}.x", "m", f"x of point {p.name}"),
                (f"{p.name}.y", "m", f"y of point {p.name}"),
                (f"{p.name}.vx", "m/s", f"x velocity of point {p.name}"),
                (f"{p.name}.vy", "m/s", f"y velocity of point {p.name}")]
    for c, unit in zip(model.contacts, model.compiled.contacts.units if model.contacts else ()):
        rot = unit == "rad"
        out += [(f"{c.name}.gap", unit, f"gap of contact {c.name}"),
                (f"{c.name}.impacts", "1", f"number of impacts of contact {c.name}", "integer"),
                (f"{c.name}.last_time", "s", f"time of the last impact of contact {c.name}"),
                (f"{c.name}.last_impulse", "N.m.s" if rot else "N.s",
                 f"impulse magnitude of the last impact of contact {c.name}"),
                (f"{c.name}.active", "1", f"contact {c.name} is in persistent contact",
                 "boolean"),
                (f"{c.name}.energy_loss", "J", f"kinetic energy lost in impacts of {c.name}"),
                (f"{c.name}.force", "N.m" if rot else "N",
                 f"force of the persistent contact {c.name}, pushing positive")]
    out += [("energy.kinetic", "J", "kinetic energy"),
            ("energy.potential", "J", "potential energy (gravity and springs)"),
            ("energy.total", "J", "kinetic plus potential energy"),
            ("constraint.residual", "1", "largest constraint residual |Phi| [m or rad]"),
            ("constraint.velocity_residual", "1",
             "largest velocity constraint residual |D xd + Phi_t| [m/s or rad/s]")]
    return tuple(OutputVar(*o) for o in out)


def output_names(model):
    return tuple(v.name for v in output_spec(model))


def output_values(model, state, u, formulation="newton_euler"):
    """Values of every output at `state` with inputs u (array), in output_spec order."""
    form = get_formulation(formulation)
    x, xd = form.absolute(model, state.q, state.qd)
    status = None
    if model.contacts:      # one solve in absolute coordinates whatever the formulation
        from . import impact

        status = impact.status_of(model, state)
        dyn = impact.accelerations(model, x, xd, state.t, u, status.active(),
                                   impact.pass_tuple(model, status),
                                   locks=status.locks(model))
        lam = dyn.lam
    else:
        dyn = form.accelerations(model, state.q, state.qd, state.t, u)
        lam = form.lam(model, dyn)
    phi, D, _, phi_t = constraints.evaluate(model, x, xd, state.t, need_conv=False)
    vals = []
    for b in model.bodies:
        i = 3 * b.index
        vals += [x[i], x[i + 1], x[i + 2], xd[i], xd[i + 1], xd[i + 2]]
    if model.joints:
        q, qd, _, _ = constraints.joint_coordinates(model, x, xd)
        reac = constraints.reactions(model, x, D, lam)
        pos = {k: p for p, k in enumerate(model.compiled.coord_joints)}
        for k, j in enumerate(model.joints):
            if k in pos:
                vals += [q[pos[k]], qd[pos[k]]]
            if j.kind == "distance":
                vals.append(lam[model.compiled.joint_rows[k][0]])
            else:
                vals += [reac[k, 0], reac[k, 1]]
            if j.kind in ("weld", "prismatic"):
                vals.append(reac[k, 2])
    for row, *_ in model.compiled.drives:
        vals.append(-lam[row])
    if model.elements:
        eo = element_outputs(model, x, xd, u)
        for e, (s, el) in zip(model.elements, eo):
            vals += [s, el] if e.kind in ("tsda", "rsda") else [s]
    if model.markers:
        xe, xde = constraints.extended(model, x), constraints.extended(model, xd)
        C = model.compiled
        r, v = kin.points(xe, xde, C.markers.p, C.markers.sp)
        vals += np.concatenate([r, v], axis=1).reshape(-1).tolist()
    if model.contacts:
        from . import impact

        status = status or impact.status_of(model, state)
        gap = impact.gaps(model, x)
        lam_c = getattr(dyn, "lam_c", np.zeros(len(model.contacts)))
        for i, c in enumerate(model.contacts):
            r = status.data[c.name]
            vals += [gap[i], float(r["impacts"]), r["last_time"], r["last_impulse"],
                     float(r["active"]), r["energy_loss"], -lam_c[i]]
    T, V = kinetic_energy(model, xd), potential_energy(model, x)
    vals += [T, V, T + V, np.abs(phi).max(initial=0.0),
             np.abs(D @ xd + phi_t).max(initial=0.0)]
    return np.array(vals, dtype=float)
