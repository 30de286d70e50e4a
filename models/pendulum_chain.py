"""Chain of N uniform rods hinged end to end, hanging from the ground (a benchmark for the
formulations); gravity along -y, released from a straight pose at angle phi0."""
from fmu_mb import ModelBuilder, rod_inertia


def build(**overrides):
    mb = ModelBuilder("pendulum_chain", overrides, description=__doc__)
    n = mb.param("N", 16, "1", "number of links", min=1, max=500, structural=True)
    L = mb.param("link_length", 0.1, "m", "length of each link", min=1e-9)
    m = mb.param("link_mass", 0.1, "kg", "mass of each link", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    phi0 = mb.param("phi0", 0.5, "rad", "initial angle of the chain from the +x axis")
    mb.gravity = (0.0, -g)

    parent = mb.ground
    for i in range(n):
        link = mb.body(f"link{i}", mass=m, inertia=rod_inertia(m, L))
        mb.revolute(f"J{i}", parent, link, parent_point=(0.0, 0.0) if i == 0 else (L / 2, 0.0),
                    child_point=(-L / 2, 0.0))
        mb.initial(f"J{i}", value=phi0 if i == 0 else 0.0, rate=0.0)
        parent = link
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 1.0, formulation="tmt")[-1])
