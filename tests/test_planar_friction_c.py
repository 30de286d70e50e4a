"""Planar Coulomb friction in the compiled event loop (native/kernel.c's sticking rows and
sliding forces, native/events.c): the native FMUs of models/planar_incline.py in fmpy against
the closed forms of a block on an incline (sticking for mu > tan(alpha), sliding with
g (sin alpha - mu cos alpha) otherwise) and of a disc rolling down it (2/3 g sin alpha); the
compiled loop against the Python loop of formulation newton_euler (absolute coordinates, the
other formulation of the same law) to 1e-9 at every communication point, with impacts,
stick-to-slip and slip-to-stick events; the Painleve rod refused naming its contact."""
import math
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import ModelBuilder, load_model, simulate
from fmu_mb.dynamics.integrate import Settings
from fmu_mb.engine.data import supported
from fmu_mb.engine.engine import Engine
from fmu_mb.errors import ImpactError, InputError
from conftest import engine_equals, same_outputs as _same  # noqa: E402


ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "planar_incline.py"
G = 9.81
REFERENCE = Settings(formulation="newton_euler")
COMPILED = Settings(formulation="recursive")


def _bar(mu):
    """A bar dropped on its two ends (radii 0 and 0.02 m), restitution 0.5: impacts with
    friction, then persistent contacts."""
    mb = ModelBuilder("bar", gravity=(0.0, -G))
    b = mb.body("bar", mass=1.3, inertia=0.2, position=(0.0, 1.0), angle=0.1,
                velocity=(0.7, 0.0), angular_velocity=2.0)
    for k, sx in enumerate((-0.4, 0.4)):
        mb.contact(f"end{k}", b, (sx, 0.0), radius=0.02 * k, restitution=0.5, friction=mu)
    return mb.build()


def _plank(mu=0.4, m=1.0, M=3.0, v0=2.0):
    """Body-body friction: a block thrown onto a plank on a rail (slip, then stick)."""
    mb = ModelBuilder("plank", gravity=(0.0, -G))
    p = mb.body("plank", mass=M, inertia=1.0)
    mb.prismatic("rail", "ground", p, axis=(1.0, 0.0))
    b = mb.body("block", mass=m, inertia=0.01, position=(0.0, 0.05), velocity=(v0, 0.0))
    for k, sx in enumerate((-0.1, 0.1)):
        mb.contact(f"c{k}", b, (sx, -0.05), other=p, normal=(0.0, 1.0), restitution=0.0,
                   friction=mu)
    return mb.build()


def _painleve_rod(mu, v, theta=math.pi / 4, half=0.5):
    mb = ModelBuilder("painleve_rod", gravity=(0.0, -G))
    c, s = math.cos(theta), math.sin(theta)
    b = mb.body("rod", mass=1.0, inertia=half * half / 3, position=(half * c, half * s),
                angle=theta, velocity=(v, 0.0))
    mb.contact("tip", b, (-half, 0.0), restitution=0.0, friction=mu)
    return mb.build()


def _slope_distance(r, alpha, x0, y0):
    """The distance travelled down the slope from (x0, y0)."""
    return -((r["x"] - x0) * math.cos(alpha) + (r["y"] - y0) * math.sin(alpha))


# ---------------------------------------------------------------------- the compiled loop
@pytest.mark.parametrize("make, t_end, dt", [
    (lambda: load_model(MODEL, mu=0.5), 1.0, 0.05),            # block sticks
    (lambda: load_model(MODEL, mu=0.2), 1.0, 0.05),            # block slides
    (lambda: load_model(MODEL, body="disc", alpha=0.4, mu=0.5), 1.0, 0.05),
    (lambda: load_model(MODEL, body="disc", alpha=0.4, mu=0.1), 1.0, 0.05),
    (lambda: _bar(0.3), 2.5, 0.05),
    (lambda: _bar(2.0), 1.5, 0.05),
    (_plank, 1.0, 0.05),
    (lambda: _painleve_rod(0.3, -1.0), 0.3, 0.05),
    (lambda: _painleve_rod(2.0, 1.0), 0.3, 0.05),
])
def test_compiled_loop_equals_the_python_loop(make, t_end, dt):
    model = make()
    assert supported(model) is None
    ref = simulate(model, t_end, dt, settings=REFERENCE)
    res = simulate(model, t_end, dt, settings=COMPILED)
    _same(res, ref)
    # the engine library (the native FMU's code) step by step
    eng = Engine(model)
    eng.initialize()
    engine_equals(eng, ref, dt)


@pytest.mark.parametrize("make", [_plank, lambda: _bar(0.3)])
def test_compiled_loop_equals_the_python_loop_with_rk4(make):
    """The fixed-step rk4 (its cubic Hermite dense output) in both loops."""
    model = make()
    ref = simulate(model, 1.0, 0.05, settings=Settings(formulation="newton_euler",
                                                       method="rk4", step=1e-3))
    res = simulate(model, 1.0, 0.05, settings=Settings(formulation="recursive", method="rk4",
                                                       step=1e-3))
    _same(res, ref)


def test_the_events_happen():
    """The comparisons above pass through impacts, slip-to-stick and stick-to-slip: the bar
    lands (impacts) and comes to rest on both ends; the plank's block stops slipping; the rod
    sliding away from its foot side (v > 0) with mu = 2 sticks and slips again."""
    bar = simulate(_bar(0.3), 2.5, 0.05, settings=COMPILED)
    assert bar["end0.impacts"][-1] >= 1 and bar["end1.impacts"][-1] >= 1
    assert bar["end0.state"][-1] != 0.0 and bar["end1.state"][-1] != 0.0
    plank = simulate(_plank(), 1.0, 0.05, settings=COMPILED)
    assert plank["c0.state"][0] == 2.0 and plank["c0.state"][-1] == 1.0
    rod = simulate(_painleve_rod(2.0, 1.0), 0.3, 0.05, settings=COMPILED)
    assert set(rod["tip.state"]) == {1.0, 2.0}


def test_painleve_rod_is_refused_naming_the_contact():
    """mu = 2 with the end sliding towards the rod's foot side has no consistent state: the
    compiled loop and the engine (native FMU) refuse it naming the contact."""
    model = _painleve_rod(2.0, -1.0)
    with pytest.raises(ImpactError, match="contact 'tip' has no consistent state.*Painleve"):
        simulate(model, 0.1, 0.05, settings=COMPILED)
    eng = Engine(model)
    with pytest.raises(InputError, match="contact 'tip'.*Painleve"):
        eng.initialize()


# ---------------------------------------------------------------------- native FMUs
def _fmu(tmp_path, fmi, overrides):
    pytest.importorskip("fmpy")
    from fmpy.validation import validate_fmu

    if fmi == "3":
        from fmu_mb.fmi.native_fmi3 import build_model_fmu3

        out, kind, _ = build_model_fmu3(MODEL, tmp_path / "3", overrides)
    else:
        from fmu_mb.fmi.native_build import build_model_fmu

        out, kind, _ = build_model_fmu(MODEL, tmp_path / "2", overrides)
    assert kind.startswith("native"), kind
    assert validate_fmu(str(out)) == []
    with zipfile.ZipFile(out) as z:      # both interfaces (stick/slip in model exchange too)
        assert b"<ModelExchange" in z.read("modelDescription.xml")
    return str(out)


@pytest.mark.slow
@pytest.mark.parametrize("fmi", ["2", "3"])
def test_native_fmu_block_sticks_and_slides(tmp_path, fmi):
    fmpy = pytest.importorskip("fmpy")
    alpha, a, c = 0.3, 0.2, 0.05
    x0, y0 = -c / 2 * math.sin(alpha), c / 2 * math.cos(alpha)
    # mu > tan(alpha) = 0.309: it stays put, friction carries the slope's weight component
    path = _fmu(tmp_path / "stick", fmi, {"mu": 0.5})
    r = fmpy.simulate_fmu(path, stop_time=2.0, output_interval=0.1)
    d = -((r["block.x"] - x0) * math.cos(alpha) + (r["block.y"] - y0) * math.sin(alpha))
    assert np.abs(d).max() < 1e-9
    assert (r["corner0.state"][1:] == 1.0).all() and (r["corner1.state"][1:] == 1.0).all()
    ft = r["corner0.ft"][-1] + r["corner1.ft"][-1]
    fn = r["corner0.force"][-1] + r["corner1.force"][-1]
    assert abs(abs(ft) - G * math.sin(alpha)) < 1e-9 and abs(fn - G * math.cos(alpha)) < 1e-9
    # mu < tan(alpha): it slides with g (sin alpha - mu cos alpha)
    mu = 0.2
    path = _fmu(tmp_path / "slide", fmi, {"mu": mu})
    r = fmpy.simulate_fmu(path, stop_time=1.0, output_interval=0.1)
    acc = G * (math.sin(alpha) - mu * math.cos(alpha))
    d = -((r["block.x"] - x0) * math.cos(alpha) + (r["block.y"] - y0) * math.sin(alpha))
    t = r["time"]
    assert np.all(np.abs(d - acc * t ** 2 / 2) <= 1e-8 * acc * t ** 2 / 2 + 1e-15)
    assert (r["corner0.state"][1:] == 2.0).all()
    ref = simulate(load_model(MODEL, mu=mu), 1.0, 0.1, settings=REFERENCE)
    _same(r, ref)


@pytest.mark.slow
@pytest.mark.parametrize("fmi", ["2", "3"])
def test_native_fmu_disc_rolls(tmp_path, fmi):
    fmpy = pytest.importorskip("fmpy")
    alpha, rad = 0.4, 0.1
    x0, y0 = -rad * math.sin(alpha), rad * math.cos(alpha)
    for mu in (0.5, 0.1):                      # tan(alpha) / 3 = 0.141
        overrides = {"body": "disc", "alpha": alpha, "mu": mu}
        path = _fmu(tmp_path / str(mu), fmi, overrides)
        r = fmpy.simulate_fmu(path, stop_time=1.0, output_interval=0.1)
        rolls = mu > math.tan(alpha) / 3
        acc = 2 / 3 * G * math.sin(alpha) if rolls else G * (math.sin(alpha)
                                                            - mu * math.cos(alpha))
        d = -((r["disc.x"] - x0) * math.cos(alpha) + (r["disc.y"] - y0) * math.sin(alpha))
        t = r["time"]
        assert np.all(np.abs(d - acc * t ** 2 / 2) <= 1e-9 * acc * t ** 2 / 2 + 1e-15)
        assert (r["slope.state"][1:] == (1.0 if rolls else 2.0)).all()
        if rolls:
            assert np.abs(r["slope.slip"]).max() < 1e-12
            assert np.abs(np.abs(r["slope.ft"][1:]) - G * math.sin(alpha) / 3).max() < 1e-9
        ref = simulate(load_model(MODEL, **overrides), 1.0, 0.1, settings=REFERENCE)
        _same(r, ref)
