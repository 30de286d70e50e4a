"""The friction law in the compiled spatial kernel (native/spatial_kernel.c with the shared
native/friction.h): accelerations with sticking contacts' tangential rows and sliding
contacts' friction forces (sk_set_friction), against the Python reference of
fmu_mb.dynamics.friction in absolute coordinates (newton_euler): the same accelerations and
normal forces to 1e-12 for sliding contacts (single, and four redundant corners sliding
together), the same motion and normal forces for sticking ones. The compiled event loop does
not use it yet (the kernels refuse frictional models: docs/contacts-friction.md)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_mb.dynamics import friction as fr
from fmu_mb.dynamics import impact
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.engine import kernel as _kernel
from fmu_mb.engine import spatial_kernel as sk
from fmu_mb.mechanics.spatial import tree as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
import incline_block  # noqa: E402
import rolling_ball  # noqa: E402


def _both(monkeypatch, m, stick, slide, s0, qd_scale=1.0):
    monkeypatch.setattr(_kernel, "friction_unsupported", lambda model: None)
    s = get_formulation("tmt").initial_state(m)
    q, qd = s.q, s.qd * qd_scale
    nc = len(m.contacts)
    qdd, lam_c, lam_t = sk.SpatialKernel(m).friction_accelerations(
        q, qd, 0.0, np.zeros(0), tuple(range(nc)), stick, slide, s0)
    x, xd, Tq, g = st.transform(m, q, qd)
    ph = fr.Phase(np.array(stick, bool), np.array(slide, bool),
                  np.array(s0, float).reshape(nc, 2), m.compiled.contacts.friction)
    dyn = impact.accelerations(m, x, xd, 0.0, np.zeros(0), np.ones(nc, bool), fric=ph)
    gap, Dc, conv = impact.contact_rows(m, x, xd)
    xdd = Tq @ qdd + g
    assert np.abs(Dc @ xdd + conv).max() < 1e-12          # the contacts hold in C
    return xdd, lam_c, lam_t, dyn


@pytest.mark.parametrize("sliding", [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]])
def test_sliding_corners_equal_the_python_law(monkeypatch, sliding):
    m = incline_block.build(alpha=0.3, mu=0.2, shape="corners")   # four corner points
    xdd, lam_c, _, dyn = _both(monkeypatch, m, [0] * 4, sliding, np.tile([0.0, -1.0], (4, 1)))
    np.testing.assert_allclose(lam_c, dyn.lam_c, rtol=0, atol=1e-12)
    np.testing.assert_allclose(xdd[:3], dyn.qdd[:3], rtol=0, atol=1e-12)
    if all(sliding):     # the closed form: sliding down at g (sin - mu cos)
        a = 9.81 * (np.sin(0.3) - 0.2 * np.cos(0.3))
        assert abs(np.hypot(xdd[0], xdd[2]) - a) < 1e-12


def test_sliding_ball_equals_the_python_law(monkeypatch):
    m = rolling_ball.build(v0=2.0, w0=-5.0)
    xdd, lam_c, _, dyn = _both(monkeypatch, m, [0], [1], [[1.0, 0.0]])
    np.testing.assert_allclose(lam_c, dyn.lam_c, rtol=0, atol=1e-12)
    np.testing.assert_allclose(xdd, dyn.qdd, rtol=0, atol=1e-12)
    assert abs(xdd[0] + 0.3 * 9.81) < 1e-12


def test_sticking_corners_hold_the_block(monkeypatch):
    """Four sticking corners: no motion; the normal forces and the total friction force equal
    the Python law's (the split of the redundant tangential forces is the minimum-norm one of
    the contact multipliers in C: equal shares)."""
    m = incline_block.build(alpha=0.3, mu=0.5, shape="corners")
    xdd, lam_c, lam_t, dyn = _both(monkeypatch, m, [1] * 4, [0] * 4, np.zeros((4, 2)))
    assert np.abs(xdd[:3]).max() < 1e-12
    np.testing.assert_allclose(lam_c, dyn.lam_c, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lam_t.sum(axis=0), dyn.lam_t.sum(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(lam_t, np.tile(lam_t[0], (4, 1)), rtol=0, atol=1e-12)
