"""Two uniform discs on a table with Coulomb friction (planar shape pairs; gravity -y).

The table is a rectangle fixed to the ground, its top face the line y = 0 (x from -1 to 3 m).
Disc "a" (mass m, radius r, inertia m r^2 / 2) is set down on it at x = 0 with speed v0
along +x and no spin; disc "b" (mass m2, radius r) rests on it at x = d. Every pair of
shapes touches: a and b on the table (circle - rectangle) and a on b (circle - circle), with
friction mu and restitution e.

Closed forms (docs/shapes.md): disc a slips, sliding friction mu m g decelerating it and
spinning it up, until its contact point sticks at t* = v0 / (3 mu g); then it rolls at 2/3
v0 with omega = -2 v0 / (3 r). It reaches b at (d - 2 r) along x, where the head-on impact
with friction between the spinning discs follows (the impact law of
docs/contacts-friction.md).
"""
from fmu_mb import Circle, ModelBuilder, Rectangle

DEFAULT_EXPERIMENT = {"stop_time": 1.5, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("rolling_discs", overrides, gravity=(0.0, -9.81), description=__doc__)
    m = mb.param("m", 1.5, "kg", "mass of disc a", min=1e-9)
    m2 = mb.param("m2", 1.0, "kg", "mass of disc b", min=1e-9)
    r = mb.param("r", 0.1, "m", "radius of both discs", min=1e-6, max=0.4)
    v0 = mb.param("v0", 1.2, "m/s", "initial speed of disc a along +x")
    d = mb.param("d", 1.0, "m", "initial position of disc b along x", min=0.0, max=2.5)
    mu = mb.param("mu", 0.3, "1", "Coulomb friction coefficient of every pair", min=1e-6)
    e = mb.param("e", 0.5, "1", "Newton's restitution coefficient of every pair",
                 min=0.0, max=1.0)
    mb.shape(mb.ground, Rectangle((4.0, 0.4)), name="table", position=(1.0, -0.2),
             friction=mu, restitution=e)
    a = mb.body("a", mass=m, inertia=0.5 * m * r * r, position=(0.0, r), velocity=(v0, 0.0))
    b = mb.body("b", mass=m2, inertia=0.5 * m2 * r * r, position=(d, r))
    mb.shape(a, Circle(r), name="disc_a", friction=mu, restitution=e)
    mb.shape(b, Circle(r), name="disc_b", friction=mu, restitution=e)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 1.5)[-1])
