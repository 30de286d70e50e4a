"""A solid sphere of radius r and mass m on the horizontal ground (z up), thrown along +x with
speed v0 and spin w0 about y, with Coulomb friction mu at its contact point.

The contact point's slip velocity is v_x - r w_y. While it slips, friction -mu m g sign(slip)
decelerates the centre and spins the ball up (J = 2/5 m r^2): v_x' = -mu g s, w_y' =
5 mu g s / (2 r), s = sign(v0 - r w0). Slip ends at t* = 2 |v0 - r w0| / (7 mu g), after which
the ball rolls: v_x = r w_y = (5 v0 + 2 r w0) / 7 (w0 = 0: t* = 2 v0 / (7 mu g), v_x = 5/7 v0;
backspin w0 < -5 v0 / (2 r)... reverses: v_x < 0 while rolling).

The ball is a Sphere shape on the ground's Plane shape (docs/shapes.md): one contact,
floor_shell_0, at the sphere's centre with offset r."""
from fmu_mb import ModelBuilder, Plane, Sphere

DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.01}


def build(**overrides):
    g = 9.81
    mb = ModelBuilder("rolling_ball", overrides, gravity=(0.0, 0.0, -g), description=__doc__)
    r = mb.param("r", 0.1, "m", "radius of the ball", min=1e-6)
    m = mb.param("m", 1.0, "kg", "mass of the ball", min=1e-9)
    mu = mb.param("mu", 0.3, "1", "Coulomb friction coefficient (> 0: at 0 the contact and its "
                  "outputs are those of a frictionless contact)", min=1e-6)
    v0 = mb.param("v0", 2.0, "m/s", "initial velocity along x")
    w0 = mb.param("w0", 0.0, "rad/s", "initial spin about y")
    J = 2.0 / 5.0 * m * r * r
    ball = mb.body("ball", mass=m, inertia=(J, J, J), position=(0.0, 0.0, r),
                   velocity=(v0, 0.0, 0.0), angular_velocity=(0.0, w0, 0.0))
    mb.shape(mb.ground, Plane(normal=(0.0, 0.0, 1.0)), name="floor")
    mb.shape(ball, Sphere(r), name="shell", restitution=0.0, friction=mu)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 1.0)[-1])
