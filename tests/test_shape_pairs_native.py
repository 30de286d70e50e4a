"""Frictional shape pairs in the compiled engine on models with joints, and through native FMUs
in fmpy (FMI 2.0 and 3.0).

tests/data/sweeper.py: a cart on a slider carries a pendulum with a wheel (a Sphere on an axle)
that strikes a sloping Box, slips and then rolls up it: a sphere-box shape pair whose contact
point moves round the wheel, its friction force carried by the axle, the hinge and the slider.
Checked against the Python event loop of formulation newton_euler (absolute coordinates,
fmu_mb.mechanics.spatial.pairs and friction: another formulation of the same law) to 1e-9 at
every communication point, every output included (the joints' reactions among them), both
loops at rtol 1e-11: the compiled loop in-process and the native FMI 2.0 and 3.0 FMUs in fmpy.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import simulate
from fmu_mb.dynamics.integrate import Settings
from fmu_mb.engine.data import supported

pytestmark = pytest.mark.fmu

DATA = Path(__file__).resolve().parent / "data"
SWEEPER = DATA / "sweeper.py"
sys.path.insert(0, str(DATA))
import sweeper  # noqa: E402

TIGHT = dict(rtol=1e-11, atol=1e-13)
T_END, DT = 0.3, 0.01


def same(r, ref, tol=1e-9, angles=()):
    """Every output of ref equals r's to tol relative to max(1, max |ref|); the Cardan angles
    `angles` modulo 2 pi (atan2 gives -pi or pi for the same rotation)."""
    for n in ref.dtype.names[1:]:
        d = np.asarray(r[n], dtype=float) - ref[n]
        if n in angles:
            d = (d + np.pi) % (2.0 * np.pi) - np.pi
        assert np.abs(d).max() <= tol * max(1.0, np.abs(ref[n]).max()), (n, np.abs(d).max())


WHEEL_ANGLES = ("wheel.alpha", "wheel.gamma")


@pytest.fixture(scope="module")
def sweeper_reference():
    """tests/data/sweeper.py by the Python loop (newton_euler, rtol 1e-11)."""
    return simulate(sweeper.build(), T_END, DT,
                    settings=Settings(formulation="newton_euler", **TIGHT))


def test_sweeper_runs_in_the_compiled_loop_equal_to_the_python_loop(sweeper_reference):
    """The jointed model with a frictional shape pair runs in the compiled engine (its
    default formulation is the compiled loop) and equals the Python loop to 1e-9 at every
    output point, the joints' reactions included; the wheel strikes the block, slips, then
    rolls up it sticking with a friction force inside the cone."""
    m = sweeper.build()
    assert supported(m) is None
    assert Settings().for_model(m).formulation == "recursive"
    c = simulate(m, T_END, DT, settings=Settings(formulation="recursive", **TIGHT))
    ref = sweeper_reference
    assert c.dtype.names == ref.dtype.names
    same(c, ref, angles=WHEEL_ANGLES)
    k = "tyre_block_0"
    assert c[f"{k}.impacts"][-1] >= 1
    assert 2.0 in set(c[f"{k}.state"])                       # slipping after the strike
    rolling = c[f"{k}.state"] == 1.0
    assert rolling[-5:].all()                                 # then rolling (sticking)
    ft = np.hypot(c[f"{k}.ft1"], c[f"{k}.ft2"])[rolling]
    assert ft.max() > 1e-3 and (ft <= 0.1 * c[f"{k}.force"][rolling] + 1e-12).all()
    assert np.abs(c[f"{k}.slip1"][rolling]).max() < 1e-9
    assert np.abs(c["axle.fx"]).max() > 0.1                   # the axle carries the contact


@pytest.mark.parametrize("fmi", [2, 3])
def test_sweeper_native_fmu_equals_the_python_loop(fmi, session_fmus, sweeper_reference):
    """The native FMU (FMI 2.0 and 3.0; fmpy validates it) in fmpy, solver.rtol 1e-11, equals
    the Python loop to 1e-9 at every communication point."""
    fmpy = pytest.importorskip("fmpy")
    from fmpy.validation import validate_fmu
    path = session_fmus(SWEEPER, fmi=fmi, kind="native")
    assert validate_fmu(str(path)) == []
    r = fmpy.simulate_fmu(str(path), stop_time=T_END, output_interval=DT,
                          start_values={f"solver.{k}": v for k, v in TIGHT.items()})
    ref = sweeper_reference
    assert r["time"][-1] == pytest.approx(T_END) and len(r) == len(ref)
    same(r, ref, angles=WHEEL_ANGLES)


# ------------------------------------------------------------------ capsule - box
CAPSULE = DATA / "capsule_slide.py"
import capsule_slide  # noqa: E402

G = 9.81


@pytest.fixture(scope="module")
def capsule_reference():
    """tests/data/capsule_slide.py by the Python loop (newton_euler, rtol 1e-11), 0.3 s."""
    return simulate(capsule_slide.build(), 0.3, 0.02,
                    settings=Settings(formulation="newton_euler", **TIGHT))


def capsule_closed_form(r, m=1.2, rad=0.05, length=0.4, mu=0.5, v0=0.8, x0=-0.2):
    """The capsule's closed form on the outputs r: x(t) = x0 + v0 t - mu g t^2 / 2 until
    t_s = v0 / (mu g), then at rest; its two core ends (features 0, 1) carry
    m g (1/2 +- mu rad / length) while it slides (the leading end the more), m g / 2 at rest;
    the other 20 features stay open."""
    t_s = v0 / (mu * G)
    ends = [f"rod_c_table_{k}.force" for k in (0, 1)]
    lead = max(ends, key=lambda n: r[n][1])
    trail = ends[1 - ends.index(lead)]
    for row in r:
        t = min(row["time"], t_s)
        assert row["rod.x"] == pytest.approx(x0 + v0 * t - 0.5 * mu * G * t * t, abs=1e-9)
        assert abs(row["rod.z"] - rad) < 1e-9 and abs(row["rod.wy"]) < 1e-9
        if row["time"] < t_s - 1e-9:
            assert row[lead] == pytest.approx(m * G * (0.5 + mu * rad / length), rel=1e-9)
            assert row[trail] == pytest.approx(m * G * (0.5 - mu * rad / length), rel=1e-9)
            assert row["rod_c_table_0.state"] == 2.0
        elif row["time"] > t_s + 1e-9:
            for n in ends:
                assert row[n] == pytest.approx(0.5 * m * G, rel=1e-9)
            assert row["rod_c_table_0.state"] == 1.0
        assert sum(row[f"rod_c_table_{k}.active"] for k in range(22)) == 2


def test_capsule_sliding_on_a_box_compiled_loop(capsule_reference):
    """The capsule slides on the box face, then sticks: the closed form, and the compiled
    loop equals the Python loop to 1e-9 at every output point."""
    m = capsule_slide.build()
    assert len(m.contacts) == 22 and supported(m) is None
    c = simulate(m, 0.3, 0.02, settings=Settings(formulation="recursive", **TIGHT))
    same(c, capsule_reference)
    capsule_closed_form(c)
    capsule_closed_form(capsule_reference)


@pytest.mark.parametrize("fmi", [2, 3])
def test_capsule_sliding_on_a_box_native_fmu(fmi, session_fmus, capsule_reference):
    """The native FMU of the capsule on the box (FMI 2.0 and 3.0; fmpy validates it) in
    fmpy, solver.rtol 1e-11: equal to the Python loop to 1e-9 at every communication point,
    and the closed form."""
    fmpy = pytest.importorskip("fmpy")
    from fmpy.validation import validate_fmu
    path = session_fmus(CAPSULE, fmi=fmi, kind="native")
    assert validate_fmu(str(path)) == []
    r = fmpy.simulate_fmu(str(path), stop_time=0.3, output_interval=0.02,
                          start_values={f"solver.{k}": v for k, v in TIGHT.items()})
    assert r["time"][-1] == pytest.approx(0.3) and len(r) == len(capsule_reference)
    same(r, capsule_reference)
    capsule_closed_form(r)


# ------------------------------------------------------------------ frictionless slip (planar)
def slips_model():
    """A planar model with friction at one contact: disc a (mu 0.3) thrown on the floor line
    slips, then rolls; disc b (frictionless, a point-line contact) slides at v0 = 2 m/s
    spinning at w0 = 3 rad/s; a slider on a prismatic rail runs into its upper end stop (a
    joint limit: no contact point)."""
    from fmu_mb import ModelBuilder
    mb = ModelBuilder("slips", gravity=(0.0, -G))
    a = mb.body("a", mass=1.0, inertia=0.005, position=(0.0, 0.1), velocity=(1.0, 0.0))
    b = mb.body("b", mass=1.0, inertia=0.005, position=(1.0, 0.1), velocity=(2.0, 0.0),
                angular_velocity=3.0)
    s = mb.body("s", mass=0.5, inertia=0.01, position=(0.0, 0.0), velocity=(0.5, 0.0))
    mb.contact("fa", a, radius=0.1, restitution=0.0, friction=0.3)
    mb.contact("fb", b, radius=0.1, restitution=0.0)
    mb.prismatic("rail", mb.ground, s, axis=(1.0, 0.0))
    mb.joint_limit("stop", "rail", upper=0.05, restitution=0.5)
    return mb.build()


def test_a_frictionless_point_line_contact_reports_its_slip():
    """In a model with friction elsewhere, the frictionless point-line contact's slip output
    is its contact point's slip velocity in C as in Python: t . v_P = -(v0 + w0 r) with
    t = e_z x n (no friction: v0 and w0 stay); the joint limit has no contact point (slip 0).
    The compiled loop, the engine (the native FMU's code) step by step and the Python loop
    agree to 1e-9 at every output point."""
    from fmu_mb.engine.engine import Engine
    m = slips_model()
    assert supported(m) is None
    ref = simulate(m, 0.3, 0.05, settings=Settings(formulation="newton_euler", **TIGHT))
    c = simulate(m, 0.3, 0.05, settings=Settings(formulation="recursive", **TIGHT))
    same(c, ref)
    np.testing.assert_allclose(ref["fb.slip"], -(2.0 + 3.0 * 0.1), rtol=1e-12)
    assert np.abs(ref["stop.slip"]).max() == 0.0 and ref["stop.impacts"][-1] >= 1
    assert ref["fa.state"][-1] == 1.0 and ref["fa.state"][1] == 2.0
    eng = Engine(m)
    eng.set_settings(Settings(**TIGHT))
    eng.initialize()
    names = list(ref.dtype.names[1:])
    rows = []
    for k in range(len(ref)):
        if k:
            eng.do_step(0.05)
        rows.append(eng.outputs())
    out = np.rec.fromarrays(np.array(rows).T, names=names)
    same(out, ref)


def test_corrupt_point_flags_are_refused_by_the_engine():
    """ICPT: 1 at the point-line contacts, 0 at the joint limit; a flag other than 0 or 1, or
    one set at a contact without a contact point, is refused with a message."""
    from fmu_mb.engine import data
    from fmu_mb.engine.engine import Engine
    from fmu_mb.errors import InputError
    m = slips_model()
    d = data.model_data(m)
    off, cnt = d.slots["ICPT"]
    np.testing.assert_array_equal(d.ints[off:off + cnt], [1, 1, 0])
    Engine(blob=d.to_bytes())
    ci = d.array("ICON").reshape(-1, 3)
    assert ci[2, 0] == 3                    # the prismatic end stop's row: a projection too
    for k, v in ((0, 2), (1, -1)):
        bad = d.ints.copy()
        bad[off + k] = v
        with pytest.raises(InputError, match="a contact's point flag"):
            Engine(blob=data.EngineData(bad, d.doubles, d.slots, d.parameter_names,
                                        d.joint_names).to_bytes())
