"""The native kernel (fmu_mb/engine/native/kernel.c): open-tree forward dynamics by the
articulated-body algorithm and the explicit integrators, in C, called through ctypes.

The library is compiled on first use with the system C compiler (`$CC`, `cc`, `gcc` or
`clang`; flags `-O2 -ffp-contract=off`, so results do not depend on FMA contraction) and kept

1. next to the source (``fmu_mb/engine/native/_kernel-<hash>.so``) when that folder is writable or
   the library is already there (an FMU carries a prebuilt one in its resources), else
2. in ``$FMU_MB_CACHE`` or ``$XDG_CACHE_HOME/fmu_mb`` (default ``~/.cache/fmu_mb``).

<hash> is taken from the source text, the compiler flags and the machine, so an edited source
is recompiled and a stale library is never loaded. `KernelUnavailable` says what is missing
when no compiler is found.
"""
import ctypes
import hashlib
import os
import platform
import re
import sys
import threading
import weakref
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import (DriftError, FmuMbError, InputError, IntegrationError,
                      SingularSystemError)

SOURCE = Path(__file__).resolve().parent / "native" / "kernel.c"
#: where the kernels' shared headers live (native/integrators.h), on the compiler's -I path
NATIVE_DIR = SOURCE.parent
CFLAGS = ["-O2", "-ffp-contract=off", "-fPIC", "-shared", "-Wall"]
METHOD_CODES = {"dopri5": 0, "dop853": 1, "rk4": 2}

_J = {"weld": 0, "revolute": 1, "prismatic": 2}
_FREE = 3
_ERRORS = {1: "the state became non-finite (NaN or infinity)",
           2: "the articulated inertia is singular (a massless subtree)",
           3: "the step size became too small",
           4: "a spring-damper has zero length (its direction is undefined)",
           5: "invalid kernel arguments",
           6: "cannot restore the constraints of the closed loops (the mechanism may have "
              "locked up or left its assembly branch)",
           7: "the step budget (settings.max_steps integrator steps) was used up before the "
              "end of the interval; the call was stopped; take shorter communication steps or "
              "check the inputs",
           8: "a contact's event function changes sign but its root cannot be bracketed on "
              "the dense output",
           9: "endless switching of a contact (Zeno behaviour); raise Settings.contact_velocity",
           10: "no admissible impact solution (the closed contacts may be redundant or the "
               "impact ill-posed)",
           11: "a point-point contact's distance is zero (its gap direction is undefined)",
           13: "a frictional contact has no consistent state (Painleve's paradox: slipping, "
               "its normal force would pull and, released, its gap would accelerate into the "
               "surface), or the sliding friction leaves no unique contact force"}


def budget_error(name, t, what, max_steps):
    """IntegrationError of a compiled integration stopped by settings.max_steps."""
    return IntegrationError(f"model '{name}': {what} at t = {t:.9g} s: the interval needs "
                            f"more than {int(max_steps)} integrator steps (settings.max_steps); "
                            f"the call was stopped and its state kept; take shorter "
                            f"communication steps or check the inputs")


_ROW_KINDS = {"pd": (0, 1), "ang": 2, "prj": 3, "dst": 4, "pair": 7, "jrate": 10}
_STABILIZATION = {"none": 0, "projection": 1, "baumgarte": 2}


class KernelUnavailable(FmuMbError):
    """The native kernel cannot be built or loaded on this machine."""


def _tag(source=None, extra=()):
    source = SOURCE if source is None else source        # read at call time (tests patch it)
    text = source.read_bytes() + b"".join(p.read_bytes() for p in extra)
    todo, seen = [text], set()
    while todo:                                # the shared headers, and the headers they include
        for name in re.findall(rb'#include "([^"]+)"', todo.pop()):
            if name in seen:
                continue
            seen.add(name)
            for d in (source.parent, NATIVE_DIR):
                if (d / name.decode()).is_file():
                    head = (d / name.decode()).read_bytes()
                    text += head
                    todo.append(head)
                    break
    text += repr((CFLAGS, sys.platform, platform.machine())).encode()
    return hashlib.sha1(text).hexdigest()[:12]


def library_name(source=None, extra=()):
    """_kernel-<hash>.so (another source, e.g. the spatial kernel: _<stem>-<hash>.so); extra:
    more C sources linked into the same library (the engine library)."""
    stem = "_kernel" if source is None else "_" + source.stem
    return f"{stem}-{_tag(source, extra)}.so"


def _cache_dirs():
    dirs = [SOURCE.parent]
    if os.environ.get("FMU_MB_CACHE"):
        dirs.append(Path(os.environ["FMU_MB_CACHE"]))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    dirs.append(Path(base) / "fmu_mb")
    return dirs


def compiler():
    """Path of the C compiler used for the kernel, or None."""
    import shutil                          # (only when compiling: not on an FMU's start-up)

    candidates = ([os.environ["CC"]] if os.environ.get("CC") else []) + ["cc", "gcc", "clang"]
    return next((shutil.which(c) for c in candidates if shutil.which(c)), None)


def build_library(dest_dir, source=None, extra=(), defines=()):
    """Compile the kernel (or another C source, with the extra sources) into dest_dir
    (atomically) and return the library's path."""
    path = SOURCE if source is None else source
    for p in (path, *extra):
        if not p.is_file():
            raise KernelUnavailable(f"the kernel source {p} is missing from the fmu_mb "
                                    f"installation")
    dest_dir = Path(dest_dir)
    dest = dest_dir / library_name(source, extra)
    if dest.is_file():
        return dest
    cc = compiler()
    if cc is None:
        raise KernelUnavailable("the 'recursive' formulation needs a C compiler to build its "
                                "kernel once (none of $CC, cc, gcc, clang is on PATH; Debian: "
                                "apt-get install gcc); use formulation 'tmt' instead")
    import subprocess                      # (only when compiling: not on an FMU's start-up)
    import tempfile

    dest_dir.mkdir(parents=True, exist_ok=True)
    # (a name that is no module: documentation tools list the package folder meanwhile)
    fd, tmp = tempfile.mkstemp(prefix="kernel-", suffix=".so.partial", dir=dest_dir)
    os.close(fd)
    try:
        p = subprocess.run([cc, *CFLAGS, *[f"-D{d}" for d in defines], "-I", str(NATIVE_DIR),
                            "-o", tmp, str(path), *map(str, extra), "-lm"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise KernelUnavailable(f"compiling the kernel with {cc} failed: "
                                    f"{p.stderr.strip()[-2000:]}")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


_LOCK = threading.Lock()


def library_path(source=None, extra=(), defines=()):
    """Path of the compiled kernel: an existing one for this source (and the extra sources
    linked with it), or a new build."""
    with _LOCK:
        path, errors = None, []
        name = library_name(source, extra)
        for d in _cache_dirs():
            if (d / name).is_file():
                path = d / name
                break
        if path is None:
            for d in _cache_dirs():
                try:
                    path = build_library(d, source, extra, defines)
                    break
                except KernelUnavailable:
                    raise
                except OSError as exc:                      # not writable: try the next
                    errors.append(f"{d}: {exc}")
        if path is None:
            raise KernelUnavailable("cannot write the compiled kernel anywhere: "
                                    + "; ".join(errors) + " (set FMU_MB_CACHE to a writable "
                                    "folder)")
        return path


@lru_cache(maxsize=1)
def library():
    """The loaded kernel (ctypes.CDLL) with its integrator tableaus set."""
    lib = ctypes.CDLL(str(library_path()))
    P, I, D = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    lib.mbk_create.restype = P
    lib.mbk_create.argtypes = [I, I, P, P, I, P, P, P, P, D, D]
    lib.mbk_free.restype = None
    lib.mbk_free.argtypes = [P]
    lib.mbk_set_tableau.argtypes = [I, I, I, P, P, P, P, P, P]
    lib.mbk_accelerations.argtypes = [P, D, P, P, P, P, P, P, P]
    lib.mbk_applied_forces.argtypes = [P, P, P, P, P]
    lib.mbk_kinematics.restype = None
    lib.mbk_kinematics.argtypes = [P, P, P, P, P]
    lib.mbk_advance.argtypes = [P, I, P, P, P, P]
    lib.mbk_step.argtypes = [P, I, P, P, P, I, P, P]
    lib.mbk_last_error_index.argtypes = [P]
    lib.mbk_set_rows.argtypes = [P, I, P, P]
    lib.mbk_set_pairs.argtypes = [P, I, P]
    lib.mbk_set_stabilization.restype = None
    lib.mbk_set_stabilization.argtypes = [P, I, D, D, D]
    lib.mbk_project.argtypes = [P, D, P]
    lib.mbk_set_drives.argtypes = [P, I, P, I, P]
    lib.mbk_set_gains.argtypes = [P, I, I, P]
    lib.mbk_row_values.argtypes = [P, P, P]
    lib.mbk_multipliers.restype = None
    lib.mbk_multipliers.argtypes = [P, P]
    lib.mbk_set_eigensolver.restype = None
    lib.mbk_set_eigensolver.argtypes = [P, P]
    lib.mbk_events_create.restype = P
    lib.mbk_events_create.argtypes = [P, I, P, P, P, I]
    lib.mbk_events_free.restype = None
    lib.mbk_events_free.argtypes = [P]
    lib.mbk_advance_events.argtypes = [P, I, P, P, P, P]
    lib.mbk_events_coefficients.argtypes = [I, P]
    lib.mbk_events_outputs.argtypes = [P, D, P, P, P, P, P]
    lib.mbk_events_set_friction.argtypes = [P, P]
    lib.mbk_events_set_points.argtypes = [P, P]
    lib.mbk_events_set_joint_friction.argtypes = [P, I, P, P, P]
    lib.mbk_events_joint_outputs.argtypes = [P, D, P, P, P, P, P, P, P, P]
    lib.mbk_set_joint_torques.argtypes = [P, P]
    lib.mbk_fr_rest_states.argtypes = [I, P, P, P, P, P]
    lib.mbk_events_error_contact.argtypes = [P]
    lib.mbk_events_initial.argtypes = [P, D, P, P, P, D, D]
    lib.mbk_events_initial_impact.argtypes = [P, D, P, P, P, D, D, I, D, D, D, P]
    lib.mbk_events_outputs_fr.argtypes = [P, D, P, P, P, P, P, P, P]
    _set_tableaus(lib)
    return lib


@lru_cache(maxsize=1)
def _eigensolver():
    """The address of LAPACK's dsyev (scipy's own, scipy.linalg.cython_lapack) that a
    TreeKernel hands to its kernel (mbk_set_eigensolver, per kernel) for the rank-revealing
    Schur solve at singular poses (for an S that is not a narrow band: a narrow one takes
    dense.h's band route either way), or None: the kernel then uses its own Householder + QL
    route (as the engine library always does, fmu_mb.engine.engine)."""
    try:
        from scipy.linalg import cython_lapack
        cap = cython_lapack.__pyx_capi__["dsyev"]
        api = ctypes.pythonapi
        api.PyCapsule_GetName.restype = ctypes.c_char_p
        api.PyCapsule_GetName.argtypes = [ctypes.py_object]
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        ptr = api.PyCapsule_GetPointer(cap, api.PyCapsule_GetName(cap))
    except (ImportError, AttributeError, KeyError, ValueError):       # pragma: no cover
        return None
    return ptr


def _set_tableaus(lib, setter="mbk_set_tableau"):
    """The Runge-Kutta coefficients are scipy's own (RK45 and DOP853), kept as constants in
    tableaus.py (checked against scipy by tests/test_startup.py) so that loading the kernel
    does not import scipy."""
    from . import tableaus as T

    keep = []

    def ptr(a):
        a = np.ascontiguousarray(a, dtype=float)
        keep.append(a)
        return a.ctypes.data

    rc = getattr(lib, setter)(0, T.RK45_STAGES, T.RK45_ERROR_ORDER, ptr(T.RK45_A),
                             ptr(T.RK45_B), ptr(T.RK45_C), ptr(T.RK45_E), None, None)
    rc |= getattr(lib, setter)(1, T.DOP853_STAGES, T.DOP853_ERROR_ORDER, ptr(T.DOP853_A),
                              ptr(T.DOP853_B), ptr(T.DOP853_C), None, ptr(T.DOP853_E3),
                              ptr(T.DOP853_E5))
    if rc:
        raise KernelUnavailable("the kernel refused scipy's Runge-Kutta tableaus")


def supported(model):
    """None when the kernel can run `model`, else the reason why not (a sentence).

    The kernel runs spanning trees of revolute, prismatic and weld joints (and floating
    bodies) with every force element, closes loops with the rows of cut revolute, weld,
    prismatic and distance joints, and prescribes the coordinates of driven tree joints
    whose law it can evaluate itself (constant_rate, harmonic, polynomial); contacts run in
    the kernel's own event loop (native/events.c, ContactEvents), or for the Reduction Method
    in the event loop of fmu_mb.dynamics.integrate with the kernel stepping between events."""
    why = friction_unsupported(model)
    if why is not None:
        return why
    t = model.topology
    for d in model.drives:
        if d.joint not in t.tree_joints:
            return (f"its drive '{d.name}' acts on the cut joint '{d.joint}' (the kernel "
                    f"prescribes tree coordinates only)")
        if _law(d.motion) is None:
            return (f"its drive '{d.name}' follows a Python function ({d.motion.description}; "
                    f"the kernel evaluates the laws of constant_rate, harmonic and "
                    f"polynomial)")
    bad = [n for n in t.tree_joints if model.joint(n).kind not in _J]
    if bad:
        return f"joints {bad} are not revolute, prismatic or weld joints"
    if t.cut_joints and len(loop_rows(model)[0]) != (len(_tree_map(model).cut_rows)
                                                     - len(model.drives)):
        return f"its cut joints {list(t.cut_joints)} have rows the kernel does not know"
    return None


#: the planar contact kinds whose Coulomb friction the kernel's event loop runs
FRICTIONAL_KINDS = ("point_line", "shape_pair")


def friction_unsupported(model):
    """The reason why the planar kernel's event loop (native/events.c) does not run a model's
    Coulomb friction, or None: it runs friction at point-line contacts and shape pairs."""
    fr = [c.name for c in getattr(model, "contacts", ())
          if c.friction > 0.0 and c.kind not in FRICTIONAL_KINDS]
    if fr:
        return (f"its contacts {fr} have Coulomb friction but are neither point-line "
                f"contacts nor shape pairs (friction acts at a contact point)")
    return None


def joint_friction_data(model):
    """(ji (nj, 3) intc, bound (nj,), jlim (nc,) intc) of the joints with Coulomb friction
    (friction.joint_friction order) for the event loop (mbk_events_set_joint_friction): their
    tree coordinates and parent and child bodies, bounds [N.m or N], and per contact the
    frictional joint it limits (a joint limit), else -1."""
    from ..mechanics.friction import joint_friction
    from ..mechanics.tree import tree_map

    names, _, bound = joint_friction(model)
    tm = tree_map(model)
    jidx = {j.name: k for k, j in enumerate(model.joints)}
    for nm in names:
        if jidx[nm] not in tm.joints:
            raise InputError(f"model '{model.name}': joint '{nm}' has Coulomb friction but "
                             f"no tree coordinate (a cut joint of a closed loop); the "
                             f"compiled event loop cannot run its friction")
    bidx = {b.name: b.index for b in model.bodies}
    bidx["ground"] = len(model.bodies)
    jc = np.array([(tm.joints.index(jidx[nm]), bidx[model.joints[jidx[nm]].parent],
                    bidx[model.joints[jidx[nm]].child]) for nm in names],
                  dtype=np.intc).reshape(-1, 3)
    jlim = np.array([names.index(c.joint) if c.kind == "joint_limit" and c.joint in names
                     else -1 for c in model.contacts], dtype=np.intc)
    return jc, np.ascontiguousarray(bound, dtype=float), jlim


def contact_friction(model):
    """(nc,) the contacts' Coulomb mu for the event loop: 0 at the kinds without friction."""
    return np.array([c.friction if c.kind in FRICTIONAL_KINDS else 0.0
                     for c in model.contacts], dtype=float)


def contact_points(model):
    """(nc,) 1 at the point-line contacts (a contact point whose slip velocity the outputs
    report, frictionless too; native/events.c mbk_events_set_points), else 0."""
    return np.array([int(c.kind == "point_line") for c in model.contacts], dtype=np.intc)


def _law(motion):
    """(kind code, numbers) of a drive law the kernel evaluates, or None."""
    law = getattr(motion, "law", None)
    if law is None:
        return None
    kind, values = law
    values = [float(v) for v in values]
    if kind == "polynomial" and values:
        return 1, values
    if kind == "harmonic" and len(values) == 4:
        return 2, values
    return None


def drive_data(model):
    """The drives for the kernel: di (nd, 4) = tree coordinate, law code, offset, count;
    dp the laws' numbers; and rows (nd,) the drives' rows in tree_map(model).cut_rows."""
    tm = _tree_map(model)
    jpos = {model.joints[k].name: i for i, k in enumerate(tm.joints)}
    cut = [int(r) for r in tm.cut_rows]
    di, dp, rows = [], [], []
    for d, (row, *_) in zip(model.drives, model.compiled.drives):
        code, values = _law(d.motion)
        di.append([jpos[d.joint], code, len(dp), len(values)])
        dp += values
        rows.append(cut.index(int(row)))
    return (np.array(di, dtype=np.intc).reshape(-1, 4), np.array(dp or [0.0], dtype=float),
            np.array(rows, dtype=np.intp))


def _tree_map(model):
    from ..mechanics.tree import tree_map
    return tree_map(model)


def loop_rows(model):
    """The cut joints' constraint rows for the kernel: ri (m, 3) = kind, parent body, child
    body; rd (m, 8) = parent point, child point, w0 (prismatic normal in the parent),
    offset (angle0 or length), sign (1); in the order of tree_map(model).cut_rows."""
    C = model.compiled
    cut = {int(r): i for i, r in enumerate(_tree_map(model).cut_rows)}
    ri, rd = [None] * len(cut), [None] * len(cut)

    def put(row, kind, ps, i, w0=(0.0, 0.0), off=0.0):
        if int(row) in cut:
            k = cut[int(row)]
            ri[k] = [kind, int(ps.p[i]), int(ps.c[i])]
            rd[k] = [*ps.sp[i], *ps.sc[i], *w0, float(off), 1.0]

    for i, rows in enumerate(C.pd_rows):
        for comp, row in enumerate(rows):
            put(row, _ROW_KINDS["pd"][comp], C.pd, i)
    for i, row in enumerate(C.ang_rows):
        put(row, _ROW_KINDS["ang"], C.ang, i, off=C.ang_offset[i])
    for i, row in enumerate(C.prj_rows):
        put(row, _ROW_KINDS["prj"], C.prj, i, w0=C.prj_w0[i])
    for i, row in enumerate(C.dst_rows):
        put(row, _ROW_KINDS["dst"], C.dst, i, off=C.dst_length[i])
    keep = [k for k in range(len(cut)) if ri[k] is not None]
    return (np.array([ri[k] for k in keep], dtype=np.intc).reshape(-1, 3),
            np.array([rd[k] for k in keep], dtype=float).reshape(-1, 8))


def contact_rows(model, contacts):
    """The gap rows of the contacts `contacts` (indices in model.contacts, in that order)
    for the kernel, as loop_rows: gap = sign (value - offset) of fmu_mb.mechanics.contacts
    (point-line: the projection on the line's normal, point-point: the distance, joint
    limits: the relative angle or the projection on the prismatic axis)."""
    B = model.compiled.contacts
    found = {}
    for ps, pos, kind, w0, off, side in (
            (B.pl, B.pl_pos, _ROW_KINDS["prj"], B.pl_w0, B.pl_offset, None),
            (B.pp, B.pp_pos, _ROW_KINDS["dst"], None, B.pp_offset, B.pp_side),
            (B.ja, B.ja_pos, _ROW_KINDS["ang"], None, B.ja_offset, B.ja_side),
            (B.jp, B.jp_pos, _ROW_KINDS["prj"], B.jp_w0, B.jp_offset, B.jp_side)):
        for i in range(len(ps)):
            found[int(pos[i])] = ([kind, int(ps.p[i]), int(ps.c[i])],
                                  [*ps.sp[i], *ps.sc[i],
                                   *(w0[i] if w0 is not None else (0.0, 0.0)),
                                   float(off[i]), 1.0 if side is None else float(side[i])])
    if B.pairs is not None:              # shape pairs: rd[0] = the record (pair_data)
        for j, (i, a, b) in enumerate(zip(*B.pairs[:3])):
            found[int(i)] = ([_ROW_KINDS["pair"], int(a), int(b)],
                             [float(j), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    ri = [found[i][0] for i in contacts]
    rd = [found[i][1] for i in contacts]
    return (np.array(ri, dtype=np.intc).reshape(-1, 3),
            np.array(rd, dtype=float).reshape(-1, 8))


def joint_rate_rows(model, names):
    """(ri (k, 3), rd (k, 8)) the kernel rows (R_JRATE, native/kernel.c) fixing the rates of
    the tree coordinates of the joints `names` (a sticking frictional joint's row: the unit
    row on its coordinate), in `names` order."""
    from ..mechanics.tree import tree_map

    tm = tree_map(model)
    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = len(model.bodies)
    ri = np.zeros((len(names), 3), dtype=np.intc)
    rd = np.zeros((len(names), 8))
    jidx = {j.name: k for k, j in enumerate(model.joints)}
    for r, name in enumerate(names):
        k = jidx[name]
        if k not in tm.joints:
            raise InputError(f"model '{model.name}': joint '{name}' has no tree coordinate "
                             f"(a cut or weld joint); its rate has no kernel row")
        j = model.joints[k]
        ri[r] = (_ROW_KINDS["jrate"], idx[j.parent], idx[j.child])
        rd[r, 0] = tm.joints.index(k)
    return ri, rd


def pair_data(model):
    """(np, 19) the records of the planar shape pairs (native/kernel.c mbk_set_pairs): kind
    codes of shapes a and b, the feature id, the sizes (2 each), shape a's rotation (2 x 2,
    row-major) and position in its body's axes, the same of b; None without pairs."""
    from ..mechanics.shapes import KIND_CODES

    B = model.compiled.contacts
    if B is None or getattr(B, "pairs", None) is None:
        return None
    rows = []
    for c in B.pairs[3]:
        sa, sb = c.shapes
        size = [(tuple(float(v) for v in s.size) + (0.0,))[:2] for s in (sa, sb)]
        rows.append([KIND_CODES[sa.kind], KIND_CODES[sb.kind], c.feature, *size[0], *size[1],
                     *np.array(sa.rotation, float).reshape(-1), *sa.position,
                     *np.array(sb.rotation, float).reshape(-1), *sb.position])
    return np.ascontiguousarray(rows, dtype=float)


def tree_arrays(model):
    """The kernel's arrays of a planar model (what mbk_create takes): ji (nb, 5), jd (nb, 8),
    ei (ne, 5), ed (ne, 10), mass (nb,), inertia (nb,). fmu_mb.engine.data puts the same
    arrays in the engine's model data."""
    from ..mechanics.tree import tree_map

    tm = tree_map(model)
    C = model.compiled
    nb = tm.nb
    free = set(tm.free)
    ji, jd, seen = [], [], set()
    for k in range(tm.nt):
        b = int(tm.other[k])
        if b in free:
            if b not in seen:
                ji.append([b, _FREE, nb, nb, int(tm.coord[k])])
                jd.append([0.0] * 8)
                seen.add(b)
            continue
        pl, par = int(tm.placed[k]), int(tm.parent[k])
        kind = "revolute" if tm.revolute[k] else "prismatic" if tm.prismatic[k] else "weld"
        ji.append([b, _J[kind], pl, par, int(tm.coord[k])])
        jd.append([tm.sign[k], tm.angle0[k], *tm.s_placed[k], *tm.s_other[k], *tm.axis[k]])
    ei, ed = [], []
    for i in range(len(C.tsda)):
        ei.append([1, C.tsda.p[i], C.tsda.c[i], C.tsda_u[i], i])
        ed.append([C.tsda_k[i], C.tsda_c[i], C.tsda_l0[i], 0.0, *C.tsda.sp[i],
                   *C.tsda.sc[i], 0.0, 0.0])
    for i in range(len(C.rsda)):
        ei.append([2, C.rsda.p[i], C.rsda.c[i], C.rsda_u[i], 0])
        ed.append([C.rsda_k[i], C.rsda_c[i], C.rsda_theta0[i], 0.0, 0, 0, 0, 0, 0, 0])
    for i in range(len(C.frc_body)):
        ei.append([3, C.frc_body[i], nb, C.frc_u[i], int(C.frc_body_frame[i])])
        ed.append([0, 0, 0, C.frc_value[i], *C.frc_point[i], 0, 0, *C.frc_dir[i]])
    for i in range(len(C.trq_body)):
        ei.append([4, C.trq_body[i], C.trq_reaction[i], C.trq_u[i], 0])
        ed.append([0, 0, 0, C.trq_value[i], 0, 0, 0, 0, 0, 0])
    arrs = dict(ji=np.array(ji, dtype=np.intc).reshape(-1, 5),
                jd=np.array(jd, dtype=float).reshape(-1, 8),
                ei=np.array(ei, dtype=np.intc).reshape(-1, 5),
                ed=np.array(ed, dtype=float).reshape(-1, 10),
                mass=np.ascontiguousarray(C.mass_diag[0::3]),
                inertia=np.ascontiguousarray(C.mass_diag[2::3]))
    if len(arrs["ji"]) != nb:
        raise InputError(f"model '{model.name}': the tree places {len(arrs['ji'])} of "
                         f"{nb} bodies; formulation 'recursive' cannot run it")
    return arrs


class TreeKernel:
    """The kernel instance of one Model (its tree and loop rows), with preallocated ctypes
    buffers."""

    def __init__(self, model, contacts=()):
        """contacts: indices of persistent contacts whose gap rows the kernel keeps closed
        (rows after the cut joints' rows; see contact_kernel)."""
        from ..mechanics.tree import tree_map

        why = supported(model)
        if why is not None:
            raise InputError(f"model '{model.name}': formulation 'recursive' handles trees "
                             f"of revolute, prismatic and weld joints with force elements "
                             f"and loops closed by cut joints; {why}. Use formulation 'tmt' "
                             f"or 'newton_euler'")
        lib = library()
        tm = tree_map(model)
        C = model.compiled
        nb, n = tm.nb, tm.n
        arrs = tree_arrays(model)
        gx, gy = model.gravity
        handle = lib.mbk_create(nb, n, arrs["ji"].ctypes.data, arrs["jd"].ctypes.data,
                                len(arrs["ei"]), arrs["ei"].ctypes.data,
                                arrs["ed"].ctypes.data, arrs["mass"].ctypes.data,
                                arrs["inertia"].ctypes.data, float(gx), float(gy))
        if not handle:
            raise MemoryError(f"model '{model.name}': cannot allocate the kernel")
        self._finalizer = weakref.finalize(self, lib.mbk_free, handle)
        ri, rd = loop_rows(model)
        self.m_loop = len(ri)
        self.contacts = tuple(int(i) for i in contacts)
        if self.contacts:
            ci, cd = contact_rows(model, self.contacts)
            ri, rd = np.concatenate([ri, ci]), np.concatenate([rd, cd])
        self.m = len(ri)
        pd = pair_data(model)
        if pd is not None:
            self._pairs = pd
            if lib.mbk_set_pairs(handle, len(pd), pd.ctypes.data):
                raise MemoryError(f"model '{model.name}': cannot allocate the kernel's shape "
                                  f"pairs")
        if self.m:
            lib.mbk_set_eigensolver(handle, _eigensolver())
        if self.m and lib.mbk_set_rows(handle, self.m, ri.ctypes.data, rd.ctypes.data):
            raise MemoryError(f"model '{model.name}': cannot allocate the kernel's loop rows")
        if C.tsda_gain is not None:          # hydraulic cylinders: s -= G u
            G = np.ascontiguousarray(C.tsda_gain, dtype=float)
            if lib.mbk_set_gains(handle, G.shape[0], G.shape[1], G.ctypes.data):
                raise MemoryError(f"model '{model.name}': cannot allocate the kernel's gains")
            self._gains = G
        di, dp, self._drive_pos = drive_data(model)
        self.nd = len(di)
        if self.nd and lib.mbk_set_drives(handle, self.nd, di.ctypes.data, len(dp),
                                          dp.ctypes.data):
            raise InputError(f"model '{model.name}': the kernel refused the drives' laws")
        keep = np.ones(self.m_loop + self.nd, bool)      # (np.setdiff1d would import
        keep[self._drive_pos] = False                    # numpy.ma: ~10 ms of start-up)
        cut_pos = np.flatnonzero(keep)
        order = np.argsort(np.concatenate([cut_pos, self._drive_pos]))
        # C's order: loop rows, contact rows, drives -> cut_rows order (loops and drives)
        self._order = np.where(order < self.m_loop, order, order + self.m - self.m_loop)
        self._stab = None
        self._lam = np.zeros(max(1, self.m + self.nd))
        self.lib, self.handle, self.nb, self.n, self.name = lib, handle, nb, n, model.name
        self.n_inputs = len(model.inputs)
        self.element_names = ([e.name for e in model.elements if e.kind in ("tsda", "cylinder")] +
                              [e.name for e in model.elements if e.kind == "rsda"])
        self._lock = threading.Lock()    # one workspace per model; ctypes drops the GIL
        self._y = np.zeros(2 * n)
        self._u = np.zeros(max(1, self.n_inputs))
        self._par = np.zeros(10)    # t, t_end, h, rtol, atol, max_step, step, t_fail, max_steps, fsal (0)
        self._nfev = np.zeros(1, dtype=np.intc)
        self._out = np.zeros((4, 3 * nb))
        self._qdd = np.zeros(max(1, n))
        p = lambda a: a.ctypes.data  # noqa: E731
        self._py, self._pu, self._ppar, self._pn = (p(self._y), p(self._u), p(self._par),
                                                    p(self._nfev))
        self._pq, self._pqd = self._py, self._py + 8 * n
        self._pqdd = p(self._qdd)
        self._px, self._pxd, self._pxdd, self._pf = (p(self._out[0]), p(self._out[1]),
                                                     p(self._out[2]), p(self._out[3]))

    def _error(self, rc, t, what, max_steps=0):
        msg = _ERRORS.get(rc, f"kernel error {rc}")
        if rc == 7:
            return budget_error(self.name, t, what, max_steps)
        if rc == 4:
            i = self.lib.mbk_last_error_index(self.handle)
            name = self.element_names[i] if 0 <= i < len(self.element_names) else "?"
            msg += f" (element '{name}')"
        if rc == 6:
            return DriftError(f"model '{self.name}': {what} at t = {t:.9g} s: {msg}")
        if rc == 2:
            return SingularSystemError(f"model '{self.name}': {what} at t = {t:.9g} s: {msg}; "
                                       f"use formulation 'tmt' or 'newton_euler'")
        return IntegrationError(f"model '{self.name}': {what} at t = {t:.9g} s: {msg}")

    def _stabilization_unlocked(self, mode, baumgarte=(0.0, 0.0), projection_tol=1e-13):
        """Drift control of the loop rows: mode 'none', 'projection' (after every step of
        `advance`) or 'baumgarte' (alpha, beta [1/s] in the accelerations)."""
        if projection_tol is None:                 # keep the current one
            projection_tol = self._stab[3] if self._stab else 1e-13
        key = (mode, float(baumgarte[0]), float(baumgarte[1]), float(projection_tol))
        if key != self._stab:
            self.lib.mbk_set_stabilization(self.handle, _STABILIZATION[mode], *key[1:])
            self._stab = key

    def _load(self, q, qd, u):
        n = self.n
        self._y[:n] = q
        self._y[n:] = qd
        if self.n_inputs and u is not None:
            self._u[:self.n_inputs] = u

    def _accelerations_unlocked(self, q, qd, u, t=0.0, baumgarte=None):
        """qdd (n,) and x, xd, xdd (3 nb,) at (q, qd) with inputs u; baumgarte (alpha, beta)
        [1/s] acts on the loop rows (None: none)."""
        if self.m:
            self._stabilization_unlocked("none" if baumgarte is None else "baumgarte",
                                         (0.0, 0.0) if baumgarte is None else baumgarte, None)
        self._load(q, qd, u)
        rc = self.lib.mbk_accelerations(self.handle, float(t), self._pq, self._pqd, self._pu,
                                        self._pqdd, self._px, self._pxd, self._pxdd)
        if rc:
            raise self._error(rc, t, "the accelerations cannot be computed")
        o = self._out
        return self._qdd[:self.n].copy(), o[0].copy(), o[1].copy(), o[2].copy()

    def _multipliers_unlocked(self):
        """lam of the loop rows and drives in tree_map(model).cut_rows order, from the last
        `accelerations` (Mbar qdd + Dq' lam = fbar; a drive's row is q_j - s(t))."""
        self.lib.mbk_multipliers(self.handle, self._lam.ctypes.data)
        return self._lam[self._order]

    def _gaps_unlocked(self, q):
        """The contact rows' values at q (gaps, in self.contacts order; a kernel made with
        every contact gives the event loop's gaps), or None when a row is undefined there
        (a point-point contact at zero distance)."""
        self._load(q, np.zeros(self.n), None)
        phi = np.empty(max(1, self.m))
        if self.lib.mbk_row_values(self.handle, self._pq, phi.ctypes.data):
            return None
        return phi[self.m_loop:self.m]

    def _contact_multipliers_unlocked(self):
        """lam of the contact rows (in self.contacts order) from the last `accelerations`
        (the contact force is -lam)."""
        return self._lam[self.m_loop:self.m].copy()

    def _project_unlocked(self, q, qd, t=0.0, tol=None):
        """(q, qd) projected onto the loop rows to |phi| <= tol (1 + max |x|) (None: the
        last tolerance set)."""
        if tol is not None:
            mode, a, b, _ = self._stab or ("projection", 0.0, 0.0, 0.0)
            self._stabilization_unlocked(mode, (a, b), tol)
        self._load(q, qd, None)
        rc = self.lib.mbk_project(self.handle, float(t), self._py)
        if rc:
            raise self._error(rc, t, "the projection failed")
        n = self.n
        return self._y[:n].copy(), self._y[n:].copy()

    def _kinematics_unlocked(self, q, qd):
        """x, xd (3 nb,) of the bodies at (q, qd)."""
        self._load(q, qd, None)
        self.lib.mbk_kinematics(self.handle, self._pq, self._pqd, self._px, self._pxd)
        return self._out[0].copy(), self._out[1].copy()

    def _applied_forces_unlocked(self, q, qd, u):
        """f - Dv' s (3 nb,) at (q, qd): the kernel's own element forces (for tests)."""
        self._load(q, qd, u)
        rc = self.lib.mbk_applied_forces(self.handle, self._pq, self._pqd, self._pu, self._pf)
        if rc:
            raise self._error(rc, 0.0, "the applied forces cannot be computed")
        return self._out[3].copy()

    def _step_unlocked(self, method, t, t_end, y, f, h, u, rtol, atol, max_step, stab=None):
        """One accepted dopri5/dop853 step from (t, y) with f = f(t, y) (or None); returns
        (t_new, y_new unprojected, K stages (s + 1, 2 n), h_next, h_taken). stab: the
        arguments of `stabilization` (Baumgarte acts in the stages)."""
        if stab is not None and self.m:
            self._stabilization_unlocked(*stab)
        n = self.n
        s = 12 if method == "dop853" else 6
        K = np.zeros((s + 1, 2 * n))
        if f is not None:
            K[0] = f
        self._y[:] = y
        if self.n_inputs and u is not None:
            self._u[:self.n_inputs] = u
        par = self._par
        par[:7] = (t, t_end, h, rtol, atol, max_step, 0.0)
        rc = self.lib.mbk_step(self.handle, METHOD_CODES[method], self._ppar, self._py, self._pu,
                               int(f is not None), K.ctypes.data, self._pn)
        if rc:
            raise self._error(rc, float(par[0]), f"the {method} integrator failed")
        return float(par[0]), self._y.copy(), K, float(par[2]), float(par[6])

    def _advance_unlocked(self, method, t, t_end, q, qd, h, u, rtol, atol, max_step, step,
                          stab=None, max_steps=0):
        """Integrate to t_end; returns (q, qd, h, number of right-hand sides). stab: the
        arguments of `stabilization` (drift control of the loop rows)."""
        if stab is not None and self.m:
            self._stabilization_unlocked(*stab)
        self._load(q, qd, u)
        par = self._par
        par[:7] = (t, t_end, h, rtol, atol, max_step, step)
        par[8] = max_steps
        rc = self.lib.mbk_advance(self.handle, METHOD_CODES[method], self._ppar, self._py,
                                  self._pu, self._pn)
        if rc:
            raise self._error(rc, float(par[7]), f"the {method} integrator failed", max_steps)
        n = self.n
        return self._y[:n].copy(), self._y[n:].copy(), float(par[2]), int(self._nfev[0])


    def stepper(self, method, rtol, atol, max_step, step, stab=None, max_steps=0):
        """advance() with the solver settings bound once, for co-simulation steps:
        returns step(t, t_end, q, qd, h, u) -> (y, h) with y = (q, qd) at t_end in one
        read-only array (q = y[:n], qd = y[n:]). u must be a float array of the model's
        inputs (validated by the caller); errors as advance(). stab: the arguments of
        `stabilization`, set under the lock before each call when the kernel closes loops."""
        set_stab = (self._stabilization_unlocked if stab is not None and self.m else None)
        return bound_advance(self, self.lib.mbk_advance, method, rtol, atol, max_step, step,
                             set_stab, stab, max_steps)


def bound_advance(kern, lib_advance, method, rtol, atol, max_step, step, set_stab, stab,
                  max_steps):
    """The co-simulation stepper of a compiled kernel (TreeKernel, spatial_kernel's
    SpatialKernel): lib_advance (mbk_advance, sk_advance) with the solver settings bound once;
    returns run(t, t_end, q, qd, h, u) -> (y, h) with y = (q, qd) at t_end in one read-only
    array. set_stab(*stab) sets the drift control under the kernel's lock before each call
    (None: nothing to set). Errors as the kernel's advance()."""
    code = METHOD_CODES[method]
    par = np.zeros(10)     # t, t_end, h, rtol, atol, max_step, step, t_fail, max_steps, fsal (0)
    par[3:7] = (max(rtol, 100 * np.finfo(float).eps), atol,
                max_step if np.isfinite(max_step) else 1e300, step or 0.0)
    par[8] = max_steps
    handle, lock, error = kern.handle, kern._lock, kern._error
    buf, ubuf, n, ni = kern._y, kern._u, kern.n, kern.n_inputs
    ppar, py, pu, pn = (par.ctypes.data, buf.ctypes.data, ubuf.ctypes.data,
                        kern._nfev.ctypes.data)

    def run(t, t_end, q, qd, h, u):
        with lock:
            if set_stab is not None:
                set_stab(*stab)
            buf[:n] = q
            buf[n:2 * n] = qd
            if ni:
                ubuf[:ni] = u
            par[0] = t
            par[1] = t_end
            par[2] = h
            rc = lib_advance(handle, code, ppar, py, pu, pn)
            if rc:
                raise error(rc, float(par[7]), f"the {method} integrator failed", max_steps)
            y = buf[:2 * n].copy()
            h = float(par[2])
        y.flags.writeable = False
        return y, h
    return run


def _locked(name):
    def call(self, *args, **kwargs):
        with self._lock:
            return getattr(self, name)(*args, **kwargs)
    call.__name__ = name[1:].replace("_unlocked", "")
    call.__doc__ = getattr(TreeKernel, name).__doc__
    return call


for _name in ("accelerations", "kinematics", "applied_forces", "advance", "multipliers",
              "project", "step", "stabilization", "gaps"):
    setattr(TreeKernel, _name, _locked(f"_{_name}_unlocked"))

_KERNELS = weakref.WeakKeyDictionary()


def tree_kernel(model):
    """The TreeKernel of `model` (made once per Model)."""
    k = _KERNELS.get(model)
    if k is None:
        k = _KERNELS[model] = TreeKernel(model)
    return k


_CONTACT_KERNELS = weakref.WeakKeyDictionary()


def contact_kernel(model, contacts):
    """The TreeKernel of `model` with the gap rows of the persistent contacts `contacts`
    (a tuple of indices in model.contacts) closed after the cut rows: one instance per
    active set, made when a phase of the event loop first needs it."""
    per = _CONTACT_KERNELS.get(model)
    if per is None:
        per = _CONTACT_KERNELS[model] = {}
    key = contacts if type(contacts) is tuple else tuple(int(i) for i in contacts)
    k = per.get(key)
    if k is None:
        key = tuple(int(i) for i in key)
        k = per[key] = TreeKernel(model, key) if key else tree_kernel(model)
    return k


# ---------------------------------------------------------------------- contact events
EVENT_RECORD = ("impacts", "last_time", "last_impulse", "energy_loss", "active")
#: a frictional model's records (the spatial event loop) go on with these
FRICTION_RECORD = ("stick", "sdir1", "sdir2", "slide_loss")


class ContactEvents:
    """The contact event loop of a planar model in C (native/events.c, `mbk_advance_events`):
    a whole interval with impacts, persistent contacts and their release in one foreign call.
    Made once per Model (`contact_events`); it owns two private kernels (copies of the tree
    kernel with every contact's gap row), so it shares no workspace with `tree_kernel`."""

    def __init__(self, model):
        base = tree_kernel(model)
        lib = library()
        B = model.compiled.contacts
        nc = len(model.contacts)
        if nc:
            ci, cd = contact_rows(model, tuple(range(nc)))
            e = np.ascontiguousarray(B.restitution, dtype=float)
        else:                        # frictional joints only
            ci, cd, e = np.zeros((1, 3), np.intc), np.zeros((1, 8)), np.zeros(1)
        handle = lib.mbk_events_create(base.handle, nc, ci.ctypes.data, cd.ctypes.data,
                                       e.ctypes.data, len(model.inputs))
        mu = contact_friction(model) if nc else np.zeros(0)
        points = contact_points(model)
        if handle and mu.any() and (lib.mbk_events_set_friction(handle, mu.ctypes.data) or
                                    lib.mbk_events_set_points(handle, points.ctypes.data)):
            lib.mbk_events_free(handle)
            raise MemoryError(f"model '{model.name}': cannot set up the contacts' friction "
                              f"in the contact event loop")
        jc, jb, jlim = joint_friction_data(model)
        if handle and len(jc) and lib.mbk_events_set_joint_friction(
                handle, len(jc), jc.ctypes.data, jb.ctypes.data, jlim.ctypes.data):
            lib.mbk_events_free(handle)
            raise MemoryError(f"model '{model.name}': cannot set up the joints' friction "
                              f"in the contact event loop")
        self._setup(model, base, lib, handle, lib.mbk_events_free, lib.mbk_advance_events,
                    lib.mbk_events_outputs)
        self.nj = len(jc)
        if self.nj:                  # flat records: nc x 9 for the contacts, 3 per joint
            self.n_rec = len(EVENT_RECORD) + len(FRICTION_RECORD)
            self._rec = np.zeros(nc * self.n_rec + 3 * self.nj)
        self._initial_fn = lib.mbk_events_initial
        self._initial_impact_fn = lib.mbk_events_initial_impact
        self._error_contact_fn = lib.mbk_events_error_contact

    def _load_start(self, q, qd, u, rec):
        """The buffers of the C calls at a start: y = (q, qd), the records, the inputs."""
        self._y[:self.n] = q
        self._y[self.n:] = qd
        self._rec[:] = rec
        if self.n_inputs:
            self._u[:self.n_inputs] = u

    def initial(self, t, q, qd, u, rec, contact_tol, contact_velocity):
        """The records rec (nc, 9) of a frictional model at its start (native/event_loop.h
        ev_initial: frictional contacts closed at t start persistent, sticking or slipping):
        a new array."""
        with self._lock:
            self._load_start(q, qd, u, rec)
            rc = self._initial_fn(self.handle, float(t), self._y.ctypes.data,
                                  self._u.ctypes.data, self._rec.ctypes.data,
                                  float(contact_tol), float(contact_velocity))
            if rc:
                fn = self._error_contact_fn
                i = fn(self.handle) if rc == 14 and fn is not None else -1
                raise self._error(rc, float(t), i, "dop853", 0, t, t, 0.0)
            return self._rec.copy()

    def initial_impact(self, t, q, qd, u, rec, settings):
        """(q, qd, rec) at the start t: the frictionless contacts closed (gap <=
        contact_tol) at rest there persistent, the impact of one closed and approaching
        (native/event_loop.h ev_initial_impact, as integrate._initial_impact); rec as in
        advance(), new arrays."""
        mode = _STABILIZATION[settings.stabilization]
        (alpha, beta), impacts = settings.baumgarte, ctypes.c_int(0)
        with self._lock:
            self._load_start(q, qd, u, rec)
            rc = self._initial_impact_fn(
                self.handle, float(t), self._y.ctypes.data, self._u.ctypes.data,
                self._rec.ctypes.data, float(settings.contact_tol),
                float(settings.contact_velocity), mode, float(alpha), float(beta),
                float(settings.projection_tol), ctypes.byref(impacts))
            if rc:
                raise self._error(rc, float(t), -1, "dop853", 0, t, t, 0.0)
            return self._y[:self.n].copy(), self._y[self.n:].copy(), self._rec.copy()

    def _setup(self, model, base, lib, handle, free, advance, outputs):
        """The object over the C event loop `handle` of `base`'s kernel (freed by `free`;
        advance and outputs: the library's mbk_/sk_ functions)."""
        if not handle:
            raise MemoryError(f"model '{model.name}': cannot allocate the contact event loop")
        self._finalizer = weakref.finalize(self, free, handle)
        nc = len(model.contacts)
        self.lib, self.handle, self.n, self.nc = lib, handle, base.n, nc
        self.name, self.names = model.name, [c.name for c in model.contacts]
        self.n_inputs = len(model.inputs)
        self._base = base                      # for its error messages
        self._lock = threading.Lock()
        self._y = np.zeros(2 * self.n)
        friction = any(c.friction > 0.0 for c in model.contacts)
        self.n_rec = len(EVENT_RECORD) + (len(FRICTION_RECORD) if friction else 0)
        self._rec = np.zeros((nc, self.n_rec))
        self._u = np.zeros(max(1, self.n_inputs))
        self._advance_fn, self._outputs_fn = advance, outputs

    def advance(self, method, t, t_end, q, qd, h, u, rtol, atol, max_step, stab,
                contact_tol, contact_velocity, event_tol, max_steps, rec, step=1e-3):
        """Integrate (q, qd) from t to t_end with the events; rec (nc, 5): per contact
        impacts, last_time, last_impulse, energy_loss, active (in: before, out: after).
        stab = (stabilization, (alpha, beta), projection_tol); step: rk4's step [s]. Returns
        (q, qd, h, rec, steps, events)."""
        run = self.stepper(method, rtol, atol, max_step, stab, contact_tol, contact_velocity,
                           event_tol, max_steps, step)
        y, h, rec = run(t, t_end, q, qd, h, u, rec)
        par = run.par
        return y[:self.n].copy(), y[self.n:].copy(), h, rec, int(par[15]), int(par[16])

    def stepper(self, method, rtol, atol, max_step, stab, contact_tol, contact_velocity,
                event_tol, max_steps, step=1e-3):
        """advance() with the settings bound once (co-simulation steps): returns
        run(t, t_end, q, qd, h, u, rec) -> (y, h, rec) with y = (q, qd) at t_end (a new
        array) and rec the new records (a new array, or `rec` itself when no record
        changed). u: a float array of the model's inputs (validated by the caller)."""
        mode, (alpha, beta), ptol = stab
        par = np.zeros(19)
        par[3:14] = (rtol, atol, max_step, _STABILIZATION[mode], alpha, beta, ptol,
                     contact_tol, contact_velocity, event_tol, max_steps)
        par[18] = step
        code, n, ni, lock = METHOD_CODES[method], self.n, self.n_inputs, self._lock
        ybuf, ubuf, rbuf = self._y, self._u, self._rec
        handle, call = self.handle, self._advance_fn
        ppar, py, pu, pr = (par.ctypes.data, ybuf.ctypes.data, ubuf.ctypes.data,
                            rbuf.ctypes.data)
        error = self._error

        def run(t, t_end, q, qd, h, u, rec):
            with lock:
                par[0] = t
                par[1] = t_end
                par[2] = h
                ybuf[:n] = q
                ybuf[n:] = qd
                rbuf[:] = rec
                if ni:
                    ubuf[:ni] = u
                rc = call(handle, code, ppar, py, pu, pr)
                if rc:
                    raise error(rc, float(par[14]), int(par[17]), method, max_steps, t,
                                t_end, float(par[2]))
                y = ybuf.copy()
                if par[16]:                  # events or releases: the records changed
                    rec = rbuf.copy()
                return y, float(par[2]), rec
        run.par = par
        return run

    def outputs(self, t, q, qd, u, rec):
        """(gap (nc,), force (nc,)) at (t, q, qd) with inputs u for the records rec (nc, 5):
        the force of each persistent contact (rec active), pushing positive, 0 otherwise."""
        with self._lock:
            n = self.n
            self._y[:n] = q
            self._y[n:] = qd
            self._rec[:] = rec
            if self.n_inputs:
                self._u[:self.n_inputs] = u
            gap, force = np.zeros(self.nc), np.zeros(self.nc)
            rc = self._outputs_fn(self.handle, float(t), self._y.ctypes.data,
                                             self._u.ctypes.data, self._rec.ctypes.data,
                                             gap.ctypes.data, force.ctypes.data)
            if rc:
                raise self._error(rc, float(t), -1, "outputs", 0, t, t, 0.0)
            return gap, force

    def _error(self, rc, t, i, method, max_steps, t0, t_end, h):
        from ..errors import ImpactError

        who = f"contact '{self.names[i]}'" if 0 <= i < self.nc else "the contact event loop"
        if rc == 7:
            return IntegrationError(
                f"model '{self.name}': integrating from t = {t0:.9g} s to {t_end:.9g} s needs "
                f"more than {int(max_steps)} integrator steps (step size about {h:.3g} s); the "
                f"call was stopped; take shorter communication steps or check the inputs")
        if rc == 9:
            return IntegrationError(f"model '{self.name}': {who} switches state endlessly at "
                                    f"t = {t:.9g} s (Zeno behaviour); raise "
                                    f"Settings.contact_velocity")
        if rc == 10:
            return ImpactError(f"model '{self.name}': no admissible impact solution at "
                               f"t = {t:.9g} s ({who} and the contacts closed with it); the "
                               f"contacts may be redundant or the impact ill-posed")
        if rc in (8, 11):
            return IntegrationError(f"model '{self.name}': {who}: {_ERRORS[rc]} at "
                                    f"t = {t:.9g} s")
        if rc in (13, 14) and self.n_rec > len(EVENT_RECORD):
            # event_loop.h's ERR_FRICTION (14) and the
            # kernels' ERR_PAINLEVE (13)
            what = (f"{who} has no consistent state" if rc == 14 and 0 <= i < self.nc else
                    "the persistent contacts find no consistent state" if rc == 14 else
                    "the sliding friction leaves no unique contact force")
            return ImpactError(f"model '{self.name}': {what} at t = {t:.9g} s (Painleve's "
                               f"paradox: a contact problem without a solution); a smaller "
                               f"friction coefficient or another contact model is needed")
        return self._base._error(rc, t, f"the {method} integrator with contact events failed")


_EVENT_LOOPS = weakref.WeakKeyDictionary()


def contact_events(model):
    """The ContactEvents of `model` (made once per Model)."""
    ev = _EVENT_LOOPS.get(model)
    if ev is None:
        ev = _EVENT_LOOPS[model] = ContactEvents(model)
    return ev


def dense_coefficients():
    """The dense-output coefficients compiled into native/events.c: RK45's P (7, 4), DOP853's
    extra stages' A rows (3, 16) and C (3,), DOP853's D (4, 16) (tests compare them with
    scipy's)."""
    lib = library()
    out = []
    for which, shape in enumerate([(7, 4), (3, 16), (3,), (4, 16)]):
        a = np.zeros(int(np.prod(shape)))
        lib.mbk_events_coefficients(which, a.ctypes.data)
        out.append(a.reshape(shape))
    return out
