"""The start-up's Gram matrices on their envelope (dense.h ENV_ROW; engine.c plrows_psd_solve,
min_norm; engine_spatial.h sprows_psd_solve) and the planar initialisation's rows by body
blocks (engine.c given_rows: the Newton's and the velocity solve's rows as PlRow, their
nonzeros NzRows) on models large enough for the rows' order and the packed storage to matter:
the engine's assembled initial state and its outputs (reactions included) against the Python
reference, which forms and solves its matrices densely: the N-four-bar (a chain of loops: the
rows reordered by their first body), a planar and a spatial chain, and a chain of unequal
four-bars placed open with velocities that break the loops (the assembly's Newton takes
minimum M-norm steps from the declared poses, and the velocity projection is the least M-norm
correction: a wrong block of a row changes the state). The rows by blocks against the dense
rows directly: tests/c_host/startup_rows_check.c."""
import math
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import ModelBuilder, rod_inertia
from fmu_mb.dynamics.integrate import Settings, initial_state
from fmu_mb.dynamics.outputs import Outputs, output_names
from fmu_mb.engine.data import model_data
from fmu_mb.engine.engine import Engine
from fmu_mb.mechanics.loader import load_model

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / "fmu_mb" / "engine" / "native"
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


def open_four_bars(n):
    """n four-bars in a row, of unequal links and masses, placed open (each link off its
    closed pose) and moving (velocities that break the loops); crank 0's angle is given,
    crank 1's rate, the rest is assembled."""
    mb = ModelBuilder("open_four_bars", {}, gravity=(0.0, -9.81))
    crank = [1.0 + 0.08 * math.sin(1.7 * i) for i in range(n + 1)]
    cranks = []
    for i in range(n + 1):
        m = 1.0 + 0.4 * math.cos(0.9 * i)
        a = math.pi / 2 + 0.06 * math.sin(2.3 * i + 0.4)
        cranks.append(mb.body(f"crank{i}", mass=m, inertia=rod_inertia(m, crank[i]),
                              position=(i + 0.5 * crank[i] * math.cos(a),
                                        0.5 * crank[i] * math.sin(a)),
                              angle=a, velocity=(0.1 * math.sin(i), 0.05),
                              angular_velocity=0.3 * math.cos(1.3 * i)))
        mb.revolute(f"O{i}", mb.ground, cranks[i], parent_point=(float(i), 0.0),
                    child_point=(-crank[i] / 2, 0.0))
    for i in range(n):
        length = 1.0 + 0.05 * math.cos(1.1 * i)
        m = 0.7 + 0.2 * math.sin(0.5 * i)
        a = 0.05 * math.cos(1.9 * i + 0.2)
        coupler = mb.body(f"coupler{i}", mass=m, inertia=rod_inertia(m, length),
                          position=(i + 0.5, crank[i]), angle=a,
                          angular_velocity=-0.2 * math.sin(i))
        mb.revolute(f"L{i}", cranks[i], coupler, parent_point=(crank[i] / 2, 0.0),
                    child_point=(-length / 2, 0.0))
        mb.revolute(f"R{i}", cranks[i + 1], coupler, parent_point=(crank[i + 1] / 2, 0.0),
                    child_point=(length / 2, 0.0))
    mb.initial("O0", value=math.pi / 2 + 0.1)
    mb.initial("O1", rate=-0.8)
    return mb.build()


def test_open_four_bars_assemble_and_move_as_the_python_reference():
    m = open_four_bars(12)
    eng = Engine(m)
    eng.set_settings(SETTINGS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng.initialize(m.t0)
        ref = initial_state(m, SETTINGS)
    _, q, qd, _ = eng.state
    # the assembly moved the cranks off their declared angles (q: the tree joints O0 .. O12,
    # L0 .. L11): Newton ran from an open pose
    declared = np.array([m.body(f"crank{i}").angle for i in range(13)])
    assert np.abs(ref.q[1:13] - declared[1:]).min() > 1e-3
    close_rel(q, ref.q, 1e-11)
    close_rel(qd, ref.qd, 1e-11)
    eng.load(ref)
    u = np.zeros(len(m.inputs))
    want = Outputs(m, ref, u, "recursive", compiled=False).values()
    close_rel(eng.outputs(u), want, 1e-10, output_names(m))


@pytest.fixture(scope="module")
def rows_check(tmp_path_factory):
    """tests/c_host/startup_rows_check.c compiled with the engine's sources."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("rows_check") / "startup_rows_check"
    subprocess.run([cc, "-O0", "-ffp-contract=off", f"-I{NATIVE}", "-DMBE_HAVE_PARAMS",
                    str(ROOT / "tests" / "c_host" / "startup_rows_check.c"),
                    str(NATIVE / "kernel.c"), str(NATIVE / "spatial_kernel.c"),
                    str(NATIVE / "params.c"), "-o", str(exe), "-lm"], check=True)
    return exe


@pytest.mark.parametrize("name", ["open_four_bars", "n_four_bar", "slider_crank"])
def test_planar_start_up_rows_by_blocks_are_the_dense_rows(rows_check, tmp_path, name):
    """The initialisation's rows by body blocks and their products (the Newton's and the
    velocity solve's rows, plrow_gram, the residuals) are the dense rows' numbers, and min_norm
    over their nonzeros is the dense minimum M-norm correction, at poses off the assembled one
    (the Python comparisons above cannot see an error there that the dense fine retry hides)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = open_four_bars(6) if name == "open_four_bars" else load_model(
            ROOT / "models" / f"{name}.py", **({"N": 5} if name == "n_four_bar" else {}))
    blob = tmp_path / "model.bin"
    blob.write_bytes(model_data(m).to_bytes())
    out = subprocess.run([str(rows_check), str(blob), "10"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "row_mismatches=0 gram_mismatches=0 residual_mismatches=0" in out.stdout, out.stdout
