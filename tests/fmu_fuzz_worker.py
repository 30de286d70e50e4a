"""One seeded random FMI 2.0 call sequence on an extracted FMU, run by tests/test_fmu_fuzz.py in
a subprocess of its own: python fmu_fuzz_worker.py FMU_DIR SEED N_CALLS.

The sequence mixes ordinary use with misuse: non-finite and huge inputs, negative, zero and
huge steps, wrong communication points, set calls in the wrong state, invalid and wrongly
typed value references, calls out of order, reset and free mid-run, get/set/serialize state
round trips with corrupt and truncated bytes, status queries (fmi2Terminated,
fmi2LastSuccessfulTime). It runs twice in this process:

1. the fuzzed run, every call, recording each call's status and the messages the FMU logged
   during it (loggingOn is random: errors must be logged either way);
2. a clean replay in a fresh instance of only the calls that the fuzzed run accepted (fmi2OK
   or fmi2Warning). A refused call must change nothing, so the replay must accept every call
   again and read bit-identical values wherever the fuzzed run read values.

Prints one JSON line: counts, statuses and the list of violations (empty when all is well).
"""
import json
import random
import sys
from ctypes import byref

from fmpy import calloc, free, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)
from fmpy.logging import addLoggerProxy

from fmpy_logger import restore_fmpy_logger

NAN, INF = float("nan"), float("inf")
INPUT_VALUES = [0.0, 0.5, -2.0, 1e3, 1e10, 1e30, -1e30, NAN, INF, -INF]
STEPS = [0.01, 0.01, 0.01, 0.003, 0.0371, 0.0, -0.01, 1e3, 1e6, NAN, INF]
FUZZ_SETTINGS = {"solver.max_steps": 500}    # keeps a refused huge step short in CI


_CALLBACKS = []


class Host:
    """An FMU2Slave with a logger that collects (status, message) per call."""

    def __init__(self, fmu_dir, md, name, logging_on):
        self.md, self.fmu_dir, self.name, self.logging_on = md, fmu_dir, name, logging_on
        self.messages = []
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(self._log)
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        addLoggerProxy(byref(cb))
        self.cb = cb
        # fmpy's logger proxy keeps the last logger in a process-wide variable that other
        # instances' default callbacks also go through: the callbacks (and the bound method
        # they call) must outlive this host, or a later FMU's log line calls freed memory;
        # close() points the proxy back at fmpy's printLogMessage
        _CALLBACKS.append((cb, self))
        self.fmu = None
        self.new_instance()

    def close(self):
        """The host is done: fmpy's process-wide logger back on fmpy's printLogMessage (a
        later FMU on fmpy's default callbacks must not log into this host's list)."""
        restore_fmpy_logger()

    def _log(self, env, inst, status, category, message):
        self.messages.append((status, message.decode(errors="replace")))

    def new_instance(self):
        self.fmu = FMU2Slave(guid=self.md.guid, unzipDirectory=self.fmu_dir,
                             modelIdentifier=self.md.coSimulation.modelIdentifier,
                             instanceName=self.name)
        self.fmu.instantiate(callbacks=self.cb, loggingOn=self.logging_on)

    def call(self, method, *args):
        """(status, result, messages) of one FMI call."""
        n = len(self.messages)
        try:
            result, status = getattr(self.fmu, method)(*args), 0
        except FMICallException as exc:
            result, status = None, exc.status
        return status, result, self.messages[n:]


def make_sequence(md, seed, n_calls):
    """The seeded list of calls: (kind, args). State slots and times are symbolic."""
    rng = random.Random(seed)
    variables = md.modelVariables
    by = {c: [v for v in variables if v.causality == c] for c in
          ("parameter", "input", "output")}
    reals = [v for v in variables if v.type == "Real"]
    params = [v for v in by["parameter"] if v.type in ("Real", "Integer", "String")]
    seq = [("setupExperiment", ())]
    if rng.random() < 0.8:
        seq.append(("enterInitializationMode", ()))
        for name, value in FUZZ_SETTINGS.items():
            seq.append(("set", (name, value)))
        if rng.random() < 0.5:
            p = rng.choice(params)
            seq.append(("set", (p.name, _parameter_value(rng, p))))
        seq.append(("exitInitializationMode", ()))
    kinds = (["doStep"] * 10 + ["setInput"] * 4 + ["get"] * 4 + ["badRef"] * 2 +
             ["setOutput", "setParameter", "setParameter", "outOfOrder", "save", "save",
              "restore", "restore", "serialize", "deserialize", "corrupt", "reset",
              "freeInstance", "terminate", "freeState", "status"])
    for _ in range(n_calls):
        kind = rng.choice(kinds)
        if kind == "doStep":
            step = rng.choice(STEPS)
            shift = rng.choice([0.0] * 8 + [0.5, -0.25, NAN])
            seq.append(("doStep", (shift, step)))
        elif kind == "setInput" and by["input"]:
            v = rng.choice(by["input"])
            seq.append(("set", (v.name, rng.choice(INPUT_VALUES))))
        elif kind == "get":
            seq.append(("get", tuple(v.name for v in rng.sample(variables, min(4, len(variables))))))
        elif kind == "badRef":
            typ = rng.choice(["Real", "Integer", "Boolean", "String"])
            ref = rng.choice([9999, 2 ** 31 - 1, rng.choice(variables).valueReference])
            seq.append(("badRef", (typ, ref, rng.random() < 0.5)))
        elif kind == "setOutput" and by["output"]:
            v = rng.choice(by["output"])
            seq.append(("set", (v.name, 1.0 if v.type != "String" else "x")))
        elif kind == "setParameter":
            p = rng.choice(params)
            seq.append(("set", (p.name, _parameter_value(rng, p))))
        elif kind == "outOfOrder":
            seq.append((rng.choice(["setupExperiment", "enterInitializationMode",
                                    "exitInitializationMode", "terminate"]), ()))
        elif kind in ("save", "restore", "serialize", "deserialize", "freeState"):
            seq.append((kind, (rng.randrange(3),)))
        elif kind == "corrupt":
            seq.append(("corrupt", (rng.randrange(3), rng.choice(["truncate", "flip",
                                                                   "foreign", "empty"]),
                                    rng.randrange(10 ** 6))))
        elif kind == "status":
            seq.append(("status", ()))
        elif kind in ("reset", "freeInstance", "terminate"):
            if rng.random() < 0.5:      # these end a run: not too often
                seq.append((kind, ()))
    seq.append(("get", tuple(v.name for v in reals)))
    return seq


def _parameter_value(rng, p):
    if p.type == "String":
        return rng.choice([p.start, "", "nonsense", "recursive", "rk4", "dopri5"])
    if p.type == "Integer":
        return rng.choice([int(p.start), 0, -1, 10 ** 6])
    start = float(p.start)
    return rng.choice([start, start * 1.1, -1.0, 0.0, NAN, INF, 1e30, 1e-20])


class Runner:
    """Executes a sequence; `accepted` says which calls to keep (None: all)."""

    def __init__(self, fmu_dir, md, logging_on, name):
        self.md = md
        self.vars = {v.name: v for v in md.modelVariables}
        self.host = Host(fmu_dir, md, name, logging_on)
        self.t = 0.0
        self.states = {}
        self.blobs = {}

    def run(self, seq, keep=None):
        records = []
        for i, (kind, args) in enumerate(seq):
            if keep is not None and i not in keep:
                continue
            records.append((i, kind, *self.one(kind, args)))
        return records

    def run_and_close(self, seq, keep=None):
        """run(), then the host closed (fmpy's logger restored) whatever happened."""
        try:
            return self.run(seq, keep)
        finally:
            self.host.close()

    def one(self, kind, args):
        h = self.host
        if kind == "setupExperiment":
            st, _, msgs = h.call("setupExperiment", None, 0.0)
            return st, None, msgs
        if kind in ("enterInitializationMode", "exitInitializationMode", "terminate", "reset"):
            st, _, msgs = h.call(kind)
            if kind == "reset" and st == 0:
                self.t = 0.0
            return st, None, msgs
        if kind == "freeInstance":
            h.fmu.freeInstance()
            h.new_instance()
            self.t, self.states = 0.0, {}
            return 0, None, []
        if kind == "doStep":
            shift, step = args
            st, _, msgs = h.call("doStep", self.t + shift, step)
            if st == 0:
                self.t += step
            return st, None, msgs
        if kind == "set":
            name, value = args
            v = self.vars[name]
            method = {"Real": "setReal", "Integer": "setInteger", "Boolean": "setBoolean",
                      "String": "setString"}[v.type]
            if v.type == "String":
                value = str(value)
            elif v.type == "Integer":
                value = int(value) if value == value and abs(value) < 2 ** 31 else 0
            elif v.type == "Boolean":
                value = bool(value) if value == value else True
            return (*self._status(h.call(method, [v.valueReference], [value])),)
        if kind == "get":
            values = []
            status, messages = 0, []
            for name in args:
                v = self.vars[name]
                st, res, msgs = h.call("get" + v.type, [v.valueReference])
                status, messages = max(status, st), messages + msgs
                values.append(_key(res[0]) if st == 0 else None)
            return status, values, messages
        if kind == "status":       # fmi2Terminated and fmi2LastSuccessfulTime
            st1, terminated, msgs1 = h.call("getBooleanStatus", 3)
            st2, last, msgs2 = h.call("getRealStatus", 2)
            # only the time is compared with the replay: fmi2Terminated tells about the last
            # doStep, also a discarded one (which the replay leaves out)
            values = [_key(last) if st2 == 0 else None]
            return max(st1, st2), values, msgs1 + msgs2
        if kind == "badRef":
            typ, ref, setting = args
            if setting:
                value = {"Real": 1.0, "Integer": 1, "Boolean": True, "String": "x"}[typ]
                return (*self._status(h.call("set" + typ, [ref], [value])),)
            st, res, msgs = h.call("get" + typ, [ref])
            return st, (_key(res[0]) if st == 0 else None), msgs
        if kind == "save":
            st, res, msgs = h.call("getFMUstate")
            if st == 0:
                self.states[args[0]] = (res, self.t)
            return st, None, msgs
        if kind == "restore":
            if args[0] not in self.states:
                return 0, "skipped", []
            state, t = self.states[args[0]]
            st, _, msgs = h.call("setFMUstate", state)
            if st == 0:
                self.t = t
            return st, None, msgs
        if kind == "freeState":
            if args[0] not in self.states:
                return 0, "skipped", []
            state, _ = self.states.pop(args[0])
            st, _, msgs = h.call("freeFMUstate", state)
            return st, None, msgs
        if kind == "serialize":
            if args[0] not in self.states:
                return 0, "skipped", []
            st, res, msgs = h.call("serializeFMUstate", self.states[args[0]][0])
            if st == 0:
                self.blobs[args[0]] = (bytes(res), self.states[args[0]][1])
            return st, None, msgs
        if kind in ("deserialize", "corrupt"):
            if args[0] not in self.blobs:
                return 0, "skipped", []
            data, t = self.blobs[args[0]]
            if kind == "corrupt":
                data = _corrupt(data, args[1], args[2])
            st, res, msgs = h.call("deSerializeFMUstate", data)
            if st == 0:
                old = self.states.pop(args[0], None)
                if old is not None:
                    h.call("freeFMUstate", old[0])
                self.states[args[0]] = (res, t)
            return st, None, msgs
        raise ValueError(kind)

    @staticmethod
    def _status(result):
        st, _, msgs = result
        return st, None, msgs


def _corrupt(data, how, k):
    if how == "truncate":
        return data[: k % max(1, len(data))]
    if how == "flip":
        i = k % len(data)
        return data[:i] + bytes([data[i] ^ 0x5A]) + data[i + 1:]
    if how == "foreign":
        return json.dumps({"fmu_mb_state": "another_fmu", "data": {}}).encode()
    return b""


def _key(value):
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


def main(fmu_dir, seed, n_calls):
    md = read_model_description(fmu_dir)
    seq = make_sequence(md, seed, n_calls)
    logging_on = random.Random(seed + 1).random() < 0.5
    fuzzed = Runner(fmu_dir, md, logging_on, "fuzzed").run_and_close(seq)
    violations = []
    keep = set()
    statuses = {}
    for i, kind, status, values, msgs in fuzzed:
        statuses[status] = statuses.get(status, 0) + 1
        if status == 4:
            violations.append(f"call {i} {kind}{seq[i][1]}: fmi2Fatal: {msgs}")
        if status != 0 and not [m for s, m in msgs if s == status]:
            violations.append(f"call {i} {kind}{seq[i][1]}: status {status} without a logged "
                              f"message of that status (loggingOn={logging_on})")
        if kind == "badRef" and status == 0 and seq[i][1][1] >= 9999:
            violations.append(f"call {i} {kind}{seq[i][1]}: accepted an invalid reference")
        if status == 0 or kind == "get":      # a get reads what it can either way
            keep.add(i)
    replay = Runner(fmu_dir, md, False, "replay").run_and_close(seq, keep)
    first = {r[0]: r for r in fuzzed}
    for i, kind, status, values, msgs in replay:
        if status != first[i][2]:
            violations.append(f"call {i} {kind}{seq[i][1]}: status {first[i][2]} in the fuzzed "
                              f"run, {status} in the clean replay: {msgs}")
        elif values != first[i][3]:
            violations.append(f"call {i} {kind}{seq[i][1]}: read {first[i][3]} in the fuzzed "
                              f"run, {values} in the clean replay (a refused call changed "
                              f"the state)")
    print(json.dumps({"seed": seed, "calls": len(seq), "accepted": len(keep),
                      "statuses": {str(k): v for k, v in sorted(statuses.items())},
                      "logging_on": logging_on, "violations": violations}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
