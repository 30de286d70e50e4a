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

from .mechanics.builder import (ModelBuilder, box_inertia, cylinder_inertia, disc_inertia,
                               rod_inertia)
from .errors import (AssemblyError, AssemblyWarning, DriftError, FmuMbError, ImpactError, InputError,
                     IntegrationError, ModelError, SingularSystemError)
from .dynamics.formulations import FORMULATIONS
from .dynamics.integrate import METHODS, STABILIZATIONS, Settings, State, advance, initial_state
from .dynamics.inverse import (InverseDynamics, KinematicState, inverse_dynamics, kinematic_analysis,
                      kinematic_trajectory)
from .mechanics.loader import load_model, load_module
from .mechanics.model import Model
from .mechanics.motion import Motion, constant_rate, harmonic, polynomial
from .dynamics.outputs import output_names, output_spec, output_values
from .dynamics.simulate import simulate
from .mechanics.tree import tree_coordinates
from .mechanics.spatial.inertia import box as box_inertia_3d
from .mechanics.spatial.inertia import cylinder as cylinder_inertia_3d
from .mechanics.spatial.inertia import slender_rod as slender_rod_inertia
from .mechanics.spatial.inertia import sphere as sphere_inertia
from .mechanics.spatial.rotations import cardan
from .units import deg

__version__ = "0.1.0"

__all__ = [
    "ModelBuilder", "rod_inertia", "disc_inertia", "box_inertia", "cylinder_inertia", "deg", "Model", "Settings", "State",
    "advance", "initial_state", "simulate", "load_model", "load_module", "output_names",
    "output_spec", "output_values", "Motion", "constant_rate", "harmonic", "polynomial",
    "FORMULATIONS", "METHODS", "STABILIZATIONS", "FmuMbError", "ModelError", "AssemblyError",
    "SingularSystemError", "AssemblyWarning", "DriftError", "IntegrationError", "InputError", "ImpactError",
    "__version__",
    "kinematic_analysis", "kinematic_trajectory", "inverse_dynamics", "KinematicState",
    "InverseDynamics", "tree_coordinates", "cardan", "box_inertia_3d", "cylinder_inertia_3d",
    "slender_rod_inertia", "sphere_inertia",
]
