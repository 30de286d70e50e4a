"""Model exchange: fmi2GetDerivatives of the native double wishbone in a C
host against the engine's own acceleration solve for the same state, in CPU time.

tests/c_host/me_host.c `bench` loads the native FMU's binary as a model-exchange instance and
times, per call:
- "set + derivatives": fmi2SetTime, fmi2SetContinuousStates and fmi2GetDerivatives along an
  RK4 trajectory of step TRAJ_H (forth and back over 200 states): what a host's solver pays per
  right-hand side; the loops are closed for every state (engine_me.h: chord iterations from
  the last solution, one kinematics pass each, the tangent predictor first);
- "derivatives": fmi2GetDerivatives alone at one state: the engine's acceleration solve (the
  kernel's articulated-body pass and the loops' Schur complement, as its co-simulation
  integrator calls it per stage) and the FMI call.
Target: set + derivatives at most 1.3 x derivatives. Rounds alternate; medians.

    python bench/me_derivatives.py [--calls 30000] [--rounds 5] [--traj-h 1e-4 1e-3]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=30000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--traj-h", type=float, nargs="+", default=[1e-4, 1e-3])
    ap.add_argument("--model", default="double_wishbone")
    args = ap.parse_args(argv)
    from fmpy import read_model_description
    from fmu_mb.fmi.native_build import build_native_fmu

    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    with tempfile.TemporaryDirectory(prefix="fmu_mb_me_bench_") as tmp:
        tmp = Path(tmp)
        fmu = build_native_fmu(ROOT / "models" / f"{args.model}.py", tmp, platforms="linux64")
        folder = tmp / "fmu"
        zipfile.ZipFile(fmu).extractall(folder)
        md = read_model_description(str(fmu))
        host = tmp / "me_host"
        subprocess.run([cc, "-O2", "-o", str(host), str(ROOT / "tests" / "c_host" / "me_host.c"),
                        "-ldl", "-lm"], check=True)
        env = dict(os.environ, ME_NX=str(len(md.derivatives)),
                   ME_NZ=str(md.numberOfEventIndicators))
        print(f"{args.model}: {len(md.derivatives)} continuous states, "
              f"{md.numberOfEventIndicators} event indicators; CPU time per call, medians of "
              f"{args.rounds} rounds of {args.calls} calls")
        for h in args.traj_h:
            both, only = [], []
            for _ in range(args.rounds):
                out = subprocess.run([str(host), "bench", str(folder), md.guid,
                                      md.modelExchange.modelIdentifier, str(args.calls),
                                      repr(h)], env=env, capture_output=True, text=True,
                                     check=True).stdout
                got = dict(re.findall(r"(\w+)=([0-9.eE+-]+)", out))
                both.append(float(got["set_and_derivatives_us"]))
                only.append(float(got["derivatives_us"]))
            b, o = statistics.median(both), statistics.median(only)
            print(f"  trajectory step {h:g} s: set + derivatives {b:.2f} us, derivatives "
                  f"(the engine's acceleration solve) {o:.2f} us, ratio {b / o:.2f} "
                  f"(target <= 1.3)")


if __name__ == "__main__":
    main()
