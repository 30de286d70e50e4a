"""Assembly from declared poses: the bodies' declared positions and angles seed the placement
of the tree joints whose coordinates are neither given nor guessed, so that the loops close
on the branch nearest the declared pose (fmu_mb.mechanics.assembly.placement_seeds; the
engine's C assembly, engine.c tree_placement, takes the same seeds).

Each mechanism's branches are computed here in closed form (circle intersections), with no
fmu_mb code: a Watt six-bar (four assembly modes), a four-bar (open and crossed) and a
slider-crank (both branches). Declared poses are sketches: angles 6 degrees and positions a
few centimetres off the exact pose. The Python assembly and the engine's C assembly must both
close on the declared branch; a declared pose that no branch is near gives one warning (the
Python AssemblyWarning, the engine's mbe_warning that the native FMU logs)."""
import math
import warnings

import numpy as np
import pytest

from fmu_mb import ModelBuilder, rod_inertia
from fmu_mb.engine.engine import Engine
from fmu_mb.errors import AssemblyWarning

SKETCH_ANGLE = math.radians(6.0)
SKETCH_SHIFT = np.array([0.02, -0.015])


def _circles(p0, r0, p1, r1, sign):
    """The intersection of the circles (p0, r0) and (p1, r1) left (+1) or right (-1) of
    p0 -> p1."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    d = np.linalg.norm(p1 - p0)
    a = (r0 * r0 - r1 * r1 + d * d) / (2 * d)
    h = math.sqrt(r0 * r0 - a * a)
    u = (p1 - p0) / d
    return p0 + a * u + sign * h * np.array([-u[1], u[0]])


def _angle(p, q):
    return math.atan2(q[1] - p[1], q[0] - p[0])


# ---------------------------------------------------------------- Watt six-bar (Watt II)
O2, O4, O6 = np.array([0.0, 0.0]), np.array([1.0, 0.0]), np.array([1.9, 0.6])
A2, B3, C4, BC4, D5, E6 = 0.35, 1.0, 0.8, 0.45, 0.9, 0.7   # link lengths; BC4: O4 to C
OFF4 = math.radians(40.0)                  # the angle of O4->C from O4->B on the ternary link
THETA2 = math.radians(60.0)


def _watt_pose(s1, s2):
    """{body: (centre, angle)} of the Watt six-bar with crank angle THETA2 on branch s1 of
    the first loop and s2 of the second."""
    A = O2 + A2 * np.array([math.cos(THETA2), math.sin(THETA2)])
    B = _circles(A, B3, O4, C4, s1)
    t4 = _angle(O4, B)
    C = O4 + BC4 * np.array([math.cos(t4 + OFF4), math.sin(t4 + OFF4)])
    D = _circles(C, D5, O6, E6, s2)
    return {"crank": ((O2 + A) / 2, THETA2), "coupler3": ((A + B) / 2, _angle(A, B)),
            "rocker4": ((O4 + B) / 2, t4), "coupler5": ((C + D) / 2, _angle(C, D)),
            "rocker6": ((O6 + D) / 2, _angle(O6, D))}


def watt(declared, **overrides):
    """The six-bar with the given declared poses {body: (centre, angle)}; only the crank's
    angle is given (mb.initial), no joint has a guess."""
    mb = ModelBuilder("watt_six_bar", overrides, gravity=(0.0, -9.81))
    lengths = {"crank": A2, "coupler3": B3, "rocker4": C4, "coupler5": D5, "rocker6": E6}
    for name, length in lengths.items():
        c, a = declared[name]
        mb.body(name, mass=1.0, inertia=rod_inertia(1.0, length), position=tuple(c), angle=a)
    c4 = (-C4 / 2 + BC4 * math.cos(OFF4), BC4 * math.sin(OFF4))
    mb.revolute("O2", mb.ground, "crank", parent_point=tuple(O2), child_point=(-A2 / 2, 0.0))
    mb.revolute("A", "crank", "coupler3", parent_point=(A2 / 2, 0.0),
                child_point=(-B3 / 2, 0.0))
    mb.revolute("O4", mb.ground, "rocker4", parent_point=tuple(O4), child_point=(-C4 / 2, 0.0))
    mb.revolute("B", "coupler3", "rocker4", parent_point=(B3 / 2, 0.0),
                child_point=(C4 / 2, 0.0))
    mb.revolute("C", "rocker4", "coupler5", parent_point=c4, child_point=(-D5 / 2, 0.0))
    mb.revolute("O6", mb.ground, "rocker6", parent_point=tuple(O6), child_point=(-E6 / 2, 0.0))
    mb.revolute("D", "coupler5", "rocker6", parent_point=(D5 / 2, 0.0),
                child_point=(E6 / 2, 0.0))
    mb.initial("O2", value=THETA2)
    return mb.build()


def _sketch(pose):
    """A hand sketch of a pose: every angle 6 degrees and every centre a few cm off."""
    return {k: (c + SKETCH_SHIFT, a + SKETCH_ANGLE) for k, (c, a) in pose.items()}


def _body_poses(model, x):
    return {b.name: (x[3 * b.index:3 * b.index + 2], x[3 * b.index + 2]) for b in model.bodies}


def _assert_pose(model, x, exact, tol=1e-9):
    got = _body_poses(model, x)
    for name, (c, a) in exact.items():
        assert np.abs(got[name][0] - c).max() <= tol, (name, got[name], (c, a))
        da = (got[name][1] - a + math.pi) % (2 * math.pi) - math.pi
        assert abs(da) <= tol, (name, math.degrees(got[name][1]), math.degrees(a))


def _engine_x(model):
    """The engine's (C) assembled absolute coordinates and its warning."""
    eng = Engine(model)
    eng.initialize(model.t0)
    _, q, _, _ = eng.state
    eng.outputs()
    return eng, q


def _engine_angles(model, eng):
    """The engine's joint angles, by output name."""
    from fmu_mb.dynamics.outputs import output_names
    names = output_names(model)
    y = eng.outputs()
    return {n: v for n, v in zip(names, y)}


@pytest.mark.parametrize("s1,s2", [(1, 1), (1, -1), (-1, 1), (-1, -1)])
def test_watt_six_bar_assembles_on_the_declared_branch(s1, s2):
    """All four assembly modes of the six-bar, each picked by its sketched declared pose with
    no joint guess; in Python and in the engine's C assembly (its joint angle outputs)."""
    exact = _watt_pose(s1, s2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssemblyWarning)       # near: no warning
        m = watt(_sketch(exact))
    _assert_pose(m, np.asarray(m.x0), exact)
    eng, _ = _engine_x(m)
    assert eng.warning == ""
    y = _engine_angles(m, eng)
    for j, (parent, child) in {"O4": ("ground", "rocker4"), "O6": ("ground", "rocker6"),
                               "A": ("crank", "coupler3"), "C": ("rocker4", "coupler5")}.items():
        want = exact[child][1] - (0.0 if parent == "ground" else exact[parent][1])
        d = (y[f"{j}.angle"] - want + math.pi) % (2 * math.pi) - math.pi
        assert abs(d) <= 1e-9, (j, y[f"{j}.angle"], want)


def test_watt_six_bar_without_declared_poses_is_not_on_every_branch():
    """The seeds matter: without declared poses (and guesses) the placement starts from zero
    angles and reaches one branch only, so at least three of the four modes need the
    declared pose (the test above would fail without the seeds)."""
    mb_poses = {k: (np.zeros(2), 0.0) for k in _watt_pose(1, 1)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssemblyWarning)
        m = watt(mb_poses)
    hits = 0
    for s1 in (1, -1):
        for s2 in (1, -1):
            try:
                _assert_pose(m, np.asarray(m.x0), _watt_pose(s1, s2), tol=1e-6)
                hits += 1
            except AssertionError:
                pass
    assert hits <= 1


def test_a_declared_pose_far_from_every_branch_warns_once_in_python_and_c():
    """rocker6 declared 90 degrees from both of its branches: the assembly closes on one of
    them and says so in one line naming the body (Python) or its joint (C)."""
    exact = _watt_pose(1, 1)
    other = _watt_pose(1, -1)
    mid = (exact["rocker6"][1] + other["rocker6"][1]) / 2 + math.pi / 2
    declared = dict(exact)
    declared["rocker6"] = (exact["rocker6"][0], mid)
    declared["coupler5"] = (exact["coupler5"][0], exact["coupler5"][1] + math.pi / 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = watt(declared)
    far = [str(w.message) for w in caught if issubclass(w.category, AssemblyWarning)
           and "far from its declared pose" in str(w.message)]
    assert len(far) == 1, [str(w.message) for w in caught]
    assert "another assembly branch" in far[0]
    eng, _ = _engine_x(m)
    assert "far from its declared pose" in eng.warning and "joint '" in eng.warning


# ---------------------------------------------------------------- four-bar, slider-crank
FOUR_BAR = (0.3, 0.9, 0.7, 0.8, math.radians(75.0))      # a, b, c, d [m], crank angle


def four_bar(declared):
    a, b, c, d, theta = FOUR_BAR
    mb = ModelBuilder("four_bar_declared", {}, gravity=(0.0, -9.81))
    for name, length in (("crank", a), ("coupler", b), ("rocker", c)):
        cc, ang = declared[name]
        mb.body(name, mass=1.0, inertia=rod_inertia(1.0, length), position=tuple(cc),
                angle=ang)
    mb.revolute("O2", mb.ground, "crank", child_point=(-a / 2, 0.0))
    mb.revolute("A", "crank", "coupler", parent_point=(a / 2, 0.0), child_point=(-b / 2, 0.0))
    mb.revolute("O4", mb.ground, "rocker", parent_point=(d, 0.0), child_point=(-c / 2, 0.0))
    mb.revolute("B", "coupler", "rocker", parent_point=(b / 2, 0.0), child_point=(c / 2, 0.0))
    mb.initial("O2", value=theta)
    return mb.build(), (a, b, c, d, theta)


def _four_bar_pose(s, dims):
    a, b, c, d, theta = dims
    A = a * np.array([math.cos(theta), math.sin(theta)])
    B = _circles(A, b, np.array([d, 0.0]), c, s)
    return {"crank": (A / 2, theta), "coupler": ((A + B) / 2, _angle(A, B)),
            "rocker": ((np.array([d, 0.0]) + B) / 2, _angle(np.array([d, 0.0]), B))}


@pytest.mark.parametrize("s", [1, -1])
def test_four_bar_open_and_crossed_from_declared_poses(s):
    exact = _four_bar_pose(s, FOUR_BAR)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssemblyWarning)
        m, _ = four_bar(_sketch(exact))
    _assert_pose(m, np.asarray(m.x0), exact)
    eng, _ = _engine_x(m)
    y = _engine_angles(m, eng)
    want = exact["rocker"][1]
    assert abs((y["O4.angle"] - want + math.pi) % (2 * math.pi) - math.pi) <= 1e-9


SLIDER_CRANK = (0.1, 0.3, 0.05, math.radians(40.0))   # crank, rod, offset [m], crank angle


def _slider_branches():
    """The slider's two positions along x (closed form)."""
    r, l, off, theta = SLIDER_CRANK
    A = r * np.array([math.cos(theta), math.sin(theta)])
    dy = off - A[1]
    return [A[0] + sgn * math.sqrt(l * l - dy * dy) for sgn in (1, -1)]


def slider_crank(declared_slider):
    """A crank of 0.1 m at 40 degrees, a rod of 0.3 m and a slider on the x axis offset by
    0.05 m; the slider's declared position picks its branch (no guess on the crank)."""
    r, l, off, theta = SLIDER_CRANK
    mb = ModelBuilder("slider_crank_declared", {}, gravity=(0.0, -9.81))
    mb.body("crank", mass=1.0, inertia=rod_inertia(1.0, r))
    mb.body("rod", mass=1.0, inertia=rod_inertia(1.0, l))
    mb.body("slider", mass=1.0, inertia=0.01, position=(declared_slider, off))
    mb.revolute("O", mb.ground, "crank", child_point=(-r / 2, 0.0))
    mb.revolute("A", "crank", "rod", parent_point=(r / 2, 0.0), child_point=(-l / 2, 0.0))
    mb.revolute("B", "rod", "slider", parent_point=(l / 2, 0.0))
    mb.prismatic("P", mb.ground, "slider", axis=(1.0, 0.0), parent_point=(0.0, off))
    mb.initial("O", value=theta)
    return mb.build()


@pytest.mark.parametrize("branch", [0, 1])
def test_slider_crank_branch_from_the_slider_s_declared_position(branch):
    """The slider declared 7 mm from one branch closes there, the crank joint having no
    guess (the rod's joint neither)."""
    xs = _slider_branches()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AssemblyWarning)
        m = slider_crank(xs[branch] + 0.007)
    slider = next(b for b in m.bodies if b.name == "slider")
    assert abs(m.x0[3 * slider.index] - xs[branch]) <= 1e-9
    eng, _ = _engine_x(m)
    y = _engine_angles(m, eng)
    assert abs(y["P.position"] - xs[branch]) <= 1e-9
    assert eng.warning == ""


FAR_FOUR_BAR = '''"""A four-bar whose rocker is declared far from both of its assembly branches."""
import math
from fmu_mb import ModelBuilder, rod_inertia

DEFAULT_EXPERIMENT = {{"stop_time": 0.02, "step_size": 0.01}}


def build(**overrides):
    a, b, c, d, theta = {dims!r}
    mb = ModelBuilder("far_four_bar", overrides, gravity=(0.0, -9.81))
    mb.body("crank", mass=1.0, inertia=rod_inertia(1.0, a))
    mb.body("coupler", mass=1.0, inertia=rod_inertia(1.0, b))
    mb.body("rocker", mass=1.0, inertia=rod_inertia(1.0, c), angle={angle!r})
    mb.revolute("O2", mb.ground, "crank", child_point=(-a / 2, 0.0))
    mb.revolute("A", "crank", "coupler", parent_point=(a / 2, 0.0), child_point=(-b / 2, 0.0))
    mb.revolute("O4", mb.ground, "rocker", parent_point=(d, 0.0), child_point=(-c / 2, 0.0))
    mb.revolute("B", "coupler", "rocker", parent_point=(b / 2, 0.0), child_point=(c / 2, 0.0))
    mb.initial("O2", value=theta)
    return mb.build()
'''


def test_the_native_fmu_logs_a_pose_far_from_the_declared_one(tmp_path):
    """The warning reaches an FMI importer: the native FMU logs it (fmi2Warning) at
    fmi2ExitInitializationMode and runs; a pose near the declared one logs nothing."""
    fmpy = pytest.importorskip("fmpy")
    from fmu_mb.fmi.native_build import build_native_fmu

    up, down = (_four_bar_pose(s, FOUR_BAR)["rocker"][1] for s in (1, -1))
    far = (up + down) / 2 + math.pi            # opposite the bisector: > 90 deg from both
    logs = {}
    for name, angle in (("far", far), ("near", up + SKETCH_ANGLE)):
        src = tmp_path / name / "far_four_bar.py"
        src.parent.mkdir()
        src.write_text(FAR_FOUR_BAR.format(dims=FOUR_BAR, angle=angle))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AssemblyWarning)
            fmu = build_native_fmu(src, tmp_path / name, platforms="linux64")   # fmpy runs this one
        lines = []

        def logger(env, inst, status, category, message, lines=lines):
            lines.append((status, message.decode() if isinstance(message, bytes) else message))

        res = fmpy.simulate_fmu(str(fmu), stop_time=0.02, step_size=0.01, logger=logger)
        assert len(res) >= 2
        logs[name] = [m for st, m in lines if "far from its declared pose" in m]
    assert len(logs["far"]) == 1 and "joint 'O4'" in logs["far"][0], logs
    assert logs["near"] == []


@pytest.mark.parametrize("kind", ["native", "python"])
def test_solver_assembly_error_refuses_a_far_pose(kind, tmp_path):
    """solver.assembly = 'error' makes the far pose an initialisation error (fmi2Error with
    the note), in the native and the Python FMU; 'warn' (the default) runs."""
    fmpy = pytest.importorskip("fmpy")
    from fmpy.fmi1 import FMICallException

    up, down = (_four_bar_pose(s, FOUR_BAR)["rocker"][1] for s in (1, -1))
    src = tmp_path / "far_four_bar.py"
    src.write_text(FAR_FOUR_BAR.format(dims=FOUR_BAR, angle=(up + down) / 2 + math.pi))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssemblyWarning)
        if kind == "native":
            from fmu_mb.fmi.native_build import build_native_fmu
            fmu = build_native_fmu(src, tmp_path / "out", platforms="linux64")
        else:
            pytest.importorskip("pythonfmu")
            from fmu_mb.fmi.build import build_fmu
            fmu = build_fmu(src, tmp_path / "out")
    lines = []

    def logger(env, inst, status, category, message):
        lines.append(message.decode() if isinstance(message, bytes) else message)

    res = fmpy.simulate_fmu(str(fmu), stop_time=0.02, step_size=0.01, logger=logger)
    assert len(res) >= 2
    lines.clear()
    with pytest.raises(FMICallException):
        fmpy.simulate_fmu(str(fmu), stop_time=0.02, step_size=0.01, logger=logger,
                          start_values={"solver.assembly": "error"})
    text = " ".join(lines)
    assert "far from its declared pose" in text and "solver.assembly = 'error'" in text, text
    lines.clear()
    with pytest.raises(FMICallException):
        fmpy.simulate_fmu(str(fmu), stop_time=0.02, step_size=0.01, logger=logger,
                          start_values={"solver.assembly": "strict"})
    assert "solver" in " ".join(lines) and "strict" in " ".join(lines)
