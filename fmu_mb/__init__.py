"""fmu_mb: planar and spatial multibody dynamics whose models become FMI 2.0 co-simulation FMUs.

Sign conventions and symbols (seed 000): M xdd + D' lam = f - Dv' s; D xdd = -conv; the
constraint force on the bodies is -D' lam. See README.md for the full list.

BLAS threads: fmu_mb's matrices are small, and OpenBLAS threads make them 10 to 20 times
slower on a 2-core machine (measured: a 242 x 242 Cholesky took 35 ms threaded, 0.55 ms on
one thread). Importing fmu_mb therefore limits the BLAS thread pool to one thread (through the
environment when numpy is not loaded yet, else through threadpoolctl; scipy's own BLAS reads
the environment when scipy is first imported, which fmu_mb does lazily). Set
FMU_MB_BLAS_THREADS to keep another number.
"""
import os as _os
import sys as _sys

_threads = _os.environ.get("FMU_MB_BLAS_THREADS", "1")
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    _os.environ.setdefault(_var, _threads)       # read by BLAS libraries loaded from now on
if "numpy" in _sys.modules:                      # a BLAS is loaded already: limit it now
    try:                                         # (scipy's BLAS, if loaded later, reads the
        from threadpoolctl import threadpool_limits as _limits   # environment set above)

        _limits(int(_threads), user_api="blas")
    except ImportError:
        pass

from .errors import (AssemblyError, AssemblyWarning, DriftError, FmuMbError, ImpactError,
                     InputError, IntegrationError, ModelError, SingularSystemError)
from .units import deg

#: public name -> module that defines it (under its own name, or as given): imported on first
#: use (PEP 562), so that `import fmu_mb` and a model file's `from fmu_mb import ModelBuilder`
#: load only what they use; an FMU's start-up does not import simulate(), inverse dynamics,
#: the spatial package for a planar model, or the formulations it does not run
_LAZY = {
    **dict.fromkeys(("ModelBuilder", "box_inertia", "cylinder_inertia", "disc_inertia",
                     "rod_inertia"), "mechanics.builder"),
    "FORMULATIONS": "dynamics.formulations",
    **dict.fromkeys(("METHODS", "STABILIZATIONS", "Settings", "State", "advance",
                     "initial_state"), "dynamics.integrate"),
    **dict.fromkeys(("InverseDynamics", "KinematicState", "inverse_dynamics",
                     "kinematic_analysis", "kinematic_trajectory"), "dynamics.inverse"),
    **dict.fromkeys(("load_model", "load_module"), "mechanics.loader"),
    "load_urdf": "importers.urdf",
    "load_mjcf": "importers.mjcf",
    "load_any": ("importers", "load"),
    "Model": "mechanics.model",
    **dict.fromkeys(("Motion", "constant_rate", "harmonic", "polynomial"), "mechanics.motion"),
    **dict.fromkeys(("output_names", "output_spec", "output_values"), "dynamics.outputs"),
    "simulate": "dynamics.simulate",
    "view": "tools.view",
    **dict.fromkeys(("Equilibrium", "LinearModel", "Mode", "directional_derivative",
                     "equilibrium", "linearize", "model_structure"), "dynamics.linearize"),
    "tree_coordinates": "mechanics.tree",
    "box_inertia_3d": ("mechanics.spatial.inertia", "box"),
    "cylinder_inertia_3d": ("mechanics.spatial.inertia", "cylinder"),
    "slender_rod_inertia": ("mechanics.spatial.inertia", "slender_rod"),
    "sphere_inertia": ("mechanics.spatial.inertia", "sphere"),
    "cardan": "mechanics.spatial.rotations",
    **dict.fromkeys(("Sphere", "Capsule", "Box", "Cylinder", "Plane", "Circle", "Segment",
                     "Rectangle", "Line"), "mechanics.shapes"),
}


def __getattr__(name):
    """A public name of _LAZY, imported from its module on first use and then kept here; a
    subpackage or module of fmu_mb (fmu_mb.dynamics) imported on first attribute use."""
    import importlib

    where = _LAZY.get(name)
    if where is None:
        if name.startswith("_"):
            raise AttributeError(f"module 'fmu_mb' has no attribute {name!r}")
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'fmu_mb' has no attribute {name!r}") from None
    else:
        module, attr = (where, name) if isinstance(where, str) else where
        value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "ModelBuilder", "rod_inertia", "disc_inertia", "box_inertia", "cylinder_inertia", "deg", "Model", "Settings", "State",
    "advance", "initial_state", "simulate", "load_model", "load_module", "output_names",
    "load_urdf", "load_mjcf", "load_any",
    "output_spec", "output_values", "Motion", "constant_rate", "harmonic", "polynomial",
    "FORMULATIONS", "METHODS", "STABILIZATIONS", "FmuMbError", "ModelError", "AssemblyError",
    "SingularSystemError", "AssemblyWarning", "DriftError", "IntegrationError", "InputError", "ImpactError",
    "__version__",
    "kinematic_analysis", "kinematic_trajectory", "inverse_dynamics", "KinematicState",
    "InverseDynamics", "tree_coordinates", "cardan", "box_inertia_3d", "cylinder_inertia_3d",
    "slender_rod_inertia", "sphere_inertia",
    "linearize", "equilibrium", "directional_derivative", "model_structure", "LinearModel",
    "Equilibrium", "Mode", "view",
    "Sphere", "Capsule", "Box", "Cylinder", "Plane", "Circle", "Segment", "Rectangle", "Line",
]
