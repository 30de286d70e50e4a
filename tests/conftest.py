"""Shared fixtures: model files and small hand-made models."""
from pathlib import Path

import pytest

from fmpy_logger import restore_fmpy_logger
from fmu_mb import Motion, ModelBuilder, harmonic, load_model, rod_inertia

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
MODEL_FILES = sorted(p for p in MODELS.glob("*.py") if not p.name.startswith("_"))


@pytest.fixture(autouse=True)
def _fmpy_logger_restored():
    """After every test: fmpy's process-wide logger back on fmpy's printLogMessage
    (fmpy_logger.py), so that a test's simulate_fmu(logger=...) or its own logging callbacks
    cannot catch (or crash on) the log lines of the FMUs of later tests. Free when the test
    did not load fmpy's logging library."""
    yield
    restore_fmpy_logger()


def model(name, **overrides):
    return load_model(MODELS / f"{name}.py", **overrides)


def zoo(**overrides):
    """One of every joint, drive and element type, for derivative checks."""
    mb = ModelBuilder("zoo", overrides, gravity=(0.3, -9.81))
    k = mb.param("k", 50.0, "N/m", "spring stiffness")
    b1 = mb.body("b1", mass=2.0, inertia=rod_inertia(2.0, 1.0))
    b2 = mb.body("b2", mass=1.0, inertia=0.05)
    b3 = mb.body("b3", mass=0.7, inertia=0.02)
    b4 = mb.body("b4", mass=0.4, inertia=0.01, position=(0.2, -1.2))
    mb.revolute("R", mb.ground, b1, parent_point=(0.1, 0.2), child_point=(-0.5, 0.05))
    mb.prismatic("P", b1, b2, axis=(0.8, 0.6), parent_point=(0.2, 0.0),
                 child_point=(-0.1, 0.03), angle0=0.3)
    mb.weld("W", b2, b3, parent_point=(0.15, 0.0), child_point=(-0.05, 0.02), angle0=-0.4)
    mb.distance("L", b1, b4, length=0.8, parent_point=(0.3, 0.0), child_point=(0.0, 0.1))
    mb.drive("spin", "R", harmonic(0.2, 0.5, offset=0.4))
    mb.tsda("spring", b1, b4, a_point=(-0.2, 0.1), b_point=(0.05, 0.0), stiffness=k,
            free_length=0.5, damping=0.7)
    mb.tsda("ground_spring", mb.ground, b4, a_point=(1.0, 0.0), stiffness=20.0,
            free_length=0.3, damping=0.2)
    mb.rsda("twist", b1, b4, stiffness=3.0, free_angle=0.2, damping=0.1)
    mb.force("push", b4, point=(0.02, 0.01), direction=(0.0, 1.0), frame="body", value=1.5)
    mb.force("wind", b2, direction=(1.0, 1.0), value=0.5)
    mb.torque("motor", b3, reaction=b1, value=0.25)
    mb.point("tip", b3, (0.1, -0.05))
    mb.initial("P", value=0.25, rate=0.1)
    return mb.build()


def python_drive(**overrides):
    """A pendulum whose joint follows a Motion of arbitrary Python functions (the compiled
    kernel cannot evaluate it: recursive refuses it, auto runs newton_euler)."""
    mb = ModelBuilder("python_drive", overrides, gravity=(0.0, -9.81))
    rod = mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, 1.0))
    mb.revolute("A", mb.ground, rod, child_point=(-0.5, 0.0))
    mb.drive("turn", "A", Motion(lambda t: 0.3 * t * t, lambda t: 0.6 * t, lambda t: 0.6))
    return mb.build()


@pytest.fixture
def zoo_model():
    return zoo()


@pytest.fixture(scope="session")
def session_fmus(tmp_path_factory):
    """build(model_file, fmi=2, kind=None, **overrides) -> path of its FMU (FMI 2.0 or 3.0,
    kind None/"native"/"python" as fmu-mb build), each built once per test session (thread
    safe: callers may build in parallel); None for an FMI 3.0 FMU of a model that runs only in
    Python. Native FMUs carry this machine's binary only (the tests run it)."""
    import threading

    from fmu_mb.errors import FmuMbError
    from fmu_mb.fmi.native_build import build_model_fmu
    from fmu_mb.fmi.native_fmi3 import build_model_fmu3

    root = tmp_path_factory.mktemp("session_fmus")
    done, locks, guard = {}, {}, threading.Lock()

    def build(model_file, fmi=2, kind=None, **overrides):
        key = (str(model_file), fmi, kind, tuple(sorted(overrides.items())))
        with guard:
            lock = locks.setdefault(key, threading.Lock())
            out = root / f"b{len(locks)}"
        with lock:
            if key not in done:
                out.mkdir(exist_ok=True)
                try:
                    done[key] = (build_model_fmu3(model_file, out, overrides, kind,
                                                  platforms="x86_64-linux")[0]
                                 if fmi == 3 else
                                 build_model_fmu(model_file, out, overrides, kind=kind,
                                                 platforms="linux64")[0])
                except FmuMbError as exc:
                    if not (fmi == 3 and "FMI 3.0 FMUs are" in str(exc)):
                        raise
                    done[key] = None
            return done[key]
    return build


#: modules whose tests build FMUs, run them in FMI importers or drive a browser, besides those
#: marked `fmu` in the module itself: `python -m pytest -m "not slow and not fmu"` leaves
#: them out (the README's quick subset)
FMU_MODULES = {"test_import_fmu.py", "test_shape_fmu.py", "test_params_sound.py",
               "test_params_property.py", "test_view.py", "test_docs.py", "test_startup.py",
               "test_validate_all.py", "test_controller.py", "test_excavator.py",
               "test_assembly_declared.py", "test_auto.py", "test_suspensions.py",
               "test_assembly_retry.py", "test_defects_small.py", "test_shape_pairs.py",
               "test_friction_joints.py", "test_couplers.py", "test_armature_energy.py",
               "test_import_reactions.py",
               "test_planar_friction_c.py"}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in FMU_MODULES:
            item.add_marker(pytest.mark.fmu)
