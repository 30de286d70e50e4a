"""Load a model file: a Python file under models/ that defines build(**overrides) -> Model.

An error inside the file (a syntax error, a wrong keyword, an unknown name, a builder call
that refuses its arguments) becomes one ModelError line that names the file, the line and
what was wrong: `models/arm.py:12: TypeError: ModelBuilder.body() got an unexpected keyword
argument 'mas'`. A model whose ModelBuilder got no description takes the file's docstring
(see ModelBuilder).
"""
import contextlib
import contextvars
import hashlib
import importlib.util
import sys
import traceback
from pathlib import Path

from ..errors import FmuMbError, ModelError

#: True while models are built for their engine data alone (the parameter program's probe
#: builds): a builder may then leave out what only an FMU's documentation and its table of
#: declared outputs read (an imported robot's visuals and undeclared outputs)
_ENGINE_DATA_ONLY = contextvars.ContextVar("fmu_mb_engine_data_only", default=False)


@contextlib.contextmanager
def engine_data_only():
    """Within: models are built for their engine data alone (see engine_data_only_build)."""
    token = _ENGINE_DATA_ONLY.set(True)
    try:
        yield
    finally:
        _ENGINE_DATA_ONLY.reset(token)


def engine_data_only_build():
    """Whether the model being built is for its engine data alone (engine_data_only)."""
    return _ENGINE_DATA_ONLY.get()


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
    except Exception as exc:
        sys.modules.pop(name, None)
        raise _located(path, exc) from None
    if not callable(getattr(module, "build", None)):
        raise ModelError(f"model file {str(path)!r} defines no build(**overrides) function")
    return module


def call_build(module, path=None, **overrides):
    """module.build(**overrides), with an error raised inside the file reported as one
    ModelError line naming the file and the line (AssemblyError and other fmu_mb errors that
    are not about a line of the file keep their class)."""
    try:
        result = module.build(**overrides)
    except Exception as exc:
        raise _located(Path(path or module.__file__), exc) from None
    if result is None or type(result).__name__ == "ModelBuilder":
        what = "None" if result is None else "the ModelBuilder itself"
        raise ModelError(f"{Path(path or module.__file__)}: build() returned {what}; expected "
                         f"the model: end build() with `return mb.build()`")
    return result


def load_model(path, **overrides):
    """Build the model of the file at `path` with parameter overrides (a robot description,
    .urdf or MJCF .xml, loads with fmu_mb.load_any: fmu_mb.importers, a layer above)."""
    from .model import Model

    model = call_build(load_module(path), path, **overrides)
    if not isinstance(model, Model):
        raise ModelError(f"{path}: build() returned a {type(model).__name__}; expected the "
                         f"model: end build() with `return mb.build()`")
    return model


def _located(path, exc):
    """The exception to raise for `exc` raised while running the model file `path`."""
    if isinstance(exc, SyntaxError):
        line = exc.lineno or 0
        return ModelError(f"{path}:{line}: SyntaxError: {exc.msg}"
                          + (f": {exc.text.strip()}" if exc.text else ""))
    if isinstance(exc, FmuMbError) and not isinstance(exc, ModelError):
        return exc                              # AssemblyError... : not about a line
    try:
        target = path.resolve()
    except OSError:
        target = path
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            if Path(frame.filename).resolve() == target:
                line = frame.lineno
        except (OSError, ValueError):
            continue
    if line is None:
        if isinstance(exc, FmuMbError):
            return exc
        line = "?"
    what = str(exc) if isinstance(exc, ModelError) else f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ModelError) and str(exc).startswith(f"{path}:"):
        return exc
    cls = type(exc) if isinstance(exc, ModelError) else ModelError   # keep its subclass
    return cls(f"{path}:{line}: {what}")
