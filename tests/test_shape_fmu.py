"""Models with collision shapes through native FMUs (FMI 2.0 and 3.0) in fmpy: every Real
output at every communication point equals the Python reference (the Python event loop of
fmu_mb.dynamics.integrate, formulation recursive) to 1e-9: the tumbling box as a Box shape, a
planar scene (Rectangle, Circles, Line), and a frictionless leaning wheel whose rim contact
point moves on the wheel (kind rim_plane). The tumbling box is the default build (every
platform a toolchain builds, fmpy validating the FMU) for each FMI version; the other models
are built for this machine only, once per test run (conftest.session_fmus): fmpy runs this
machine's binary, and the other platforms' binaries are the same sources linked with the same
cached engine objects."""
import numpy as np
import pytest

fmpy = pytest.importorskip("fmpy")

from fmu_mb import load_model  # noqa: E402
from fmu_mb.dynamics.formulations import recursive  # noqa: E402
from fmu_mb.dynamics.integrate import Settings, advance, initial_state  # noqa: E402
from fmu_mb.dynamics.outputs import output_names, output_values  # noqa: E402
from fmu_mb.fmi.native_build import build_native_fmu  # noqa: E402
from fmu_mb.fmi.native_fmi3 import build_native_fmu3  # noqa: E402

from conftest import MODELS, once  # noqa: E402

CASES = {"tumbling_box_shape": ("tumbling_box", {"shape": "box"}, 1.5, 0.01),
         "planar_shapes": ("planar_shapes", {}, 1.0, 0.01),
         "wheel_frictionless": ("wheel", {"mu": 0.0, "lean0": 0.2}, 0.5, 0.01)}

PLANAR_SHAPES = '''"""A planar brick and two balls dropped on the floor (shapes, docs/shapes.md): a
Rectangle and two Circles on the ground's Line, the balls hitting each other."""
from fmu_mb import Circle, Line, ModelBuilder, Rectangle

DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("planar_shapes", overrides)
    e = mb.param("e", 0.5, "1", "coefficient of restitution", min=0.0, max=1.0)
    brick = mb.body("brick", mass=1.0, inertia=0.01, position=(0.0, 0.5), angle=0.3,
                    angular_velocity=2.0)
    one = mb.body("one", mass=0.5, inertia=0.002, position=(0.6, 0.3), velocity=(-0.5, 1.0))
    two = mb.body("two", mass=0.5, inertia=0.002, position=(0.2, 0.4), velocity=(0.5, 0.0))
    mb.shape(mb.ground, Line(), name="floor")
    mb.shape(brick, Rectangle((0.3, 0.1)), name="hull", restitution=e)
    mb.shape(one, Circle(0.08), name="c1", restitution=e)
    mb.shape(two, Circle(0.08), name="c2", restitution=e)
    mb.collide(brick, one, False)
    mb.collide(brick, two, False)
    return mb.build()
'''


@pytest.fixture(autouse=True)
def _planar_model_file(tmp_path_factory, monkeypatch):
    """models/ has no planar model with shapes: write one, and find it there."""
    import conftest
    d = tmp_path_factory.getbasetemp() / "shape_models"
    d.mkdir(exist_ok=True)
    (d / "planar_shapes.py").write_text(PLANAR_SHAPES)
    for name in ("tumbling_box", "wheel"):
        if not (d / f"{name}.py").exists():
            (d / f"{name}.py").write_text((conftest.MODELS / f"{name}.py").read_text())
    monkeypatch.setitem(globals(), "MODELS", d)


def python_reference(model, names, stop, h, monkeypatch):
    """The outputs `names` at t = k h by the Python event loop, the FMU's default solver."""
    monkeypatch.setattr(recursive, "NATIVE_EVENTS", False)
    S = Settings(formulation="recursive")
    s = initial_state(model, S)
    every = output_names(model)
    idx = [every.index(n) for n in names]
    u = model.input_vector(None)
    rows = [np.asarray(output_values(model, s, u, "recursive"))[idx]]
    for k in range(1, int(round(stop / h)) + 1):
        s = advance(model, s, k * h, u, S)
        rows.append(np.asarray(output_values(model, s, u, "recursive"))[idx])
    return np.array(rows)


def split_free(got, ref, names):
    """The per-contact impulse records (last_impulse, energy_loss) replaced by their sums
    over all contacts: when a box lies on a face its four corners' rows are redundant, and
    how the C loop and the Python loop split an impulse among them differs (the same total,
    the same motion; a rule shared by both, minimum-norm impulses, is not
    implemented). Every other output is compared as it is."""
    keep = [i for i, n in enumerate(names) if not n.endswith((".last_impulse", ".energy_loss"))]
    out_g, out_r = [got[:, keep]], [ref[:, keep]]
    for field in (".last_impulse", ".energy_loss"):
        cols = [i for i, n in enumerate(names) if n.endswith(field)]
        out_g.append(got[:, cols].sum(axis=1, keepdims=True))
        out_r.append(ref[:, cols].sum(axis=1, keepdims=True))
    return (np.hstack(out_g), np.hstack(out_r),
            [names[i] for i in keep] + ["sum of last_impulse", "sum of energy_loss"])


#: the case built for every default platform (per FMI version): the models' acceptance build
DEFAULT_BUILD = "tumbling_box_shape"


# both versions of a case on one pytest-xdist worker: the Python reference computed once
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xdist_group(f"shape_fmu_{c}"))
                                  for c in sorted(CASES)])
@pytest.mark.parametrize("version", [2, 3])
def test_native_fmu_equals_the_python_reference(case, version, tmp_path, monkeypatch,
                                               session_fmus):
    from fmpy.validation import validate_fmu
    name, overrides, stop, h = CASES[case]
    if case == DEFAULT_BUILD:
        build = build_native_fmu if version == 2 else build_native_fmu3
        path = build(MODELS / f"{name}.py", tmp_path, overrides)
    else:
        path = session_fmus(MODELS / f"{name}.py", fmi=version, kind="native", **overrides)
    assert validate_fmu(str(path)) == []
    md = fmpy.read_model_description(str(path))
    names = [v.name for v in md.modelVariables
             if v.causality == "output" and v.type in ("Real", "Float64")
             and v.name not in ("wheel.alpha", "wheel.gamma")]   # singular (test_rim.CARDAN)
    r = fmpy.simulate_fmu(str(path), stop_time=stop, output_interval=h, output=names)
    assert r["time"][-1] == pytest.approx(stop)
    got = np.array([r[n] for n in names]).T
    ref = once(("shape_fmu", case, tuple(names)), lambda: python_reference(
        load_model(MODELS / f"{name}.py", **overrides), names, stop, h, monkeypatch))
    assert got.shape == ref.shape
    got, ref, names = split_free(got, ref, names)
    err = np.abs(got - ref) / np.maximum(1.0, np.abs(ref))
    k, i = np.unravel_index(np.argmax(err), err.shape)
    assert err.max() <= 1e-9, f"{names[i]} at t = {k * h}: {got[k, i]!r} vs {ref[k, i]!r}"


def test_box_shape_parameters_set_by_the_master(tmp_path, monkeypatch):
    """The box's edges, restitution and drop height set before initialisation act in the
    native FMU as in the model built with them (the parameter program follows the shape's
    size to its vertices; none of them is fixed)."""
    path = build_native_fmu(MODELS / "tumbling_box.py", tmp_path, {"shape": "box"},
                            platforms="linux64")
    md = fmpy.read_model_description(str(path))
    fixed = [v.name for v in md.modelVariables if v.name in ("a", "b", "c", "e", "h0")
             and "fixed in the native FMU" in (v.description or "")]
    assert not fixed
    values = {"a": 0.35, "b": 0.3, "c": 0.12, "e": 0.8, "h0": 0.45}
    names = ["box.x", "box.z", "box.e1", "box.wz", "floor_hull_0.gap", "floor_hull_7.gap"]
    r = fmpy.simulate_fmu(str(path), stop_time=0.5, output_interval=0.01, output=names,
                          start_values=values)
    got = np.array([r[n] for n in names]).T
    ref = python_reference(load_model(MODELS / "tumbling_box.py", shape="box", **values),
                           names, 0.5, 0.01, monkeypatch)
    assert np.abs(got - ref).max() <= 1e-9
    default = fmpy.simulate_fmu(str(path), stop_time=0.5, output_interval=0.01, output=names)
    assert np.abs(got - np.array([default[n] for n in names]).T).max() > 1e-3   # they acted


@pytest.mark.xdist_group("shape_fmu_wheel")    # one worker: the Python loop computed once
@pytest.mark.parametrize("version", [2, 3])
def test_wheel_with_friction_and_inputs_native_equals_the_python_loop(version, session_fmus):
    """The rolling, driven and steered wheel (a rim contact with Coulomb friction) through a
    native FMU (this machine's binary), its inputs held, equals the Python event loop (newton_euler) at every
    communication point to 1e-9."""
    from fmpy.validation import validate_fmu
    from fmu_mb import simulate
    path = session_fmus(MODELS / "wheel.py", fmi=version, kind="native")
    assert validate_fmu(str(path)) == []
    inputs = {"drive.h": 0.5, "steer.h": 0.2}
    r = fmpy.simulate_fmu(str(path), stop_time=1.0, output_interval=0.01, start_values=inputs)
    ref = once("shape_fmu wheel", lambda: simulate(
        load_model(MODELS / "wheel.py"), 1.0, 0.01, inputs=inputs,
        settings=Settings(formulation="newton_euler")))
    names = [n for n in ref.dtype.names if n != "time"]
    assert set(names) <= set(r.dtype.names)
    assert r["time"][-1] == pytest.approx(1.0)
    for n in names:
        if n in ("wheel.alpha", "wheel.gamma"):      # singular at beta = +-pi/2 (test_rim)
            continue
        assert np.abs(r[n] - ref[n]).max() <= 1e-9 * max(1.0, np.abs(ref[n]).max()), n
    assert r["floor_tyre_0.state"][-1] == 1 and abs(r["wheel.y"][-1]) > 0.01
