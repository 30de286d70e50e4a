"""Shared fixtures: model files and small hand-made models."""
import os
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


def same_outputs(r, ref, tol=1e-9):
    """Every output of the result r (a structured array, time first) equals ref's to tol
    relative to max(1, max |ref|) of that output."""
    import numpy as np
    for n in ref.dtype.names[1:]:
        err = np.abs(r[n] - ref[n]).max() / max(1.0, np.abs(ref[n]).max())
        assert err <= tol, (n, err)


def engine_equals(eng, ref, dt, tol=1e-9):
    """The initialised engine eng (fmu_mb.engine.engine.Engine: the native FMU's code),
    stepped by dt, against the outputs ref (a structured array, time first): every output at
    every point to tol relative to max(1, max |ref|) of that output."""
    import numpy as np
    names = list(ref.dtype.names[1:])
    for k in range(ref.shape[0]):
        if k:
            eng.do_step(dt)
        out = eng.outputs()
        for j, n in enumerate(names):
            assert abs(out[j] - ref[n][k]) <= tol * max(1.0, np.abs(ref[n]).max()), (n, k)


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


@pytest.fixture(scope="module")
def me_host(tmp_path_factory):
    """The project's model-exchange host tests/c_host/me_host.c, compiled."""
    import shutil
    import subprocess
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    exe = tmp_path_factory.mktemp("me_host") / "me_host"
    subprocess.run([cc, "-O2", "-o", str(exe), str(ROOT / "tests" / "c_host" / "me_host.c"),
                    "-ldl", "-lm"], check=True)
    return exe


def host_run(me_host, path, method, stop, h, names, tmp_path):
    """me_host `run` on the FMU path with the outputs names: (rows t, y... at the multiples
    of h, event times)."""
    import subprocess
    import zipfile

    import numpy as np
    from fmpy import read_model_description
    md = read_model_description(path)
    folder = tmp_path / f"x_{method}_{h:g}"
    zipfile.ZipFile(path).extractall(folder)
    # the Integer variables' references with the prefix i (read by fmi2GetInteger)
    vr = {v.name: ("i" if v.type == "Integer" else "") + str(v.valueReference)
          for v in md.modelVariables}
    env = dict(os.environ, ME_NX=str(len(md.derivatives)),
               ME_NZ=str(md.numberOfEventIndicators))
    out = subprocess.run([str(me_host), "run", str(folder), md.guid,
                          md.modelExchange.modelIdentifier, method, repr(stop), repr(h),
                          ",".join(vr[n] for n in names)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows, events = [], []
    for line in out.stdout.splitlines():
        if line.startswith("event,"):
            events.append(float(line.split(",")[1]))
        else:
            rows.append([float(v) for v in line.split(",")])
    return np.array(rows), events


@pytest.fixture
def zoo_model():
    return zoo()


@pytest.fixture(scope="session")
def shared_build(tmp_path_factory):
    """shared_build(key, make) -> make(folder)'s result (a path inside folder, or None), made
    once per test run for each key (a string): the pytest-xdist workers share one folder
    (the parent of their base temporary folders) and take a file lock per key, so an FMU that
    several modules or both workers use is built once. A make that raises is not cached (the
    next caller tries again and gets the same error). Callers must not change what they get:
    they extract or copy it into their own tmp_path."""
    import fcntl
    import hashlib
    import threading

    root = _shared_root(tmp_path_factory)
    locks, guard = {}, threading.Lock()

    def get(key, make):
        folder = root / hashlib.sha1(key.encode()).hexdigest()[:16]
        with guard:
            lock = locks.setdefault(key, threading.Lock())
        with lock, open(root / f"{folder.name}.lock", "w") as fd:
            fcntl.flock(fd, fcntl.LOCK_EX)     # released when fd closes
            done = folder / "result.txt"
            if not done.exists():
                folder.mkdir(exist_ok=True)
                out = make(folder / "out")
                done.write_text("" if out is None else
                                str(Path(out).relative_to(folder)), encoding="utf-8")
            rel = done.read_text(encoding="utf-8")
            return folder / rel if rel else None
    return get


def _shared_root(tmp_path_factory):
    """The folder the pytest-xdist workers share for this test run (the parent of their base
    temporary folders; the base temporary folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared_builds"
    root.mkdir(exist_ok=True)
    return root


def _compile_jobs(fmu_objects):
    """[(what, callable)] that compile what the tests load or link and is not compiled yet:
    the in-process libraries (the planar and spatial kernels, the engine library: compiled
    beside their sources) and, with fmu_objects, the native FMUs' cached objects (the engine's
    sources and the FMI 2.0 and 3.0 fronts for every platform a toolchain builds)."""
    from fmu_mb.engine import engine, kernel, spatial_kernel
    jobs = []
    folder = kernel._cache_dirs()[0]
    src = engine.sources()
    # the longest first: the engine library (the engine's sources and both kernels)
    for source, extra, defines in ((src[0], tuple(src[1:]),
                                    ("MBE_HAVE_PARAMS",) if src[-1].name == "params.c" else ()),
                                   (None, (), ()), (spatial_kernel.SOURCE, (), ())):
        name = kernel.library_name(source, extra)
        if not any((d / name).is_file() for d in kernel._cache_dirs()):
            jobs.append((name, lambda s=source, e=extra, d=defines:
                         kernel.build_library(folder, s, e, d)))
    if not fmu_objects:
        return jobs
    from fmu_mb.fmi import native_platforms as npl
    from fmu_mb.fmi.native_build import FRONT_SOURCE, engine_sources
    from fmu_mb.fmi.native_fmi3 import FMI3_FRONT
    sources, defines = engine_sources()
    cache = npl.cache_dir()
    fronts, chains = [], {}
    for fmi, front in ((2, FRONT_SOURCE), (3, FMI3_FRONT)):
        for cs in npl.select(fmi)[0].values():
            for chain in cs:
                chains[chain.target.name] = chain
                fronts.append((f"{front.name} for {chain.target.name}", lambda c=chain, f=front:
                               npl.front_object(c, f, defines, cache)))
    # zig builds a target's C library and compiler runtime on its first link into a shared
    # library and keeps them in its own cache (MinGW's: about 90 s CPU, one process): linked
    # here first, longest first, rather than by the first test that builds an FMU for the
    # target while another test's link of the same target waits for zig's cache lock
    links = [(f"zig's libraries for {chain.target.name}",
              lambda c=chain: _link_once(c, npl._run))
             for chain in sorted(chains.values(), key=lambda c: c.target.format != "pe")
             if chain.kind == "zig"]
    for chain in chains.values():
        for source, obj in npl.engine_objects(chain, sources, defines, cache):
            if not obj.is_file():
                jobs.append((f"{source.name} for {chain.target.name}",
                             lambda c=chain, s=source, o=obj: npl._compile_object(
                                 c, s, o, defines, [npl.ENGINE_DIR],
                                 f"compiling {s.name} for {c.target.name}")))
    return links + jobs + fronts


def _link_once(chain, run):
    """A one-function shared library linked for the chain's target, as a native FMU's binary is
    linked (its flags), in a temporary folder."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="fmu_mb_link_") as tmp:
        folder = Path(tmp)
        (folder / "one.c").write_text('__attribute__((visibility("default"))) '
                                      "double fmi2One(double x) { return 2.0 * x; }\n")
        exports = folder / "exports.map"
        exports.write_text("{\n  global: fmi2*;\n  local: *;\n};\n")
        run([*chain.command, *chain.cflags, str(folder / "one.c"), "-o",
             str(folder / f"one{chain.target.ext}"), *chain.ldflags(exports, "one")],
            f"linking a shared library for {chain.target.name}", cwd=folder)


@pytest.fixture(scope="session", autouse=True)
def _compiled_once(request, tmp_path_factory):
    """Under pytest-xdist: the compiled code that many tests need (_compile_jobs) compiled
    once per test run before the first test, by one worker on every core while the others
    wait (a file lock), so that workers starting on a fresh checkout or after a change of the
    engine's sources do not each compile the same libraries and objects. Nothing without
    xdist (one process compiles everything once anyway); a job that fails is left to the
    tests that need it (they report the error)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    import fcntl
    from concurrent.futures import ThreadPoolExecutor
    root = _shared_root(tmp_path_factory)
    with open(root / "compiled_once.lock", "w") as fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = root / "compiled_once.done"
        if done.exists():
            return
        try:
            jobs = _compile_jobs(getattr(request.config, "_fmu_tests", False))
        except Exception:                  # an engine or build layout this does not know
            jobs = []
        with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            for f in [pool.submit(job) for _, job in jobs]:
                try:
                    f.result()
                except Exception:
                    pass
        done.write_text("\n".join(what for what, _ in jobs), encoding="utf-8")


@pytest.fixture(scope="session")
def session_fmus(shared_build):
    """build(model_file, fmi=2, kind=None, **overrides) -> path of its FMU (FMI 2.0 or 3.0,
    kind None/"native"/"python" as fmu-mb build), each built once per test run (shared_build:
    thread safe, shared by the xdist workers); None for an FMI 3.0 FMU of a model that runs
    only in Python. Native FMUs carry this machine's binary only (the tests run it)."""
    from fmu_mb.errors import FmuMbError
    from fmu_mb.fmi.native_build import build_model_fmu
    from fmu_mb.fmi.native_fmi3 import build_model_fmu3

    def build(model_file, fmi=2, kind=None, **overrides):
        def make(out):
            try:
                return (build_model_fmu3(model_file, out, overrides, kind,
                                         platforms="x86_64-linux")[0]
                        if fmi == 3 else
                        build_model_fmu(model_file, out, overrides, kind=kind,
                                        platforms="linux64")[0])
            except FmuMbError as exc:
                if not (fmi == 3 and "FMI 3.0 FMUs are" in str(exc)):
                    raise
                return None
        key = repr(("session_fmus", str(Path(model_file).resolve()), fmi, kind,
                    sorted(overrides.items())))
        return shared_build(key, make)
    return build


@pytest.fixture(scope="session")
def shared_fmu(shared_build):
    """shared_fmu(model_file, how, overrides=None) -> path of the FMU that `how` builds, once
    per test run (shared_build): how is "python" (fmu_mb.fmi.build.build_fmu), "native" or
    "native3" (build_native_fmu / build_native_fmu3 with every platform a toolchain builds)."""
    def build(model_file, how, overrides=None):
        overrides = dict(overrides or {})

        def make(out):
            if how == "python":
                from fmu_mb.fmi.build import build_fmu
                return build_fmu(model_file, out, overrides)
            if how == "native":
                from fmu_mb.fmi.native_build import build_native_fmu
                return build_native_fmu(model_file, out, overrides)
            if how == "native3":
                from fmu_mb.fmi.native_fmi3 import build_native_fmu3
                return build_native_fmu3(model_file, out, overrides)
            raise ValueError(f"shared_fmu: how {how!r} is not python, native or native3")
        key = repr(("shared_fmu", str(Path(model_file).resolve()), how,
                    sorted(overrides.items())))
        return shared_build(key, make)
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
               "test_planar_friction_c.py", "test_model_exchange_friction.py",
               "test_shape_pairs_native.py", "test_joint_friction_native.py",
               "test_robot_friction_native.py", "test_limit_friction.py"}


#: the longest tests of the default run that are their own pytest-xdist work unit (measured,
#: each > ~10 s on a quiet machine), by node id without the "tests/" folder: collected first,
#: so that pytest-xdist starts them early and the run does not end on one of them while the
#: other worker idles. (--dist loadgroup sends the xdist_group units first, the largest
#: first: a test of a group is placed by its group, not by this list.)
LONG_FIRST = (
    "test_docs.py::test_code_blocks_run[README.md]",
    "test_native_fmu.py::test_sources_listed_in_the_model_description_make_the_same_binary",
    "test_examples.py::test_excavator_digging_tracks_its_path_in_both_masters",
    "test_planar_friction_c.py::test_compiled_loop_equals_the_python_loop_with_rk4",
    "test_friction_joints.py::test_swing_deck_loop_native_fmu",
    "test_shape_pairs.py::test_ball_on_the_table_slips_then_rolls_at_five_sevenths",
    "test_sweep.py::test_sweep_build_animate_show_progress",
    "test_friction_c_loop.py::test_rolling_ball",
    "test_examples.py::test_closed_loop_reaches_goal_in_both_masters",
    "test_recursive.py::test_library_is_built_in_the_cache_named_by_the_source_hash",
    "test_reduction.py::test_reduction_and_classical_agree",
    "test_view.py::test_docs_screenshot",
    "test_validation_page.py::test_the_generator_prints_a_table",
    "test_viz.py::test_animation_has_the_expected_number_of_frames",
    "test_planar_pairs.py::test_rectangle_tumbling_onto_a_rectangle_never_gains_energy",
    "test_rim.py::test_compiled_loop_equals_the_python_loop",
    "test_planar_pairs_native.py::test_compiled_loop_equals_the_python_loop",
    "test_view.py::test_start_pose_in_the_browser",
    "test_joint_friction.py::test_a_swinging_pendulum_balances_its_energy",
    "test_limit_friction.py::test_the_z1_in_its_default_pose_rests_on_its_stops",
)

_ONCE = {}


def once(key, make):
    """make()'s result, computed once per process for the key (a hashable): a reference that
    several tests or parameters compare with. Tests that share one carry the same
    pytest.mark.xdist_group, so that pytest-xdist (--dist loadgroup) runs them on one worker
    and the reference is computed once per run. Callers must not change what they get."""
    if key not in _ONCE:
        _ONCE[key] = make()
    return _ONCE[key]


def _shared_references(item):
    """The module- or class-scoped fixtures named *_reference that the test uses: reference
    runs (a Python loop, seconds each) that several tests of the module compare with."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs if info is not None else {}
    return sorted(n for n in getattr(item, "fixturenames", ()) if n.endswith("_reference")
                  and n in defs and defs[n][-1].scope in ("module", "class"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in FMU_MODULES:
            item.add_marker(pytest.mark.fmu)
        # the tests of one *_reference fixture on one pytest-xdist worker (--dist loadgroup),
        # so that the reference is computed once per run, not once per worker
        for name in _shared_references(item):
            item.add_marker(pytest.mark.xdist_group(f"{item.path.stem}.{name}"))
    # the long tests first, longest first (a stable sort: the rest keeps pytest's order);
    # every worker collects the same order, as pytest-xdist requires
    root = Path(__file__).resolve().parent

    def rank(item):
        rel = item.path.relative_to(root).as_posix() + "::" + item.name
        return next((k for k, long in enumerate(LONG_FIRST) if rel.startswith(long)),
                    len(LONG_FIRST))
    items.sort(key=rank)


#: a run of at least this many tests with some that build FMUs compiles the native FMUs'
#: objects for every platform first (_compiled_once); a smaller run compiles what it needs
WARM_FMU_OBJECTS = 300


def pytest_collection_finish(session):
    """Whether the tests selected make _compiled_once compile the native FMUs' objects."""
    items = session.items
    session.config._fmu_tests = (len(items) >= WARM_FMU_OBJECTS and
                                 any(item.get_closest_marker("fmu") for item in items))
