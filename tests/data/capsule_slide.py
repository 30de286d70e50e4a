"""A capsule thrown along a table: a Capsule (radius r, core length l, mass m) lying on the top
face of a Box fixed to the ground, its axis along x, thrown along x at v0 without spin. It
slides on its two core ends (capsule-box features 0 and 1) with Coulomb friction mu:
x(t) = x0 + v0 t - mu g t^2 / 2 until it sticks at t = v0 / (mu g), then rests. While it
slides the friction mu m g, acting r below the centre, loads the leading end with
m g (1/2 + mu r / l) and the trailing one with m g (1/2 - mu r / l); at rest each carries
m g / 2. Contacts: rod_c_table_<k> (the 22 capsule-box features)."""
import math

from fmu_mb import Box, Capsule, ModelBuilder


def build(**overrides):
    g = 9.81
    mb = ModelBuilder("capsule_slide", overrides, gravity=(0.0, 0.0, -g))
    m = mb.param("m", 1.2, "kg", "mass of the capsule", min=1e-9)
    r = mb.param("r", 0.05, "m", "radius of the capsule", min=1e-6)
    length = mb.param("length", 0.4, "m", "length of the capsule's core", min=1e-6)
    mu = mb.param("mu", 0.5, "1", "Coulomb friction coefficient of the table", min=0.0)
    v0 = mb.param("v0", 0.8, "m/s", "initial velocity along x")
    x0 = mb.param("x0", -0.2, "m", "initial position of the capsule's centre along x")
    ja = 0.4 * m * r * r                     # (about its axis; the others a rod's)
    jt = m * (length * length / 12.0 + r * r / 4.0)
    rod = mb.body("rod", mass=m, inertia=(ja, jt, jt), position=(x0, 0.0, r),
                  velocity=(v0, 0.0, 0.0))
    mb.shape(mb.ground, Box((2.0, 0.8, 0.2)), name="table", position=(0.0, 0.0, -0.1),
             friction=mu, restitution=0.0)
    # the capsule's z axis along the body's x axis
    mb.shape(rod, Capsule(r, length), name="rod_c",
             orientation=(math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0))
    return mb.build()
