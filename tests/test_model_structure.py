"""The ModelStructure's dependencies from the model's structure (fmu_mb.model_structure,
fmu_mb.dynamics.structure) against finite differences of the minimal equations and outputs
(model_structure_numeric: the nonzeros of [A B; C D] at the initial state and two nearby
operating points): the structural sets contain every numeric nonzero on every model of
models/ and on models with separate components, a floating subtree and inputs; the spot check
catches a dependency the structure misses; the cost does not grow with the outputs."""
from pathlib import Path

import numpy as np
import pytest

import fmu_mb
from fmu_mb import ModelBuilder, rod_inertia
from fmu_mb.dynamics import structure
from fmu_mb.dynamics.linearize import model_structure, model_structure_numeric

ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted(p.stem for p in (ROOT / "models").glob("*.py"))


def _compare(model, **kw):
    """(structural, numeric, number of structural and numeric dependencies); asserts equal
    states and unknowns and that every numeric dependency is declared."""
    s = model_structure(model, **kw)
    n = model_structure_numeric(model)
    assert s["states"] == n["states"] and s["independent"] == n["independent"]
    assert s["inputs"] == n["inputs"] and s["derivatives"] == n["derivatives"]
    ns = nn = 0
    for key in ("derivative_dependencies", "output_dependencies"):
        assert list(s[key]) == list(n[key])
        for unknown, deps in n[key].items():
            missing = set(deps) - set(s[key][unknown])
            assert not missing, f"{model.name}: {unknown} depends on {sorted(missing)}"
            assert len(set(s[key][unknown])) == len(s[key][unknown])
            ns, nn = ns + len(s[key][unknown]), nn + len(deps)
    return s, n, ns, nn


@pytest.mark.parametrize("name", MODELS)
def test_structure_contains_the_numeric_dependencies(name):
    model = fmu_mb.load_model(ROOT / "models" / f"{name}.py")
    s, _, ns, nn = _compare(model)
    assert s["check"]["widened"] == []           # the spot check found nothing missing
    assert ns >= nn


def _components_model():
    """Two pendulums on the ground (a double one with actuators, a single one with an
    actuator), and a floating subtree of two bodies (a free body with a hinged rod) pulled
    to the ground by a spring: three components."""
    mb = ModelBuilder("components", {})
    mb.gravity = (0.0, -9.81)
    a = mb.body("a", mass=1.0, inertia=rod_inertia(1.0, 0.5))
    b = mb.body("b", mass=0.5, inertia=rod_inertia(0.5, 0.4))
    c = mb.body("c", mass=2.0, inertia=rod_inertia(2.0, 0.6))
    f1 = mb.body("f1", mass=1.5, inertia=0.02, position=(2.0, 1.0))
    f2 = mb.body("f2", mass=0.3, inertia=rod_inertia(0.3, 0.4), position=(2.2, 1.0))
    mb.revolute("A", mb.ground, a, parent_point=(0.0, 0.0), child_point=(-0.25, 0.0))
    mb.revolute("B", a, b, parent_point=(0.25, 0.0), child_point=(-0.2, 0.0))
    mb.revolute("C", mb.ground, c, parent_point=(1.0, 0.0), child_point=(-0.3, 0.0))
    mb.revolute("F", f1, f2, parent_point=(0.0, 0.0), child_point=(-0.2, 0.0))
    mb.rsda("act_A", joint="A")
    mb.rsda("act_C", joint="C", stiffness=3.0, damping=0.2)
    mb.tsda("spring", mb.ground, f1, a_point=(2.0, 2.0), b_point=(0.0, 0.0),
            stiffness=50.0, free_length=0.8, damping=0.5)
    mb.point("tip", b, (0.2, 0.0))
    mb.initial("A", value=0.3, rate=0.5)
    mb.initial("B", value=0.2, rate=-0.4)
    mb.initial("C", value=-0.5, rate=0.1)
    return mb.build()


def test_separate_components_do_not_depend_on_each_other():
    """Exact where the structure says so: a component's accelerations, reactions and poses
    depend on its own states and inputs only; a floating subtree's on its own coordinates."""
    s, n, ns, nn = _compare(_components_model())
    dd, od = s["derivative_dependencies"], s["output_dependencies"]
    states = s["states"]
    own = {"A": {k for k in states if k.startswith(("A.", "B."))} | {"act_A.h"},
           "C": {k for k in states if k.startswith("C.")} | {"act_C.h"},
           "F": {k for k in states if k.startswith(("f1.", "F.", "der(f1."))} | {"spring.h"}}
    assert len(own["F"]) == 9        # f1.x, f1.y, f1.phi, F.angle, their rates, the input
    assert set(dd["der(A.rate)"]) == set(dd["der(B.rate)"]) == own["A"]
    assert set(dd["der(C.rate)"]) == own["C"]
    assert set(dd["der(F.rate)"]) == own["F"]
    assert set(od["C.fx"]) == own["C"] and set(od["B.fy"]) == own["A"]
    # a floating subtree's bodies are placed by all its coordinates (which body roots it is
    # the tree's choice): a superset for the spring on f1
    assert {"f1.x", "f1.y"} <= set(od["spring.length"]) <= \
        {"f1.x", "f1.y", "f1.phi", "F.angle"}
    assert set(od["spring.force"]) <= own["F"]
    assert od["tip.x"] == ["A.angle", "B.angle"] and od["c.phi"] == ["C.angle"]
    assert set(od["tip.vx"]) == {"A.angle", "B.angle", "A.rate", "B.rate"}
    # the numeric pattern agrees exactly on these (the structure is not "everything")
    for k in ("der(C.rate)", "der(A.angle)"):
        assert set(n["derivative_dependencies"][k]) == set(dd[k])
    assert ns <= 1.5 * nn


def test_spot_check_catches_a_missing_dependency(monkeypatch):
    """A structure that forgets the accelerations' dependencies is widened back by the spot
    check (with a warning), so the declaration still contains the numeric one."""
    real = structure.dependencies

    def forgetful(*args, **kw):
        acc, outs, everything = real(*args, **kw)
        return [set() for _ in acc], outs, everything

    monkeypatch.setattr(structure, "dependencies", forgetful)
    model = fmu_mb.load_model(ROOT / "models" / "double_pendulum.py")
    with pytest.warns(RuntimeWarning, match="spot check found dependencies"):
        s = model_structure(model, checks=100)
    assert {"der(A.rate)", "der(B.rate)"} <= set(s["check"]["widened"])
    n = model_structure_numeric(model)
    for k, deps in n["derivative_dependencies"].items():
        assert set(deps) <= set(s["derivative_dependencies"][k])


def test_cost_independent_of_the_number_of_outputs(monkeypatch):
    """No per-output or per-state differences: a chain of 16 links is evaluated at most
    checks + 1 times (the spot check: one evaluation per direction), like a chain of 4."""
    from fmu_mb.dynamics import linearize

    counts = []
    real = linearize._spot_check

    def counting(fun, *a, **kw):
        def counted(z):
            counts[-1] += 1
            return fun(z)
        return real(counted, *a, **kw)

    monkeypatch.setattr(linearize, "_spot_check", counting)
    for N in (4, 16):
        counts.append(0)
        model = fmu_mb.load_model(ROOT / "models" / "spatial_chain.py", N=N)
        s = model_structure(model, checks=5)
        assert len(s["states"]) == 2 * N
        assert s["check"]["directions"] == 5
        assert counts[-1] == 5 + 1


@pytest.mark.parametrize("name,overrides", [("spatial_chain.py", {"N": 5}),
                                            ("double_pendulum.py", {}),
                                            ("container_crane.py", {}),
                                            ("pendulum_chain.py", {})])
def test_tree_equations_equal_the_minimal_equations(name, overrides):
    """The spot check's equations of a model without dependent coordinates (the recursive
    formulation: kernel accelerations, engine outputs) against the tmt minimal equations
    (_equations) at the operating point and at a random nearby one: the same numbers up to
    round-off, so the check tests the same dependencies."""
    from fmu_mb.dynamics import linearize

    model = fmu_mb.load_model(ROOT / "models" / name, **overrides)
    st = linearize._tmt_state(model, None)
    ind, dep = linearize._partition(model, st.q, st.t)
    assert len(dep) == 0
    sys_ = linearize._Minimal(model, st.q, st.qd, st.t, ind, dep)
    sel, _ = linearize._output_selection(model, None)
    fast = linearize._tree_equations(model, sys_, st.t, sel)
    assert fast is not None
    ref = linearize._equations(model, sys_, st.t, sel)
    u0 = model.input_vector(None)
    z0 = np.concatenate([st.q[ind], st.qd[ind], u0])
    rng = np.random.default_rng(5)
    for z in (z0, z0 + rng.uniform(-0.1, 0.1, z0.shape)):
        a, b = fast(z), ref(z)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * (1.0 + np.abs(b).max()))


def test_singular_pose_raises_like_linearize():
    """The spot check evaluates the equations at the operating point: a model linearize
    cannot treat there raises the same error (native_build then declares no states)."""
    model = fmu_mb.load_model(ROOT / "models" / "double_pendulum.py")
    with pytest.raises(fmu_mb.InputError):
        model_structure(model, state={"A.angle": np.nan})
