"""The model-exchange closure's pass over the cut joints' rows (engine_me.h me_joint_rows: no
Jacobians) against engine_spatial.h joint_terms, whose Jacobian rows the linearization and the
full Newton closure use: the same values, and rates equal to the Jacobian rows times the
bodies' rates, for every spatial joint kind (tests/c_host/me_rows_check.c)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "fmu_mb" / "engine" / "native"


def test_me_joint_rows_match_the_jacobian_rows(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "me_rows_check"
    subprocess.run([cc, "-O0", "-ffp-contract=off", f"-I{NATIVE}", "-DMBE_HAVE_PARAMS",
                    str(ROOT / "tests" / "c_host" / "me_rows_check.c"),
                    str(NATIVE / "kernel.c"), str(NATIVE / "spatial_kernel.c"),
                    str(NATIVE / "params.c"), "-o", str(exe), "-lm"], check=True)
    out = subprocess.run([str(exe), "3000"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "kinds=127 " in out.stdout and "value_mismatches=0" in out.stdout, out.stdout
