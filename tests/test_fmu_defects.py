"""Python FMU defects found from outside: resource URIs
of every valid form, a host that reloads the binary between two instantiations, strings and
names that are not UTF-8, a wrong GUID, damaged serialized states, the status queries after a
discard, memory per instantiate/free cycle, and small findings (value reference 2^31, a NaN
tolerance, a huge string echoed in a message).

Scenarios that could crash the host run in a subprocess of their own (a Python
host: fmpy or plain ctypes calls into the FMU's binary), so that a crash fails the test instead
of the test run."""
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote

import pytest

pytestmark = pytest.mark.fmu

pythonfmu = pytest.importorskip("pythonfmu")
fmpy = pytest.importorskip("fmpy")
if not pythonfmu.FmuBuilder.has_binary():
    pytest.skip("pythonfmu has no binary for this platform", allow_module_level=True)

from fmpy import extract, read_model_description  # noqa: E402

from fmu_mb import load_model, simulate  # noqa: E402

from conftest import MODELS  # noqa: E402

TESTS = Path(__file__).resolve().parent
FMI_TERMINATED, FMI_LAST_SUCCESSFUL_TIME = 3, 2


@pytest.fixture(scope="module")
def fmu(shared_fmu):
    return shared_fmu(MODELS / "double_pendulum.py", "python")


@pytest.fixture(scope="module")
def md(fmu):
    return read_model_description(str(fmu))


@pytest.fixture(scope="module")
def vr(md):
    return {v.name: v.valueReference for v in md.modelVariables}


def _phi(stop, **parameters):
    """rod1.phi at `stop` from fmu_mb's own simulate (the FMU must agree)."""
    return float(simulate(load_model(MODELS / "double_pendulum.py", **parameters), stop,
                          0.01)["rod1.phi"][-1])


def _host(fmu_dir, md, name="h"):
    sys.path.insert(0, str(TESTS))
    try:
        from fmu_fuzz_worker import Host
    finally:
        sys.path.pop(0)
    return Host(str(fmu_dir), md, name, False)


# A Python host in a subprocess: the fuzz worker's Host (fmpy) and raw calls.
PRELUDE = textwrap.dedent("""
    import ctypes, json, sys
    from ctypes import byref, c_char_p, c_uint
    sys.path.insert(0, {tests!r})
    from fmu_fuzz_worker import Host
    from fmpy import read_model_description
    from fmpy.fmi1 import FMICallException

    FMU_DIR = {fmu_dir!r}
    md = read_model_description(FMU_DIR)
    vr = {{v.name: v.valueReference for v in md.modelVariables}}

    def status(function, *args):
        try:
            function(*args)
            return 0
        except FMICallException as exc:
            return exc.status

    def run(h, steps=1, **reals):
        \"\"\"setup, init (with the given parameters), `steps` steps of 0.01: rod1.phi\"\"\"
        h.call("setupExperiment", None, 0.0)
        h.call("enterInitializationMode")
        for name, value in reals.items():
            assert h.call("setReal", [vr[name]], [value])[0] == 0
        assert h.call("exitInitializationMode")[0] == 0, h.messages[-3:]
        for k in range(steps):
            assert h.call("doStep", k * 0.01, 0.01)[0] == 0, h.messages[-3:]
        return h.call("getReal", [vr["rod1.phi"]])[1][0]
""")


def _subprocess(fmu_dir, body, *args, timeout=300):
    code = PRELUDE.format(tests=str(TESTS), fmu_dir=str(fmu_dir)) + textwrap.dedent(body)
    res = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                         text=True, timeout=timeout)
    assert res.returncode == 0, f"the host died (exit status {res.returncode}): " \
                                f"{res.stdout[-2000:]} {res.stderr[-3000:]}"   # also at exit
    return json.loads(res.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------- resource URIs
def test_every_valid_resource_uri_works_and_anything_else_is_refused(fmu, tmp_path):
    """fmpy percent-encodes '+', '(', ')', a space and non-ASCII letters; RFC 8089 also allows
    file:/abs and file://localhost/abs, escapes of unreserved characters (%5F) and upper-case
    hex. Each of them instantiates and runs; a folder that does not exist, another host, a
    folder that is not the resources folder, a broken escape or another scheme give NULL with
    one logged reason (pythonfmu 0.7.0 alone decoded only %20 and crashed on the rest)."""
    fmu_dir = tmp_path / "odd +(1) é_x"
    extract(str(fmu), str(fmu_dir))
    res = (fmu_dir / "resources").as_posix()
    q = quote(res)
    valid = [(fmu_dir / "resources").as_uri(), "file:" + q, "file://localhost" + q,
             "file://" + q.replace("_", "%5F").replace("%C3%A9", "%c3%A9"),
             "file://" + res, "file://" + q + "/"]
    invalid = ["file://" + quote((fmu_dir / "nope" / "resources").as_posix()),
               "file://otherhost" + q, "file://" + quote(fmu_dir.as_posix()),
               "file://" + q + "%2", "file://" + q + "%00", "http://example.org/resources",
               "file:relative/resources", "file://" + q + "%FF"]
    out = _subprocess(fmu_dir, """
        from fmpy import simulate_fmu
        valid, invalid = json.loads(sys.argv[1]), json.loads(sys.argv[2])
        h = Host(FMU_DIR, md, "h", False)
        h.fmu.freeInstance()
        out = {"valid": [], "invalid": []}
        for uri in valid + invalid:
            n = len(h.messages)
            c = h.fmu.fmi2Instantiate(b"h", 1, md.guid.encode(), uri.encode(), byref(h.cb), 0, 0)
            if c is None:
                out["invalid"].append([uri, None, h.messages[n:]])
                continue
            h.fmu.component = c
            out["valid"].append([uri, run(h), h.messages[n:]])
            h.fmu.freeInstance()
        r = simulate_fmu(FMU_DIR, stop_time=0.05, output_interval=0.01)
        out["fmpy"] = float(r["rod1.phi"][-1])
        print(json.dumps(out), flush=True)
    """, json.dumps(valid), json.dumps(invalid))
    ref = _phi(0.01)
    assert [u for u, *_ in out["valid"]] == valid
    for uri, phi, messages in out["valid"]:
        assert phi == pytest.approx(ref, abs=1e-12), uri
    assert [u for u, *_ in out["invalid"]] == invalid
    for uri, _, messages in out["invalid"]:
        assert len(messages) == 1 and messages[0][0] == 3, (uri, messages)
        assert messages[0][1].startswith("fmu_mb: fmi2Instantiate: "), messages
    reasons = [m[0][1] for _, _, m in out["invalid"]]
    assert "not an existing folder" in reasons[0] and "otherhost" in reasons[1]
    assert "slavemodule.txt" in reasons[2] and "percent-escape" in reasons[3]
    assert "NUL" in reasons[4] and "not a file URI" in reasons[5]
    assert "absolute path" in reasons[6] and "not UTF-8" in reasons[7]
    assert out["fmpy"] == pytest.approx(_phi(0.05), abs=1e-9)



# A bare C host (no Python in the process): instantiate with the URI given, one step, print.
C_HOST = r"""
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
typedef void (*Logger)(void*, const char*, int, const char*, const char*, ...);
typedef struct { Logger logger; void* alloc; void* free; void* step; void* env; } Callbacks;
static void logger(void* e, const char* n, int s, const char* c, const char* m, ...)
{
    (void)e; (void)n; (void)c;
    fprintf(stderr, "[%d] %s\n", s, m);
}
int main(int argc, char** argv)
{
    /* argv: binary guid uri vr */
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 3; }
    void* (*inst)(const char*, int, const char*, const char*, const Callbacks*, int, int) =
        (void* (*)(const char*, int, const char*, const char*, const Callbacks*, int, int))
        dlsym(lib, "fmi2Instantiate");
    int (*setup)(void*, int, double, double, int, double) =
        (int (*)(void*, int, double, double, int, double))dlsym(lib, "fmi2SetupExperiment");
    int (*enter)(void*) = (int (*)(void*))dlsym(lib, "fmi2EnterInitializationMode");
    int (*leave)(void*) = (int (*)(void*))dlsym(lib, "fmi2ExitInitializationMode");
    int (*step)(void*, double, double, int) =
        (int (*)(void*, double, double, int))dlsym(lib, "fmi2DoStep");
    int (*get)(void*, const unsigned*, size_t, double*) =
        (int (*)(void*, const unsigned*, size_t, double*))dlsym(lib, "fmi2GetReal");
    void (*release)(void*) = (void (*)(void*))dlsym(lib, "fmi2FreeInstance");
    static const Callbacks cb = {logger, NULL, NULL, NULL, NULL};
    void* c = inst("c", 1, argv[2], argv[3], &cb, 0, 0);
    if (!c) { printf("NULL\n"); return 0; }
    unsigned vr = (unsigned)atoi(argv[4]);
    double phi = 0.0;
    int st = setup(c, 0, 0.0, 0.0, 0, 0.0) | enter(c) | leave(c) | step(c, 0.0, 0.01, 1) |
             get(c, &vr, 1, &phi);
    printf("%d %.17g\n", st, phi);
    release(c);
    return 0;
}
"""


def test_resource_uris_in_a_c_host(fmu, md, vr, tmp_path):
    """The same URI forms in a host without Python (the FMU starts its own)."""
    import shutil
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    (tmp_path / "host.c").write_text(C_HOST)
    host = tmp_path / "host"
    subprocess.run([cc, "-O1", "-o", str(host), str(tmp_path / "host.c"), "-ldl"], check=True)
    fmu_dir = tmp_path / "a_b"
    extract(str(fmu), str(fmu_dir))
    binary = fmu_dir / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
    res = quote((fmu_dir / "resources").as_posix())
    ref = _phi(0.01)
    for uri, ok in [("file:" + res, True), ("file://localhost" + res, True),
                    ("file://" + res.replace("a_b", "a%5Fb"), True),
                    ("file://" + res.replace("a_b", "a_c"), False)]:
        out = subprocess.run([str(host), str(binary), md.guid, uri, str(vr["rod1.phi"])],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, (uri, out.stderr[-2000:])
        if ok:
            st, phi = out.stdout.split()
            assert st == "0" and float(phi) == pytest.approx(ref, abs=1e-12), uri
        else:
            assert out.stdout.strip() == "NULL" and "not an existing folder" in out.stderr

# ---------------------------------------------------------- names, GUID, strings
def test_bad_names_guids_strings_and_tolerances_are_refused_with_a_message(fmu, md, vr,
                                                                         tmp_path):
    fmu_dir = extract(str(fmu), str(tmp_path / "fmu"))
    uri = (Path(fmu_dir) / "resources").as_uri()
    out = _subprocess(fmu_dir, """
        uri = sys.argv[1].encode()
        h = Host(FMU_DIR, md, "h", False)
        out = {}
        for key, name, guid in [("null name", None, md.guid.encode()),
                                ("binary name", b"in\\xffst", md.guid.encode()),
                                ("wrong guid", b"h", b"{00000000-0000-0000-0000-000000000000}"),
                                ("null guid", b"h", None)]:
            n = len(h.messages)
            c = h.fmu.fmi2Instantiate(name, 1, guid, uri, byref(h.cb), 0, 0)
            out[key] = [c, h.messages[n:]]
        method = vr["solver.method"]
        setter = h.fmu.fmi2SetString
        n = len(h.messages)
        out["binary string"] = [status(setter, h.fmu.component, (c_uint * 1)(method), 1,
                                       (c_char_p * 1)(b"dop\\xff853")), h.messages[n:]]
        out["reset"] = h.call("reset")[0]
        out["nan tolerance"] = h.call("setupExperiment", float("nan"), 0.0)
        out["negative tolerance"] = h.call("setupExperiment", -1.0, 0.0)
        h.call("setupExperiment", 1e-6, 0.0)
        h.call("enterInitializationMode")
        out["vr 2^31"] = h.call("getReal", [2 ** 31])
        out["huge string"] = h.call("setString", [method], ["x" * 50_000_000])
        out["exit with huge string"] = h.call("exitInitializationMode")
        h.call("setString", [method], ["dop853"])
        out["exit"] = h.call("exitInitializationMode")[0]
        out["step"] = h.call("doStep", 0.0, 0.01)[0]
        out["phi"] = h.call("getReal", [vr["rod1.phi"]])[1][0]
        print(json.dumps(out), flush=True)
    """, uri)
    for key, reason in [("null name", "instanceName is NULL"),
                        ("binary name", "instanceName is not a UTF-8 string"),
                        ("wrong guid", "{00000000-0000-0000-0000-000000000000}"),
                        ("null guid", "the GUID NULL")]:
        component, messages = out[key]
        assert component is None, key
        assert len(messages) == 1 and messages[0][0] == 3 and reason in messages[0][1], \
            (key, messages)
    assert md.guid in out["wrong guid"][1][0][1]
    st, messages = out["binary string"]
    assert st == 3 and "not UTF-8" in messages[-1][1] and str(vr["solver.method"]) in \
        messages[-1][1], messages
    assert out["reset"] == 0                          # the instance is alive
    for key in ("nan tolerance", "negative tolerance"):
        st, _, messages = out[key]
        assert st == 3 and "tolerance" in messages[-1][1], (key, messages)
    st, _, messages = out["vr 2^31"]
    assert st == 3 and "2147483648" in messages[-1][1] and "-2147483648" not in messages[-1][1]
    for key in ("huge string", "exit with huge string"):
        for _, text in out[key][2]:
            assert len(text) < 10_000, (key, len(text))
    st, _, messages = out["exit with huge string"]
    assert st == 3 and "left out" in messages[-1][1] and "'method'" in messages[-1][1]
    assert "'dop853'" in messages[-1][1]                # the valid values, after the cut
    assert out["exit"] == 0 and out["step"] == 0
    assert out["phi"] == pytest.approx(_phi(0.01), abs=1e-12)


# ---------------------------------------------------------- the host reloads the binary
def test_instances_survive_the_host_reloading_the_binary(fmu, md, vr, tmp_path):
    """ecospy dlcloses and dlopens the FMU's binary again between two fmi2Instantiate calls
    of one FMU: both instances go on, each with its own parameters, and a call on a freed
    instance is refused with a message (through a live instance's logger)."""
    fmu_dir = extract(str(fmu), str(tmp_path / "fmu"))
    binary = Path(fmu_dir) / "binaries" / "linux64" / f"{md.coSimulation.modelIdentifier}.so"
    uri = (Path(fmu_dir) / "resources").as_uri()
    out = _subprocess(fmu_dir, """
        import _ctypes
        from ctypes import (CDLL, CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_int,
                            c_size_t, c_uint, c_void_p)
        LOGGER = CFUNCTYPE(None, c_void_p, c_char_p, c_int, c_char_p, c_char_p)

        class Callbacks(Structure):
            _fields_ = [("logger", LOGGER), ("allocateMemory", c_void_p),
                        ("freeMemory", c_void_p), ("stepFinished", c_void_p),
                        ("componentEnvironment", c_void_p)]

        messages = []
        callbacks = Callbacks(LOGGER(lambda env, name, st, cat, text: messages.append(
            [name.decode(), st, text.decode()])), None, None, None, None)

        def load(path):
            lib = CDLL(path)
            lib.fmi2Instantiate.restype = c_void_p
            lib.fmi2Instantiate.argtypes = [c_char_p, c_int, c_char_p, c_char_p,
                                            POINTER(Callbacks), c_int, c_int]
            lib.fmi2FreeInstance.argtypes = [c_void_p]
            lib.fmi2FreeInstance.restype = None
            lib.fmi2SetupExperiment.argtypes = [c_void_p, c_int, c_double, c_double, c_int,
                                                c_double]
            lib.fmi2EnterInitializationMode.argtypes = [c_void_p]
            lib.fmi2ExitInitializationMode.argtypes = [c_void_p]
            lib.fmi2DoStep.argtypes = [c_void_p, c_double, c_double, c_int]
            for name in ("fmi2GetReal", "fmi2SetReal"):
                getattr(lib, name).argtypes = [c_void_p, POINTER(c_uint), c_size_t,
                                               POINTER(c_double)]
            return lib

        def start(lib, name, **reals):
            c = lib.fmi2Instantiate(name.encode(), 1, md.guid.encode(), sys.argv[2].encode(),
                                    byref(callbacks), 0, 0)
            assert c, messages
            assert lib.fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0) == 0
            assert lib.fmi2EnterInitializationMode(c) == 0
            for key, value in reals.items():
                assert lib.fmi2SetReal(c, (c_uint * 1)(vr[key]), 1, (c_double * 1)(value)) == 0
            assert lib.fmi2ExitInitializationMode(c) == 0
            return c

        def phi(lib, c):
            value = (c_double * 1)()
            st = lib.fmi2GetReal(c, (c_uint * 1)(vr["rod1.phi"]), 1, value)
            return [st, value[0]]

        lib = load(sys.argv[1])
        a = start(lib, "A", l1=0.3)
        _ctypes.dlclose(lib._handle)           # the host unloads the binary ...
        lib = load(sys.argv[1])                # ... and loads it again
        b = start(lib, "B")
        statuses = []
        for k in range(10):
            for c in (a, b):
                statuses.append(lib.fmi2DoStep(c, k * 0.01, 0.01, 1))
        out = {"statuses": statuses, "a": phi(lib, a), "b": phi(lib, b)}
        lib.fmi2FreeInstance(b)
        n = len(messages)
        out["freed"] = [lib.fmi2DoStep(b, 0.1, 0.01, 1), messages[n:]]
        lib.fmi2FreeInstance(a)
        print(json.dumps(out), flush=True)
    """, binary, uri)
    assert out["statuses"] == [0] * 20
    assert out["a"][0] == 0 and out["a"][1] == pytest.approx(_phi(0.1, l1=0.3), abs=1e-9)
    assert out["b"][0] == 0 and out["b"][1] == pytest.approx(_phi(0.1), abs=1e-9)
    st, messages = out["freed"]
    assert st == 3 and len(messages) == 1 and messages[0][0] == "A"
    assert messages[0][1] == 3 and "not a live instance" in messages[0][2]


# -------------------------------------------------------- status queries after discard
def test_terminated_and_last_successful_time_after_discards(fmu, md, vr, tmp_path):
    """fmi2Terminated: true while the last doStep was discarded because the model could not
    be advanced (and after fmi2Terminate), false after a discarded wrong call, a successful
    retry or a restored state; fmi2LastSuccessfulTime: the end of the last successful step
    (pythonfmu alone: true after any discard for ever, and the refused call's point)."""
    h = _host(extract(str(fmu), str(tmp_path / "fmu")), md)
    h.call("setupExperiment", None, 0.0)
    h.call("enterInitializationMode")
    h.call("exitInitializationMode")

    def statuses():
        st1, terminated, _ = h.call("getBooleanStatus", FMI_TERMINATED)
        st2, last, _ = h.call("getRealStatus", FMI_LAST_SUCCESSFUL_TIME)
        assert st1 == 0 and st2 == 0
        return terminated, last

    assert statuses() == (False, 0.0)
    assert h.call("doStep", 0.0, 0.01)[0] == 0
    t1 = 0.0 + 0.01
    assert statuses() == (False, t1)
    # discarded for a wrong call (the master can correct it): the slave goes on
    for point, step in [(0.5, 0.01), (t1, -0.01), (t1, float("nan"))]:
        status, _, messages = h.call("doStep", point, step)
        assert status == 2 and messages
        assert statuses() == (False, t1), (point, step)
    # discarded because the model cannot be advanced with this step or these inputs: a
    # master that does not shorten the step (fmpy's simulate_fmu) must stop here
    for reals, step in [({}, 1e6), ({"actuator_A.h": float("inf")}, 0.01)]:
        for name, value in reals.items():
            assert h.call("setReal", [vr[name]], [value])[0] == 0
        status, _, messages = h.call("doStep", t1, step)
        assert status == 3 and messages                   # fails in the model: fmi2Error
        assert statuses() == (True, t1), (reals, step)
    assert h.call("setReal", [vr["actuator_A.h"]], [0.0])[0] == 0
    assert h.call("doStep", t1, 0.01)[0] == 0                        # the retry succeeds
    t2 = t1 + 0.01
    assert statuses() == (False, t2)
    state = h.call("getFMUstate")[1]
    data = bytes(h.call("serializeFMUstate", state)[1])
    assert h.call("doStep", t2, 0.01)[0] == 0
    assert statuses() == (False, t2 + 0.01)
    assert h.call("setFMUstate", state)[0] == 0
    assert statuses() == (False, t2)
    assert h.call("doStep", t2, 0.01)[0] == 0
    assert h.call("doStep", t2 + 0.01, 1e6)[0] == 3
    assert statuses() == (True, t2 + 0.01)
    copy = h.call("deSerializeFMUstate", data)[1]
    assert h.call("setFMUstate", copy)[0] == 0
    assert statuses() == (False, t2)
    assert h.call("terminate")[0] == 0
    assert statuses() == (True, t2)



def test_status_queries_of_a_plain_pythonfmu_slave_behind_the_front(tmp_path):
    """package_fmu puts the same front before any pythonfmu slave: one that is not an fmu_mb
    adapter has no time channel, so the front gives pythonfmu's own lastSuccessfulTime (and
    its own fmi2Terminated) instead of breaking the instance."""
    from fmu_mb.fmi.packaging import package_fmu
    sys.path.insert(0, str(TESTS))
    try:
        from test_packaging import TOY_SOURCE
    finally:
        sys.path.pop(0)
    path = package_fmu(TOY_SOURCE, "fmu_mb_test_toy_status", [], tmp_path)
    toy = read_model_description(str(path))
    h = _host(extract(str(path), str(tmp_path / "toy")), toy)
    h.call("setupExperiment", None, 0.0)
    h.call("enterInitializationMode")
    h.call("exitInitializationMode")
    assert h.call("doStep", 0.0, 0.01)[0] == 0
    assert h.call("getRealStatus", FMI_LAST_SUCCESSFUL_TIME)[:2] == (0, 0.01)
    assert h.call("getBooleanStatus", FMI_TERMINATED)[:2] == (0, False)
    assert h.call("doStep", 0.01, 0.01)[0] == 0              # the instance still works

# ------------------------------------------------------------------- damaged states
def _seal(payload):
    """A serialized state with a correct header and checksum around `payload` (format 2:
    'fmu_mb-state 2 LENGTH SHA256' newline JSON; SHA-256 of the header up to the digest and
    the JSON)."""
    head = f"fmu_mb-state 2 {len(payload)} ".encode()
    return head + hashlib.sha256(head + payload).hexdigest().encode() + b"\n" + payload


def test_damaged_serialized_states_are_refused_and_change_nothing(fmu, md, vr, tmp_path):
    h = _host(extract(str(fmu), str(tmp_path / "fmu")), md)
    h.call("setupExperiment", None, 0.0)
    h.call("enterInitializationMode")
    h.call("exitInitializationMode")
    assert h.call("doStep", 0.0, 0.01)[0] == 0
    state = h.call("getFMUstate")[1]
    data = bytes(h.call("serializeFMUstate", state)[1])
    outs = [vr[n] for n in ("rod1.phi", "rod2.phi", "rod1.omega", "B.fx")]
    before = h.call("getReal", outs)[1]

    accepted = []
    for i in range(len(data)):                 # every one-character change
        damaged = data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]
        status, copy, messages = h.call("deSerializeFMUstate", damaged)
        if status != 3 or not [m for s, m in messages if s == 3]:
            accepted.append((i, chr(data[i]), status))
            if status == 0:
                h.call("freeFMUstate", copy)
    assert not accepted, f"{len(accepted)} of {len(data)} changes accepted: {accepted[:10]}"

    # a state whose checksum was made to fit (forged), but that is not shaped like a state
    # of this FMU: refused by fmi2DeSerializeFMUstate or fmi2SetFMUstate with fmi2Error
    blob = json.loads(data[data.index(b"\n") + 1:])

    def forged(change):
        b = json.loads(json.dumps(blob))
        change(b)
        return _seal(json.dumps(b).encode())

    cases = {"extra key": lambda b: b.__setitem__("x", 1),
             "extra data key": lambda b: b["data"].__setitem__("x", 1),
             "missing data key": lambda b: b["data"].pop("inputs"),
             "non-hex time": lambda b: b["data"]["state"].__setitem__("t", "0.01"),
             "infinite time": lambda b: b.__setitem__("time", "inf"),
             "inputs not a list": lambda b: b["data"].__setitem__("inputs", "0x0p+0"),
             "other FMU": lambda b: b.__setitem__("fmu_mb_state", "another_fmu"),
             "non-hex q": lambda b: b["data"]["state"]["q"].__setitem__(0, "nan!")}
    for name, change in cases.items():
        status, copy, messages = h.call("deSerializeFMUstate", forged(change))
        if status == 0:
            status, _, messages = h.call("setFMUstate", copy)
        assert status == 3 and [m for s, m in messages if s == 3], (name, messages)
    for version in (b"1", b"3", b"02"):
        status, _, messages = h.call("deSerializeFMUstate",
                                     data.replace(b" 2 ", b" " + version + b" ", 1))
        assert status == 3 and messages, version
    status, _, messages = h.call("deSerializeFMUstate", _seal(json.dumps(blob).encode()))
    assert status == 0, messages                 # the test's own sealing is the FMU's format

    assert h.call("getReal", outs)[1] == before  # nothing changed
    assert h.call("doStep", 0.01, 0.01)[0] == 0
    after = h.call("getReal", outs)[1]
    good = h.call("deSerializeFMUstate", data)[1]
    assert h.call("setFMUstate", good)[0] == 0
    assert h.call("getReal", outs)[1] == before
    assert h.call("doStep", 0.01, 0.01)[0] == 0
    assert h.call("getReal", outs)[1] == after
    assert after[0] == pytest.approx(_phi(0.02), abs=1e-12)


# ---------------------------------------------------------- instantiate/free cycles
def test_instantiate_free_cycles_do_not_grow(fmu, md, tmp_path):
    """Instantiate, initialise and free the FMU many times in one process (a Python host,
    fmpy): nothing of ours grows per cycle (sys._fmu_mb_keep_alive, sys.path, the slave
    classes that pythonfmu's re-execution of the script made), and the resident memory grows
    by little more than what pythonfmu 0.7.0 itself leaks at each fmi2Instantiate (about
    2 KB: the reprs of the script's classes' MROs and a sys.path string). The first cycles
    fill fmu_mb's model caches (128 models), so the growth is measured after them."""
    fmu_dir = extract(str(fmu), str(tmp_path / "fmu"))
    out = _subprocess(fmu_dir, """
        import gc, os
        h = Host(FMU_DIR, md, "h", False)
        name = md.coSimulation.modelIdentifier

        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        def cycles(n):
            for _ in range(n):
                h.fmu.freeInstance()
                h.fmu.instantiate(callbacks=h.cb)
                h.call("setupExperiment", None, 0.0)
                h.call("enterInitializationMode")
                assert h.call("exitInitializationMode")[0] == 0

        def counts():
            gc.collect()
            return [len(getattr(sys, "_fmu_mb_keep_alive", [])), len(sys.path),
                    sum(1 for o in gc.get_objects() if isinstance(o, type) and o.__name__ == name)]

        cycles(140)
        before, r0 = counts(), rss()
        cycles(int(sys.argv[1]))
        after, r1 = counts(), rss()
        print(json.dumps({"before": before, "after": after,
                          "rss_per_cycle": (r1 - r0) / int(sys.argv[1])}), flush=True)
    """, 200)
    print(f"RSS growth per instantiate/free cycle: {out['rss_per_cycle']:.0f} bytes",
          file=sys.stderr)
    assert out["after"] == out["before"], "keep-alive entries, sys.path, slave classes"
    assert out["after"][2] == 1
    # a loose bound (the RSS of 200 cycles is noisy: 2 to 7 KB measured here, 2.3 KB over
    # 600 cycles); an instance whose model were never freed would add 30 KB or more
    assert out["rss_per_cycle"] < 12000
