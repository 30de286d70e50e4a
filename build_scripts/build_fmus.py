"""Build the FMU of every model in models/ into one folder.

    python build_scripts/build_fmus.py [-o DIR]

Equivalent to `fmu-mb build models/*.py -o DIR`.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fmu_mb.fmi.build import build_fmus  # noqa: E402


def model_files():
    return sorted(p for p in (ROOT / "models").glob("*.py") if not p.name.startswith("_"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output-dir", default=str(ROOT / "out" / "fmus"))
    args = p.parse_args(argv)
    for path in build_fmus(model_files(), args.output_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
