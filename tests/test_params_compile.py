"""The compiled parameter program (fmu_mb.engine.params, native/params.c): for every model of
models/ that the compiled engine runs, the program run in C over the default model data must
give the model data that build(**overrides) gives, at random parameter sets inside the
parameters' ranges; a branch build() took on a parameter is a guard that refuses, naming the
parameter; a malformed program is refused, never a crash."""
import ctypes
import importlib.util
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from fmu_mb.engine import params as P
from fmu_mb.errors import FmuMbError

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
NATIVE = ROOT / "fmu_mb" / "engine" / "native"


# ---------------------------------------------------------------------- model data stand-in
def _doubles(addr, n):
    if n <= 0 or not addr:
        return np.zeros(0)
    return np.ctypeslib.as_array((ctypes.c_double * n).from_address(addr)).copy()


class _Recorder:
    """Stands for the planar kernel library while a TreeKernel is made: records the doubles
    it is handed (mbk_create, mbk_set_rows, mbk_set_gains, mbk_set_drives)."""

    def __init__(self, real):
        self.real, self.parts = real, []

    def mbk_create(self, nb, n, ji, jd, ne, ei, ed, mass, inertia, gx, gy):
        self.parts += [_doubles(jd, 8 * nb), _doubles(ed, 10 * ne), _doubles(mass, nb),
                       _doubles(inertia, nb), np.array([gx, gy])]
        return 1

    def mbk_set_rows(self, h, m, ri, rd):
        self.parts.append(_doubles(rd, 8 * m))
        return 0

    def mbk_set_gains(self, h, ng, ni, G):
        self.parts.append(_doubles(G, ng * ni))
        return 0

    def mbk_set_drives(self, h, nd, di, ndp, dp):
        self.parts.append(_doubles(dp, ndp))
        return 0

    def mbk_free(self, h):
        pass

    def __getattr__(self, name):
        return getattr(self.real, name)


def standin_data(model):
    """The doubles the compiled kernels are made from (kernel.py, spatial_kernel.py), the
    initial conditions and the bodies' initial values: a stand-in for the engine's model
    data, whose layout (like the real one's) is a function of the model's structure."""
    from fmu_mb.engine import kernel as K
    parts = []
    if len(model.gravity) == 3:
        from fmu_mb.engine.spatial_kernel import SpatialKernel
        k = SpatialKernel(model)
        parts += [k._rd, k._mass, k._J, k._ed, k._cd, k._rq, np.array(model.gravity)]
    else:
        rec = _Recorder(K.library())
        real = K.library
        K.library = lambda: rec
        try:
            K.TreeKernel(model)
        finally:
            K.library = real
        parts += rec.parts
    for ic in model.initial:
        parts.append([np.nan if v is None else v for v in (ic.value, ic.rate, ic.guess)])
    for b in model.bodies:
        parts.append([*b.position, b.angle, *b.velocity,
                      *np.ravel(b.angular_velocity), *b.orientation])
    out = np.concatenate([np.asarray(p, float).ravel() for p in parts])
    return np.where(np.isnan(out), -1.5e300, out)        # a marker for "not given"


def load(name):
    spec = importlib.util.spec_from_file_location(f"fmu_mb_model_params_{name}",
                                                  MODELS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def engine_runs(model):
    from fmu_mb.engine import kernel as K
    if getattr(model, "contacts", None):
        return "it has contacts (the event loop is not compiled yet)"
    if len(model.gravity) == 3:
        from fmu_mb.engine import spatial_kernel as S
        return S.supported(model)
    return K.supported(model)


def _models():
    out = []
    for path in sorted(MODELS.glob("*.py")):
        if path.name.startswith("_"):
            continue
        out.append(path.stem)
    return out


@lru_cache(maxsize=None)
def compiled(name):
    mod = load(name)
    model = mod.build()
    why = engine_runs(model)
    if why:
        return mod, None, why
    prog = P.compile_parameters(mod, {}, lambda o: standin_data(mod.build(**o)))
    return mod, prog, None
