"""Heavy symmetric top on a spherical joint at the origin, gravity along -z. Its symmetry axis
(body z) starts at the nutation angle theta0 from the vertical, spinning at omega3 about
itself and precessing about the vertical at the slow steady-precession rate
Omega = (C omega3 - sqrt(C^2 omega3^2 - 4 A_p m g l cos theta0)) / (2 A_p cos theta0), with
A_p = A + m l^2 the transverse inertia about the pivot, plus
`precession_offset` (0: steady precession; otherwise the top nutates). Input: a torque about
the symmetry axis, `spin_motor.h` [N.m] (reacting on the ground)."""
import math

import numpy as np

from fmu_mb import ModelBuilder, cardan

DEFAULT_EXPERIMENT = {"stop_time": 2.0, "step_size": 0.01}


def steady_precession(m, g, l, A, C, theta, omega3):
    """Slow root Omega of m g l = Omega (C omega3 - A Omega cos theta), A about the pivot."""
    c = math.cos(theta)
    disc = (C * omega3) ** 2 - 4 * A * m * g * l * c
    if disc < 0:
        from fmu_mb import ModelError

        raise ModelError(f"heavy_top: no steady precession at theta0 = {theta} rad with "
                         f"omega3 = {omega3} rad/s (spin too slow: (C omega3)^2 < "
                         f"4 A_p m g l cos theta0); give a larger omega3")
    if abs(c) < 1e-12:
        return m * g * l / (C * omega3)
    return (C * omega3 - math.sqrt(disc)) / (2 * A * c)


def build(**overrides):
    mb = ModelBuilder("heavy_top", overrides, gravity=(0.0, 0.0, -9.81), description=__doc__)
    m = mb.param("m", 1.0, "kg", "mass of the top", min=1e-9)
    l = mb.param("l", 0.1, "m", "distance pivot - centre of mass", min=1e-9)
    A = mb.param("A", 4e-3, "kg.m2", "transverse inertia about the centre of mass", min=1e-12)
    C = mb.param("C", 6e-3, "kg.m2", "axial inertia (at most 2 A)", min=1e-12)
    theta0 = mb.param("theta0", 0.5, "rad", "initial nutation angle from the vertical")
    omega3 = mb.param("omega3", 60.0, "rad/s", "spin rate about the symmetry axis")
    offset = mb.param("precession_offset", 0.0, "rad/s", "initial precession rate minus the "
                      "steady one")
    g = 9.81
    Omega = steady_precession(m, g, l, A + m * l * l, C, theta0, omega3) + offset
    axis = (0.0, -math.sin(theta0), math.cos(theta0))          # body z after Rx(theta0)
    spin = omega3 - Omega * math.cos(theta0)                    # rate relative to precession
    omega = np.array(axis) * spin + np.array([0.0, 0.0, Omega])
    r = l * np.array(axis)
    top = mb.body("top", mass=m, inertia=(A, A, C), position=tuple(r),
                  orientation=cardan(theta0, 0.0, 0.0), angular_velocity=tuple(omega),
                  velocity=tuple(np.cross(omega, r)))
    mb.spherical("pivot", mb.ground, top, at=(0.0, 0.0, 0.0))
    mb.torque("spin_motor", top, axis=(0.0, 0.0, 1.0), frame="body")   # input spin_motor.h
    mb.point("tip", top, (0.0, 0.0, 2 * l))
    return mb.build()
