"""FMU hardening: FMI 2.0 statuses with logged reasons, metadata, a huge step or
input that ends in fmi2Discard, two FMUs one after the other in one process, and an FMU that
runs after its build environment is gone (or says at instantiation why it cannot)."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.fmu

pythonfmu = pytest.importorskip("pythonfmu")
fmpy = pytest.importorskip("fmpy")
if not pythonfmu.FmuBuilder.has_binary():
    pytest.skip("pythonfmu has no binary for this platform", allow_module_level=True)

from fmpy import read_model_description  # noqa: E402
from fmpy.validation import validate_fmu  # noqa: E402

from fmu_mb import load_model, simulate  # noqa: E402

from conftest import MODELS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
C_HOST = Path(__file__).resolve().parent / "c_host" / "fmi2_host.c"
WORKER = Path(__file__).resolve().parent / "fmu_fuzz_worker.py"


@pytest.fixture(scope="module")
def fmus(shared_fmu):
    return {m: shared_fmu(MODELS / f"{m}.py", "python")
            for m in ("double_pendulum", "pendulum_chain", "n_four_bar")}


def _host(path, logging_on=False):
    sys.path.insert(0, str(WORKER.parent))
    try:
        from fmu_fuzz_worker import Host
    finally:
        sys.path.pop(0)
    md = read_model_description(str(path))
    host = Host(fmpy.extract(str(path)), md, "h", logging_on)
    return host, {v.name: v.valueReference for v in md.modelVariables}


def test_negative_length_is_refused_with_error_naming_it(fmus):
    """l1 = -1: fmi2Error at fmi2ExitInitializationMode (not fmi2Fatal), logged with logging
    off, naming the parameter, the value and the valid range; fixed, the FMU initialises."""
    h, vr = _host(fmus["double_pendulum"])
    h.call("setupExperiment", None, 0.0)
    h.call("enterInitializationMode")
    assert h.call("setReal", [vr["l1"]], [-1.0])[0] == 0
    status, _, messages = h.call("exitInitializationMode")
    assert status == 3
    text = " ".join(m for s, m in messages if s == 3)
    assert "'l1'" in text and "-1.0" in text and ">= 1e-09" in text
    assert h.call("setReal", [vr["l1"]], [0.6])[0] == 0
    assert h.call("exitInitializationMode")[0] == 0
    assert h.call("doStep", 0.0, 0.01)[0] == 0
    ref = simulate(load_model(MODELS / "double_pendulum.py", l1=0.6), 0.01, 0.01)
    assert h.call("getReal", [vr["rod1.phi"]])[1][0] == pytest.approx(ref["rod1.phi"][-1],
                                                                      abs=1e-12)


def test_misuse_returns_error_with_a_message_and_changes_nothing(fmus):
    h, vr = _host(fmus["double_pendulum"])
    calls = [("getReal", [vr["rod1.phi"]]), ("doStep", 0.0, 0.01)]       # before init
    for call in calls:
        status, _, msgs = h.call(*call)
        assert status == 3 and any(s == 3 for s, _ in msgs), call
    h.call("setupExperiment", None, 0.0)
    h.call("enterInitializationMode")
    h.call("exitInitializationMode")
    assert h.call("doStep", 0.0, 0.01)[0] == 0
    outs = [vr[n] for n in ("rod1.phi", "rod2.phi", "B.fx")]
    before = h.call("getReal", outs)[1]
    state = h.call("getFMUstate")[1]
    misuse = [("getReal", [9999]), ("getInteger", [vr["rod1.phi"]]),
              ("setReal", [vr["rod1.phi"]], [1.0]), ("setReal", [vr["l1"]], [0.7]),
              ("setString", [vr["solver.method"]], [""]), ("enterInitializationMode",),
              ("exitInitializationMode",), ("setupExperiment", None, 0.0),
              ("deSerializeFMUstate", b"{not json"), ("deSerializeFMUstate", b""),
              ("deSerializeFMUstate",
               json.dumps({"fmu_mb_state": "another_fmu", "data": {}}).encode())]
    for call in misuse:
        status, _, msgs = h.call(*call)
        assert status == 3, call
        assert [m for s, m in msgs if s == 3], call
    assert h.call("getReal", outs)[1] == before
    # a refused step keeps the state; the instance goes on as if nothing had happened: a
    # negative step is the master's error (Discard), a step that spends the work budget or a
    # huge input fails in the model (Error, fmi2Terminated true)
    for step, expected in ((-0.01, 2), (1e6, 3)):
        status, _, msgs = h.call("doStep", 0.01, step)
        assert status == expected and msgs
    h.call("setReal", [vr["actuator_A.h"]], [1e30])
    assert h.call("doStep", 0.01, 0.01)[0] == 3
    h.call("setReal", [vr["actuator_A.h"]], [0.0])
    assert h.call("getReal", outs)[1] == before
    assert h.call("doStep", 0.01, 0.01)[0] == 0
    after = h.call("getReal", outs)[1]
    assert h.call("setFMUstate", state)[0] == 0
    assert h.call("getReal", outs)[1] == before
    assert h.call("doStep", 0.01, 0.01)[0] == 0
    assert h.call("getReal", outs)[1] == after
    ref = simulate(load_model(MODELS / "double_pendulum.py"), 0.02, 0.01)
    assert after[0] == pytest.approx(ref["rod1.phi"][-1], abs=1e-12)


def test_model_description_ranges_structural_note_and_binaries(fmus):
    for path in fmus.values():
        assert validate_fmu(str(path)) == []
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            root = ET.fromstring(z.read("modelDescription.xml"))
            doc = z.read("documentation/index.html").decode()
        assert [n for n in names if n.startswith("binaries/")
                and not n.startswith("binaries/linux64/")] == []
        assert "PYTHONEXECUTABLE" in doc
        variables = {v.get("name"): v for v in root.iter("ScalarVariable")}
        rtol = variables["solver.rtol"].find("Real")
        assert float(rtol.get("min")) > 0 and float(rtol.get("max")) <= 1
    dp = {v.get("name"): v for v in ET.fromstring(zipfile.ZipFile(
        fmus["double_pendulum"]).read("modelDescription.xml")).iter("ScalarVariable")}
    assert float(dp["l1"].find("Real").get("min")) == 1e-9
    nfb = {v.name: v for v in read_model_description(str(fmus["n_four_bar"])).modelVariables}
    assert nfb["N"].variability == "fixed" and "rebuild" in nfb["N"].description
    # a structural parameter set to another value is refused at once
    h, vr = _host(fmus["n_four_bar"])
    status, _, msgs = h.call("setInteger", [vr["N"]], [int(nfb["N"].start) + 1])
    assert status == 3 and "fmu-mb build" in msgs[-1][1]


_TWO_FMUS = textwrap.dedent("""
    import json, sys
    import numpy as np
    from fmpy import simulate_fmu
    runs = json.loads(sys.argv[1])
    out = []
    for path, start in runs:
        r = simulate_fmu(path, stop_time=0.2, output_interval=0.01, start_values=start)
        out.append({n: r[n].tolist() for n in r.dtype.names})
    print(json.dumps(out))
""")


def _simulate_in_new_process(runs):
    res = subprocess.run([sys.executable, "-c", _TWO_FMUS, json.dumps(runs)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT.parent)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_two_fmus_one_after_the_other_in_one_process(fmus):
    """fmpy deletes each FMU's extracted folder after simulate_fmu; the second FMU (compiled
    recursive formulation) must not depend on the first one's resources."""
    a = [str(fmus["double_pendulum"]), {}]
    b = [str(fmus["pendulum_chain"]), {"solver.formulation": "recursive"}]
    both = _simulate_in_new_process([a, b])
    alone_a = _simulate_in_new_process([a])[0]
    alone_b = _simulate_in_new_process([b])[0]
    assert both[0] == alone_a and both[1] == alone_b
    ref = simulate(load_model(MODELS / "pendulum_chain.py"), 0.2, 0.01)
    np.testing.assert_allclose(both[1]["link0.phi"], ref["link0.phi"], atol=1e-7)


def _c_host(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    host = tmp_path / "host"
    subprocess.run([cc, "-O1", "-o", str(host), str(C_HOST), "-ldl"], check=True)
    return host


def test_fmu_runs_after_its_build_environment_is_gone(tmp_path):
    """Build in a virtual environment, delete it, run the FMU in a bare C host: the FMU finds
    python3.X on PATH; with nothing suitable it fails at instantiation with one line."""
    host = _c_host(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    # the throw-away venv sees this interpreter's packages (pythonfmu, numpy, ...) through a
    # .pth file, whatever the base interpreter under both holds (--system-site-packages gave
    # the base's, which on a fresh machine has no pythonfmu)
    outer = [p for p in sys.path if p and os.path.isdir(p)
             and os.path.basename(os.path.normpath(p)) in ("site-packages", "dist-packages")]
    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
         "['purelib'])"], check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    Path(purelib).mkdir(parents=True, exist_ok=True)
    (Path(purelib) / "outer_environment.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in outer) + "\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([str(venv / "bin" / "python"), "-m", "fmu_mb", "build",
                    str(MODELS / "double_pendulum.py"), "-o", str(tmp_path / "out"), "--quiet",
                    "--python"],
                   check=True, timeout=300, env=env, capture_output=True)
    fmu = tmp_path / "out" / "double_pendulum.fmu"
    shutil.rmtree(venv)
    unz = tmp_path / "copy" / "dp"
    zipfile.ZipFile(fmu).extractall(unz)
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    cmd = [str(host), str(unz), md.guid, md.coSimulation.modelIdentifier, "0.1", "0.01",
           "--out", str(vr["rod1.phi"]), "--runs", "1"]
    # a python3.X on PATH that has numpy and scipy (this test's interpreter)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / f"python{sys.version_info.major}.{sys.version_info.minor}"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    launcher.chmod(0o755)
    path = f"{bin_dir}:/usr/bin:/bin"
    res = subprocess.run(cmd, capture_output=True, text=True, env={"PATH": path}, timeout=300)
    assert res.returncode == 0, res.stderr
    last = float(res.stdout.strip().splitlines()[-1].split(",")[-1])
    ref = simulate(load_model(MODELS / "double_pendulum.py"), 0.1, 0.01)
    assert last == pytest.approx(ref["rod1.phi"][-1], abs=1e-12)
    # nothing suitable: one logged line at instantiation naming what was looked at
    empty = tmp_path / "empty"
    empty.mkdir()
    res = subprocess.run(cmd, capture_output=True, text=True, env={"PATH": str(empty)},
                         timeout=120)
    assert res.returncode != 0
    line = [ln for ln in res.stderr.splitlines() if "no Python to run this FMU" in ln]
    assert len(line) == 1, res.stderr
    assert str(venv / "bin" / "python") in line[0] and "not found" in line[0]
    assert "PYTHONEXECUTABLE" in line[0]


def test_controller_fmu_has_the_same_statuses(tmp_path):
    from fmu_mb.fmi.build import build_controller_fmu
    from fmu_mb.fmi.controller import pid
    path = build_controller_fmu(pid("ctl", kp=2.0, ki=1.0, kd=0.0, Tf=0.01, setpoint=1.0,
                                    u_min=-5.0, u_max=5.0), tmp_path)
    h, vr = _host(path)
    h.call("setupExperiment", None, 0.0)
    h.call("enterInitializationMode")
    h.call("setReal", [vr["Tf"]], [-1.0])
    status, _, msgs = h.call("exitInitializationMode")
    assert status == 3 and "'Tf'" in msgs[-1][1] and "Tf >= 0" in msgs[-1][1]
    h.call("setReal", [vr["Tf"]], [0.01])
    assert h.call("exitInitializationMode")[0] == 0
    for call in [("setReal", [vr["u"]], [1.0]), ("getReal", [12345]),
                 ("setReal", [vr["kp"]], [3.0]), ("deSerializeFMUstate", b"\x00\x01")]:
        status, _, msgs = h.call(*call)
        assert status == 3 and msgs, call
    h.call("setReal", [vr["measurement"]], [0.25])
    assert h.call("doStep", 0.0, 0.01)[0] == 0
    u = h.call("getReal", [vr["u"]])[1][0]
    assert u == pytest.approx(2.0 * 0.75 + 0.0, abs=1e-12)   # kp e + I (I starts at 0)
