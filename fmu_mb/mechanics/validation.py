"""Validation of declared numbers, shared by the planar and spatial builder calls: errors name
the item, the argument, the value received and what was expected."""
import math

from ..errors import ModelError, plain


def number(where, arg, value, positive=False, nonneg=False):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ModelError(f"{where}: {arg} must be a number, received {plain(value)}") from None
    if not math.isfinite(v):
        raise ModelError(f"{where}: {arg} must be finite, received {v}")
    if positive and v <= 0.0:
        raise ModelError(f"{where}: {arg} must be > 0, received {v}")
    if nonneg and v < 0.0:
        raise ModelError(f"{where}: {arg} must be >= 0, received {v}")
    return v
