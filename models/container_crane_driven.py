"""Container crane (seed 000, ch.2 example 1) with the cart motion prescribed by a driving
constraint x(t) = x0 + a (1 - cos(2 pi f t)) (seed 000 ch.2 eq. 16-20). With the seed's
massless cart (mc = 0) the reduced mass matrix is singular at phi = k pi, but the driven
system stays solvable; the drive's effort is the cart force Q_x the motion needs."""
import math

from fmu_mb import ModelBuilder, harmonic


def build(**overrides):
    mb = ModelBuilder("container_crane_driven", overrides, description=__doc__)
    m = mb.param("m", 1000.0, "kg", "mass of the load (a point mass)", min=1e-9)
    mc = mb.param("mc", 0.0, "kg", "mass of the cart (0: massless, as in the seed)", min=0.0)
    l = mb.param("l", 5.0, "m", "rope length", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    x0 = mb.param("x0", 0.0, "m", "initial cart position")
    a = mb.param("amplitude", 1.0, "m", "half the cart travel")
    f = mb.param("frequency", 0.2, "Hz", "frequency of the cart motion", min=1e-9)
    phi0 = mb.param("phi0", 0.0, "rad", "initial rope angle from the downward vertical")
    phid0 = mb.param("phid0", 0.0, "rad/s", "initial rope angular velocity")
    mb.gravity = (0.0, -g)

    # x0 + a (1 - cos(w t)) = (x0 + a) - a sin(w t + pi/2): a harmonic law, which the
    # compiled kernel evaluates itself
    motion = harmonic(-a, f, phase=math.pi / 2, offset=x0 + a)
    cart = mb.body("cart", mass=mc, inertia=0.0)
    load = mb.body("load", mass=m, inertia=0.0, position=(0.0, -l))
    mb.prismatic("x", mb.ground, cart, axis=(1.0, 0.0))
    mb.revolute("phi", cart, load, child_point=(0.0, l))
    mb.drive("cart_motion", "x", motion)

    mb.initial("phi", value=phi0, rate=phid0)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 5.0, formulation="tmt")[-1])
