"""Ball dropped from rest onto a rigid floor, bouncing with Newton's restitution e."""
from fmu_mb import ModelBuilder, disc_inertia


def build(**overrides):
    mb = ModelBuilder("bouncing_ball", overrides, description=__doc__)
    h0 = mb.param("h0", 1.0, "m", "drop height of the centre above its height at contact",
                  min=0.0)
    e = mb.param("e", 0.8, "1", "coefficient of restitution", min=0.0, max=1.0)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    m = mb.param("m", 1.0, "kg", "mass of the ball", min=1e-9)
    r = mb.param("r", 0.1, "m", "radius of the ball", min=0.0)
    mb.gravity = (0.0, -g)

    ball = mb.body("ball", mass=m, inertia=disc_inertia(m, r), position=(0.0, r + h0))
    mb.contact("floor", ball, radius=r, line_point=(0.0, 0.0), normal=(0.0, 1.0),
               restitution=e)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 5.0)[-1])
