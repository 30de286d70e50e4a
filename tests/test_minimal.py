"""Formulation 'minimal' (coordinate partitioning, seed 001's minimal-order equations for
closed loops): the five-point suspension integrates one coordinate and moves like
newton_euler; re-selection of the independent coordinate across the slider-crank's dead
centre; a clear error at a singular configuration (a parallelogram four-bar folding flat)."""
import numpy as np
import pytest

from fmu_mb import Settings, advance, deg, initial_state, load_model, simulate
from fmu_mb.dynamics.formulations import minimal
from fmu_mb.errors import InputError, IntegrationError, SingularSystemError

from conftest import MODELS, model


def test_five_point_suspension_integrates_one_coordinate_and_agrees_with_newton_euler():
    model = load_model(MODELS / "five_point_suspension.py")
    s = initial_state(model, Settings(formulation="minimal"))
    assert len(minimal.independent_coordinates(model, s)) == 1      # seed 001: f = 1
    kw = dict(inputs={"tyre.h": -4.0e5 * 0.02}, rtol=1e-10, atol=1e-10)
    a = simulate(model, 0.03, 0.015, formulation="newton_euler", **kw)
    b = simulate(model, 0.03, 0.015, formulation="minimal", **kw)
    for c in "xyz":
        assert np.abs(a[f"wheel_centre.{c}"] - b[f"wheel_centre.{c}"]).max() < 1e-9
    assert a["wheel_centre.z"][-1] - a["wheel_centre.z"][0] > 1e-4     # it moved
    assert b["constraint.residual"].max() < 1e-10


def test_bricard_has_one_independent_coordinate_despite_its_redundant_row():
    model = load_model(MODELS / "bricard.py")
    s = initial_state(model, Settings(formulation="minimal"))
    assert len(minimal.independent_coordinates(model, s)) == 1
    a = simulate(model, 0.2, 0.1, formulation="newton_euler", rtol=1e-10, atol=1e-10)
    b = simulate(model, 0.2, 0.1, formulation="minimal", rtol=1e-10, atol=1e-10)
    assert np.abs(a["P3.z"] - b["P3.z"]).max() < 1e-8


def test_slider_crank_reselects_its_independent_coordinate(monkeypatch):
    """The rod's relative angle A.angle is the best-conditioned independent coordinate at
    the start; where it is extremal (crank near +-90 degrees) it cannot describe the motion
    and the crank angle takes over."""
    model = load_model(MODELS / "slider_crank.py", theta0=1.0)
    chosen = []
    original = minimal.partition

    def spy(*args):
        out = original(*args)
        chosen.append(tuple(out[0]))
        return out

    monkeypatch.setattr(minimal, "partition", spy)
    a = simulate(model, 0.25, 0.125, formulation="minimal", rtol=1e-9, atol=1e-9)
    monkeypatch.undo()
    b = simulate(model, 0.25, 0.125, formulation="tmt", rtol=1e-9, atol=1e-9)
    assert len(set(chosen)) >= 2                      # the partition changed on the way
    for c in a.dtype.names:
        if c.endswith((".x", ".y")):
            assert np.abs(a[c] - b[c]).max() < 1e-6, c


def test_singular_configuration_is_a_clear_error():
    """A parallelogram four-bar reaches the flat pose (all links on one line) where the
    closure Jacobian loses rank: no coordinate describes the motion there."""
    model = load_model(MODELS / "four_bar.py", crank_length=0.3, coupler_length=0.4,
                       rocker_length=0.3, ground_length=0.4, g=0.0, theta0=deg(30.0),
                       omega0=-5.0)
    with pytest.raises(SingularSystemError, match="singular configuration"):
        simulate(model, 0.2, 0.1, formulation="minimal")


def test_methods_minimal_cannot_run_are_refused_and_the_budget_holds():
    """minimal integrates with rk4 and scipy's steppers: euler is refused with a message
    naming those (it raised a KeyError), and settings.max_steps stops its scipy loop."""
    m = model("four_bar")
    st = Settings(formulation="minimal", method="euler", step=1e-3)
    s0 = initial_state(m, st)
    with pytest.raises(InputError, match="'minimal' integrates with .*'dop853'"):
        advance(m, s0, 0.01, None, st)
    capped = Settings(formulation="minimal", max_steps=5)
    with pytest.raises(IntegrationError, match="more than 5 integrator steps"):
        advance(m, s0, 10.0, None, capped)
