"""Build the FMU of every model in models/ into one folder.

    python build_scripts/build_fmus.py [-o DIR] [--python]

Equivalent to `fmu-mb build models/*.py -o DIR`: a native FMU (the compiled engine, no Python
on the host) for every model that runs in the compiled engine, a Python FMU for the others;
--python builds Python FMUs only. Prints each FMU's path, kind and why.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fmu_mb.fmi.native_build import build_model_fmu  # noqa: E402


def model_files():
    return sorted(p for p in (ROOT / "models").glob("*.py") if not p.name.startswith("_"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output-dir", default=str(ROOT / "out" / "fmus"))
    p.add_argument("--python", action="store_true", help="Python FMUs only")
    args = p.parse_args(argv)
    for f in model_files():
        path, kind, why = build_model_fmu(f, args.output_dir,
                                          kind="python" if args.python else None)
        print(f"{path}  [{kind}: {why}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
