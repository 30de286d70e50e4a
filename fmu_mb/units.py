"""Units: SI everywhere; units are metadata, never part of a name.

`describe(text, unit)` gives the FMU description "text [unit]". Unit strings follow the
FMI/Modelica spelling ("N.m", "rad/s", "kg.m2", "1").
"""
import math

#: SI base-unit exponents of every unit fmu_mb uses (kg, m, s, rad); FMU unit definitions
#: are generated from this table.
UNITS = {
    "1": {},
    "s": {"s": 1},
    "m": {"m": 1},
    "rad": {"rad": 1},
    "kg": {"kg": 1},
    "m/s": {"m": 1, "s": -1},
    "rad/s": {"rad": 1, "s": -1},
    "m/s2": {"m": 1, "s": -2},
    "rad/s2": {"rad": 1, "s": -2},
    "N": {"kg": 1, "m": 1, "s": -2},
    "N.m": {"kg": 1, "m": 2, "s": -2},
    "N/m": {"kg": 1, "s": -2},
    "N.s/m": {"kg": 1, "s": -1},
    "N.m/rad": {"kg": 1, "m": 2, "s": -2, "rad": -1},
    "N.m.s/rad": {"kg": 1, "m": 2, "s": -1, "rad": -1},
    "N.s": {"kg": 1, "m": 1, "s": -1},
    "N.m.s": {"kg": 1, "m": 2, "s": -1},
    "J": {"kg": 1, "m": 2, "s": -2},
    "kg.m2": {"kg": 1, "m": 2},
}


def deg(angle_in_degrees: float) -> float:
    """Convert degrees to radians (for model files; everything inside is SI)."""
    return math.radians(angle_in_degrees)


def describe(text: str, unit: str) -> str:
    """Return the description `text [unit]` used for FMU variables and `fmu-mb info`."""
    return f"{text} [{unit}]"
