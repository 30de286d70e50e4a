"""Test files that share process-wide state must pass in either order.

`pytest tests/test_params_compile.py tests/test_fmu.py` (the parameter compiler's traces patch
shared modules; the kernels' ctypes libraries and weak caches are per process) was reported to
segfault in test_fmu.py::test_state_get_set_and_serialize_continue_bit_identically, while each
file passed alone and the whole suite (test_fmu first) passed. The order that crashed runs here
in a subprocess of its own, so that a crash fails this test with the subprocess's output (the
faulthandler traceback) instead of ending the session. The subprocess runs all of
test_params_compile.py and the one test of test_fmu.py, which builds one FMU only (test_fmu's
`fmus` builds on first use).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_in_order(*tests, timeout=600):
    """(returncode, output) of `python -X faulthandler -m pytest -q -p no:cacheprovider
    tests...` from the repository's root, this fmu_mb first on the path."""
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "")
                                                       .split(os.pathsep) if p])
    p = subprocess.run([sys.executable, "-X", "faulthandler", "-m", "pytest", "-q",
                        "-p", "no:cacheprovider", "-p", "no:randomly", *tests],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


@pytest.mark.fmu
def test_params_compile_then_fmu_state_round_trip():
    pytest.importorskip("pythonfmu")
    pytest.importorskip("fmpy")
    from fmu_mb.engine.kernel import compiler
    if compiler() is None:
        pytest.skip("no C compiler: test_params_compile.py would be skipped")
    rc, out = run_in_order(
        "tests/test_params_compile.py",
        "tests/test_fmu.py::test_state_get_set_and_serialize_continue_bit_identically")
    # 0: all passed; a crash is a negative status (-11: SIGSEGV) or faulthandler's report
    assert rc == 0 and "Fatal Python error" not in out, \
        f"status {rc} (a negative status is the signal that ended it):\n{out[-6000:]}"
