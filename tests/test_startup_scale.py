"""The start-up's Gram matrices on their envelope (dense.h ENV_ROW; engine.c plrows_psd_solve,
min_norm_cut; engine_spatial.h sprows_psd_solve) on models large enough for the rows' order
and the packed storage to matter: the engine's assembled initial state and its outputs
(reactions included) against the Python reference, which forms and solves its matrices
densely: the N-four-bar (a chain of loops: the rows reordered by their first body), a planar
and a spatial chain."""
import warnings
from pathlib import Path

import numpy as np
import pytest

from fmu_mb.dynamics.integrate import Settings, initial_state
from fmu_mb.dynamics.outputs import Outputs, output_names
from fmu_mb.engine.engine import Engine
from fmu_mb.mechanics.loader import load_model

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = Settings(formulation="recursive")


def close_rel(a, b, tol, names=None):
    d = np.abs(a - b) / np.maximum(1.0, np.abs(b))
    i = int(np.nanargmax(np.where(np.isnan(d), np.inf, d)))
    assert d[i] <= tol, f"{names[i] if names else i}: {a[i]!r} != {b[i]!r} ({d[i]:.3g})"


@pytest.mark.parametrize("name, n", [("n_four_bar", 12), ("pendulum_chain", 40),
                                     ("spatial_chain", 24)])
def test_large_models_start_and_react_as_the_python_reference(name, n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_model(ROOT / "models" / f"{name}.py", N=n)
    eng = Engine(m)
    eng.set_settings(SETTINGS)
    eng.initialize(m.t0)
    ref = initial_state(m, SETTINGS)
    _, q, qd, _ = eng.state
    close_rel(q, ref.q, 1e-10)
    close_rel(qd, ref.qd, 1e-10)
    names = output_names(m)
    eng.load(ref)
    u = np.zeros(len(m.inputs))
    want = Outputs(m, ref, u, "recursive", compiled=False).values()
    got = eng.outputs(u)
    close_rel(got, want, 1e-10, names)
    reactions = [i for i, s in enumerate(names) if s.rsplit(".", 1)[-1] in ("fx", "fy", "fz")]
    assert reactions and np.abs(np.asarray(want)[reactions]).max() > 0.01   # reactions there
