"""Exceptions raised by fmu_mb.

Every message names the item, the argument, the value received and what was expected.
Errors caused by a bad argument also subclass ValueError so callers may catch either.
"""


class FmuMbError(Exception):
    """Base class of every fmu_mb error."""


class ModelError(FmuMbError, ValueError):
    """The model description is invalid (unknown name, bad value, duplicate item...)."""


class AssemblyError(FmuMbError):
    """Initial conditions cannot be made consistent (a loop cannot close)."""


class SingularSystemError(FmuMbError):
    """The equations of motion cannot be solved (singular mass or constraint matrix)."""


class DriftError(FmuMbError):
    """The constraint residual left its tolerance and projection could not bring it back."""


class IntegrationError(FmuMbError):
    """The time integrator could not complete a step (step size underflow, NaN state...)."""


class InputError(FmuMbError, ValueError):
    """An input or argument given at run time is invalid (NaN, wrong name, negative step)."""


class ImpactError(FmuMbError):
    """The impact equations have no admissible solution (or a contact setting is unusable)."""


class AssemblyWarning(UserWarning):
    """The assembly succeeded but its result looks unintended: a joint far from its given
    guess (another branch of a loop), or an element or contact outside its physical range
    (a cylinder beyond its stroke, a joint beyond its limit). The message names the joint.
    Filter it with warnings.filterwarnings("error", category=fmu_mb.AssemblyWarning)."""


def plain(value):
    """repr(value) with numpy scalars and arrays written as plain Python numbers and lists, for
    messages (numpy 2 writes a tuple of its floats as (np.float64(0.0), ...))."""
    def convert(v):
        if hasattr(v, "tolist") and type(v).__module__.startswith("numpy"):
            return convert(v.tolist())           # an array -> lists, a scalar -> a number
        if isinstance(v, tuple):
            return tuple(convert(x) for x in v)
        if isinstance(v, list):
            return [convert(x) for x in v]
        return v
    return repr(convert(value))
