"""Double pendulum of two uniform rods (seed 000, ch.1 example 1): gravity along +x."""
from fmu_mb import ModelBuilder, deg, rod_inertia


DEFAULT_EXPERIMENT = {"stop_time": 2.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("double_pendulum", overrides, description=__doc__)
    m1 = mb.param("m1", 1.0, "kg", "mass of rod 1", min=1e-9)
    m2 = mb.param("m2", 1.0, "kg", "mass of rod 2", min=1e-9)
    l1 = mb.param("l1", 0.55, "m", "length of rod 1", min=1e-9)
    l2 = mb.param("l2", 0.55, "m", "length of rod 2", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along +x")
    phi1 = mb.param("phi1", deg(30.0), "rad", "initial angle of rod 1 from the +x axis")
    phi2 = mb.param("phi2", deg(60.0), "rad", "initial angle of rod 2 from the +x axis")
    mb.gravity = (g, 0.0)

    rod1 = mb.body("rod1", mass=m1, inertia=rod_inertia(m1, l1))
    rod2 = mb.body("rod2", mass=m2, inertia=rod_inertia(m2, l2))
    mb.revolute("A", mb.ground, rod1, parent_point=(0.0, 0.0), child_point=(-l1 / 2, 0.0))
    mb.revolute("B", rod1, rod2, parent_point=(l1 / 2, 0.0), child_point=(-l2 / 2, 0.0))
    mb.rsda("actuator_A", joint="A")
    mb.rsda("actuator_B", joint="B")
    mb.point("tip", rod2, (l2 / 2, 0.0))

    mb.initial("A", value=phi1, rate=0.0)
    mb.initial("B", value=phi2 - phi1, rate=0.0)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 2.0)[-1])
