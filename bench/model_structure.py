"""ModelStructure dependencies from the structure (fmu_mb.model_structure) against finite
differences (model_structure_numeric): per model, the number of declared dependencies of
both, how much larger the structural set is, whether it misses any numeric one, and the CPU
time of each (docs/performance.md, "Build time against model size").

    python bench/model_structure.py [model files...]     (default: every models/*.py)
"""
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fmu_mb  # noqa: E402
from fmu_mb.dynamics.linearize import model_structure, model_structure_numeric  # noqa: E402


def compare(path):
    model = fmu_mb.load_model(path)
    t0 = time.process_time()
    s = model_structure(model)
    t1 = time.process_time()
    n = model_structure_numeric(model)
    t2 = time.process_time()
    ns = nn = 0
    missing = []
    for key in ("derivative_dependencies", "output_dependencies"):
        for unknown, deps in n[key].items():
            ns, nn = ns + len(s[key][unknown]), nn + len(deps)
            missing += [(unknown, k) for k in deps if k not in s[key][unknown]]
    return ns, nn, missing, t1 - t0, t2 - t1, s["check"]


def main(argv):
    files = [Path(p) for p in argv] or sorted((ROOT / "models").glob("*.py"))
    print(f"{'model':26s} {'structure':>9s} {'numeric':>8s} {'ratio':>6s} {'missed':>6s} "
          f"{'CPU structure':>13s} {'CPU numeric':>11s}")
    for p in files:
        try:
            ns, nn, missing, ts, tn, check = compare(p)
        except fmu_mb.FmuMbError as exc:
            print(f"{p.stem:26s} {type(exc).__name__}: {exc}")
            continue
        ratio = f"{ns / nn:6.2f}" if nn else "     -"
        print(f"{p.stem:26s} {ns:9d} {nn:8d} {ratio} {len(missing):6d} {ts:11.2f} s "
              f"{tn:9.2f} s")
        for m in missing:
            print("    missed:", m)
        if check["widened"]:
            print("    widened by the spot check:", check["widened"])


if __name__ == "__main__":
    main(sys.argv[1:])
