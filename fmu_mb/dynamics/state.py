"""The state of a simulation: State(t, q, qd, h, coords, extra).

Kept apart from the integrators so that formulations, contacts and the FMI layer can make and
read States without importing the integrators (the import graph of the dynamics layer flows
state -> formulations -> impact -> integrate -> simulate).
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class State:
    """Time t [s], coordinates q and rates qd of the formulation's coordinate set, and the
    step-size hint h [s] the adaptive methods continue with (part of the state so that a saved
    and restored state continues bit-identically). Arrays are read-only."""

    t: float
    q: np.ndarray
    qd: np.ndarray
    h: float = 0.0
    coords: str = "absolute"
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        for a in (self.q, self.qd):
            a.setflags(write=False)

    @classmethod
    def make(cls, t, q, qd, h=0.0, coords="absolute", extra=None):
        """A State from arrays that are read-only already (views of a read-only array), without
        the checks of the constructor: the co-simulation fast path (integrate.stepper)."""
        st = object.__new__(cls)
        st.__dict__.update(t=t, q=q, qd=qd, h=h, coords=coords,
                           extra={} if extra is None else extra)
        return st

    def to_dict(self):
        """A JSON-able dict that restores exactly (floats as hex strings, also inside extra,
        where a float f is written as {"float": f.hex()})."""
        return {"t": float(self.t).hex(), "q": [v.hex() for v in self.q.tolist()],
                "qd": [v.hex() for v in self.qd.tolist()], "h": float(self.h).hex(),
                "coords": self.coords, "extra": _encode(self.extra)}

    @classmethod
    def from_dict(cls, d):
        return cls(float.fromhex(d["t"]), np.array([float.fromhex(v) for v in d["q"]]),
                   np.array([float.fromhex(v) for v in d["qd"]]), float.fromhex(d["h"]),
                   d["coords"], _decode(d.get("extra", {})))


def _encode(v):
    if isinstance(v, dict):
        return {str(k): _encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return {"float": float(v).hex()}
    return v


def _decode(v):
    if isinstance(v, dict):
        if set(v) == {"float"}:
            return float.fromhex(v["float"])
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v
