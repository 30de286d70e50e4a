"""Build CPU time and start-up of native FMUs against model size (spatial_chain, the double
pendulum, optionally a URDF such as example-robot-data's Panda).

    python bench/build_scale.py [--chain 16,64,256] [--startup 16,32,64] [--urdf PATH ...]
                                [--rounds 5] [--models] [--baseline DIR] [--urdf-rounds 3]
                                [--model spatial_chain] [--callgrind]

- build: `python -m fmu_mb build MODEL --platforms linux64 --quiet` in a child process (a
  URDF: every default platform), CPU time (user + sys) of the child and its children (the
  parameter program's worker, the C compiler and the linker), from getrusage; a first build
  (not timed) compiles the engine's objects into their cache, so the builds timed are warm;
- --urdf (may be given more than once): each URDF built --urdf-rounds times after one warm-up
  build (every default platform), median CPU and wall time; with --baseline DIR (the root of
  another fmu_mb source tree, e.g. a `git worktree` of main) the same URDF is built by DIR's
  fmu_mb alternately with this tree's, side by side in one run;
- start-up: fmi2Instantiate to the end of the first 1 ms doStep of spatial_chain's FMU in a
  fresh C host process (tests/c_host/native_host.c `startup`, dlopen included), CPU time,
  median of --rounds; the growth exponent is the least-squares slope of log(CPU) over log(N);
  --model: another model with a structural parameter N for that series (pendulum_chain,
  n_four_bar); --callgrind: also the instructions of the same start-up (valgrind's callgrind,
  the whole process, dlopen included: deterministic, machine-independent) and their exponent,
  and the CPU time of the phases (instantiate; setup, enter and exit initialization mode; the
  first doStep);
- --models: every model of models/ (its defaults) built as above, its build CPU and the
  start-up of its FMU (a model that does not run in the compiled engine builds a Python FMU:
  reported as such, not started).
The machine's load average is printed first: CPU times of a loaded machine are inflated.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def build(model, out, sets=(), platforms="linux64", root=ROOT, wall=False):
    """CPU seconds of one `fmu-mb build` (child and grandchildren) by the fmu_mb of the
    source tree `root`, and the FMU's path (wall: (CPU, wall seconds, path))."""
    cmd = [sys.executable, "-m", "fmu_mb", "build", str(model), "-o", str(out), "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    if platforms:
        cmd += ["--platforms", platforms]
    env = dict(os.environ, PYTHONPATH=str(root))
    c0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=str(root), stdout=subprocess.DEVNULL)
    cpu, seconds = _children_cpu() - c0, time.perf_counter() - t0
    fmus = sorted(Path(out).glob("*.fmu"), key=lambda p: p.stat().st_mtime)
    return (cpu, seconds, fmus[-1]) if wall else (cpu, fmus[-1])


def urdf_builds(urdfs, tmp, rounds, baseline=None):
    """Each URDF (every default platform) built `rounds` times after a warm-up build, by this
    tree and, alternately, by the baseline tree: a table of median CPU and wall seconds."""
    trees = [("this tree", ROOT)] + ([("baseline", Path(baseline).resolve())] if baseline
                                     else [])
    print("\n| URDF (every default platform) | tree | build CPU [s] | wall [s] | CPU of "
          "each round [s] |\n|---|---|---|---|---|")
    for urdf in urdfs:
        urdf = Path(urdf).resolve()
        for _, root in trees:
            build(urdf, tmp / "urdf_warm", platforms=None, root=root)
        got = {name: [] for name, _ in trees}
        for k in range(rounds):
            for name, root in (trees if k % 2 == 0 else trees[::-1]):
                cpu, seconds, _ = build(urdf, tmp / f"urdf_{k}", platforms=None, root=root,
                                        wall=True)
                got[name].append((cpu, seconds))
        for name, _ in trees:
            cpu = [c for c, _ in got[name]]
            print(f"| {urdf.name} | {name} | {statistics.median(cpu):.2f} | "
                  f"{statistics.median([w for _, w in got[name]]):.2f} | "
                  f"{', '.join(f'{c:.2f}' for c in cpu)} |", flush=True)


def startup_ms(host, fmu, tmp, rounds, phases=False):
    """The median CPU ms of the start-up (phases: a dict of the median of each of
    native_host's cpu_*_ms figures)."""
    from fmpy import extract, read_model_description

    md = read_model_description(str(fmu))
    d = extract(str(fmu), str(tmp / (fmu.parent.name + "_x")))
    runs = []
    for _ in range(rounds):
        res = subprocess.run([str(host), "startup", d, md.guid, md.coSimulation.modelIdentifier],
                             capture_output=True, text=True, env={}, check=True)
        runs.append({k: float(v) for k, v in (kv.split("=") for kv in res.stdout.split())})
    if phases:
        return {k: statistics.median(r[k] for r in runs) for k in runs[0] if k.startswith("cpu")}
    return statistics.median(r["cpu_ms"] for r in runs)


def startup_instructions(host, fmu, tmp):
    """Instructions of one start-up of the FMU in native_host under callgrind."""
    from fmpy import extract, read_model_description

    md = read_model_description(str(fmu))
    d = extract(str(fmu), str(tmp / (fmu.parent.name + "_cg")))
    res = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          str(host), "startup", d, md.guid, md.coSimulation.modelIdentifier],
                         capture_output=True, text=True, check=True)
    refs = [ln for ln in res.stderr.splitlines() if "refs:" in ln][-1]
    return int(refs.split()[-1].replace(",", ""))


def is_native(fmu):
    """Whether the FMU carries the compiled engine (its model data header in sources/)."""
    with zipfile.ZipFile(fmu) as z:
        return "sources/fmu_model.h" in z.namelist()


def host_program(tmp):
    """tests/c_host/native_host.c compiled into tmp."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    host = tmp / "native_host"
    subprocess.run([cc, "-O2", "-o", str(host), str(ROOT / "tests/c_host/native_host.c"),
                    "-ldl", "-lpthread"], check=True)
    return host


def every_model(tmp, rounds):
    """The build CPU and the start-up of every model of models/ (a table)."""
    host = host_program(tmp)
    print("\n| model | build CPU [s] | start-up to the end of the first 1 ms doStep "
          "[ms CPU] |\n|---|---|---|")
    for path in sorted((ROOT / "models").glob("*.py")):
        try:
            cpu, fmu = build(path, tmp / f"m_{path.stem}")
        except subprocess.CalledProcessError as ex:
            print(f"| {path.stem} | build failed ({ex.returncode}) | - |", flush=True)
            continue
        if not is_native(fmu):
            ms = "(Python FMU: not run by the C host)"
        else:
            try:
                ms = f"{startup_ms(host, fmu, tmp, rounds):.2f}"
            except subprocess.CalledProcessError as ex:
                ms = f"failed: {ex.stderr.strip()[:120]}"
        print(f"| {path.stem} | {cpu:.1f} | {ms} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chain", default="16,64,256", help="spatial_chain N to build")
    ap.add_argument("--startup", default="16,32,64", help="spatial_chain N to start up")
    ap.add_argument("--urdf", action="append", default=[],
                    help="a URDF to build (every platform); may be given more than once")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--urdf-rounds", type=int, default=3, help="builds of each URDF timed")
    ap.add_argument("--baseline", default=None,
                    help="root of another fmu_mb source tree: the URDFs built by it too, "
                         "alternately with this tree")
    ap.add_argument("--models", action="store_true",
                    help="also build and start up every model of models/")
    ap.add_argument("--model", default="spatial_chain",
                    help="the model (with a parameter N) of the --startup series")
    ap.add_argument("--callgrind", action="store_true",
                    help="also the start-up's instructions (callgrind) and CPU phases")
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} on "
          f"{os.cpu_count()} CPUs")
    chain = [int(v) for v in args.chain.split(",") if v]
    starts = [int(v) for v in args.startup.split(",") if v]
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        build(ROOT / "models" / "double_pendulum.py", tmp / "warm")  # the engine's objects
        print("\n| model | build CPU [s] |\n|---|---|")
        cpu, _ = build(ROOT / "models" / "double_pendulum.py", tmp / "dp")
        print(f"| double_pendulum | {cpu:.1f} |", flush=True)
        fmus = {}
        for n in sorted(set(chain)):
            cpu, fmus[n] = build(ROOT / "models" / "spatial_chain.py", tmp / f"c{n}",
                                 [f"N={n}"])
            print(f"| spatial_chain N = {n} | {cpu:.1f} |", flush=True)
        for n in starts:
            if args.model != "spatial_chain" or n not in fmus:
                _, fmus[n] = build(ROOT / "models" / f"{args.model}.py",
                                   tmp / f"s_{args.model}_{n}", [f"N={n}"])
        if args.urdf:
            urdf_builds(args.urdf, tmp, args.urdf_rounds, args.baseline)
        if starts:
            host = host_program(tmp)
            cg = args.callgrind
            print(f"\n| {args.model} | start-up to the end of the first 1 ms doStep [ms CPU] |"
                  + (" instantiate [ms] | initialization [ms] | first doStep [ms] | "
                     "instructions |" if cg else "") + "\n|---|---|" + ("---|" * 4 if cg else ""))
            ms, ins = [], []
            for n in starts:
                ph = startup_ms(host, fmus[n], tmp, args.rounds, phases=True)
                ms.append(ph["cpu_ms"])
                row = f"| N = {n} | {ms[-1]:.2f} |"
                if cg:
                    ins.append(startup_instructions(host, fmus[n], tmp))
                    row += (f" {ph['cpu_instantiate_ms']:.2f} | {ph['cpu_init_ms']:.2f} | "
                            f"{ph['cpu_step_ms']:.2f} | {ins[-1] / 1e6:.1f} M |")
                print(row, flush=True)
            if len(starts) > 1:
                slope = np.polyfit(np.log(starts), np.log(ms), 1)[0]
                print(f"\nstart-up growth exponent over N = {args.startup}: {slope:.2f} (CPU)"
                      + (f", {np.polyfit(np.log(starts), np.log(ins), 1)[0]:.2f} "
                         "(instructions)" if cg else ""))
        if args.models:
            every_model(tmp, args.rounds)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
