"""Container crane (seed 000, ch.2 example 1): a cart sliding along x with a point mass hanging
on a massless rope of length l; cart force Q_x is an input. Gravity along -y; phi = 0 hangs
straight down (load at x + l sin phi, -l cos phi)."""
from fmu_mb import ModelBuilder


def build(**overrides):
    mb = ModelBuilder("container_crane", overrides, description=__doc__)
    m = mb.param("m", 1000.0, "kg", "mass of the load (a point mass)", min=1e-9)
    mc = mb.param("mc", 100.0, "kg", "mass of the cart (> 0: the seed's massless cart makes "
                                     "the mass matrix singular at phi = k pi)", min=1e-9)
    l = mb.param("l", 5.0, "m", "rope length", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    x0 = mb.param("x0", 0.0, "m", "initial cart position")
    phi0 = mb.param("phi0", 0.2, "rad", "initial rope angle from the downward vertical")
    xd0 = mb.param("xd0", 0.0, "m/s", "initial cart velocity")
    phid0 = mb.param("phid0", 0.0, "rad/s", "initial rope angular velocity")
    mb.gravity = (0.0, -g)

    cart = mb.body("cart", mass=mc, inertia=0.0)
    load = mb.body("load", mass=m, inertia=0.0, position=(0.0, -l))
    mb.prismatic("x", mb.ground, cart, axis=(1.0, 0.0))
    mb.revolute("phi", cart, load, child_point=(0.0, l))
    mb.force("cart_force", cart, direction=(1.0, 0.0), input="Q_x")

    mb.initial("x", value=x0, rate=xd0)
    mb.initial("phi", value=phi0, rate=phid0)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 5.0, formulation="tmt")[-1])
