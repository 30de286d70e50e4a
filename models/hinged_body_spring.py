"""Body hinged to the ground at A with a spring from B on the body to C on the ground
(seed 000, ch.1 example 3): rod of length l from A = (0, 0), B at 2l/3 from A, C = (0, l/2),
spring free length l0 = l."""
from fmu_mb import ModelBuilder, rod_inertia


DEFAULT_EXPERIMENT = {"stop_time": 2.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("hinged_body_spring", overrides, description=__doc__)
    l = mb.param("l", 1.0, "m", "length of the body", min=1e-9)
    m = mb.param("m", 1.0, "kg", "mass of the body", min=1e-9)
    k = mb.param("k", 100.0, "N/m", "spring stiffness", min=0.0)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    phi0 = mb.param("phi0", 0.0, "rad", "initial angle of the body from the +x axis")
    mb.gravity = (0.0, -g)

    body = mb.body("body", mass=m, inertia=rod_inertia(m, l))
    mb.revolute("A", mb.ground, body, parent_point=(0.0, 0.0), child_point=(-l / 2, 0.0))
    mb.tsda("spring", mb.ground, body, a_point=(0.0, l / 2), b_point=(l / 6, 0.0),
            stiffness=k, free_length=l)
    mb.point("B", body, (l / 6, 0.0))
    mb.initial("A", value=phi0, rate=0.0)
    return mb.build()
