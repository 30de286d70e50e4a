"""The structured shortcuts that keep a large model's build linear give what the dense
computations give: numerical_rank from the band of D D' against the dense SVD count, and the
assembly's velocities against the least-M-norm solve."""
import glob
import importlib.util
import os
import warnings

import numpy as np
import pytest

from fmu_mb import linalg
from fmu_mb.mechanics import constraints
from fmu_mb.mechanics.loader import load_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _svd_rank(D):
    if D.size == 0:
        return 0
    s = np.linalg.svd(D, compute_uv=False)
    return int(np.sum(s > np.sqrt(linalg.RANK_RTOL) * max(s.max(), 1e-300)))


def _rows(path, **overrides):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_model(path, **overrides)
    x = np.array(m.x0)
    _, D, _, _ = constraints.evaluate(m, x, np.zeros_like(x), m.t0, need_conv=False)
    return m, D


CASES = [(p, {}) for p in sorted(glob.glob(os.path.join(ROOT, "models", "*.py")))]
CASES += [(os.path.join(ROOT, "models", "n_four_bar.py"), {"N": 60}),
          (os.path.join(ROOT, "models", "spatial_chain.py"), {"N": 40})]


@pytest.mark.parametrize("path,overrides", CASES,
                         ids=[os.path.basename(p)[:-3] + "".join(f"-{k}{v}" for k, v in o.items())
                              for p, o in CASES])
def test_banded_rank_equals_svd_rank_on_every_model(monkeypatch, path, overrides):
    """Every model's D (any size, any band width) ranked by the band route and by the SVD."""
    _, D = _rows(path, **overrides)
    monkeypatch.setattr(linalg, "RANK_BANDED_ROWS", 1)
    monkeypatch.setattr(linalg, "RANK_BAND_WIDEST", 1.0)
    assert linalg.numerical_rank(D) == _svd_rank(D)


def test_banded_rank_of_redundant_and_nearly_dependent_rows():
    """Rows appended to a long chain's D: exact combinations (redundant), a combination
    of neighbouring rows perturbed below the cut-off (sigma ~1e-6 relative, cut at 1.7e-4:
    not counted) and one by a unit vector (counted); the shifted Cholesky fails and the band
    eigenvalues count, as the SVD."""
    _, D = _rows(os.path.join(ROOT, "models", "spatial_chain.py"), N=48)
    rng = np.random.default_rng(33)
    m = D.shape[0]
    assert m >= linalg.RANK_BANDED_ROWS
    extra = []
    for k in rng.choice(m - 12, size=6, replace=False):
        extra.append(D[k] - 2.0 * D[k + 5])                       # redundant
    tiny = D[10] + D[16] + 1e-6 * np.abs(D).max() * np.eye(1, D.shape[1], 14)[0]
    big = D[20] + np.abs(D).max() * np.eye(1, D.shape[1], 24)[0]
    for A in (np.vstack([D] + extra), np.vstack([D, tiny]), np.vstack([D, big]),
              np.vstack([D] + extra + [tiny, big])):
        assert linalg._gram_band(A) is not None                   # the band route is taken
        assert linalg.numerical_rank(A) == _svd_rank(A)
    assert linalg.numerical_rank(np.vstack([D] + extra)) == m
    assert linalg.numerical_rank(np.vstack([D, tiny])) == m
    assert linalg.numerical_rank(np.vstack([D, big])) == m + 1


def test_full_rank_test_is_conservative():
    """_banded_full_rank says full rank only when the smallest eigenvalue of D D' exceeds the
    cut-off; a row scaled just below the cut-off makes it fail."""
    _, D = _rows(os.path.join(ROOT, "models", "spatial_chain.py"), N=48)
    assert linalg._banded_full_rank(linalg._gram_band(D))
    A = D.copy()
    A[7] *= 1e-5
    assert not linalg._banded_full_rank(linalg._gram_band(A))
    assert linalg.numerical_rank(A) == _svd_rank(A) == D.shape[0] - 1


@pytest.mark.parametrize("rate", [None, 0.7])
def test_assembly_velocities_equal_least_norm_solve(rate):
    """The assembly's velocities at rest (no correction needed, skipped) and with a given rate
    equal the least-M-norm solve of D xd = -Phi_t with the given rates, done densely here."""
    import fmu_mb

    mb = fmu_mb.ModelBuilder("chain", gravity=(0.0, 0.0, -9.81))
    parent = mb.ground
    for i in range(3):
        b = mb.body(f"b{i}", mass=1.0 + i, inertia=(0.1, 0.2, 0.3),
                    position=(0.5 + i, 0.0, 0.0))
        mb.revolute(f"J{i}", parent, b, at=(float(i), 0.0, 0.0), axis=(0.0, 1.0, 0.0))
        parent = b
    if rate is not None:
        mb.initial("J1", rate=rate)
    model = mb.build()
    x, xd = np.array(model.x0), np.array(model.xd0)
    _, D, _, phi_t = constraints.evaluate(model, x, np.zeros_like(x), model.t0,
                                          need_conv=False)
    q, qd, Jq, _ = constraints.joint_coordinates(model, x, xd)
    assert np.abs(D @ xd + phi_t).max() < 1e-12
    if rate is None:
        assert not np.any(xd)
        return
    i = [model.joints[k].name for k in model.compiled.coord_joints].index("J1")
    A = np.vstack([D, Jq[[i]]])
    b = np.concatenate([-phi_t, [rate]])
    Minv = model.compiled.inv_mass_diag
    ref = Minv * (A.T @ np.linalg.lstsq((A * Minv) @ A.T, b, rcond=None)[0])
    np.testing.assert_allclose(xd, ref, rtol=0, atol=1e-12)
    assert abs(qd[i] - rate) < 1e-12


def _chain(n, q0, rate=None):
    """models/spatial_chain.py's chain with n links at joint angles q0 (an initial rate of
    joint J1 when given)."""
    import fmu_mb
    from fmu_mb.mechanics.spatial.rotations import from_matrix

    spec = importlib.util.spec_from_file_location(
        "spatial_chain", os.path.join(ROOT, "models", "spatial_chain.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mb = fmu_mb.ModelBuilder("chain", gravity=(0.0, 0.0, -9.81))
    points, frames = mod.link_frames(n, 0.1, [q0] * n)
    parent = mb.ground
    for i in range(n):
        R = frames[i]
        link = mb.body(f"link{i}", mass=0.1, inertia=(1e-6, 1e-4, 1e-4),
                       position=tuple(points[i] + R @ np.array([0.05, 0.0, 0.0])),
                       orientation=from_matrix(R))
        mb.revolute(f"J{i}", parent, link, at=tuple(points[i]), axis=tuple(R[:, 2]))
        parent = link
    if rate is not None:
        mb.initial("J1", rate=rate)
    return mb.build()


@pytest.mark.parametrize("rate", [None, 1.5])
def test_engine_start_equals_python_with_flipped_euler_parameter_signs(rate):
    """The C engine's initial state (the tree's Euler-parameter signs from one kinematics
    pass, qd0 at rest without Tq) against the Python reference: a chain at q0 = 3 rad, where
    T(q0) gives the negated Euler parameters of many bodies (rows flipped), at rest and with
    an initial rate."""
    from fmu_mb.dynamics.integrate import Settings, initial_state
    from fmu_mb.engine.engine import Engine
    from fmu_mb.mechanics.spatial.tree import tree_map

    m = _chain(12, 3.0, rate)
    assert sum(r[-1] < 0 for r in tree_map(m).rows) >= 4
    settings = Settings(formulation="recursive")
    eng = Engine(m)
    eng.set_settings(settings)
    eng.initialize(m.t0)
    ref = initial_state(m, settings)
    _, q, qd, _ = eng.state
    np.testing.assert_allclose(q, ref.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(qd, ref.qd, rtol=0, atol=1e-12)
    if rate is None:
        assert not np.any(qd)
    else:
        assert abs(qd[list(tree_map(m).names).index("J1.angle")] - rate) < 1e-12
