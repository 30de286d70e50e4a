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
from fmu_mb.engine import tableaus as T
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


#: what the first step of a planar open tree does not need, so never imports (prefixes):
#: scipy (~250 ms), plots, numpy.ma (~10 ms; np.unique and the set functions import it), the
#: tools, simulate() and inverse dynamics, the impact code of contact models (and
#: contacts.py), the formulations not chosen and the spatial package, but for the builder
#: methods of spatial models (SpatialItems, a base of ModelBuilder, with its rotations)
NOT_NEEDED = ("scipy", "matplotlib", "numpy.ma", "fmu_mb.tools", "fmu_mb.dynamics.simulate",
              "fmu_mb.dynamics.inverse", "fmu_mb.dynamics.impact",
              "fmu_mb.dynamics.impact_minimal", "fmu_mb.mechanics.contacts",
              "fmu_mb.engine.spatial_kernel", "fmu_mb.fmi.build", "fmu_mb.fmi.packaging",
              "fmu_mb.fmi.controller", "fmu_mb.mechanics.spatial.")
FORMULATIONS_NOT_CHOSEN = ("newton_euler", "tmt", "lagrange", "minimal", "_spatial_tmt", "dae")
SPATIAL_BUILDER = ("fmu_mb.mechanics.spatial.builder", "fmu_mb.mechanics.spatial.rotations")


def not_needed(modules):
    """The modules of `modules` that a planar open tree's first step should not import."""
    prefixes = NOT_NEEDED + tuple(f"fmu_mb.dynamics.formulations.{f}"
                                  for f in FORMULATIONS_NOT_CHOSEN)
    return sorted(m for m in modules if m not in SPATIAL_BUILDER
                  and any(m == p or m.startswith(p if p.endswith(".") else p + ".")
                          for p in prefixes))


CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import fmu_mb
bare = sorted(k for k in sys.modules if k.startswith("fmu_mb"))
from fmu_mb import ModelBuilder, initial_state, advance
from fmu_mb.dynamics.outputs import Outputs
from fmu_mb.fmi.slave import module_from_source
path = sys.argv[1] + "/models/double_pendulum.py"
m = module_from_source("startup_double_pendulum", path, open(path).read()).build()
s = advance(m, initial_state(m), 0.01, [0.1, 0.0])
out = Outputs(m, s, m.input_vector(None))
angles = [out.value(i) for i in range(4)]
print(json.dumps({"modules": sorted(sys.modules), "bare": bare, "file": fmu_mb.__file__,
                  "coords": s.coords}))
"""


def test_an_open_tree_is_built_and_stepped_with_only_what_it_needs():
    """What an FMU of a planar open tree does up to its first outputs (import fmu_mb and the
    FMU slave, build the model from its source, step in the kernel, read outputs) imports
    neither scipy (~250 ms) nor anything else of NOT_NEEDED; `import fmu_mb` alone loads only
    the package's base modules. Run in a fresh interpreter."""
    p = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert Path(out["file"]).parent == ROOT / "fmu_mb"
    assert out["coords"] == "joint"
    assert out["bare"] == ["fmu_mb", "fmu_mb.errors", "fmu_mb.units"]
    mods = set(out["modules"])
    assert {"fmu_mb.dynamics.formulations.recursive", "fmu_mb.engine.kernel",
            "fmu_mb.mechanics.builder", "numpy"} <= mods         # the check sees the path
    assert not_needed(mods) == []


def test_not_needed_can_fail():
    assert not_needed(["scipy.linalg", "fmu_mb.mechanics.spatial.tree", "fmu_mb.tools.viz",
                       "fmu_mb.dynamics.formulations.tmt", "fmu_mb.mechanics.spatial.builder",
                       "fmu_mb.dynamics.formulations.recursive", "matplotlib",
                       "fmu_mb.dynamics.impact_minimal"]) == [
        "fmu_mb.dynamics.formulations.tmt", "fmu_mb.dynamics.impact_minimal",
        "fmu_mb.mechanics.spatial.tree", "fmu_mb.tools.viz", "matplotlib", "scipy.linalg"]


FMU_CHILD = r"""
import json, sys
from fmpy import read_model_description
from fmpy.fmi2 import FMU2Slave
md = read_model_description(sys.argv[1])
s = FMU2Slave(guid=md.guid, unzipDirectory=sys.argv[2],
              modelIdentifier=md.coSimulation.modelIdentifier, instanceName="startup")
s.instantiate()
s.setupExperiment(startTime=0.0)
s.enterInitializationMode()
s.exitInitializationMode()
s.doStep(currentCommunicationPoint=0.0, communicationStepSize=1e-3)
print(json.dumps({"modules": sorted(sys.modules), "file": sys.modules["fmu_mb"].__file__}))
"""


@pytest.mark.fmu
def test_instantiating_an_fmu_imports_only_what_its_first_step_needs(tmp_path, shared_fmu):
    """The default-built double pendulum FMU in fmpy, instantiate .. first doStep in a fresh
    process: fmu_mb comes from the FMU's resources/ and loads nothing of NOT_NEEDED (the
    start-up time itself is measured in bench/fmu_step.py, not here)."""
    pytest.importorskip("pythonfmu")
    pytest.importorskip("fmpy")
    import zipfile

    fmu = shared_fmu(ROOT / "models" / "double_pendulum.py", "python")
    unzipped = tmp_path / "unzipped"
    zipfile.ZipFile(fmu).extractall(unzipped)
    p = subprocess.run([sys.executable, "-c", FMU_CHILD, str(fmu), str(unzipped)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert Path(out["file"]) == unzipped / "resources" / "fmu_mb" / "__init__.py"
    mods = set(out["modules"])
    assert {"fmu_mb.dynamics.formulations.recursive", "fmu_mb.fmi.slave", "pythonfmu"} <= mods
    assert not_needed(mods) == []
    assert "pythonfmu.builder" not in mods          # packaging.LAZY_PYTHONFMU_INIT


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


SPATIAL_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from fmu_mb import initial_state, advance
from fmu_mb.dynamics.outputs import Outputs
from fmu_mb.fmi.slave import module_from_source
path = sys.argv[1] + "/models/heavy_top.py"
m = module_from_source("startup_heavy_top", path, open(path).read()).build()
s = advance(m, initial_state(m), 0.01, None)
out = Outputs(m, s, m.input_vector(None))
values = [out.value(i) for i in range(3)]
print(json.dumps({"modules": sorted(sys.modules), "spatial": m.spatial}))
"""


def test_a_spatial_model_with_an_orientation_starts_without_scipy():
    """The heavy top (a body placed by Cardan angles: rotations.cardan and
    from_matrix) built from its source, stepped and read in a fresh interpreter imports no
    scipy (it did through scipy.spatial.transform: ~200 ms of a spatial FMU's start-up)."""
    p = subprocess.run([sys.executable, "-c", SPATIAL_CHILD, str(ROOT)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["spatial"]
    mods = set(out["modules"])
    assert "fmu_mb.mechanics.spatial.rotations" in mods
    assert sorted(m for m in mods if m == "scipy" or m.startswith("scipy.")) == []


def test_cardan_and_from_matrix_agree_with_scipy():
    """The numpy versions of rotations.cardan and from_matrix against scipy's Rotation
    (intrinsic XYZ), including the branches of Shepperd's method (180 degree turns)."""
    from scipy.spatial.transform import Rotation

    from fmu_mb.mechanics.spatial.rotations import cardan, from_matrix, matrix

    def scipy_quat(r):
        x, y, z, w = r.as_quat()
        q = np.array([w, x, y, z])
        return q if w >= 0 else -q

    rng = np.random.default_rng(24)
    angles = list(rng.uniform(-4.0, 4.0, (200, 3))) + [
        (np.pi, 0.0, 0.0), (0.0, np.pi, 0.0), (0.0, 0.0, np.pi), (0.3, -1.2, 2.9)]
    for a in angles:
        r = Rotation.from_euler("XYZ", a)
        q = cardan(*a)
        np.testing.assert_allclose(matrix(q[None])[0], r.as_matrix(), atol=1e-15)
        np.testing.assert_allclose(from_matrix(r.as_matrix()), scipy_quat(r), atol=1e-15)
        assert q[0] >= 0.0 and abs(np.linalg.norm(q) - 1.0) < 1e-15


ADAPTER_CHILD = """
import json, sys
from pathlib import Path
from fmu_mb.fmi.slave import MultibodySlave
path = Path(sys.argv[1]) / "models" / (sys.argv[2] + ".py")
cls = type("startup_" + sys.argv[2], (MultibodySlave,), dict(
    model_module="startup_" + sys.argv[2] + "_model", model_filename=path.name,
    model_source=path.read_text(), build_overrides={}, experiment={}))
s = cls(instance_name="startup", resources=None)
s.enter_initialization_mode()
s.exit_initialization_mode()
s.do_step(0.0, 0.001)
values = s.get_real(list(range(30)))
print(json.dumps({"modules": sorted(sys.modules)}))
"""


@pytest.mark.parametrize("name", ["double_wishbone", "bricard"])
def test_a_spatial_python_fmu_with_large_assembly_starts_without_scipy(name):
    """A spatial Python FMU whose assembly solves more than linalg.SMALL
    rows (the double wishbone's 27, Bricard's) instantiates, initialises, steps and reads its
    outputs without importing scipy (its start values' assembly solves with numpy)."""
    p = subprocess.run([sys.executable, "-c", ADAPTER_CHILD, str(ROOT), name], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    mods = set(json.loads(p.stdout.strip().splitlines()[-1])["modules"])
    assert sorted(m for m in mods if m == "scipy" or m.startswith("scipy.")) == []
