"""Default-built loop FMUs against Exudyn's best setting in CPU time, side by side (a quick
check for a loaded machine, where wall time is stretched by the load; run.py --cpu does the
same with the tuning).

    python bench/fmu_loops_cpu.py

The four-bar (N-four-bar N = 1) and slider-crank FMUs, no parameter set, in fmpy: 200
doSteps of 10 ms + getReal of the joint angles, alternating 5 times with Exudyn's best
setting found by run.py (trapezoidal index 2, h = 5e-4 s; generalized-alpha, h = 2.63e-5 s;
dense, one Jacobian per step); medians of the process CPU time (Exudyn solves in the calling
thread), wall time for reference.
"""
import sys, time, tempfile, statistics, math; HERE = __import__('pathlib').Path(__file__).resolve().parent; sys.path.insert(0, str(HERE.parent)); sys.path.insert(0, str(HERE))
from pathlib import Path
import exudyn_models as X, references as R
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave
from fmu_mb.fmi.build import build_fmu
X.CLOCK = time.process_time
tmp = Path(tempfile.mkdtemp())
cases = [("four-bar", "n_four_bar.py", {"N": 1}, ["O0","O1","L0","R0"], lambda: R.n_four_bar(1), X.n_four_bar(1, R.four_bar_bodies(1, math.pi/2, -1.0)), "TrapezoidalIndex2", 5e-4),
         ("slider-crank", "slider_crank.py", {}, ["O","A","B"], R.slider_crank, X.slider_crank(R.SliderCrank().bodies(0.0, 10.0)), "GeneralizedAlpha", 2.63e-5)]
for label, f, pars, names, reff, ex, solver, h in cases:
    ref = reff()[0]
    fmu = build_fmu(HERE.parent / 'models' / f, tmp, overrides=pars)
    md = read_model_description(str(fmu)); vr = {v.name: v.valueReference for v in md.modelVariables}
    outs = [vr[f"{n}.angle"] for n in names]; unz = extract(str(fmu))
    fc, fw, ec, errs = [], [], [], []
    for k in range(5):
        s = FMU2Slave(guid=md.guid, unzipDirectory=unz, modelIdentifier=md.coSimulation.modelIdentifier, instanceName=f"r{k}")
        s.instantiate(); s.setupExperiment(startTime=0.0); s.enterInitializationMode(); s.exitInitializationMode()
        c0, w0 = time.process_time(), time.perf_counter()
        for i in range(200):
            s.doStep(currentCommunicationPoint=i*0.01, communicationStepSize=0.01); y = s.getReal(outs)
        fc.append(time.process_time()-c0); fw.append(time.perf_counter()-w0)
        s.terminate(); s.freeInstance()
        w, q, _ = ex.run(2.0, h, solver, sparse=False, jac_per_step=True); ec.append(w)
        errs.append(max(abs(q[k]-ref[k]) for k in ref))
    fe = max(abs(a-ref[k]) for a, k in zip(y, names))
    m = statistics.median
    print(f"{label}: FMU CPU {m(fc)/2*1e3:.3g} ms/s (wall {m(fw)/2*1e3:.3g}), error {fe:.1e}; Exudyn {solver} h={h} CPU {m(ec)/2*1e3:.3g} ms/s, error {errs[-1]:.1e}; ratio (CPU) {m(fc)/m(ec):.3f}")
