"""Uniform rod dropped at an angle onto a rigid floor (y = 0); it lands on its lower end A."""
import math

from fmu_mb import ModelBuilder, deg, rod_inertia


def build(**overrides):
    mb = ModelBuilder("falling_rod", overrides, description=__doc__)
    l = mb.param("l", 1.0, "m", "length of the rod", min=1e-9)
    m = mb.param("m", 1.0, "kg", "mass of the rod", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    theta0 = mb.param("theta0", deg(30.0), "rad", "initial angle of the rod from the floor",
                      min=0.0, max=deg(89.0))
    h0 = mb.param("h0", 0.5, "m", "initial height of the lower end A above the floor",
                  min=0.0)
    e = mb.param("e", 0.5, "1", "coefficient of restitution", min=0.0, max=1.0)
    mb.gravity = (0.0, -g)

    yc = h0 + l / 2 * math.sin(theta0)
    rod = mb.body("rod", mass=m, inertia=rod_inertia(m, l), position=(0.0, yc), angle=theta0)
    mb.contact("end_a", rod, (-l / 2, 0.0), restitution=e)
    mb.contact("end_b", rod, (l / 2, 0.0), restitution=e)
    return mb.build()
