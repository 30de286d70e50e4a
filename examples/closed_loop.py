"""Closed loops of a multibody FMU and a controller FMU, run in two masters.

Both masters use the same fixed-step Jacobi scheme (libcosim's fixed_step_algorithm):

    initialise both FMUs (start values), transfer: controller.measurement <- plant outputs,
                                                   plant input <- controller.u (0 at t = 0)
    repeat: doStep(t, h) on both FMUs; t += h; transfer as above

so the controller samples the measurement at t and its output drives the plant over
[t + h, t + 2h] (one sample of delay, a sampled controller). `run_fmpy` is that loop written
out with fmpy's FMU2Slave; `run_libcosim` lets libcosimpy's CosimExecution do it with
connect_real_variables, `run_libcosim_osp` from an OspSystemStructure.xml (write_osp). Both return {name: numpy array} of the observed variables sampled at
every communication point (t = 0, h, 2h, ...).

    python examples/run_examples.py      # builds the FMUs into out/examples/ and runs both
"""
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = Path(__file__).resolve().parent


@dataclass
class Loop:
    name: str
    plant: Path                 # model file
    controller: Path            # controller definition file
    connections: list           # (plant output, controller input) pairs
    actuation: tuple            # (controller output, plant input)
    goal: str                   # observed plant output that should reach `target`
    target: float
    stop_time: float
    step: float = 0.01
    observe: list = field(default_factory=list)   # extra plant outputs to record
    plant_start: dict = field(default_factory=dict)
    start: float = 0.0          # value of `goal` at t = 0
    band: float = 0.04          # settling band: |goal - target| <= band (goal's unit)


LOOPS = [
    Loop("crane", ROOT / "models/container_crane.py", EXAMPLES / "controllers/crane_pid.py",
         [("x.position", "position.measurement"), ("phi.angle", "sway.measurement")],
         ("u", "Q_x"), goal="x.position", target=2.0, stop_time=10.0,
         observe=["phi.angle"], band=0.04, plant_start={"solver.rtol": 1e-7}),
    # a horizontal slider-crank (g = 0) whose crank is a 20 kg flywheel: the PI holds the
    # crank speed; the remaining ripple (+-1 rad/s at 15 rad/s) is the kinetic-energy
    # exchange of the varying inertia, hence the band of 10 % of the set-point
    Loop("slider_crank", ROOT / "models/slider_crank.py",
         EXAMPLES / "controllers/slider_crank_pid.py",
         [("O.rate", "measurement")], ("u", "drive.h"), goal="O.rate", target=15.0,
         stop_time=3.0, start=10.0, band=1.5,
         plant_start={"crank_mass": 20.0, "g": 0.0, "solver.rtol": 1e-7}),
    # the pole starts 0.1 rad from upright; balanced while the cart moves to 1 m
    Loop("cart_pole", EXAMPLES / "models/cart_pole.py",
         EXAMPLES / "controllers/cart_pole_pid.py",
         [("rail.position", "position.measurement"), ("pivot.angle", "angle.measurement")],
         ("u", "push.h"), goal="rail.position", target=1.0, stop_time=6.0,
         observe=["pivot.angle"], band=0.02, plant_start={"solver.rtol": 1e-7}),
]


def build(loop, out_dir=ROOT / "out" / "examples"):
    """Build (or reuse) the plant and controller FMUs of a loop; returns their paths."""
    from fmu_mb.fmi.build import build_controller_fmu, build_fmu
    return build_fmu(loop.plant, out_dir), build_controller_fmu(loop.controller, out_dir)


def _vr(path):
    from fmpy import read_model_description
    md = read_model_description(str(path))
    return md, {v.name: v.valueReference for v in md.modelVariables}


def _names(loop):
    return [loop.goal] + [n for n in loop.observe if n != loop.goal]


def run_fmpy(loop, plant_fmu, ctrl_fmu):
    """The documented master loop with fmpy.fmi2.FMU2Slave (see module docstring)."""
    from fmpy import extract
    from fmpy.fmi2 import FMU2Slave

    fmus = []
    for path, inst in ((plant_fmu, "plant"), (ctrl_fmu, "controller")):
        md, vr = _vr(path)
        f = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName=inst)
        f.instantiate()
        f.setupExperiment(startTime=0.0)
        f.enterInitializationMode()
        fmus.append((f, vr))
    (plant, pvr), (ctrl, cvr) = fmus
    for k, v in loop.plant_start.items():
        plant.setReal([pvr[k]], [v])
    plant.exitInitializationMode()
    ctrl.exitInitializationMode()
    names = _names(loop)
    outs, ins = [pvr[a] for a, _ in loop.connections], [cvr[b] for _, b in loop.connections]

    def transfer():
        ctrl.setReal(ins, plant.getReal(outs))
        plant.setReal([pvr[loop.actuation[1]]], ctrl.getReal([cvr[loop.actuation[0]]]))

    h, n = loop.step, int(round(loop.stop_time / loop.step))
    rec = {k: [] for k in ["time", "u"] + names}

    def record(t):
        rec["time"].append(t)
        rec["u"].append(ctrl.getReal([cvr[loop.actuation[0]]])[0])
        for k, v in zip(names, plant.getReal([pvr[k] for k in names])):
            rec[k].append(v)

    transfer()
    for i in range(n):
        t = i * h
        plant.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        ctrl.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        transfer()
        record((i + 1) * h)
    for f, _ in fmus:
        f.terminate()
        f.freeInstance()
    return {k: np.array(v) for k, v in rec.items()}


def run_libcosim(loop, plant_fmu, ctrl_fmu):
    """The same loop in libcosim: CosimExecution + connect_real_variables, a time-series
    observer records every step."""
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave
    log_output_level(CosimLogLevel.ERROR)

    h, n = loop.step, int(round(loop.stop_time / loop.step))
    ex = CosimExecution.from_step_size(step_size=int(round(h * 1e9)))
    p = ex.add_local_slave(CosimLocalSlave(fmu_path=str(plant_fmu), instance_name="plant"))
    c = ex.add_local_slave(CosimLocalSlave(fmu_path=str(ctrl_fmu), instance_name="controller"))
    _, pvr = _vr(plant_fmu)
    _, cvr = _vr(ctrl_fmu)
    for a, b in loop.connections:
        ex.connect_real_variables(p, pvr[a], c, cvr[b])
    ex.connect_real_variables(c, cvr[loop.actuation[0]], p, pvr[loop.actuation[1]])
    for k, v in loop.plant_start.items():
        ex.real_initial_value(p, pvr[k], v)
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    return _record_libcosim(ex, obs, p, c, pvr, cvr, loop)


def _record_libcosim(ex, obs, p, c, pvr, cvr, loop):
    h, n = loop.step, int(round(loop.stop_time / loop.step))
    names = _names(loop)
    rec = {k: [] for k in ["time", "u"] + names}
    for i in range(n):
        ex.step()          # the first call also initialises (and transfers the start values)
        rec["time"].append((i + 1) * h)
        rec["u"].append(obs.last_real_values(c, [cvr[loop.actuation[0]]])[0])
        for k, v in zip(names, obs.last_real_values(p, [pvr[k] for k in names])):
            rec[k].append(v)
    return {k: np.array(v) for k, v in rec.items()}


def write_osp(loop, plant_fmu, ctrl_fmu, directory):
    """Write directory/OspSystemStructure.xml (and copy the two FMUs next to it)."""
    import shutil
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for f in (plant_fmu, ctrl_fmu):
        shutil.copy2(f, d / Path(f).name)
    conns = [("plant", a, "controller", b) for a, b in loop.connections]
    conns.append(("controller", loop.actuation[0], "plant", loop.actuation[1]))
    init = "".join(f'\n        <InitialValue variable="{k}"><Real value="{v!r}"/></InitialValue>'
                   for k, v in loop.plant_start.items())
    xml = f'''<?xml version="1.0" encoding="utf-8"?>
<OspSystemStructure xmlns="http://opensimulationplatform.com/MSMI/OSPSystemStructure"
                    version="0.1">
  <StartTime>0.0</StartTime>
  <BaseStepSize>{loop.step!r}</BaseStepSize>
  <Algorithm>fixedStep</Algorithm>
  <Simulators>
    <Simulator name="plant" source="{Path(plant_fmu).name}" stepSize="{loop.step!r}">
      <InitialValues>{init}
      </InitialValues>
    </Simulator>
    <Simulator name="controller" source="{Path(ctrl_fmu).name}" stepSize="{loop.step!r}"/>
  </Simulators>
  <Connections>
''' + "".join(f'''    <VariableConnection>
      <Variable simulator="{a}" name="{x}"/>
      <Variable simulator="{b}" name="{y}"/>
    </VariableConnection>
''' for a, x, b, y in conns) + """  </Connections>
</OspSystemStructure>
"""
    path = d / "OspSystemStructure.xml"
    path.write_text(xml, encoding="utf-8")
    return path


def run_libcosim_osp(loop, plant_fmu, ctrl_fmu, directory):
    """The same loop in libcosim from an OspSystemStructure.xml (write_osp)."""
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver
    log_output_level(CosimLogLevel.ERROR)
    osp = write_osp(loop, plant_fmu, ctrl_fmu, directory)
    ex = CosimExecution.from_osp_config_file(str(osp.parent))
    p, c = ex.slave_index_from_instance_name("plant"), \
        ex.slave_index_from_instance_name("controller")
    _, pvr = _vr(plant_fmu)
    _, cvr = _vr(ctrl_fmu)
    obs = CosimObserver.create_last_value()
    ex.add_observer(obs)
    return _record_libcosim(ex, obs, p, c, pvr, cvr, loop)


def metrics(res, loop):
    """Settling time (the first communication point after which the goal output stays within
    loop.band of the target) and overshoot (% of |target - start|).
    Results hold t = h, 2h, ..., stop_time (libcosim initialises inside its first step)."""
    t, y = res["time"], res[loop.goal]
    step = loop.target - loop.start
    err = np.abs(y - loop.target)
    outside = np.nonzero(err > loop.band)[0]
    settle = 0.0 if len(outside) == 0 else (t[outside[-1]] + (t[1] - t[0])
                                            if outside[-1] + 1 < len(t) else np.inf)
    over = max(0.0, np.max((y - loop.target) * np.sign(step))) / abs(step) * 100.0
    return settle, over


if __name__ == "__main__":
    import runpy
    runpy.run_path(str(EXAMPLES / "run_examples.py"), run_name="__main__")
