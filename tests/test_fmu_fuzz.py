"""Seeded fuzz test of random FMI 2.0 call sequences on fmu_mb FMUs.

Models: a smooth open chain (double_pendulum), a closed loop (four_bar) and a contact model
(bouncing_ball). Each sequence runs in a subprocess of its own (tests/fmu_fuzz_worker.py, which
also describes the sequences and the clean replay). Asserted per sequence: it returns within
the time limit (no hang), the subprocess exits normally (no host crash), no call returns
fmi2Fatal, every status other than fmi2OK comes with a logged message of that status (with
loggingOn true or false), an invalid value reference is never accepted, and a clean replay of
the accepted calls reads bit-identical values (a refused call changed nothing).

Short version (CI): FUZZ_SHORT sequences per model. Long version: FMU_MB_FUZZ=long runs
FUZZ_LONG sequences per model (FMU_MB_FUZZ=<number> runs that many). Seeds are 0, 1, 2, ...
so a failure is reproduced with: python tests/fmu_fuzz_worker.py <extracted FMU> SEED CALLS.
"""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.fmu

pythonfmu = pytest.importorskip("pythonfmu")
fmpy = pytest.importorskip("fmpy")
if not pythonfmu.FmuBuilder.has_binary():
    pytest.skip("pythonfmu has no binary for this platform", allow_module_level=True)

from fmpy import extract  # noqa: E402


from conftest import MODELS  # noqa: E402

WORKER = Path(__file__).resolve().parent / "fmu_fuzz_worker.py"
FUZZ_MODELS = ("double_pendulum", "four_bar", "bouncing_ball")
FUZZ_SHORT, FUZZ_LONG = 6, 300
CALLS_SHORT, CALLS_LONG = 25, 40
TIMEOUT = 180          # seconds per sequence; a hang fails the test


def _plan():
    mode = os.environ.get("FMU_MB_FUZZ", "")
    if mode == "long":
        return FUZZ_LONG, CALLS_LONG
    if mode.isdigit():
        return int(mode), CALLS_LONG
    return FUZZ_SHORT, CALLS_SHORT


@pytest.fixture(scope="module")
def extracted(tmp_path_factory, shared_fmu):
    out = tmp_path_factory.mktemp("fuzz")
    return {m: extract(str(shared_fmu(MODELS / f"{m}.py", "python")), str(out / m))
            for m in FUZZ_MODELS}


def _run(fmu_dir, seed, calls):
    try:
        res = subprocess.run([sys.executable, str(WORKER), fmu_dir, str(seed), str(calls)],
                             capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"seed": seed, "violations": [f"hang: no answer within {TIMEOUT} s"]}
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode != 0 or not lines:
        return {"seed": seed, "violations": [
            f"host crash or error: exit status {res.returncode}; {res.stderr[-2000:]}"]}
    return json.loads(lines[-1])


@pytest.mark.parametrize("model", FUZZ_MODELS)
def test_random_fmi_call_sequences(extracted, model):
    n, calls = _plan()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda s: _run(extracted[model], s, calls), range(n)))
    bad = [(r["seed"], v) for r in results for v in r["violations"]]
    statuses = {}
    for r in results:
        for k, v in r.get("statuses", {}).items():
            statuses[k] = statuses.get(k, 0) + v
    print(f"{model}: {n} sequences, statuses {statuses}", file=sys.stderr)
    assert not bad, f"{len(bad)} violations (seed, what): {bad[:10]}"
    # the sequences did exercise refusals, discards and accepted calls
    assert statuses.get("0", 0) and statuses.get("3", 0)
