"""Model exchange: fmi2GetDerivatives of native FMUs in a C host against the
engine's own acceleration solve for the same state, in CPU time.

tests/c_host/me_host.c `bench` loads the native FMU's binary as a model-exchange instance and
times, per call:
- "set + derivatives": fmi2SetTime, fmi2SetContinuousStates and fmi2GetDerivatives along an
  RK4 trajectory of step TRAJ_H (forth and back over 200 states): what a host's solver pays per
  right-hand side; the loops are closed for every state (engine_me.h: chord iterations from
  the last solution, one kinematics pass each, the tangent predictor first; a planar model
  without drives: Newton on the kernel's loop rows, whose last pass's positions the
  acceleration solve of that state takes);
- "derivatives": fmi2GetDerivatives alone at one state: the engine's acceleration solve (the
  kernel's articulated-body pass and the loops' Schur complement, as its co-simulation
  integrator calls it per stage) and the FMI call.
Target: set + derivatives at most 1.3 x derivatives. The rounds interleave the models and
trajectory steps (every model's FMU is built first; one round runs each of them once);
medians over the rounds. The load (os.getloadavg) is printed before and after.

    python bench/me_derivatives.py [--calls 30000] [--rounds 5] [--traj-h 1e-4 1e-3]
        [--model double_wishbone four_bar double_pendulum n_four_bar]
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
    ap.add_argument("--model", nargs="+", default=["double_wishbone"])
    args = ap.parse_args(argv)
    from fmpy import read_model_description
    from fmu_mb.fmi.native_build import build_native_fmu

    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    with tempfile.TemporaryDirectory(prefix="fmu_mb_me_bench_") as tmp:
        tmp = Path(tmp)
        host = tmp / "me_host"
        subprocess.run([cc, "-O2", "-o", str(host), str(ROOT / "tests" / "c_host" / "me_host.c"),
                        "-ldl", "-lm"], check=True)
        runs = []                       # (model, folder, md, env)
        for model in args.model:
            out = tmp / model
            fmu = build_native_fmu(ROOT / "models" / f"{model}.py", out, platforms="linux64")
            folder = out / "fmu"
            zipfile.ZipFile(fmu).extractall(folder)
            md = read_model_description(str(fmu))
            env = dict(os.environ, ME_NX=str(len(md.derivatives)),
                       ME_NZ=str(md.numberOfEventIndicators))
            runs.append((model, folder, md, env))
            print(f"{model}: {len(md.derivatives)} continuous states, "
                  f"{md.numberOfEventIndicators} event indicators")
        load0 = os.getloadavg()
        both = {(r[0], h): [] for r in runs for h in args.traj_h}
        only = {(r[0], h): [] for r in runs for h in args.traj_h}
        for _ in range(args.rounds):
            for model, folder, md, env in runs:
                for h in args.traj_h:
                    out = subprocess.run([str(host), "bench", str(folder), md.guid,
                                          md.modelExchange.modelIdentifier, str(args.calls),
                                          repr(h)], env=env, capture_output=True, text=True,
                                         check=True).stdout
                    got = dict(re.findall(r"(\w+)=([0-9.eE+-]+)", out))
                    both[model, h].append(float(got["set_and_derivatives_us"]))
                    only[model, h].append(float(got["derivatives_us"]))
        load1 = os.getloadavg()
        print(f"CPU time per call, medians of {args.rounds} interleaved rounds of {args.calls} "
              f"calls; load (1 min) {load0[0]:.1f} before, {load1[0]:.1f} after")
        print("| model | trajectory step | set + derivatives | derivatives (the engine's "
              "acceleration solve) | ratio (target <= 1.3) | ratio: min, max of the rounds |")
        print("|---|---|---|---|---|---|")
        for model, *_ in runs:
            for h in args.traj_h:
                b, o = statistics.median(both[model, h]), statistics.median(only[model, h])
                rs = [x / y for x, y in zip(both[model, h], only[model, h])]
                print(f"| {model} | {h:g} s | {b:.2f} us | {o:.2f} us | {b / o:.2f} | "
                      f"{min(rs):.2f}, {max(rs):.2f} |")

if __name__ == "__main__":
    main()
