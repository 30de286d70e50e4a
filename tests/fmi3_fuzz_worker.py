"""One seeded random FMI 3.0 call sequence on an extracted native FMI 3.0 FMU, run by
tests/test_fmi3.py in a subprocess of its own: python fmi3_fuzz_worker.py FMU_DIR SEED N_CALLS.

The calls mix ordinary use with misuse of what fmi3_native.c adds to the shared FMI 2.0 code:
Event Mode entered and left at the wrong time, doStep in Event Mode, the independent variable
`time` read and written, value references that do not exist or have another type, every
getter and setter type, nValues that do not match, non-finite inputs and steps, wrong
communication points, states saved, restored, serialized and deserialized (also damaged
bytes), reset, terminate and initialisation calls out of order, instances made with and
without eventModeUsed and logging.

Checked per call: the status is never fmi3Fatal; every status other than fmi3OK comes with a
message logged during the call (logging on or off); a refused call (fmi3Discard, fmi3Error)
changes nothing that can be read (time and every output, where the state allows reading).
Prints one JSON line: counts per status and the list of violations (empty when all is well).
"""
import json
import math
import random
import sys

from fmpy import read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi3 import FMU3Slave

NAN, INF = float("nan"), float("inf")


class Host:
    def __init__(self, fmu_dir, md, rng):
        self.md, self.dir, self.rng = md, fmu_dir, rng
        self.messages = []
        self.n = len(md.modelVariables) - 1                  # `time`
        self.outputs = [v.valueReference for v in md.modelVariables if v.causality == "output"]
        self.inputs = [v.valueReference for v in md.modelVariables if v.causality == "input"]
        self.by_type = {}
        for v in md.modelVariables:
            self.by_type.setdefault(v.type, []).append(v.valueReference)
        self.states = []
        self.blobs = []
        self.fmu = None
        self.new()

    def log(self, env, status, category, message):
        self.messages.append((status, message.decode(errors="replace")))

    def new(self):
        if self.fmu is not None:
            self.fmu.freeInstance()
        self.states = []
        self.fmu = FMU3Slave(guid=self.md.guid, unzipDirectory=self.dir,
                             modelIdentifier=self.md.coSimulation.modelIdentifier,
                             instanceName="fuzz")
        self.event_mode_used = self.rng.random() < 0.5
        self.fmu.instantiate(loggingOn=self.rng.random() < 0.5,
                             eventModeUsed=self.event_mode_used,
                             earlyReturnAllowed=self.rng.random() < 0.5, logMessage=self.log)
        self.phase = "instantiated"

    def readable(self):
        """What can be read now: (time, outputs), or None where reading is refused."""
        f = self.fmu
        try:
            return tuple(f.getFloat64([self.n] + self.outputs))
        except FMICallException:
            return None


#: the calls a master makes next in each phase, and the phase a successful call leads to
NATURAL = {"instantiated": ["enterInitializationMode"],
           "init": ["exitInitializationMode", "setFloat64", "setString"],
           "event": ["updateDiscreteStates", "enterStepMode"],
           "step": ["doStep", "doStep", "doStep", "getFloat64", "setFloat64", "getFMUState",
                    "setFMUState", "enterEventMode"],
           "terminated": ["reset"]}
PHASE = {"enterInitializationMode": "init", "exitInitializationMode": None,
         "enterEventMode": "event", "enterStepMode": "step", "terminate": "terminated",
         "reset": "instantiated"}


def vr_any(h, rng):
    return rng.choice([rng.randrange(h.n + 1), h.n, h.n + 1, 2 ** 31, 2 ** 32 - 1])


def calls(h, rng):
    f = h.fmu
    x = rng.choice(h.outputs)
    step = rng.choice([0.01, 0.01, 0.003, 0.0, -0.01, 1e3, NAN, INF])
    now = h.readable()
    t = now[0] if now else 0.0
    t_at = rng.choice([t, t, t, t + 0.5, NAN])

    def do_step():
        return f.doStep(t_at, step)

    def get_state():
        h.states.append(f.getFMUState())

    def set_state():
        if h.states:
            f.setFMUState(rng.choice(h.states))

    def serialize():
        if h.states:
            h.blobs.append(f.serializeFMUState(rng.choice(h.states)))

    def deserialize():
        if h.blobs:
            b = bytearray(rng.choice(h.blobs))
            if rng.random() < 0.5 and b:
                b[rng.randrange(len(b))] ^= 0xFF
            if rng.random() < 0.2:
                b = b[: rng.randrange(len(b) + 1)]
            h.states.append(f.deserializeFMUState(bytes(b)))

    return [
        *[("enterInitializationMode", lambda: f.enterInitializationMode(
            startTime=rng.choice([0.0, 0.0, 0.0, NAN, 1.0]),
            stopTime=rng.choice([None, None, 2.0, -1.0])))] * 3,
        *[("exitInitializationMode", f.exitInitializationMode)] * 3,
        ("enterEventMode", f.enterEventMode),
        *[("enterStepMode", f.enterStepMode)] * 2,
        ("updateDiscreteStates", f.updateDiscreteStates),
        *[("doStep", do_step)] * 8,
        ("getFloat64", lambda: f.getFloat64([vr_any(h, rng), x])),
        ("setFloat64", lambda: f.setFloat64(
            [rng.choice(h.inputs + [h.n, x, vr_any(h, rng)])],
            [rng.choice([0.0, 0.5, -2.0, 1e30, NAN, INF])])),
        ("getInt32", lambda: f.getInt32([rng.choice(h.by_type.get("Int32", [0]) + [x])])),
        ("setInt32", lambda: f.setInt32([rng.choice(h.by_type.get("Int32", [0]) + [x])],
                                        [rng.choice([0, 100, -1, 2 ** 31 - 1])])),
        ("getBoolean", lambda: f.getBoolean([vr_any(h, rng)])),
        ("getString", lambda: f.getString([rng.choice(h.by_type.get("String", [0]) + [x])])),
        ("setString", lambda: f.setString([rng.choice(h.by_type.get("String", [0]) + [x])],
                                          [rng.choice(["dop853", "dopri5", "rk4", "dop853", "radau", "nope"])])),
        ("getFloat32", lambda: f.getFloat32([x])),
        ("getUInt64", lambda: f.getUInt64([vr_any(h, rng)])),
        ("getFMUState", get_state), ("setFMUState", set_state),
        ("serializeFMUState", serialize), ("deserializeFMUState", deserialize),
        ("terminate", f.terminate),
        *[("reset", f.reset)] * 2,
        ("setDebugLogging", lambda: f.setDebugLogging(
            rng.random() < 0.5, rng.choice([[], ["logAll"], ["nope"]]))),
    ]


def main(fmu_dir, seed, n_calls):
    rng = random.Random(seed)
    md = read_model_description(fmu_dir)
    h = Host(fmu_dir, md, rng)
    counts, problems = {}, []
    for k in range(n_calls):
        if rng.random() < 0.005:
            h.new()
            continue
        options = calls(h, rng)
        natural = NATURAL[h.phase]
        if rng.random() < 0.6:             # mostly what a master does next, else anything
            pick = rng.choice(natural)
            name, call = next(c for c in options if c[0] == pick)
        else:
            name, call = rng.choice(options)
        before = h.readable()
        h.messages.clear()
        status = 0
        try:
            call()
        except FMICallException as exc:
            status = exc.status
        counts[status] = counts.get(status, 0) + 1
        if status == 0 and name in PHASE:
            h.phase = PHASE[name] if name != "exitInitializationMode" else (
                "event" if h.event_mode_used else "step")
        if status and "-v" in sys.argv:
            print(name, status, h.messages[-1:] if h.messages else "", file=sys.stderr)
        if name == "doStep" and status == 0:
            counts["steps"] = counts.get("steps", 0) + 1
        if status >= 4:
            problems.append(f"call {k} {name}: fmi3Fatal")
        if status != 0 and not any(s == status for s, _ in h.messages):
            problems.append(f"call {k} {name}: status {status} without a message")
        if status in (2, 3) and name not in ("reset",):
            after = h.readable()
            same = before == after or (before is not None and after is not None and all(
                a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(before, after)))
            if not same:
                problems.append(f"call {k} {name}: refused (status {status}) but changed "
                                f"what can be read")
    h.fmu.freeInstance()
    print(json.dumps({"counts": {str(s): c for s, c in counts.items()},
                      "problems": problems[:20]}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
