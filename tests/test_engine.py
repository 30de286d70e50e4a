"""The engine library (fmu_mb/engine/native/engine.c behind engine.h) against today's Python
path: for every model in models/ that the compiled engine runs (planar contact models
included: the event loop of events.c, its impact records part of the engine state), the initial
state it assembles in C equals fmu_mb.dynamics.integrate.initial_state, its communication
steps equal the recursive formulation's co-simulation stepper bit for bit (the same kernel
code on the same arrays), and its outputs equal fmu_mb.dynamics.outputs.Outputs (formulation
'recursive') to 1e-10 relative at several states with nonzero inputs. Plus what the C API
promises: refused states and steps change nothing, several engines in threads agree, corrupt
model data are refused with a message, and the tableaus and data layout agree with Python;
a step that ends at the first impact (FMI 3.0's early return) gives plain steps' impacts."""
import re
import threading
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from fmu_mb.dynamics.integrate import Settings, initial_state, stepper
from fmu_mb.dynamics.outputs import Outputs, output_names
from fmu_mb.engine import tableaus
from fmu_mb.engine.data import ARRAYS, EVENT_SETTINGS, HEAD, model_data, supported
from fmu_mb.engine.engine import RECORD, Engine
from fmu_mb.errors import InputError, IntegrationError
from fmu_mb.mechanics.loader import load_model

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / "fmu_mb" / "engine" / "native"
SETTINGS = Settings(formulation="recursive")


@lru_cache(maxsize=None)
def model(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_model(ROOT / "models" / f"{name}.py")


def engine_models():
    out = []
    for path in sorted((ROOT / "models").glob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = load_model(path)
        if supported(m) is None:
            out.append(path.stem)
    return out


ENGINE_MODELS = engine_models()


def python_outputs(m, state, u):
    """Today's Python outputs (fmu_mb.dynamics.outputs.Outputs without the engine)."""
    return Outputs(m, state, u, "recursive", compiled=False).values()


def inputs(m, k=0):
    return np.array([0.3 * (-1) ** i + 0.1 * k for i in range(len(m.inputs))], dtype=float)


def close_rel(a, b, tol, names=None, scale=1.0):
    d = np.abs(a - b) / np.maximum(scale, np.abs(b))
    if not np.all(d <= tol):
        i = int(np.nanargmax(np.where(np.isnan(d), np.inf, d)))
        where = names[i] if names else i
        raise AssertionError(f"{where}: {a[i]!r} != {b[i]!r} (relative {d[i]:.3g} > {tol})")


def test_engine_runs_the_planar_and_spatial_models_and_planar_contacts():
    planar = {"container_crane", "container_crane_driven", "double_pendulum", "four_bar",
              "hinged_body_spring", "n_four_bar", "pendulum_chain", "slider_crank"}
    spatial = {"bricard", "double_wishbone", "five_point_suspension", "heavy_top",
               "spatial_chain", "tumbling_box"}
    assert planar | spatial | set(CONTACT_MODELS) <= set(ENGINE_MODELS)
    # the Reduction Method's passes stay in Python
    assert "singular_pendulum" not in ENGINE_MODELS
    with pytest.raises(InputError, match="Reduction Method"):
        model_data(model("singular_pendulum"))


CONTACT_MODELS = ["bouncing_ball", "slider_crank_stop", "newtons_cradle", "pendulum_wall",
                  "falling_rod", "excavator"]


def test_event_settings_are_the_python_fmus():
    s = Settings()
    assert EVENT_SETTINGS == (s.contact_tol, s.contact_velocity, s.event_tol)


@pytest.mark.parametrize("name,steps", [("bouncing_ball", 150), ("slider_crank_stop", 100),
                                        ("newtons_cradle", 60), ("pendulum_wall", 100),
                                        ("falling_rod", 150), ("excavator", 20)])
def test_engine_contacts_equal_the_recursive_event_loop(name, steps):
    """Planar contact models: the engine's steps (events.c's loop behind mbe_do_step) give
    the in-process recursive path's states, impact records (times, impulses, energy lost,
    persistent contacts) and every output (gaps, forces, end stops, reactions while a
    contact holds) at each communication point."""
    m = model(name)
    eng = Engine(m)
    eng.set_settings(SETTINGS)
    eng.initialize(m.t0)
    ref = initial_state(m, SETTINGS)
    eng.load(ref)
    step, st, names = stepper(m, SETTINGS), ref, output_names(m)
    impacts = 0
    for k in range(steps):
        u = 2.0 * inputs(m, k)
        eng.do_step(0.01, u)
        st = step(st, st.t + 0.01, u)
        t, q, qd, h = eng.state
        assert t == st.t and h == st.h
        close_rel(q, st.q, 1e-12)
        close_rel(qd, st.qd, 1e-12)
        rec = np.array([[float(st.extra["contacts"][c.name][f]) for f in RECORD]
                        for c in m.contacts])
        close_rel(eng.records.reshape(-1), rec.reshape(-1), 1e-12)
        close_rel(eng.outputs(u), python_outputs(m, st, u), 1e-10, names)
        impacts = rec[:, 0].sum()
    if name != "excavator":
        assert impacts >= 1, "the run must contain impacts"


@pytest.mark.parametrize("name,steps,pars", [("tumbling_box", 150, {}),
                                             ("double_wishbone", 30, {"stops": "on"})])
def test_engine_spatial_contacts_equal_the_recursive_event_loop(name, steps, pars):
    """Spatial contact models: the engine's steps (spatial_events.c's loop behind
    mbe_do_step) give the in-process recursive path's states and impact records and every
    output (gaps, contact forces, reactions while a contact holds) at each communication
    point: the tumbling box with its 65 impacts, the double wishbone hitting its bump stop
    under a 100 mm road step (tyre.h = -k z_road from 0.05 s) and staying on it."""
    m = load_model(ROOT / "models" / f"{name}.py", **pars) if pars else model(name)
    eng = Engine(m)
    eng.set_settings(SETTINGS)
    eng.initialize(m.t0)
    ref = initial_state(m, SETTINGS)
    eng.load(ref)
    step, st, names = stepper(m, SETTINGS), ref, output_names(m)
    for k in range(steps):
        u = (m.input_vector({"tyre.h": -357859.232809 * (0.1 if k >= 5 else 0.0)})
             if m.inputs else np.zeros(0))
        eng.do_step(0.01, u)
        st = step(st, st.t + 0.01, u)
        t, q, qd, h = eng.state
        assert t == st.t and h == st.h
        close_rel(q, st.q, 1e-12)
        close_rel(qd, st.qd, 1e-12)
        rec = np.array([[float(st.extra["contacts"][c.name][f]) for f in RECORD]
                        for c in m.contacts])
        close_rel(eng.records.reshape(-1), rec.reshape(-1), 1e-12)
        close_rel(eng.outputs(u), python_outputs(m, st, u), 1e-10, names)
    assert rec[:, 0].sum() >= (60 if name == "tumbling_box" else 2)
    assert rec[:, 4].any()               # a persistent contact at the end (its force out)


def test_engine_early_return_stops_at_each_impact_with_the_same_times():
    """mbe_do_step_to_event: a step stops at the first impact; going on from there gives the
    impact times and impulses of plain steps (the bouncing ball's, falling rod's)."""
    for name in ("bouncing_ball", "falling_rod"):
        m = model(name)
        plain, early = Engine(m), Engine(m)
        for e in (plain, early):
            e.set_settings(SETTINGS)
            e.initialize(m.t0)
        last, t_end = {}, 1.5            # plain steps: the last impact of each step
        while plain.time < t_end - 1e-12:
            before = plain.records[:, 0].copy()
            plain.do_step(0.01)
            for i in np.flatnonzero(plain.records[:, 0] > before):
                last[(int(i), round(plain.time / 0.01))] = plain.records[i, 1:3].copy()
        seen, grid = {}, 1
        while early.time < t_end - 1e-12:   # a master going on to its next point after each
            t0 = early.time                 # early return
            if t0 >= grid * 0.01 - 1e-12:
                grid += 1
            before = early.records[:, 0].copy()
            if early.do_step_to_event(grid * 0.01 - t0):
                hit = np.flatnonzero(early.records[:, 0] > before)
                assert len(hit) >= 1 and t0 < early.time < grid * 0.01
                for i in hit:
                    assert early.records[i, 1] == early.time
                    seen[(int(i), grid)] = early.records[i, 1:3].copy()
            else:
                assert np.array_equal(early.records[:, 0], before)
                assert early.time == t0 + (grid * 0.01 - t0)
        np.testing.assert_array_equal(early.records[:, 0], plain.records[:, 0])
        assert plain.records[:, 0].sum() >= 2 and len(last) >= 2
        assert last.keys() == seen.keys()
        for key, (tb, pb) in last.items():
            ta, pa = seen[key]
            assert abs(ta - tb) <= 1e-12 and abs(pa - pb) <= 1e-12 * max(1.0, pb), key


def test_contact_records_are_state_and_checked():
    m = model("bouncing_ball")
    eng = Engine(m)
    eng.initialize(m.t0)
    for _ in range(60):
        eng.do_step(0.01)
    s = eng.get_state()
    n = eng.n
    assert s.shape == (2 * n + 2 + 5,) and s[2 * n + 2] >= 1      # an impact recorded
    for i, bad in [(0, 0.5), (0, -1.0), (2, -1.0), (3, np.nan), (4, 0.5), (1, np.inf)]:
        t = s.copy()
        t[2 * n + 2 + i] = bad
        with pytest.raises(InputError, match="record of contact 0"):
            eng.set_state(t)
        np.testing.assert_array_equal(eng.get_state(), s)
    other = Engine(m)
    other.initialize(m.t0)
    other.set_state(s)
    eng.do_step(0.3)
    other.do_step(0.3)
    np.testing.assert_array_equal(eng.get_state(), other.get_state())
    # a step that cannot finish (a budget of 2 integrator steps from the start, over the
    # first impact) is discarded and keeps the state, records included
    other.initialize(m.t0)
    other.set_state(np.concatenate([other.get_state()[:-5], [3.0, 0.1, 2.0, 0.5, 0.0]]))
    before = other.get_state()
    other.set_settings(Settings(formulation="recursive", max_steps=2))
    with pytest.raises(IntegrationError, match="budget"):
        other.do_step(0.6)
    np.testing.assert_array_equal(other.get_state(), before)


#: models whose joint reactions come out of a badly scaled multiplier solve, compared relative
#: to their largest output: Andrews' squeezer (masses of 4 to 70 g, inertias down to 4e-7
#: kg.m2, levers of 1 to 4 cm, reactions of some 300 N) gives its small reactions (G.fx =
#: -1.6 N at 0.03 s) to 1e-10 N, 5e-13 of the largest, not to 1e-10 of their own size
SCALED_OUTPUTS = {"andrews_squeezer"}


@pytest.mark.parametrize("name", ENGINE_MODELS)
def test_engine_matches_initial_state_steps_and_outputs(name):
    m = model(name)

    def close_outputs(a, b):
        close_rel(a, b, 1e-10, names, np.abs(b).max() if name in SCALED_OUTPUTS else 1.0)
    eng = Engine(m)
    assert eng.n_outputs == len(output_names(m))
    eng.set_settings(SETTINGS)
    eng.initialize(m.t0)
    ref = initial_state(m, SETTINGS)
    t, q, qd, h = eng.state
    assert t == ref.t and h == 0.0
    close_rel(q, ref.q, 1e-10)
    close_rel(qd, ref.qd, 1e-10)

    names = output_names(m)
    eng.load(ref)                   # from here on the same state bit for bit
    u = inputs(m)
    close_outputs(eng.outputs(u), python_outputs(m, ref, u))

    step = stepper(m, SETTINGS)
    st = ref
    for k in range(3):
        u = inputs(m, k)
        eng.do_step(0.01, u)
        st = step(st, st.t + 0.01, u)
        t, q, qd, h = eng.state
        assert t == st.t and h == st.h
        np.testing.assert_array_equal(q, st.q)          # bit-identical
        np.testing.assert_array_equal(qd, st.qd)
    close_outputs(eng.outputs(u), python_outputs(m, st, u))

    # a state off the trajectory: other rates (and coordinates of a planar open tree)
    rng = np.random.default_rng(1)
    dq = (0.0 if m.topology.cut_joints or m.spatial
          else 0.1 * rng.standard_normal(st.q.shape))
    other = type(st).make(st.t + 0.37, st.q + dq, st.qd + rng.standard_normal(st.qd.shape),
                          0.0, st.coords, st.extra)
    eng.load(other)
    u = -2.0 * inputs(m, 1)
    close_outputs(eng.outputs(u), python_outputs(m, other, u))


@pytest.mark.parametrize("name", ["four_bar", "container_crane_driven", "double_wishbone",
                                  "five_point_suspension", "driven_arm"])
def test_output_groups_compute_their_own_outputs(name):
    """mbe_outputs_groups: each group alone gives the same numbers as all of them, and
    leaves the other outputs untouched; the groups are those of the outputs' names."""
    from fmu_mb.engine import engine as E
    m = model(name)
    eng = Engine(m)
    eng.initialize()
    eng.do_step(0.01, inputs(m))
    groups = eng.output_groups()
    every = eng.outputs(inputs(m), E.ALL)
    for g in (E.BODIES, E.COORDS, E.ELEMENTS, E.MARKERS, E.ENERGY, E.REACTIONS, E.RESIDUALS,
              E.MOTION):
        y = eng.outputs(inputs(m), g)
        mine = (groups & g) != 0
        np.testing.assert_array_equal(y[mine], every[mine])
        assert np.isnan(y[~mine]).all()
    bodies = {b.name for b in m.bodies}
    joints_and_drives = {j.name for j in m.joints} | {d.name for d in m.drives}
    coordinates = ("angle", "rate", "position", "velocity", "angle1", "rate1", "angle2",
                   "rate2")
    for full, g in zip(output_names(m), groups):
        owner, what = full.rsplit(".", 1)
        if owner == "constraint":
            assert g == E.RESIDUALS, full
        elif owner == "energy":
            assert g == E.ENERGY, full
        elif owner in bodies:
            assert g == E.BODIES, full
        elif owner in joints_and_drives:
            assert g == (E.COORDS if what in coordinates else E.REACTIONS), full
        elif owner in {e.name for e in m.elements}:
            assert g == E.ELEMENTS, full
        else:
            assert g == E.MARKERS, full


def test_set_state_refuses_bad_values_and_changes_nothing():
    m = model("double_pendulum")
    eng = Engine(m)
    eng.initialize()
    eng.do_step(0.01, inputs(m))
    before = eng.get_state()
    n = eng.n
    for i, bad in ((0, np.nan), (1, np.inf), (1 + n, -np.inf), (2, 1e13), (2 * n + 1, -1.0),
                   (2 * n + 1, np.nan)):
        s = before.copy()
        s[i] = bad
        with pytest.raises(InputError, match="expected"):
            eng.set_state(s)
        np.testing.assert_array_equal(eng.get_state(), before)
    with pytest.raises(InputError, match="expected a state of"):
        eng.set_state(before[:-1])


def test_set_state_refuses_euler_parameters_that_are_no_rotation():
    m = model("heavy_top")                  # a spherical joint: q = Euler parameters
    eng = Engine(m)
    eng.initialize()
    before = eng.get_state()
    s = before.copy()
    s[1:5] = 0.0
    with pytest.raises(InputError, match="unit quaternion"):
        eng.set_state(s)
    np.testing.assert_array_equal(eng.get_state(), before)
    s[1:5] = 2.0 * before[1:5]
    with pytest.raises(InputError, match="unit quaternion"):
        eng.set_state(s)


def test_a_failed_step_keeps_the_state():
    m = model("four_bar")
    eng = Engine(m)
    eng.initialize()
    eng.do_step(0.01, inputs(m))
    before = eng.get_state()
    eng.set_settings(Settings(formulation="recursive", method="rk4", step=1e-4, max_steps=5))
    with pytest.raises(IntegrationError, match="budget.*state is kept"):
        eng.do_step(0.01, inputs(m))                    # 100 rk4 steps > 5
    np.testing.assert_array_equal(eng.get_state(), before)
    for h, u in ((-0.01, inputs(m)), (np.nan, inputs(m)), (0.01, [np.nan])):
        with pytest.raises(InputError, match="expected|must be"):
            eng.do_step(h, u)
        np.testing.assert_array_equal(eng.get_state(), before)
    with pytest.raises(InputError, match="rtol"):
        eng.set_settings(_bad_settings())              # (Settings itself refuses it)


def _bad_settings():
    class S:                       # what a master could pass through the C API
        method, rtol, atol, step, max_step, max_steps = "dop853", -1.0, 1e-9, 1e-3, 1.0, 0
        stabilization, baumgarte, projection_tol = "projection", (1.0, 1.0), 1e-12
    return S()


@pytest.mark.parametrize("name", ["slider_crank", "double_wishbone"])
def test_engines_in_threads_agree(name):
    m = model(name)
    results = [None] * 4

    def run(i):
        eng = Engine(m)
        eng.initialize()
        for k in range(10):
            eng.do_step(0.005, inputs(m, k))
        results[i] = np.concatenate([eng.get_state(), eng.outputs(inputs(m))])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_corrupt_model_data_are_refused_with_a_message():
    m = model("double_pendulum")
    blob = bytearray(model_data(m).to_bytes())
    for bad, what in ((blob[:20], "header"), (blob[:-1], "size"),
                      (b"XXXX" + blob[4:], "magic"),
                      (blob[:4] + b"\x09\0\0\0" + blob[8:], "version")):
        with pytest.raises(InputError, match=what):
            Engine(blob=bytes(bad))
    d = model_data(m)
    off, _ = d.slots["IJI"]
    ints = d.ints.copy()
    ints[off] = 99                                      # a body index out of range
    from fmu_mb.engine.data import EngineData
    with pytest.raises(InputError, match="tree joint"):
        Engine(blob=EngineData(ints, d.doubles, d.slots, d.parameter_names,
                               d.joint_names).to_bytes())


def _big_endian(blob):
    """The blob as a big-endian writer would make it: every header word, int and double
    byte-swapped (the names are bytes)."""
    import struct
    head = struct.unpack("<8I", blob[:32])
    ni, nd, nc, nk = head[2:6]

    def pad(n):
        return -n % 8
    out, o = [struct.pack(">8I", *head)], 32
    for n, t, p in ((ni, "i4", pad(4 * ni)), (nd, "f8", 0), (nc, "i4", pad(4 * nc)),
                    (nk, "f8", 0)):
        size = n * int(t[1])
        out.append(np.frombuffer(blob, "<" + t, n, o).astype(">" + t).tobytes() + b"\0" * p)
        o += size + p
    return b"".join(out) + blob[o:]


def test_model_data_are_little_endian_and_a_big_endian_blob_is_refused():
    """data.py writes every number little-endian; the engine reads them so on any host and
    refuses a blob of the other byte order, saying so (not as unknown data, not misread)."""
    import struct
    m = model("double_pendulum")
    d = model_data(m)
    blob = d.to_bytes()
    assert blob[:4] == b"FMMB"
    _, _, ni, nd, _, _, nch, _ = struct.unpack("<8I", blob[:32])
    o = 32 + 4 * ni + (-4 * ni % 8)
    np.testing.assert_array_equal(np.frombuffer(blob, "<f8", nd, o), d.doubles)
    swapped = _big_endian(blob)
    assert len(swapped) == len(blob) and swapped != blob
    assert swapped[:4] == b"BMMF" and swapped[-nch:] == blob[-nch:]  # names: bytes
    with pytest.raises(InputError, match="big-endian"):
        Engine(blob=swapped)
    eng = Engine(blob=blob)                             # the little-endian one runs
    eng.initialize()
    np.testing.assert_array_equal(eng.model_doubles(), d.doubles)


def test_engine_sources_are_plain_c99():
    """The engine's C files compile as strict C99 (no POSIX extensions of <math.h> such as
    M_PI, which MSVC lacks without _USE_MATH_DEFINES): a native FMU's sources/ build
    anywhere."""
    import subprocess
    from fmu_mb.engine.engine import sources
    from fmu_mb.engine.kernel import compiler
    cc = compiler()
    if cc is None:
        pytest.skip("no C compiler (cc, gcc, clang)")
    for src in sources():
        r = subprocess.run([cc, "-std=c99", "-pedantic", "-fsyntax-only", "-I",
                            str(src.parent), str(src)], capture_output=True, text=True)
        assert r.returncode == 0, f"{src.name}: {r.stderr}"


def test_parameters_without_a_program_keep_their_values():
    m = model("double_pendulum")
    eng = Engine(m)
    p = np.array([p.value for p in m.parameters], dtype=float)
    eng.set_parameters(p)                               # the built values: accepted
    p2 = p.copy()
    p2[0] = 2.0
    with pytest.raises(InputError, match="'m1'.*rebuild"):
        eng.set_parameters(p2)
    p2[0] = -1.0                                        # m1 >= 1e-9
    with pytest.raises(InputError, match="'m1'.*range"):
        eng.set_parameters(p2)


def test_model_data_layout_follows_the_structure_only():
    a = model_data(model("double_pendulum"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = model_data(load_model(ROOT / "models" / "double_pendulum.py", l1=0.7, m2=3.0))
    assert a.slots == b.slots and a.doubles.shape == b.doubles.shape
    assert not np.array_equal(a.doubles, b.doubles)
    np.testing.assert_array_equal(a.ints, b.ints)


def test_data_layout_agrees_with_engine_data_h():
    text = (NATIVE / "engine_data.h").read_text()
    arrays = re.search(r"enum \{(.*?)MBE_N_ARRAYS", text, re.S).group(1)
    names = re.findall(r"\bA_([A-Z0-9]+)\b", re.sub(r"/\*.*?\*/", "", arrays, flags=re.S))
    assert tuple(names) == ARRAYS
    head = re.search(r"enum \{\s*H_KIND(.*?)H_SIZE", text, re.S).group(0)
    assert tuple(re.findall(r"\bH_([A-Z0-9]+)\b", re.sub(r"/\*.*?\*/", "", head,
                                                          flags=re.S))[:-1]) == HEAD
    kinds = "".join(re.findall(r'"([ID]+)"', re.search(
        r"kinds\[MBE_N_ARRAYS \+ 1\] =(.*?);", (NATIVE / "engine.c").read_text(),
        re.S).group(1)))
    assert kinds == "".join(a[0] for a in ARRAYS)


def test_tableaus_header_is_generated_from_tableaus_py():
    assert (NATIVE / "tableaus.h").read_text() == tableaus.c_header()


def test_a_loop_that_cannot_close_is_refused_by_name_and_keeps_the_state():
    """The parameter program moves the four-bar's ground pivot beyond the reach of its links:
    the assembly in C fails naming the joint that stays open, and the state is kept; an
    initial crank angle set as a parameter gives the initial state of the model built with
    it."""
    from fmu_mb.engine.params import program_for
    from fmu_mb.mechanics.loader import load_module

    mod = load_module(ROOT / "models" / "four_bar.py")
    data, prog = program_for(mod, n_verify=1, n_wide=1)
    eng = Engine(blob=data.to_bytes(program=prog), name="four_bar")
    names = data.parameter_names
    p = np.array([pp.value for pp in mod.build().parameters], dtype=float)
    eng.initialize()
    eng.do_step(0.01, [0.0])
    before = eng.get_state()
    p2 = p.copy()
    p2[names.index("ground_length")] = 2.0              # links 0.1 + 0.35 + 0.3 < 2
    eng.set_parameters(p2)
    with pytest.raises(InputError, match="cannot be assembled.*joint 'B"):
        eng.initialize()
    np.testing.assert_array_equal(eng.get_state(), before)
    p3 = p.copy()
    p3[names.index("theta0")] = 1.0
    eng.set_parameters(p3)
    eng.initialize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = initial_state(mod.build(theta0=1.0), SETTINGS)
    close_rel(eng.state[1], ref.q, 1e-10)
    close_rel(eng.state[2], ref.qd, 1e-10)


def _floating_models():
    """A planar and a spatial model with a floating body (its own coordinates in q) that
    starts with declared velocities, tied to the ground by a spring, and a jointed body."""
    from fmu_mb import ModelBuilder, cardan

    mb = ModelBuilder("floating_planar")
    b = mb.body("b", mass=2.0, inertia=0.1, position=(0.3, 0.2), angle=0.4,
                velocity=(0.1, -0.2), angular_velocity=1.5)
    c = mb.body("c", mass=1.0, inertia=0.05)
    mb.revolute("J", b, c, parent_point=(0.2, 0.0), child_point=(-0.1, 0.0))
    mb.tsda("s", mb.ground, b, a_point=(0.0, 1.0), b_point=(0.0, 0.05), stiffness=50.0,
            free_length=0.5, damping=1.0)
    mb.initial("J", value=0.3, rate=-0.5)
    planar = mb.build()
    mb = ModelBuilder("floating_spatial", gravity=(0.0, 0.0, -9.81))
    b = mb.body("b", mass=2.0, inertia=(0.1, 0.2, 0.3), position=(0.3, 0.2, 0.1),
                orientation=cardan(0.3, -0.2, 0.5), velocity=(0.1, -0.2, 0.3),
                angular_velocity=(1.0, -2.0, 0.5))
    c = mb.body("c", mass=1.0, inertia=(0.05, 0.05, 0.02), position=(0.3, 0.2, -0.2))
    mb.spherical("J", b, c, at=(0.3, 0.2, -0.05))
    mb.tsda("s", mb.ground, b, a_point=(0.0, 0.0, 1.0), b_point=(0.0, 0.0, 0.05),
            stiffness=50.0, free_length=0.5, damping=1.0)
    return planar, mb.build()


def test_floating_bodies_start_and_move_as_in_python():
    for m in _floating_models():
        assert supported(m) is None
        eng = Engine(m)
        eng.set_settings(SETTINGS)
        eng.initialize(m.t0)
        ref = initial_state(m, SETTINGS)
        close_rel(eng.state[1], ref.q, 1e-10)
        close_rel(eng.state[2], ref.qd, 1e-10)
        eng.load(ref)
        step, st, u = stepper(m, SETTINGS), ref, inputs(m)
        for k in range(3):
            eng.do_step(0.01, u)
            st = step(st, st.t + 0.01, u)
        np.testing.assert_array_equal(eng.state[1], st.q)
        close_rel(eng.outputs(u), python_outputs(m, st, u), 1e-10,
                  output_names(m))


FUZZ_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
/* mbe_create on mutated model data (a few bytes flipped after the header, every try), then
 * initialize, step and outputs on what it accepts: under AddressSanitizer and UBSan */
int main(int argc, char **argv)
{
    char err[512];
    int tries = atoi(argv[1]);
    for (int a = 2; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) return 2;
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        unsigned char *b = malloc(n), *bb = malloc(n);
        if (fread(b, 1, n, f) != (size_t)n) return 2;
        fclose(f);
        srand(a);
        int accepted = 0;
        for (int t = 0; t < tries; t++) {
            memcpy(bb, b, n);
            for (int r = 0; r < 2; r++)
                bb[32 + rand() % (n - 32)] ^= (unsigned char)(1 + rand() % 255);
            MbEngine *e = mbe_create(bb, t % 5 ? (size_t)n : (size_t)(rand() % n), err,
                                     sizeof err);
            if (!e)
                continue;
            accepted++;
            double *u = calloc(mbe_n_inputs(e) + 1, 8), *y = calloc(mbe_n_outputs(e) + 1, 8);
            if (mbe_initialize(e, 0.0, err, sizeof err) == MBE_OK &&
                mbe_do_step(e, 1e-3, u, err, sizeof err) == MBE_OK)
                mbe_outputs(e, u, y, err, sizeof err);
            free(u);
            free(y);
            mbe_free(e);
        }
        printf("%s %d\n", argv[a], accepted);
        free(b);
        free(bb);
    }
    return 0;
}
"""


@pytest.mark.slow
def test_mutated_model_data_never_crash_the_engine(tmp_path):
    """Model data with flipped bytes or cut short: refused with a message or run, never a
    crash or a read out of bounds (the C API under AddressSanitizer and UBSan)."""
    import os
    import subprocess

    from fmu_mb.engine import engine as E
    from fmu_mb.engine.kernel import compiler
    from fmu_mb.engine.params import program_for
    from fmu_mb.mechanics.loader import load_module

    cc = compiler()
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "host.c"
    src.write_text(FUZZ_HOST)
    exe = tmp_path / "host"
    p = subprocess.run([cc, "-g", "-O1", "-fsanitize=address,undefined",
                        "-fno-sanitize-recover=undefined", "-DMBE_HAVE_PARAMS", "-I",
                        str(NATIVE), "-o", str(exe), str(src), *map(str, E.sources()), "-lm"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"the compiler cannot build with the sanitizers: {p.stderr[-300:]}")
    blobs = []
    for name in ("double_pendulum", "double_wishbone"):
        blobs.append(tmp_path / f"{name}.bin")
        blobs[-1].write_bytes(model_data(model(name)).to_bytes())
    data, prog = program_for(load_module(ROOT / "models" / "four_bar.py"), n_verify=1,
                             n_wide=1)
    blobs.append(tmp_path / "four_bar.bin")
    blobs[-1].write_bytes(data.to_bytes(program=prog))
    env = dict(os.environ, ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1")
    run = subprocess.run([str(exe), "25", *map(str, blobs)], capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ERROR" not in run.stderr and "runtime error" not in run.stderr, run.stderr[-3000:]


def test_a_later_start_time_starts_from_the_models_assembly():
    """mbe_initialize(t0) assembles at the model's own t0 (the drive's law there) and starts
    the state at t0, as the Python FMU does with a start time."""
    m = model("container_crane_driven")
    eng = Engine(m)
    eng.initialize(0.5)
    ref = initial_state(m, SETTINGS)
    t, q, qd, h = eng.state
    assert t == 0.5
    close_rel(q, ref.q, 1e-10)
    close_rel(qd, ref.qd, 1e-10)


def test_outputs_of_the_recursive_formulation_come_from_the_engine():
    """Outputs (simulate()'s output_values, the Python FMU's getReal) in the recursive
    formulation are the engine's, group by group equal to the Python ones; a model the engine
    cannot run keeps the Python groups."""
    from fmu_mb.dynamics import outputs as O

    for name in ("four_bar", "double_wishbone", "falling_rod"):
        m = model(name)
        st = initial_state(m, SETTINGS)
        if m.contacts:               # a state with impacts and a persistent contact
            st = stepper(m, SETTINGS)(st, 1.2, np.zeros(0))
            assert any(d["active"] for d in st.extra["contacts"].values())
        u = inputs(m)
        assert O._engine_for(m) is not None
        ref = python_outputs(m, st, u)
        close_rel(O.output_values(m, st, u, "recursive"), ref, 1e-10, output_names(m))
        for i in range(len(ref)):                      # one group at a time (getReal)
            out = O.Outputs(m, st, u, "recursive")
            assert out._eng is not None
            close_rel(np.array([out.value(i)]), ref[i:i + 1], 1e-10, [output_names(m)[i]])
    m = model("singular_pendulum")
    assert O._engine_for(m) is None
    st = initial_state(m, SETTINGS)
    np.testing.assert_array_equal(O.output_values(m, st, np.zeros(0)),
                                  O.Outputs(m, st, np.zeros(0)).values())


# ---------------------------------------------------------------------- spatial drives and
# cylinders (engine data version 3)
def _boom3():
    """A spatial boom on a horizontal hinge lifted by a hydraulic cylinder from the ground
    (force input lift.h, friction), gravity along -z."""
    from fmu_mb import ModelBuilder
    mb = ModelBuilder("boom3", gravity=(0.0, 0.0, -9.81))
    boom = mb.body("boom", mass=40.0, inertia=(0.5, 6.0, 6.0), position=(1.0, 0.0, 0.5))
    mb.revolute("pivot", mb.ground, boom, at=(0.0, 0.0, 0.5), axis=(0.0, -1.0, 0.0))
    mb.cylinder("lift", mb.ground, boom, a_point=(0.8, 0.1, 0.0), b_point=(0.0, 0.0, -0.2),
                min_length=0.3, max_length=1.2, friction=50.0)
    mb.point("tip", boom, at=(2.0, 0.0, 0.5))
    return mb.build()


def _python_outputs_stripped(m, state, u):
    """python_outputs of a spatial model whose cylinders' stop contacts were taken out (the
    Python outputs read a cylinder's end_stops from those contacts' records): every group
    but the elements' from Outputs, the elements' values from
    fmu_mb.mechanics.spatial.elements.element_outputs with end_stops 0."""
    from fmu_mb.dynamics.outputs import _owners
    from fmu_mb.mechanics.spatial.elements import element_outputs
    out = Outputs(m, state, u, "recursive", compiled=False)
    owners = _owners(m)
    vals = np.array([np.nan if owners[i] == "elements" else out.value(i)
                     for i in range(len(owners))])
    x, xd = out._get("absolute")
    els = []
    for e, v in zip(m.elements, element_outputs(m, x, xd, u)):
        els += list(v) + ([0.0] if e.kind == "cylinder" else [])
    vals[[i for i in range(len(owners)) if owners[i] == "elements"]] = els
    return vals


def _against_recursive(m, u_of, reference=python_outputs):
    """The engine on m against the in-process recursive formulation: the initial state to
    1e-12, four communication steps bit for bit, every output to 1e-12 relative on the
    trajectory and at a state off it."""
    eng = Engine(m)
    eng.set_settings(SETTINGS)
    eng.initialize(m.t0)
    ref = initial_state(m, SETTINGS)
    t, q, qd, _ = eng.state
    close_rel(q, ref.q, 1e-12)
    close_rel(qd, ref.qd, 1e-12)
    names = output_names(m)

    def same_outputs(st, u):
        eng.load(st)
        close_rel(eng.outputs(u), reference(m, st, u), 1e-12, names)

    eng.load(ref)
    step = stepper(m, SETTINGS)
    st = ref
    for k in range(4):
        u = u_of(k)
        same_outputs(st, u)
        eng.load(st)
        eng.do_step(0.05, u)
        st = step(st, st.t + 0.05, u)
        t, q, qd, h = eng.state
        assert t == st.t and h == st.h
        np.testing.assert_array_equal(q, st.q)
        np.testing.assert_array_equal(qd, st.qd)
    rng = np.random.default_rng(3)
    other = type(st).make(st.t + 0.21, st.q, st.qd + rng.standard_normal(st.qd.shape), 0.0,
                          st.coords, st.extra)
    same_outputs(other, u_of(7))
    return eng


def test_engine_spatial_drives_equal_the_recursive_formulation():
    """models/driven_arm.py: the drives' rows in C (assembly at t0 on the laws, velocity
    targets s'(t0)), their efforts -lam and the reactions while driven, to 1e-12."""
    m = model("driven_arm")
    assert supported(m) is None
    eng = _against_recursive(m, lambda k: np.zeros(0))
    y = dict(zip(output_names(m), eng.outputs(np.zeros(0))))
    assert abs(y["shoulder_drive.effort"]) > 1.0          # the arm is held against gravity


def test_engine_spatial_cylinder_equals_the_recursive_formulation():
    """A spatial hydraulic cylinder: its force h - c l' acts (TSDA gain -1), its outputs
    (force, length, stroke, stroke_rate, fx, fy, fz, end_stops) come from C, to 1e-12. Its
    end stops are spatial contacts: until the engine's event loop takes spatial contacts,
    the model minus its two stop contacts is compared (end_stops then 0 in C), else the
    model itself."""
    import dataclasses
    m = _boom3()
    reference = python_outputs
    if supported(m) is not None:
        assert "contacts" in supported(m)
        m = dataclasses.replace(m, contacts=(),
                                compiled=dataclasses.replace(m.compiled, contacts=None))
        reference = _python_outputs_stripped
    assert supported(m) is None
    eng = _against_recursive(m, lambda k: np.array([900.0 + 300.0 * k]), reference)
    names = output_names(m)
    y = dict(zip(names, eng.outputs(np.array([1500.0]))))
    # the force along the pins: |(fx, fy, fz)| = |force|, force = h - c l'
    f = np.array([y["lift.fx"], y["lift.fy"], y["lift.fz"]])
    assert abs(np.linalg.norm(f) - abs(y["lift.force"])) <= 1e-12 * abs(y["lift.force"])
    assert abs(y["lift.force"] - (1500.0 - 50.0 * y["lift.stroke_rate"])) <= 1e-9
    assert abs(y["lift.stroke"] - (y["lift.length"] - 0.3)) <= 1e-15
    assert y["lift.end_stops"] == 0.0
