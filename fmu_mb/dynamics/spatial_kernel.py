"""The spatial native kernel (fmu_mb/dynamics/native/spatial_kernel.c): forward dynamics of a
spatial open tree by the articulated-body algorithm and the explicit integrators (rk4, dopri5,
dop853 with scipy's coefficients and step-size control), in C, through ctypes. Compiled and
cached like the planar kernel (fmu_mb.dynamics.kernel), in its own library.

Coordinates are those of the spatial tmt (fmu_mb.mechanics.spatial.tree): revolute angles,
prismatic positions, the Euler parameters of spherical joints and of floating roots.
"""
import ctypes
import threading
import weakref
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import InputError, IntegrationError, SingularSystemError
from ..mechanics.spatial import tree as st
from . import kernel as _kernel

SOURCE = Path(__file__).resolve().parent / "native" / "spatial_kernel.c"
_KIND = {"weld": 0, "revolute": 1, "prismatic": 2, "spherical": 3, "free": 4}
_ERRORS = {1: "the state became non-finite (NaN or infinity)",
           2: "the articulated inertia is singular (a massless subtree)",
           3: "the step size became too small",
           5: "invalid kernel arguments"}


@lru_cache(maxsize=1)
def library():
    lib = ctypes.CDLL(str(_kernel.library_path(SOURCE)))
    P, I, D = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    lib.sk_create.restype = P
    lib.sk_create.argtypes = [I, I, P, P, P, P, D, D, D]
    lib.sk_free.restype = None
    lib.sk_free.argtypes = [P]
    lib.sk_set_tableau.argtypes = [I, I, I, P, P, P, P, P, P]
    lib.sk_accelerations.argtypes = [P, P, P, P]
    lib.sk_advance.argtypes = [P, I, P, P, P]
    _kernel._set_tableaus(lib, "sk_set_tableau")
    return lib


def supported(model):
    """None when the spatial kernel can run `model`, else the reason why not (a sentence)."""
    t = model.topology
    if t.cut_joints:
        return f"it has closed loops (cut joints {list(t.cut_joints)})"
    if model.drives:
        return f"it has drives {[d.name for d in model.drives]}"
    if model.elements:
        return (f"it has force elements {[e.name for e in model.elements]} (the spatial kernel "
                f"applies gravity only so far)")
    tm = st.tree_map(model)
    for row, j in zip(tm.rows, tm.joints):
        if row[0] not in _KIND:
            return f"joint '{model.joints[j].name}' is {row[0]}"
        if not row[3]:
            return (f"joint '{model.joints[j].name}' is declared from the body farther from the "
                    f"ground (declare its parent towards the ground)")
    return None


class SpatialKernel:
    """The kernel instance of one spatial Model (open tree), with preallocated buffers."""

    def __init__(self, model):
        why = supported(model)
        if why is not None:
            raise InputError(f"model '{model.name}': formulation 'recursive' runs spatial open "
                             f"trees of revolute, prismatic, spherical and weld joints and "
                             f"floating bodies under gravity; {why}. Use formulation 'tmt' or "
                             f"'newton_euler'")
        lib = library()
        tm = st.tree_map(model)
        C = model.compiled
        ri, rd = [], []
        for row, j in zip(tm.rows, tm.joints):
            kind, X, Y, _, sX, sY, _, _, Fd, o, _ = row
            Fc = np.eye(3) if j < 0 else np.asarray(model.joints[j].frame_c, float)
            ri.append([_KIND[kind], X, Y, o])
            rd.append(np.concatenate([sX, sY, np.asarray(Fd, float).reshape(-1),
                                      Fc.reshape(-1)]))
        self._ri = np.ascontiguousarray(np.array(ri, dtype=np.intc).reshape(-1, 4))
        self._rd = np.ascontiguousarray(np.array(rd, dtype=float).reshape(-1, 24))
        self._mass = np.ascontiguousarray(C.mass, dtype=float)
        self._J = np.ascontiguousarray(C.inertia.reshape(-1, 9), dtype=float)
        nb, n = tm.nb, tm.n
        if len(ri) != nb:
            raise InputError(f"model '{model.name}': the tree places {len(ri)} of {nb} bodies")
        gx, gy, gz = model.gravity
        handle = lib.sk_create(nb, n, self._ri.ctypes.data, self._rd.ctypes.data,
                               self._mass.ctypes.data, self._J.ctypes.data, float(gx),
                               float(gy), float(gz))
        if not handle:
            raise MemoryError(f"model '{model.name}': cannot allocate the spatial kernel")
        self._finalizer = weakref.finalize(self, lib.sk_free, handle)
        self.lib, self.handle, self.n, self.name = lib, handle, n, model.name
        self._lock = threading.Lock()
        self._y = np.zeros(2 * n + 1)
        self._qdd = np.zeros(n + 1)
        self._par = np.zeros(8)
        self._nfev = np.zeros(1, dtype=np.intc)

    def _error(self, rc, t, what):
        msg = _ERRORS.get(rc, f"kernel error {rc}")
        cls = SingularSystemError if rc == 2 else IntegrationError
        return cls(f"model '{self.name}': {what} at t = {t:.9g} s: {msg}")

    def accelerations(self, q, qd, t=0.0):
        n = self.n
        with self._lock:
            self._y[:n], self._y[n:2 * n] = q, qd
            y = self._y.ctypes.data
            rc = self.lib.sk_accelerations(self.handle, y, y + 8 * n, self._qdd.ctypes.data)
            if rc:
                raise self._error(rc, t, "the accelerations cannot be computed")
            return self._qdd[:n].copy()

    def advance(self, method, t, t_end, q, qd, h, rtol, atol, max_step, step):
        """(q, qd, h, nfev) at t_end."""
        n = self.n
        code = _kernel.METHOD_CODES[method]
        with self._lock:
            self._y[:n], self._y[n:2 * n] = q, qd
            self._par[:] = (t, t_end, h, rtol, atol, max_step if np.isfinite(max_step)
                            else 1e300, step or 0.0, t)
            rc = self.lib.sk_advance(self.handle, code, self._par.ctypes.data,
                                     self._y.ctypes.data, self._nfev.ctypes.data)
            if rc:
                raise self._error(rc, float(self._par[7]), "the integration failed")
            return (self._y[:n].copy(), self._y[n:2 * n].copy(), float(self._par[2]),
                    int(self._nfev[0]))


_KERNELS = weakref.WeakKeyDictionary()


def spatial_kernel(model):
    """The SpatialKernel of `model` (one per model)."""
    k = _KERNELS.get(model)
    if k is None:
        k = _KERNELS[model] = SpatialKernel(model)
    return k
