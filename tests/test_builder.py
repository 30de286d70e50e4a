"""The model API: topology, assembly, and every error message."""
import numpy as np
import pytest

from fmu_mb import (AssemblyError, ModelBuilder, ModelError, Settings, constant_rate, initial_state,
                    load_model)
from fmu_mb.mechanics import constraints

from conftest import MODELS, model


def pendulum(**kw):
    mb = ModelBuilder("p", kw.pop("overrides", None))
    b = mb.body("b", mass=1.0, inertia=0.1)
    mb.revolute("J", mb.ground, b, child_point=(-0.5, 0.0))
    return mb, b


def test_topology_of_the_models():
    t = model("double_pendulum").topology
    assert (t.n_bodies, t.n_joints, t.n_loops, t.gruebler_dof, t.dof, t.redundant) == \
        (2, 2, 0, 2, 2, 0)
    t = model("slider_crank").topology
    assert (t.n_loops, t.gruebler_dof, t.dof, len(t.cut_joints)) == (1, 1, 1, 1)
    t = model("n_four_bar", N=3).topology
    assert (t.n_bodies, t.n_loops, t.gruebler_dof, t.dof) == (7, 3, 1, 1)
    assert t.loops[0][0] == "crank1" and "ground" in t.loops[0]


def test_redundant_constraints_are_reported_and_solved():
    """A parallelogram with an extra parallel crank joined to the coupler at a third point:
    the Gruebler count says 0 DOF, the Jacobian's rank says 1 DOF and 1 redundant row."""
    mb = ModelBuilder("redundant", gravity=(0.0, -9.81))
    cranks = [mb.body(f"c{i}", mass=1.0, inertia=0.1, position=(i, 0.5), angle=np.pi / 2)
              for i in range(3)]
    coupler = mb.body("coupler", mass=1.0, inertia=0.1, position=(1.0, 1.0))
    for i, c in enumerate(cranks):
        mb.revolute(f"O{i}", mb.ground, c, parent_point=(float(i), 0.0), child_point=(-0.5, 0))
        mb.revolute(f"T{i}", c, coupler, parent_point=(0.5, 0.0), child_point=(i - 1.0, 0.0))
    mb.initial("O0", value=np.pi / 2, rate=-1.0)
    m = mb.build()
    t = m.topology
    assert t.gruebler_dof == 0 and t.dof == 1 and t.redundant == 1
    from fmu_mb import simulate
    r = simulate(m, 0.5, 0.1)
    assert np.isfinite(r["energy.total"]).all()
    assert np.ptp(r["energy.total"]) < 1e-8
    assert r["constraint.residual"].max() < 1e-10


def test_assembly_closes_loops_and_meets_initial_conditions():
    m = model("slider_crank", theta0=0.7, omega0=3.0)
    s = initial_state(m, Settings(formulation="newton_euler"))    # absolute coordinates
    phi, D, _, phi_t = constraints.evaluate(m, s.q, s.qd, 0.0)
    assert np.abs(phi).max() < 1e-12
    assert np.abs(D @ s.qd + phi_t).max() < 1e-12
    q, qd, _, _ = constraints.joint_coordinates(m, s.q, s.qd)
    k = [j.name for j in m.joints].index("O")
    pos = m.compiled.coord_joints.index(k)
    assert q[pos] == pytest.approx(0.7, abs=1e-12) and qd[pos] == pytest.approx(3.0, abs=1e-12)


def test_assembly_error_names_the_loop():
    with pytest.raises(AssemblyError, match=r"joint 'B' residual [0-9.e-]+ \(loop through bodies"):
        model("four_bar", coupler_length=0.05)


def test_assembly_error_for_inconsistent_initial_values():
    with pytest.raises(AssemblyError, match="given joint coordinates cannot all be met"):
        mb = ModelBuilder("x", gravity=(0, 0))
        a = mb.body("a", mass=1.0, inertia=0.1)
        b = mb.body("b", mass=1.0, inertia=0.1)
        mb.revolute("J1", mb.ground, a, child_point=(-0.5, 0))
        mb.revolute("J2", mb.ground, b, parent_point=(1.0, 0), child_point=(-0.5, 0))
        mb.revolute("J3", a, b, parent_point=(0.5, 0), child_point=(0.5, 0))
        mb.initial("J1", value=0.0)
        mb.initial("J2", value=1.0)
        mb.build()


def test_assembly_error_for_inconsistent_rates():
    mb, b = pendulum()
    mb.drive("d", "J", constant_rate(2.0))
    mb.initial("J", rate=1.0)
    with pytest.raises(AssemblyError, match=r"initial rates of joints \['J'\] are inconsistent"):
        mb.build()


def _build(fn):
    def run():
        mb, b = pendulum()
        fn(mb, b)
        mb.build()
    return run


ERRORS = [
    (lambda: ModelBuilder("bad name"), r"model name: expected an identifier .* received 'bad name'"),
    (lambda: ModelBuilder("m", gravity=(1.0,)), r"gravity must be a pair"),
    (lambda: ModelBuilder("m", {"nope": 1.0}).build(),
     r"unknown parameter\(s\) \['nope'\]; parameters are \[\]"),
    (lambda: ModelBuilder("m").build(), r"no bodies"),
    (_build(lambda mb, b: mb.body("c", mass=-1.0, inertia=0.1)),
     r"body 'c': mass must be >= 0, received -1.0"),
    (_build(lambda mb, b: mb.body("c", mass=0.0, inertia=0.1)),
     r"body 'c': a body with zero mass must have zero inertia"),
    (_build(lambda mb, b: mb.body("c", mass=1.0, inertia="x")),
     r"body 'c': inertia must be a number, received 'x'"),
    (_build(lambda mb, b: mb.body("c", mass=float("nan"), inertia=1.0)),
     r"body 'c': mass must be finite, received nan"),
    (_build(lambda mb, b: mb.body("b", mass=1.0, inertia=0.1)),
     r"body 'b': the name is already used by a body"),
    (_build(lambda mb, b: mb.body("x.y", mass=1.0, inertia=0.1)),
     r"body name: expected an identifier"),
    (_build(lambda mb, b: mb.body("energy", mass=1.0, inertia=0.1)),
     r"body name 'energy' is reserved"),
    (_build(lambda mb, b: mb.revolute("K", mb.ground, "rod3")),
     r"revolute 'K': unknown child body 'rod3'; bodies are \['ground', 'b'\]"),
    (_build(lambda mb, b: mb.revolute("K", b, b)),
     r"revolute 'K': parent and child are the same body 'b'"),
    (_build(lambda mb, b: mb.prismatic("K", mb.ground, b, axis=(0, 0))),
     r"prismatic 'K': axis must be a nonzero vector"),
    (_build(lambda mb, b: mb.distance("K", mb.ground, b, length=0.0)),
     r"distance 'K': length must be > 0, received 0.0"),
    (_build(lambda mb, b: mb.revolute("K", mb.ground, b, parent_point=(1, 2, 3))),
     r"revolute 'K': parent_point must be a pair"),
    (_build(lambda mb, b: mb.drive("d", "nope", constant_rate(1.0))),
     r"drive 'd': unknown joint 'nope'; joints are \['J'\]"),
    (_build(lambda mb, b: (mb.weld("W", mb.ground, mb.body("c", mass=1, inertia=1)),
                           mb.drive("d", "W", constant_rate(1.0)))),
     r"drive 'd': joint 'W' is a weld joint without a coordinate"),
    (_build(lambda mb, b: mb.drive("d", "J", lambda t: t)),
     r"drive 'd': motion must be a fmu_mb.Motion"),
    (_build(lambda mb, b: mb.tsda("s", mb.ground, b, stiffness=-1.0)),
     r"tsda 's': stiffness must be >= 0, received -1.0"),
    (_build(lambda mb, b: mb.tsda("s", b, b)), r"tsda 's': a and b are the same body 'b'"),
    (_build(lambda mb, b: mb.tsda("s", mb.ground, b, input="1bad")),
     r"tsda 's': input name must be a dotted identifier"),
    (_build(lambda mb, b: (mb.tsda("s", mb.ground, b, input="u"),
                           mb.tsda("s2", mb.ground, b, input="u"))),
     r"tsda 's2': input 'u' is already declared"),
    (_build(lambda mb, b: mb.rsda("r", b)), r"rsda 'r': give the bodies a and b, or joint="),
    (_build(lambda mb, b: mb.rsda("r", joint="Q")), r"rsda 'r': unknown joint 'Q'"),
    (_build(lambda mb, b: mb.rsda("r", b, b)), r"rsda 'r': a and b are the same body 'b'"),
    (_build(lambda mb, b: mb.force("f", b, frame="local")),
     r"force 'f': frame must be 'global' or 'body', received 'local'"),
    (_build(lambda mb, b: mb.force("f", b, direction=(0, 0))),
     r"force 'f': direction must be a nonzero vector"),
    (_build(lambda mb, b: mb.force("f", mb.ground)),
     r"force 'f': unknown body body 'ground'; bodies are \['b'\]"),
    (_build(lambda mb, b: mb.torque("t", b, reaction=b)),
     r"torque 't': body and reaction are the same body 'b'"),
    (_build(lambda mb, b: mb.point("p", "zz")), r"point 'p': unknown body body 'zz'"),
    (_build(lambda mb, b: mb.initial("Q", 1.0)),
     r"initial condition of joint 'Q': unknown joint 'Q'; joints are \['J'\]"),
    (_build(lambda mb, b: (mb.initial("J", 1.0), mb.initial("J", 2.0))),
     r"initial condition of joint 'J': given twice"),
    (_build(lambda mb, b: mb.initial("J", 1.0, guess=2.0)),
     r"give value or guess, not both"),
    (_build(lambda mb, b: (mb.weld("W", mb.ground, mb.body("c", mass=1, inertia=1)),
                           mb.initial("W", 0.0))),
     r"a weld joint has no coordinate"),
    (_build(lambda mb, b: mb.param("L", 1.0, "m", min=2.0)),
     r"parameter 'L': expected a value >= 2.0, received 1.0"),
    (_build(lambda mb, b: mb.param("L", 1.0, "m", max=0.5)),
     r"parameter 'L': expected a value <= 0.5, received 1.0"),
    (_build(lambda mb, b: mb.param("N", 2, "1")), None),
    (_build(lambda mb, b: mb.param("mode", "a", choices=["b"])),
     r"parameter 'mode': default 'a' is not one of \['b'\]"),
    (_build(lambda mb, b: mb.param("flag", True)),
     r"parameter 'flag': default must be a number or a string, received bool"),
]


@pytest.mark.parametrize("call,match", ERRORS)
def test_error_messages(call, match):
    if match is None:
        call()
        return
    with pytest.raises(ModelError, match=match):
        call()


@pytest.mark.parametrize("overrides,match", [
    ({"l1": "long"}, r"parameter 'l1': value must be a number, received 'long'"),
    ({"l1": -1.0}, r"parameter 'l1': expected a value >= 1e-09, received -1.0"),
    ({"L1": 1.0}, r"unknown parameter\(s\) \['L1'\]; parameters are \['m1', 'm2', 'l1'"),
])
def test_parameter_override_errors(overrides, match):
    with pytest.raises(ModelError, match=match):
        model("double_pendulum", **overrides)


def test_integer_and_choice_parameters():
    mb = ModelBuilder("p", {"N": 3.0, "mode": "fast"})
    assert mb.param("N", 2) == 3
    assert mb.param("mode", "slow", choices=["slow", "fast"]) == "fast"
    mb2 = ModelBuilder("p", {"N": 2.5, "mode": "medium"})
    with pytest.raises(ModelError, match=r"parameter 'N': expected an integer, received 2.5"):
        mb2.param("N", 2)
    with pytest.raises(ModelError, match=r"parameter 'mode': expected one of \['slow', 'fast'\]"):
        mb2.param("mode", "slow", choices=["slow", "fast"])


def test_model_file_errors(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        load_model(tmp_path / "missing.py")
    f = tmp_path / "nobuild.py"
    f.write_text("x = 1\n")
    with pytest.raises(ModelError, match=r"defines no build\(\*\*overrides\) function"):
        load_model(f)


def test_model_is_immutable():
    m = model("double_pendulum")
    with pytest.raises(Exception):
        m.name = "other"
    with pytest.raises(ValueError):
        m.x0[0] = 1.0


def test_unknown_lookup_lists_valid_names():
    m = model("double_pendulum")
    with pytest.raises(ModelError, match=r"unknown body 'rod3'; bodys are \['rod1', 'rod2'\]"):
        m.body("rod3")
