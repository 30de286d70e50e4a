"""Soak test of an fmu_mb FMU in fmpy: N communication steps of 1 ms on the double pendulum
(no inputs, so the total energy is conserved by the physics), with the process's resident
memory (RSS), the constraint residual and the energy drift reported.

    python bench/soak.py [--steps 1000000] [--formulation recursive] [--json out.json]

Reported: RSS after a warm-up of 1 % of the steps and at the end, its growth in MB and in
bytes per step, RSS samples every 10 % of the run; max |constraint.residual| and
|constraint.velocity_residual| over the samples; the energy drift |E(t) - E(0)| / |E(0)| at the
end and its maximum over the samples (E = energy.total, J); the wall time. Every doStep must
return fmi2OK.
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fmpy import extract, read_model_description  # noqa: E402
from fmpy.fmi2 import FMU2Slave  # noqa: E402

from fmu_mb.fmi.build import build_fmu  # noqa: E402


def rss_mb():
    """Resident set size of this process [MB] (Linux /proc)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1_000_000)
    p.add_argument("--step", type=float, default=1e-3, help="communication step [s]")
    p.add_argument("--formulation", default="recursive",
                   help="solver.formulation (default recursive, the compiled one)")
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="fmu_mb_soak_"))
    fmu = build_fmu(ROOT / "models" / "double_pendulum.py", tmp)
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    names = ("energy.total", "constraint.residual", "constraint.velocity_residual")
    outs = [vr[n] for n in names]
    slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(fmu)),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="soak")
    slave.instantiate()
    slave.setupExperiment(startTime=0.0)
    slave.enterInitializationMode()
    slave.setString([vr["solver.formulation"]], [args.formulation])
    slave.exitInitializationMode()

    e0 = slave.getReal(outs)[0]
    warm = max(1, args.steps // 100)
    every = max(1, args.steps // 10)
    t, h = 0.0, args.step
    samples, max_res, max_vres, max_drift = [], 0.0, 0.0, 0.0
    rss_start = None
    t0 = time.perf_counter()
    for k in range(1, args.steps + 1):
        slave.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        t = k * h
        if k == warm:
            rss_start = rss_mb()
        if k % every == 0 or k == args.steps:
            e, res, vres = slave.getReal(outs)
            drift = abs(e - e0) / abs(e0)
            max_res, max_vres = max(max_res, abs(res)), max(max_vres, abs(vres))
            max_drift = max(max_drift, drift)
            samples.append({"step": k, "t": t, "rss_mb": round(rss_mb(), 2),
                            "energy_drift": drift, "residual": res})
            print(f"step {k:>8d}  t = {t:9.3f} s  RSS {samples[-1]['rss_mb']:8.2f} MB  "
                  f"|dE|/E0 {drift:.3e}  |Phi| {abs(res):.3e}", flush=True)
    wall = time.perf_counter() - t0
    e_end = slave.getReal(outs)[0]
    slave.terminate()
    slave.freeInstance()
    rss_end = rss_mb()
    growth = rss_end - rss_start
    figures = {
        "steps": args.steps, "step_s": h, "formulation": args.formulation,
        "rss_start_mb": round(rss_start, 2), "rss_end_mb": round(rss_end, 2),
        "rss_growth_mb": round(growth, 3),
        "rss_growth_bytes_per_step": growth * 2 ** 20 / max(1, args.steps - warm),
        "max_constraint_residual": max_res, "max_velocity_residual": max_vres,
        "energy_drift_end": abs(e_end - e0) / abs(e0), "energy_drift_max": max_drift,
        "wall_s": round(wall, 1), "us_per_step": round(wall / args.steps * 1e6, 2),
        "samples": samples}
    print(json.dumps({k: v for k, v in figures.items() if k != "samples"}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
