"""Four-bar linkage (crank-rocker) under gravity, driven by a torque on the crank."""
from fmu_mb import ModelBuilder, deg, rod_inertia


DEFAULT_EXPERIMENT = {"stop_time": 2.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("four_bar", overrides, description=__doc__)
    a = mb.param("crank_length", 0.1, "m", "crank length", min=1e-9)
    b = mb.param("coupler_length", 0.35, "m", "coupler length", min=1e-9)
    c = mb.param("rocker_length", 0.3, "m", "rocker length", min=1e-9)
    d = mb.param("ground_length", 0.4, "m", "distance between the ground pivots", min=1e-9)
    m = mb.param("mass_per_length", 2.0, "kg/m", "mass per length of the links", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    theta0 = mb.param("theta0", deg(90.0), "rad", "initial crank angle")
    omega0 = mb.param("omega0", 5.0, "rad/s", "initial crank rate")
    mb.gravity = (0.0, -g)

    crank = mb.body("crank", mass=m * a, inertia=rod_inertia(m * a, a))
    coupler = mb.body("coupler", mass=m * b, inertia=rod_inertia(m * b, b))
    rocker = mb.body("rocker", mass=m * c, inertia=rod_inertia(m * c, c))
    mb.revolute("A0", mb.ground, crank, parent_point=(0.0, 0.0), child_point=(-a / 2, 0.0))
    mb.revolute("A", crank, coupler, parent_point=(a / 2, 0.0), child_point=(-b / 2, 0.0))
    mb.revolute("B", coupler, rocker, parent_point=(b / 2, 0.0), child_point=(c / 2, 0.0))
    mb.revolute("B0", mb.ground, rocker, parent_point=(d, 0.0), child_point=(-c / 2, 0.0))
    mb.torque("drive", crank)
    mb.point("coupler_mid", coupler, (0.0, 0.0))
    mb.initial("A0", value=theta0, rate=omega0)
    mb.initial("B0", guess=deg(80.0))
    mb.initial("A", guess=deg(-60.0))
    return mb.build()
