"""A planar block or disc released at rest on a line through the origin tilted by alpha
(gravity along -y), with Coulomb friction mu at its contacts.

The line's normal is n = (-sin alpha, cos alpha); downhill is d = -(cos alpha, sin alpha).
body="block" (structural): a block of edge a along the slope and height c touching the line at
its two bottom corners (point contacts corner0, corner1). For mu > tan(alpha) it stays put;
for mu < tan(alpha) it slides down the slope with constant acceleration
g (sin alpha - mu cos alpha), its distance along the slope g (sin alpha - mu cos alpha) t^2 / 2.

body="disc": a uniform disc of radius r (inertia m r^2 / 2) touching the line (contact
"slope"). For mu >= tan(alpha) / 3 it rolls without slipping, its centre accelerating along the
slope at 2/3 g sin alpha and its friction force m g sin(alpha) / 3; below that it slips with
acceleration g (sin alpha - mu cos alpha) (docs/contacts-friction.md)."""
import math

from fmu_mb import ModelBuilder

DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.01}


def build(**overrides):
    g = 9.81
    mb = ModelBuilder("planar_incline", overrides, gravity=(0.0, -g), description=__doc__)
    alpha = mb.param("alpha", 0.3, "rad", "tilt of the line", min=0.0, max=1.2)
    mu = mb.param("mu", 0.5, "1", "Coulomb friction coefficient of the contacts",
                  min=1e-6)
    m = mb.param("m", 1.0, "kg", "mass of the block or disc", min=1e-9)
    body = mb.param("body", "block", "1", "the body: a block on two corners or a disc",
                    choices=("block", "disc"), structural=True)
    ca, sa = math.cos(alpha), math.sin(alpha)
    n = (-sa, ca)
    if body == "disc":
        r = mb.param("r", 0.1, "m", "radius of the disc", min=1e-6)
        disc = mb.body("disc", mass=m, inertia=0.5 * m * r * r, position=(r * n[0], r * n[1]))
        mb.contact("slope", disc, radius=r, normal=n, restitution=0.0, friction=mu)
        return mb.build()
    a = mb.param("a", 0.2, "m", "edge along the slope (body x)", min=1e-6)
    c = mb.param("c", 0.05, "m", "height (body y, along the normal)", min=1e-6)
    block = mb.body("block", mass=m, inertia=m * (a * a + c * c) / 12.0,
                    position=(c / 2.0 * n[0], c / 2.0 * n[1]), angle=alpha)
    for k, sx in enumerate((-1, 1)):
        mb.contact(f"corner{k}", block, (sx * a / 2.0, -c / 2.0), normal=n, restitution=0.0,
                   friction=mu)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 1.0)[-1])
