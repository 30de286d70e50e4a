"""A cart-pendulum whose wheel strikes and rolls up a sloping block: a cart (mass mc) on a
prismatic joint along x at height H carries a pendulum (a rod of mass m and length L, hinged
to the cart about the y axis) with a wheel at its tip: a Sphere of radius r and mass mw on a
revolute joint about y ("axle"). The pendulum starts turned by phi0 with the wheel the height
`drop` above the top face of a Box fixed to the ground (rising along x by `slope`), the cart
and the pendulum moving along x at v0, the wheel not spinning: the wheel strikes the face
(restitution e, friction impulses) and bounces, slips on it with Coulomb friction mu while
friction spins it up, then rolls up it (a sphere-box shape pair whose contact point moves on
both shapes and round the wheel); the axle, the hinge and the slider carry the friction
force. Contacts: tyre_block_<k> (the sphere-box features)."""
import math

from fmu_mb import Box, ModelBuilder, Sphere


def build(**overrides):
    g = 9.81
    mb = ModelBuilder("sweeper", overrides, gravity=(0.0, 0.0, -g))
    mc = mb.param("mc", 2.0, "kg", "mass of the cart", min=1e-9)
    m = mb.param("m", 1.0, "kg", "mass of the pendulum's rod", min=1e-9)
    mw = mb.param("mw", 0.3, "kg", "mass of the wheel", min=1e-9)
    L = mb.param("L", 0.5, "m", "length of the pendulum (hinge to the wheel's centre)", min=1e-6)
    r = mb.param("r", 0.05, "m", "radius of the wheel", min=1e-6)
    mu = mb.param("mu", 0.1, "1", "Coulomb friction coefficient of the wheel", min=0.0)
    e = mb.param("e", 0.3, "1", "restitution of the wheel", min=0.0, max=1.0)
    v0 = mb.param("v0", 1.2, "m/s", "initial velocity of the cart along x")
    phi0 = mb.param("phi0", 0.4, "rad", "initial angle of the pendulum from the vertical")
    drop = mb.param("drop", 0.01, "m", "initial gap between the wheel and the block", min=0.0)
    slope = mb.param("slope", 0.15, "rad", "slope of the block's top face (rising along x)")
    H = 1.0
    s, c = math.sin(phi0), math.cos(phi0)
    J = m * L * L / 12.0
    Jw = 0.4 * mw * r * r
    turned = (math.cos(0.5 * phi0), 0.0, math.sin(0.5 * phi0), 0.0)
    tip = (-L * s, 0.0, H - L * c)
    cart = mb.body("cart", mass=mc, inertia=(0.01, 0.01, 0.01), position=(0.0, 0.0, H),
                   velocity=(v0, 0.0, 0.0))
    arm = mb.body("arm", mass=m, inertia=(J, J, 1e-3),
                  position=(-0.5 * L * s, 0.0, H - 0.5 * L * c), orientation=turned,
                  velocity=(v0, 0.0, 0.0))
    wheel = mb.body("wheel", mass=mw, inertia=(Jw, Jw, Jw), position=tip, orientation=turned,
                    velocity=(v0, 0.0, 0.0))
    mb.prismatic("slider", mb.ground, cart, at=(0.0, 0.0, H), axis=(1.0, 0.0, 0.0))
    mb.revolute("hinge", cart, arm, at=(0.0, 0.0, H), axis=(0.0, 1.0, 0.0))
    mb.revolute("axle", arm, wheel, at=tip, axis=(0.0, 1.0, 0.0))
    mb.shape(wheel, Sphere(r), name="tyre", restitution=e, friction=mu)
    # the block's top face: normal n (z turned by -slope about y), drop below the wheel
    n = (-math.sin(slope), 0.0, math.cos(slope))
    t = (math.cos(slope), 0.0, math.sin(slope))
    centre = [tip[k] - (r + drop + 0.1) * n[k] + 0.5 * t[k] for k in range(3)]
    mb.shape(mb.ground, Box((3.0, 0.4, 0.2)), name="block", position=centre,
             orientation=(math.cos(0.5 * slope), 0.0, -math.sin(0.5 * slope), 0.0))
    return mb.build()
