"""Build CPU time and start-up of native FMUs against model size (spatial_chain, the double
pendulum, optionally a URDF such as example-robot-data's Panda).

    python bench/build_scale.py [--chain 16,64,256] [--startup 16,32,64] [--urdf PATH ...]
                                [--rounds 5] [--models] [--baseline DIR] [--urdf-rounds 3]

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


def startup_ms(host, fmu, tmp, rounds):
    from fmpy import extract, read_model_description

    md = read_model_description(str(fmu))
    d = extract(str(fmu), str(tmp / (fmu.stem + "_x")))
    cpu = []
    for _ in range(rounds):
        res = subprocess.run([str(host), "startup", d, md.guid, md.coSimulation.modelIdentifier],
                             capture_output=True, text=True, env={}, check=True)
        cpu.append(float(dict(kv.split("=") for kv in res.stdout.split())["cpu_ms"]))
    return statistics.median(cpu)


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
        for n in sorted(set(chain) | set(starts)):
            cpu, fmus[n] = build(ROOT / "models" / "spatial_chain.py", tmp / f"c{n}",
                                 [f"N={n}"])
            if n in chain:
                print(f"| spatial_chain N = {n} | {cpu:.1f} |", flush=True)
        if args.urdf:
            urdf_builds(args.urdf, tmp, args.urdf_rounds, args.baseline)
        if starts:
            host = host_program(tmp)
            print("\n| spatial_chain | start-up to the end of the first 1 ms doStep "
                  "[ms CPU] |\n|---|---|")
            ms = []
            for n in starts:
                ms.append(startup_ms(host, fmus[n], tmp, args.rounds))
                print(f"| N = {n} | {ms[-1]:.2f} |", flush=True)
            if len(starts) > 1:
                slope = np.polyfit(np.log(starts), np.log(ms), 1)[0]
                print(f"\nstart-up growth exponent over N = {args.startup}: {slope:.2f}")
        if args.models:
            every_model(tmp, args.rounds)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
