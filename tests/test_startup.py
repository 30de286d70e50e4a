"""Start-up and the co-simulation fast path: the kernel's Runge-Kutta tableaus are scipy's
(bit for bit), an open tree is built and stepped without importing scipy, and
integrate.stepper gives exactly what advance() gives."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import InputError, IntegrationError, Settings, advance, initial_state
from fmu_mb.dynamics import tableaus as T
from fmu_mb.dynamics.integrate import stepper

from conftest import model

ROOT = Path(__file__).resolve().parents[1]


def test_tableaus_are_scipys_bit_for_bit():
    from scipy.integrate import DOP853, RK45
    from scipy.integrate._ivp import dop853_coefficients as dc

    s = RK45.n_stages
    assert (T.RK45_STAGES, T.RK45_ERROR_ORDER) == (s, RK45.error_estimator_order)
    A = np.array(T.RK45_A)
    np.testing.assert_array_equal(A[:, :RK45.A.shape[1]], RK45.A)
    np.testing.assert_array_equal(A[:, RK45.A.shape[1]:], 0.0)
    for mine, theirs in ((T.RK45_B, RK45.B), (T.RK45_C, RK45.C), (T.RK45_E, RK45.E)):
        np.testing.assert_array_equal(mine, theirs)
    s8 = dc.N_STAGES
    assert (T.DOP853_STAGES, T.DOP853_ERROR_ORDER) == (s8, DOP853.error_estimator_order)
    np.testing.assert_array_equal(T.DOP853_A, dc.A[:s8, :s8])
    for mine, theirs in ((T.DOP853_B, dc.B), (T.DOP853_C, dc.C[:s8]), (T.DOP853_E3, dc.E3),
                         (T.DOP853_E5, dc.E5)):
        np.testing.assert_array_equal(mine, theirs)


CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import fmu_mb
from fmu_mb import load_model, initial_state, advance
from fmu_mb.dynamics.outputs import Outputs
m = load_model(sys.argv[1] + "/models/double_pendulum.py")
s = advance(m, initial_state(m), 0.01, [0.1, 0.0])
out = Outputs(m, s, m.input_vector(None))
angles = [out.value(i) for i in range(4)]
import fmu_mb.fmi.slave
print(json.dumps({"scipy": sorted(k for k in sys.modules if k.split(".")[0] == "scipy"),
                  "file": fmu_mb.__file__, "coords": s.coords}))
"""


def test_an_open_tree_is_built_and_stepped_without_scipy():
    """What an FMU of an open tree does up to its first outputs (import fmu_mb and the FMU
    slave, build and assemble the model, step in the kernel, read outputs) leaves scipy
    unimported (~250 ms of start-up); run in a fresh interpreter."""
    p = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert Path(out["file"]).parent == ROOT / "fmu_mb"
    assert out["coords"] == "joint"
    assert out["scipy"] == []


@pytest.mark.parametrize("name,formulation,method", [
    ("double_pendulum", "auto", "dop853"), ("double_pendulum", "recursive", "dopri5"),
    ("pendulum_chain", "auto", "rk4"), ("double_pendulum", "newton_euler", "dop853"),
    ("slider_crank", "auto", "dop853"), ("bouncing_ball", "auto", "dop853")])
def test_stepper_is_advance(name, formulation, method):
    m = model(name)
    st = Settings(formulation=formulation, method=method, rtol=1e-8, atol=1e-10, step=2e-3)
    step = stepper(m, st)
    a = b = initial_state(m, st)
    u = np.linspace(0.1, 0.3, len(m.inputs))
    for k in range(1, 6):
        a = advance(m, a, 0.013 * k, u, st)
        b = step(b, 0.013 * k, u)
        assert a.t == b.t and a.h == b.h and a.coords == b.coords
        np.testing.assert_array_equal(a.q, b.q)
        np.testing.assert_array_equal(a.qd, b.qd)
        assert not b.q.flags.writeable and not b.qd.flags.writeable
        assert a.extra == b.extra
    assert step(b, b.t, u) is b
    with pytest.raises(InputError, match="before the current time"):
        step(b, b.t - 0.1, u)
    with pytest.raises(InputError, match="finite"):
        step(b, float("inf"), u)


@pytest.mark.parametrize("method", ["rk4", "dop853"])
def test_stepper_keeps_the_step_budget(method):
    """settings.max_steps (an FMU's solver.max_steps) stops a step as advance() does."""
    m = model("double_pendulum")
    st = Settings(method=method, step=1e-4, max_steps=3)
    s0 = initial_state(m, st)
    for f in (lambda s, t: advance(m, s, t, np.zeros(2), st),
              lambda s, t, step=stepper(m, st): step(s, t, np.zeros(2))):
        with pytest.raises(IntegrationError, match="more than 3 integrator steps"):
            f(s0, 5.0)
    s1 = advance(m, s0, 1e-4, np.zeros(2), st)
    np.testing.assert_array_equal(stepper(m, st)(s0, 1e-4, np.zeros(2)).q, s1.q)


def test_stepper_failure_keeps_the_state():
    """A step the kernel cannot complete raises and leaves the given state as it was."""
    m = model("double_pendulum")
    step = stepper(m, Settings(method="rk4", step=1e-3))
    s0 = initial_state(m)
    q0 = s0.q.copy()
    with pytest.raises(IntegrationError):
        step(s0, 1.0, np.array([1e300, 0.0]))
    np.testing.assert_array_equal(s0.q, q0)
    s1 = step(s0, 0.01, np.zeros(2))
    np.testing.assert_array_equal(s1.q, advance(m, s0, 0.01, np.zeros(2),
                                                Settings(method="rk4", step=1e-3)).q)
