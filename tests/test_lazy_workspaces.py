"""The engine instance's workspaces that grow faster than the model (the dense rows' Jacobian D,
the fine cut's dense rows A, the Gram matrix S and its factor V: native/engine.c reserve) are
allocated on first use, so that an instance's memory after start-up is linear in the model.
Checked here:
- each path that needs them works on an instance that has not allocated them yet, against
  the Python reference: the assembly's fine retry (the container crane's massless trolley),
  the spatial initial rates (the heavy top's spin: Tq dense), the linearization and the state
  derivatives right after the initialisation (a four-bar: coordinate partitioning on the
  dense rows);
- an open chain allocates none of them, and a chain of loops only the envelope of S and V;
- the growth of the instance's heap from N = 32 to N = 64 (bench/instance_memory.py: glibc's
  mallinfo2 around create + initialise + one step) stays near x2 (dense workspaces allocated
  up front would make it x3.4 to x3.7).
"""
import ctypes
import ctypes.util
from pathlib import Path

import numpy as np
import pytest

import fmu_mb
from fmu_mb.dynamics.integrate import Settings, initial_state
from fmu_mb.engine.engine import Engine
from fmu_mb.engine.kernel import compiler
from fmu_mb.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler for the engine")


def _engine(name, **kw):
    model = fmu_mb.load_model(MODELS / f"{name}.py", **kw)
    e = Engine(model)
    return model, e


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, np.max(np.abs(b)))


@pytest.mark.parametrize("name, kw, used", [
    ("container_crane_driven", dict(x0=0.4, phid0=0.25, phi0=0.3), "A"),   # the fine retry
    ("heavy_top", {}, "D"),                                                 # Tq of the rates
])
def test_the_first_use_allocates_and_agrees_with_python(name, kw, used):
    model, e = _engine(name, **kw)
    settings = Settings(formulation="recursive")
    e.set_settings(settings)
    assert e.workspace_bytes() == 0
    e.initialize(model.t0)
    assert e.workspace_bytes(used) > 0
    ref = initial_state(model, settings)
    t, q, qd, h = e.state
    np.testing.assert_allclose(q, ref.q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(qd, ref.qd, rtol=1e-12, atol=1e-12)


def test_linearization_right_after_the_initialisation():
    """A four-bar's state matrix A by mbe_directional_derivative on an instance whose D is not
    allocated yet, against fmu_mb.linearize (the tmt formulation's minimal equations)."""
    from fmu_mb.dynamics.formulations import tmt
    model, e = _engine("four_bar")
    e.initialize(0.0)
    assert e.workspace_bytes("D") == 0
    lin = fmu_mb.linearize(model)
    coords = list(tmt.coordinates(model))
    ind = [coords.index(k) for k in lin.independent]
    states = list(range(2 * len(ind)))
    J = np.column_stack([e.directional_derivative(ind, [j], [1.0], states) for j in states])
    assert e.workspace_bytes("D") > 0
    assert _rel(J, lin.A) < 1e-6
    np.testing.assert_allclose(e.state_derivatives(ind), lin.xdot0, rtol=1e-9, atol=1e-9)


def test_an_open_chain_allocates_none_and_loops_only_the_envelope():
    model, e = _engine("pendulum_chain", N=16)
    e.initialize(0.0)
    e.do_step(0.01)
    assert e.workspace_bytes() == 0
    model, e = _engine("n_four_bar", N=32)
    e.initialize(0.0)
    e.do_step(0.01)
    assert e.workspace_bytes("D") == e.workspace_bytes("A") == 0
    rows = 2 * 32 + 1 + 2 * 32                 # an upper bound of the loops' and tree's rows
    assert 0 < e.workspace_bytes("S") < 8 * rows * rows / 4
    with pytest.raises(InputError, match="expected 'D', 'A', 'S', 'V' or -1"):
        e.workspace_bytes("W")


@pytest.mark.parametrize("name", ["pendulum_chain", "spatial_chain"])
def test_the_instance_memory_grows_linearly(name, monkeypatch):
    """bench/instance_memory.py's heap after create + initialise + one step."""
    if not hasattr(ctypes.CDLL(ctypes.util.find_library("c")), "mallinfo2"):
        pytest.skip("needs glibc's mallinfo2")
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from instance_memory import heap_counter, instance_bytes
    used = heap_counter()
    grown = [instance_bytes(name, n, used)[1] for n in (32, 64)]
    assert grown[1] / grown[0] <= 2.3, grown
