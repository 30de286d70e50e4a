"""Ball on a string (seed 002, Drenovac): "reduction" models the string as two massless rods
of length L with the ball at the end (singular mass matrix at the slack-to-taut event) and
passes the impact by the Reduction Method; "classical" models a free ball and the string as a
unilateral contact |r| <= 2 L with Newton's impact law (restitution k)."""
import math

from fmu_mb import ModelBuilder, deg


def build(**overrides):
    mb = ModelBuilder("singular_pendulum", overrides, description=__doc__)
    L = mb.param("L", 1.0, "m", "length of each rod (string length 2 L)", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    m = mb.param("m", 1.0, "kg", "mass of the ball", min=1e-9)
    alpha0 = mb.param("alpha0", deg(30.0), "rad", "initial angle of rod 1 from the downward "
                      "vertical")
    gamma0 = mb.param("gamma0", deg(90.0), "rad", "initial angle of rod 2 relative to rod 1")
    k = mb.param("k", 1.0, "1", "coefficient of restitution of the string", min=0.0, max=1.0)
    d = mb.param("d", 1e-4, "1", "det M criterion of the Reduction Method", min=1e-300)
    method = mb.param("method", "reduction", "1", "impact treatment",
                      choices=["classical", "reduction"], structural=True)
    mb.gravity = (0.0, -g)

    if method == "classical":
        x0 = L * (math.sin(alpha0) + math.sin(alpha0 + gamma0))
        y0 = -L * (math.cos(alpha0) + math.cos(alpha0 + gamma0))
        ball = mb.body("ball", mass=m, inertia=0.0, position=(x0, y0))
        mb.contact_points("string", mb.ground, ball, distance=2 * L, side="within",
                          restitution=k)
        return mb.build()
    rod1 = mb.body("rod1", mass=0.0, inertia=0.0)
    ball = mb.body("ball", mass=m, inertia=0.0)          # rod 2 with the ball at its origin
    mb.revolute("O", mb.ground, rod1, child_point=(-L / 2, 0.0), angle0=-math.pi / 2)
    mb.revolute("hinge", rod1, ball, parent_point=(L / 2, 0.0), child_point=(-L, 0.0))
    mb.contact_points("string", mb.ground, ball, distance=2 * L, side="within",
                      restitution=k, method="reduction", singular_joint="hinge",
                      criterion=d, criterion_scale=(m * L * L) ** 2, sharpening=0.5)
    mb.initial("O", value=alpha0, rate=0.0)
    mb.initial("hinge", value=gamma0, rate=0.0)
    return mb.build()
