"""The native kernel (fmu_mb/dynamics/native/kernel.c): open-tree forward dynamics by the
articulated-body algorithm and the explicit integrators, in C, called through ctypes.

The library is compiled on first use with the system C compiler (`$CC`, `cc`, `gcc` or
`clang`; flags `-O2 -ffp-contract=off`, so results do not depend on FMA contraction) and kept

1. next to the source (``fmu_mb/dynamics/native/_kernel-<hash>.so``) when that folder is writable or
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
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import FmuMbError, InputError, IntegrationError, SingularSystemError

SOURCE = Path(__file__).resolve().parent / "native" / "kernel.c"
CFLAGS = ["-O2", "-ffp-contract=off", "-fPIC", "-shared", "-Wall"]
METHOD_CODES = {"dopri5": 0, "dop853": 1, "rk4": 2}

_J = {"weld": 0, "revolute": 1, "prismatic": 2}
_FREE = 3
_ERRORS = {1: "the state became non-finite (NaN or infinity)",
           2: "the articulated inertia is singular (a massless subtree)",
           3: "the step size became too small",
           4: "a spring-damper has zero length (its direction is undefined)",
           5: "invalid kernel arguments"}


class KernelUnavailable(FmuMbError):
    """The native kernel cannot be built or loaded on this machine."""


def _tag():
    text = SOURCE.read_bytes() + repr((CFLAGS, sys.platform, platform.machine())).encode()
    return hashlib.sha1(text).hexdigest()[:12]


def library_name():
    return f"_kernel-{_tag()}.so"


def _cache_dirs():
    dirs = [SOURCE.parent]
    if os.environ.get("FMU_MB_CACHE"):
        dirs.append(Path(os.environ["FMU_MB_CACHE"]))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    dirs.append(Path(base) / "fmu_mb")
    return dirs


def compiler():
    """Path of the C compiler used for the kernel, or None."""
    candidates = ([os.environ["CC"]] if os.environ.get("CC") else []) + ["cc", "gcc", "clang"]
    return next((shutil.which(c) for c in candidates if shutil.which(c)), None)


def build_library(dest_dir):
    """Compile the kernel into dest_dir (atomically) and return the library's path."""
    if not SOURCE.is_file():
        raise KernelUnavailable(f"the kernel source {SOURCE} is missing from the fmu_mb "
                                f"installation")
    dest_dir = Path(dest_dir)
    dest = dest_dir / library_name()
    if dest.is_file():
        return dest
    cc = compiler()
    if cc is None:
        raise KernelUnavailable("the 'recursive' formulation needs a C compiler to build its "
                                "kernel once (none of $CC, cc, gcc, clang is on PATH; Debian: "
                                "apt-get install gcc); use formulation 'tmt' instead")
    dest_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".kernel-", suffix=".so", dir=dest_dir)
    os.close(fd)
    try:
        p = subprocess.run([cc, *CFLAGS, "-o", tmp, str(SOURCE), "-lm"], capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise KernelUnavailable(f"compiling the kernel with {cc} failed: "
                                    f"{p.stderr.strip()[-2000:]}")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


_LOCK = threading.Lock()


def library_path():
    """Path of the compiled kernel: an existing one for this source, or a new build."""
    with _LOCK:
        path, errors = None, []
        for d in _cache_dirs():
            if (d / library_name()).is_file():
                path = d / library_name()
                break
        if path is None:
            for d in _cache_dirs():
                try:
                    path = build_library(d)
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
    lib.mbk_accelerations.argtypes = [P, P, P, P, P, P, P, P]
    lib.mbk_applied_forces.argtypes = [P, P, P, P, P]
    lib.mbk_kinematics.restype = None
    lib.mbk_kinematics.argtypes = [P, P, P, P, P]
    lib.mbk_advance.argtypes = [P, I, P, P, P, P]
    lib.mbk_last_error_index.argtypes = [P]
    _set_tableaus(lib)
    return lib


def _set_tableaus(lib):
    """The Runge-Kutta coefficients are scipy's own (RK45 and DOP853), kept as constants in
    tableaus.py (checked against scipy by tests/test_startup.py) so that loading the kernel
    does not import scipy."""
    from . import tableaus as T

    keep = []

    def ptr(a):
        a = np.ascontiguousarray(a, dtype=float)
        keep.append(a)
        return a.ctypes.data

    rc = lib.mbk_set_tableau(0, T.RK45_STAGES, T.RK45_ERROR_ORDER, ptr(T.RK45_A),
                             ptr(T.RK45_B), ptr(T.RK45_C), ptr(T.RK45_E), None, None)
    rc |= lib.mbk_set_tableau(1, T.DOP853_STAGES, T.DOP853_ERROR_ORDER, ptr(T.DOP853_A),
                              ptr(T.DOP853_B), ptr(T.DOP853_C), None, ptr(T.DOP853_E3),
                              ptr(T.DOP853_E5))
    if rc:
        raise KernelUnavailable("the kernel refused scipy's Runge-Kutta tableaus")


def supported(model):
    """None when the kernel can run `model`, else the reason why not (a sentence)."""
    t = model.topology
    if t.cut_joints:
        return f"it has closed loops (cut joints {list(t.cut_joints)})"
    if model.drives:
        return f"it has drives {[d.name for d in model.drives]}"
    if model.contacts:
        return f"it has contacts {[c.name for c in model.contacts]}"
    if model.compiled.tsda_gain is not None:
        return (f"it has hydraulic cylinders "
                f"{[e.name for e in model.elements if e.kind == 'cylinder']}")
    bad = [n for n in t.tree_joints if model.joint(n).kind not in _J]
    if bad:
        return f"joints {bad} are not revolute, prismatic or weld joints"
    return None


class TreeKernel:
    """The kernel instance of one Model (open tree), with preallocated ctypes buffers."""

    def __init__(self, model):
        from ..mechanics.tree import tree_map

        why = supported(model)
        if why is not None:
            raise InputError(f"model '{model.name}': formulation 'recursive' handles open trees "
                             f"of revolute, prismatic and weld joints with force elements; "
                             f"{why}. Use formulation 'tmt' or 'newton_euler'")
        lib = library()
        tm = tree_map(model)
        C = model.compiled
        nb, n = tm.nb, tm.n
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
            ei.append([1, C.tsda.p[i], C.tsda.c[i], C.tsda_u[i], 0])
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
        gx, gy = model.gravity
        handle = lib.mbk_create(nb, n, arrs["ji"].ctypes.data, arrs["jd"].ctypes.data,
                                len(arrs["ei"]), arrs["ei"].ctypes.data,
                                arrs["ed"].ctypes.data, arrs["mass"].ctypes.data,
                                arrs["inertia"].ctypes.data, float(gx), float(gy))
        if not handle:
            raise MemoryError(f"model '{model.name}': cannot allocate the kernel")
        self._finalizer = weakref.finalize(self, lib.mbk_free, handle)
        self.lib, self.handle, self.nb, self.n, self.name = lib, handle, nb, n, model.name
        self.n_inputs = len(model.inputs)
        self.element_names = ([e.name for e in model.elements if e.kind == "tsda"] +
                              [e.name for e in model.elements if e.kind == "rsda"])
        self._lock = threading.Lock()    # one workspace per model; ctypes drops the GIL
        self._y = np.zeros(2 * n)
        self._u = np.zeros(max(1, self.n_inputs))
        self._par = np.zeros(8)          # t, t_end, h, rtol, atol, max_step, step, t_fail
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

    def _error(self, rc, t, what):
        msg = _ERRORS.get(rc, f"kernel error {rc}")
        if rc == 4:
            i = self.lib.mbk_last_error_index(self.handle)
            name = self.element_names[i] if 0 <= i < len(self.element_names) else "?"
            msg += f" (element '{name}')"
        if rc == 2:
            return SingularSystemError(f"model '{self.name}': {what} at t = {t:.9g} s: {msg}; "
                                       f"use formulation 'tmt' or 'newton_euler'")
        return IntegrationError(f"model '{self.name}': {what} at t = {t:.9g} s: {msg}")

    def _load(self, q, qd, u):
        n = self.n
        self._y[:n] = q
        self._y[n:] = qd
        if self.n_inputs and u is not None:
            self._u[:self.n_inputs] = u

    def _accelerations_unlocked(self, q, qd, u, t=0.0):
        """qdd (n,) and x, xd, xdd (3 nb,) at (q, qd) with inputs u."""
        self._load(q, qd, u)
        rc = self.lib.mbk_accelerations(self.handle, self._pq, self._pqd, self._pu,
                                        self._pqdd, self._px, self._pxd, self._pxdd)
        if rc:
            raise self._error(rc, t, "the accelerations cannot be computed")
        o = self._out
        return self._qdd[:self.n].copy(), o[0].copy(), o[1].copy(), o[2].copy()

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

    def _advance_unlocked(self, method, t, t_end, q, qd, h, u, rtol, atol, max_step, step):
        """Integrate to t_end; returns (q, qd, h, number of right-hand sides)."""
        self._load(q, qd, u)
        par = self._par
        par[:7] = (t, t_end, h, rtol, atol, max_step, step)
        rc = self.lib.mbk_advance(self.handle, METHOD_CODES[method], self._ppar, self._py,
                                  self._pu, self._pn)
        if rc:
            raise self._error(rc, float(par[7]), f"the {method} integrator failed")
        n = self.n
        return self._y[:n].copy(), self._y[n:].copy(), float(par[2]), int(self._nfev[0])


    def stepper(self, method, rtol, atol, max_step, step):
        """advance() with the solver settings bound once, for co-simulation steps:
        returns step(t, t_end, q, qd, h, u) -> (y, h) with y = (q, qd) at t_end in one
        read-only array (q = y[:n], qd = y[n:]). u must be a float array of the model's
        inputs (validated by the caller); errors as advance()."""
        code = METHOD_CODES[method]
        par = np.zeros(8)
        par[3:7] = (max(rtol, 100 * np.finfo(float).eps), atol, max_step, step)
        lib_advance, handle, lock = self.lib.mbk_advance, self.handle, self._lock
        ppar, py, pu, pn = par.ctypes.data, self._py, self._pu, self._pn
        buf, ubuf, n, ni = self._y, self._u, self.n, self.n_inputs

        def run(t, t_end, q, qd, h, u):
            with lock:
                buf[:n] = q
                buf[n:] = qd
                if ni:
                    ubuf[:ni] = u
                par[0] = t
                par[1] = t_end
                par[2] = h
                rc = lib_advance(handle, code, ppar, py, pu, pn)
                if rc:
                    raise self._error(rc, float(par[7]), f"the {method} integrator failed")
                y = buf.copy()
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


for _name in ("accelerations", "kinematics", "applied_forces", "advance"):
    setattr(TreeKernel, _name, _locked(f"_{_name}_unlocked"))

_KERNELS = weakref.WeakKeyDictionary()


def tree_kernel(model):
    """The TreeKernel of `model` (made once per Model)."""
    k = _KERNELS.get(model)
    if k is None:
        k = _KERNELS[model] = TreeKernel(model)
    return k
