"""Redundant frictional contacts on bodies moved by joints: the split of the forces among
them. Both event loops take the contacts' multipliers with the minimum norm, the joints
taking up the rest (the compiled loop solves in joint coordinates, the newton_euler loop
re-splits its multipliers with linalg.contact_split), so the per-corner forces, impulses,
losses and the joints' reactions agree, not only each pad's totals. And a slipping corner
whose slip the other corners hold no longer switches between stick and slip on rounding
(the weak grip of models/gripper.py ran into the Zeno guard at t = 0.041 s)."""
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import null_space

from fmu_mb import load_model, simulate
from fmu_mb.dynamics.integrate import Settings
from fmu_mb.linalg import contact_split

MODELS = Path(__file__).resolve().parents[1] / "models"


def _ramp(v0, v1, v2, v3):
    return lambda t: v0 + (v1 - v0) * t / 0.2 if t < 0.2 - 1e-12 else \
        v2 + (v3 - v2) * (t - 0.2) / 0.8


WEAK = {"grip.h": _ramp(0.3, 0.1, -0.2, 0.4), "lift.h": _ramp(0.6, 0.2, -0.4, 0.8)}


@pytest.mark.parametrize("seed", range(20))
def test_contact_split_is_the_minimum_norm_of_the_contacts(seed):
    """Rows of joints (m) and contacts with dependent combinations that involve both: the
    re-split multipliers give the same generalised force, their contact part is orthogonal
    to every dependent combination's contact part (scipy's null space of A'), and no other
    multipliers of the same force have smaller contacts' norm."""
    rng = np.random.default_rng(seed)
    n, m, nc = 9, 3, 6
    J = rng.normal(size=(m, n))
    C = rng.normal(size=(nc, n))
    C[3] = 0.7 * C[0] - 1.3 * J[1]           # balanced by the joints
    C[4] = C[1] + 0.5 * C[2] + 2.0 * J[0]
    C[5] = -C[2]                              # the contacts among themselves
    A = np.vstack([J, C])
    lam = rng.normal(size=m + nc)
    out = contact_split(A, m, lam)
    np.testing.assert_allclose(A.T @ out, A.T @ lam, atol=1e-12)
    N = null_space(A.T)
    assert N.shape[1] == 3
    assert np.abs(N[m:].T @ out[m:]).max() < 1e-12
    for _ in range(20):
        other = out + N @ rng.normal(size=N.shape[1])
        assert np.linalg.norm(other[m:]) >= np.linalg.norm(out[m:]) - 1e-12
    # no dependent combination through the joints: unchanged (the minimum-norm solves of
    # the loops already give it)
    B = np.vstack([J, C[:3], -C[2:3]])
    np.testing.assert_array_equal(contact_split(B, m, lam[:m + 4]), lam[:m + 4])


def test_gripper_split_compiled_equals_newton_euler():
    """The weak grip until just before the block lifts off the table (0.04 s): the pads
    close on the block with an impact, then slide on it on four redundant corners each; the
    compiled loop and the newton_euler loop agree on every output to 1e-9, the per-corner
    forces, friction forces, impulses and losses and the fingers' torques about y included
    (with the joint and contact multipliers' minimum norm the newton_euler split differed by
    5e-6 relative)."""
    model = load_model(MODELS / "gripper.py")
    c = simulate(model, 0.04, 0.01, inputs=WEAK)
    p = simulate(model, 0.04, 0.01, inputs=WEAK, settings=Settings(formulation="newton_euler"))
    assert c["pad_l_part_0.state"][-1] == 2.0       # the pads slide (closed at 0.0365 s)
    for n in p.dtype.names[1:]:
        err = np.abs(c[n] - p[n]).max() / max(1.0, np.abs(p[n]).max())
        assert err <= 1e-9, (n, err)


def test_gripper_weak_grip_compiled_runs_without_zeno():
    """The compiled loop (dopri5, the default method's) runs the whole weak grip: the pads
    slide on the block, every pad corner releases and the fingers open; no endless stick
    events of a table corner whose slip the others hold."""
    model = load_model(MODELS / "gripper.py")
    for method in ("dopri5", "auto"):
        c = simulate(model, 0.3, 0.05, inputs=WEAK, settings=Settings(method=method))
        for pad, ids in {"pad_l": range(0, 4), "pad_r": range(4, 8)}.items():
            states = np.array([c[f"{pad}_part_{i}.state"] for i in ids])
            assert (states[:, 2] == 2.0).any(), (pad, states)
            assert (states[:, -1] == 0.0).all(), (pad, states)
        assert c["finger_r.x"][-1] - c["finger_l.x"][-1] > \
            model.parameter_values["a"] + 0.005
