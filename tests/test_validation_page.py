"""The validation report (docs/validation.md, written by docs/gen_validation.py): every external
reference the tests check is on the page, and the generator runs."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "validation.md"

#: the names under which the tests check against an external reference, and what the page
#: must then show
REFERENCES = [(re.compile(r"IFToMM (?:benchmark )?(A0\d)"), "{0}"),
              (re.compile(r"\bseed (00\d)\b"), "seed {0}"),
              (re.compile(r"\b(exudyn)\b", re.I), "Exudyn"),
              (re.compile(r"\b(pinocchio)\b", re.I), "Pinocchio"),
              (re.compile(r"\b(mujoco)\b", re.I), "MuJoCo"),
              (re.compile(r"\b(menagerie)\b", re.I), "Menagerie"),
              (re.compile(r"\b(Andrews)\b"), "Andrews"),
              (re.compile(r"\b(validate_fmu)\b"), "validate_fmu")]


def test_every_external_reference_of_the_tests_is_on_the_page():
    page = PAGE.read_text()
    missing = set()
    for f in sorted((ROOT / "tests").glob("*.py")):
        text = f.read_text()
        for pattern, shown in REFERENCES:
            for m in pattern.finditer(text):
                want = shown.format(m.group(1))
                if want.lower() not in page.lower():
                    missing.add((want, f.name))
    assert not missing, sorted(missing)


def test_the_generator_prints_a_table():
    res = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_validation.py"), "--only",
                          "a01", "--no-fmu"], capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "## IFToMM A01" in res.stdout
    row = re.search(r"\| in process \| ([0-9.e+-]+) \| 1e-08 \| yes \|", res.stdout)
    assert row and float(row.group(1)) < 1e-8, res.stdout
