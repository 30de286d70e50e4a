"""Prescribed motions f(t) for driving constraints (seed 000 ch.2 eq. 16: D_k(q, t) = 0).

A Motion gives the value, rate and acceleration of a joint coordinate as functions of time,
each exact (no finite differences), so the driving row phi = q_j(x) - f(t) has phi_t = -f'(t)
and the convective term -f''(t).

The laws made by `constant_rate`, `harmonic` and `polynomial` also carry their data (`law`),
so compiled code (the recursive formulation's kernel) can evaluate them without calling
Python; a Motion made from arbitrary functions has law None.
"""
import math
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Motion:
    """f(t), f'(t), f''(t) of a prescribed joint coordinate [rad or m, per s, per s^2]."""

    value: Callable[[float], float]
    rate: Callable[[float], float]
    acceleration: Callable[[float], float]
    description: str = "custom motion"
    #: the law as data: ("polynomial", (c0, c1, ...)) or ("harmonic", (amplitude, omega,
    #: phase, offset)) with omega in rad/s; None for arbitrary functions
    law: tuple = None


def constant_rate(rate: float, start: float = 0.0) -> Motion:
    """f(t) = start + rate t."""
    return Motion(lambda t: start + rate * t, lambda t: rate, lambda t: 0.0,
                  f"constant rate {rate} from {start}",
                  ("polynomial", (float(start), float(rate))))


def harmonic(amplitude: float, frequency: float, phase: float = 0.0,
             offset: float = 0.0) -> Motion:
    """f(t) = offset + amplitude sin(2 pi frequency t + phase); frequency in Hz."""
    w = 2.0 * math.pi * frequency
    return Motion(lambda t: offset + amplitude * math.sin(w * t + phase),
                  lambda t: amplitude * w * math.cos(w * t + phase),
                  lambda t: -amplitude * w * w * math.sin(w * t + phase),
                  f"harmonic {amplitude} sin(2 pi {frequency} t + {phase}) + {offset}",
                  ("harmonic", (float(amplitude), w, float(phase), float(offset))))


def polynomial(*coefficients: float) -> Motion:
    """f(t) = c0 + c1 t + c2 t^2 + ... (coefficients in increasing order)."""
    c = [float(v) for v in coefficients] or [0.0]

    def value(t):
        return sum(ci * t ** i for i, ci in enumerate(c))

    def rate(t):
        return sum(i * ci * t ** (i - 1) for i, ci in enumerate(c) if i >= 1)

    def acceleration(t):
        return sum(i * (i - 1) * ci * t ** (i - 2) for i, ci in enumerate(c) if i >= 2)

    return Motion(value, rate, acceleration, f"polynomial {c}", ("polynomial", tuple(c)))
