"""A deck hung from the ground by two parallel links (a parallelogram: a closed loop of four
revolute joints about y, one of them cut) swings under gravity (-z), released at rest with
the links tilted by `tilt`; on the deck (a Plane shape on its top face, Coulomb friction
`mu`) rests a part: `shape` "box" (a Box, four corners on the deck) or "ball" (a Sphere),
carried along by friction, sticking or slipping on the deck."""
import math

from fmu_mb import Box, ModelBuilder, Plane, Sphere

G = 9.81
DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.01}   # through the box's transitions


def build(**overrides):
    mb = ModelBuilder("swing_deck", overrides, gravity=(0.0, 0.0, -G))
    mu = mb.param("mu", 0.8, "1", "Coulomb friction coefficient of the deck", min=0.0)
    tilt = mb.param("tilt", 0.4, "rad", "initial angle of the links to the vertical")
    shape = mb.param("shape", "box", "1", "the part: a box or a ball", choices=("box", "ball"),
                     structural=True)
    L, w, hp = 0.3, 0.4, 0.02
    a, b, c, m, r = 0.1, 0.08, 0.06, 0.5, 0.03
    s, co = math.sin(tilt), math.cos(tilt)
    links = [mb.body(f"link{k}", mass=0.3, inertia=(2e-3, 2e-3, 1e-4),
                     position=(x0 + L / 2 * s, 0.0, -L / 2 * co),
                     orientation=(math.cos(tilt / 2), 0.0, math.sin(tilt / 2), 0.0))
             for k, x0 in enumerate((0.0, w))]
    px, pz = w / 2 + L * s, -L * co
    deck = mb.body("deck", mass=2.0, inertia=(0.01, 0.03, 0.04), position=(px, 0.0, pz))
    if shape == "box":
        part = mb.body("part", mass=m, inertia=(m * (b * b + c * c) / 12.0,
                                                m * (a * a + c * c) / 12.0,
                                                m * (a * a + b * b) / 12.0),
                       position=(px, 0.0, pz + hp / 2 + c / 2))
        mb.shape(part, Box((a, b, c)), name="crate")
    else:
        part = mb.body("part", mass=m, inertia=(0.4 * m * r * r,) * 3,
                       position=(px + 0.05, 0.02, pz + hp / 2 + r))
        mb.shape(part, Sphere(r), name="crate")
    for k, x0 in enumerate((0.0, w)):
        mb.revolute(f"pivot{k}", mb.ground, links[k], at=(x0, 0.0, 0.0), axis=(0.0, 1.0, 0.0))
        mb.revolute(f"hinge{k}", links[k], deck, at=(x0 + L * s, 0.0, -L * co),
                    axis=(0.0, 1.0, 0.0))
    mb.shape(deck, Plane(normal=(0.0, 0.0, 1.0)), position=(0.0, 0.0, hp / 2), name="top",
             friction=mu, restitution=0.0)
    return mb.build()
