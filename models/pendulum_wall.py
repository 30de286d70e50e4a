"""Uniform rod pendulum released from an angle; its tip strikes a vertical wall below the
pivot (plane x = 0) with Newton's restitution e."""
import math

from fmu_mb import ModelBuilder, deg, rod_inertia


def build(**overrides):
    mb = ModelBuilder("pendulum_wall", overrides, description=__doc__)
    l = mb.param("l", 1.0, "m", "length of the rod", min=1e-9)
    m = mb.param("m", 1.0, "kg", "mass of the rod", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    theta0 = mb.param("theta0", deg(60.0), "rad",
                      "initial angle of the rod from the downward vertical (tip at x > 0)",
                      min=0.0, max=math.pi)
    e = mb.param("e", 0.5, "1", "coefficient of restitution", min=0.0, max=1.0)
    mb.gravity = (0.0, -g)

    rod = mb.body("rod", mass=m, inertia=rod_inertia(m, l))
    mb.revolute("O", mb.ground, rod, child_point=(-l / 2, 0.0), angle0=-math.pi / 2)
    mb.point("tip", rod, (l / 2, 0.0))
    mb.contact("wall", rod, (l / 2, 0.0), normal=(1.0, 0.0), restitution=e)
    mb.initial("O", value=theta0, rate=0.0)
    return mb.build()
