"""A flat deck on a prismatic joint along x (gravity -z) driven from rest with the
acceleration a + jerk t, x(t) = a t^2 / 2 + jerk t^3 / 6; on it (a Plane shape on its top
face, Coulomb friction `mu`) rests a box (a Box shape: four corners on the deck), sticking at
the start. Carried along while the deck's acceleration is at most mu g; beyond it the box
slips back relative to the deck with relative acceleration -(a + jerk t - mu g), all four
corners slipping along -x."""
from fmu_mb import Box, ModelBuilder, Plane, polynomial

G = 9.81


def build(**overrides):
    mb = ModelBuilder("accel_deck", overrides, gravity=(0.0, 0.0, -G))
    mu = mb.param("mu", 0.2, "1", "Coulomb friction coefficient of the deck", min=0.0)
    acc = mb.param("a", 3.0, "m/s2", "acceleration of the deck along x at t = 0")
    jerk = mb.param("jerk", 0.0, "m/s3", "rate of change of the deck's acceleration")
    a, b, c, m, hp = 0.1, 0.08, 0.06, 0.5, 0.02
    deck = mb.body("deck", mass=2.0, inertia=(0.01, 0.03, 0.04), position=(0.0, 0.0, 0.0))
    part = mb.body("part", mass=m, inertia=(m * (b * b + c * c) / 12.0,
                                            m * (a * a + c * c) / 12.0,
                                            m * (a * a + b * b) / 12.0),
                   position=(0.0, 0.0, hp / 2 + c / 2))
    mb.prismatic("rail", mb.ground, deck, axis=(1.0, 0.0, 0.0))
    mb.drive("push", "rail", polynomial(0.0, 0.0, acc / 2.0, jerk / 6.0))
    mb.shape(part, Box((a, b, c)), name="crate")
    mb.shape(deck, Plane(normal=(0.0, 0.0, 1.0)), position=(0.0, 0.0, hp / 2), name="top",
             friction=mu, restitution=0.0)
    return mb.build()
