"""fmu_mb: planar multibody dynamics whose models become FMI 2.0 co-simulation FMUs.

Sign conventions and symbols (seed 000): M xdd + D' lam = f - Dv' s; D xdd = -conv; the
constraint force on the bodies is -D' lam. See README.md for the full list.
"""
from .builder import ModelBuilder, disc_inertia, rod_inertia
from .errors import (AssemblyError, DriftError, FmuMbError, InputError, IntegrationError,
                     ModelError, SingularSystemError)
from .formulations import FORMULATIONS
from .integrate import METHODS, STABILIZATIONS, Settings, State, advance, initial_state
from .loader import load_model, load_module
from .model import Model
from .motion import Motion, constant_rate, harmonic, polynomial
from .outputs import output_names, output_spec, output_values
from .simulate import simulate
from .units import deg

__version__ = "0.1.0"

__all__ = [
    "ModelBuilder", "rod_inertia", "disc_inertia", "deg", "Model", "Settings", "State",
    "advance", "initial_state", "simulate", "load_model", "load_module", "output_names",
    "output_spec", "output_values", "Motion", "constant_rate", "harmonic", "polynomial",
    "FORMULATIONS", "METHODS", "STABILIZATIONS", "FmuMbError", "ModelError", "AssemblyError",
    "SingularSystemError", "DriftError", "IntegrationError", "InputError", "__version__",
]
