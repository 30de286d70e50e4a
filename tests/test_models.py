"""Every file in models/ builds, has a consistent initial state, and simulates."""
import numpy as np
import pytest

from fmu_mb import Settings, initial_state, load_model, output_names, simulate
from fmu_mb.mechanics import constraints

from conftest import MODEL_FILES

CONSERVATIVE = {"double_pendulum", "hinged_body_spring", "slider_crank", "four_bar",
                "n_four_bar", "simple_pendulum"}


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_model_file_builds_and_simulates(path):
    m = load_model(path)
    assert m.name == path.stem
    s = initial_state(m, Settings(formulation="newton_euler"))   # absolute x, xd
    phi, D, _, phi_t = constraints.evaluate(m, s.q, s.qd, s.t)
    assert np.abs(phi).max(initial=0) < 1e-10
    assert np.abs(D @ s.qd + phi_t).max(initial=0) < 1e-10
    assert m.topology.dof == m.topology.gruebler_dof + m.topology.redundant
    names = output_names(m)
    assert len(set(names)) == len(names)
    assert not set(names) & {p.name for p in m.parameters}
    assert not set(names) & set(m.input_names)
    r = simulate(m, 0.5, 0.05)
    assert r["time"][-1] == 0.5
    assert np.isfinite(r.view((float, len(r.dtype.names)))).all()
    assert r["constraint.residual"].max() < 1e-10
    if path.stem in CONSERVATIVE:
        E = r["energy.total"]
        assert np.abs(E - E[0]).max() < 1e-8 * max(1.0, abs(E[0]))


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_parameters_have_units_and_descriptions(path):
    m = load_model(path)
    for p in m.parameters:
        assert p.unit and p.description, p.name
