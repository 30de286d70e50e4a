"""Load a model file: a Python file under models/ that defines build(**overrides) -> Model."""
import hashlib
import importlib.util
import sys
from pathlib import Path

from ..errors import ModelError


def load_module(path):
    """Import the model file at `path` under a unique module name and return the module."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"model file {str(path)!r} does not exist; expected a .py file that "
                         f"defines build(**overrides)")
    tag = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    name = f"fmu_mb_model_{path.stem}_{tag}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        sys.modules.pop(name, None)
        raise
    if not callable(getattr(module, "build", None)):
        raise ModelError(f"model file {str(path)!r} defines no build(**overrides) function")
    return module


def load_model(path, **overrides):
    """Build the model of the file at `path` with parameter overrides."""
    return load_module(path).build(**overrides)
