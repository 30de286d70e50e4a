"""A block released at rest on a plane through the origin tilted by alpha about the y axis
(gravity along -z), held by Coulomb friction mu: a Box shape on a Plane shape (docs/shapes.md),
whose four bottom corners touch (contacts slope_hull_<k>, k = 4 i + 2 j + l the corner's
vertex number); shape="corners" (structural) gives the four bottom corners as point contacts
corner<i><j> instead, the same motion.

The plane's normal is n = (sin alpha, 0, cos alpha); downhill is d = (cos alpha, 0, -sin alpha).
For mu > tan(alpha) the block stays put; for mu < tan(alpha) it slides down the slope with
constant acceleration g (sin alpha - mu cos alpha), its distance along the slope
g (sin alpha - mu cos alpha) t^2 / 2 (docs/contacts-friction.md)."""
import math

from fmu_mb import Box, ModelBuilder, Plane

DEFAULT_EXPERIMENT = {"stop_time": 2.0, "step_size": 0.01}


def build(**overrides):
    g = 9.81
    mb = ModelBuilder("incline_block", overrides, gravity=(0.0, 0.0, -g),
                      description=__doc__)
    alpha = mb.param("alpha", 0.3, "rad", "tilt of the plane about y", min=0.0, max=1.2)
    mu = mb.param("mu", 0.5, "1", "Coulomb friction coefficient of the corners (> 0: at 0 the "
                  "contacts and their outputs are those of frictionless contacts)", min=1e-6)
    m = mb.param("m", 1.0, "kg", "mass of the block", min=1e-9)
    a = mb.param("a", 0.2, "m", "edge along the slope (body x)", min=1e-6)
    b = mb.param("b", 0.1, "m", "edge across the slope (body y)", min=1e-6)
    c = mb.param("c", 0.05, "m", "height (body z, along the normal)", min=1e-6)
    shape = mb.param("shape", "box", "1", "contact geometry: a box shape or four corner points",
                     choices=("box", "corners"), structural=True)
    ca, sa = math.cos(alpha), math.sin(alpha)
    n = (sa, 0.0, ca)
    # body z along n: the rotation by alpha about y, as Euler parameters (cos, 0, sin, 0)(a/2)
    block = mb.body("block", mass=m,
                    inertia=(m * (b * b + c * c) / 12.0, m * (a * a + c * c) / 12.0,
                             m * (a * a + b * b) / 12.0),
                    position=(c / 2.0 * sa, 0.0, c / 2.0 * ca),
                    orientation=(math.cos(alpha / 2.0), 0.0, math.sin(alpha / 2.0), 0.0))
    if shape == "box":
        mb.shape(mb.ground, Plane(normal=n), name="slope")
        mb.shape(block, Box((a, b, c)), name="hull", friction=mu, restitution=0.0)
        return mb.build()
    for i, sx in enumerate((-1, 1)):
        for j, sy in enumerate((-1, 1)):
            mb.contact(f"corner{i}{j}", block, point=(sx * a / 2.0, sy * b / 2.0, -c / 2.0),
                       normal=n, plane_point=(0.0, 0.0, 0.0), restitution=0.0, friction=mu)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 1.0)[-1])
