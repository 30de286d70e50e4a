"""A solid ball thrown along a table top, rolling off its edge onto the floor: a Sphere shape
against a Box shape (a shape pair whose contact point moves on the table's top face, then
round its edge) and against the ground's Plane.

The table is a box of edges (L, W, H) fixed to the ground, its top face at z = 0 from
x = -L/2 to x = L/2; the floor is the plane z = -H. The ball (radius r, mass m, J = 2/5 m r^2)
starts resting on the top at x = x0, thrown along +x with speed v0 and no spin. While it
slips, friction mu m g decelerates it and spins it up: slip ends at t* = 2 v0 / (7 mu g),
after which it rolls at v_x = r w_y = 5/7 v0 (mu > 0). It then rolls over the edge at
x = L/2 (the contact point running round the edge: the vertex-edge feature of the narrowphase)
and falls to the floor, where it bounces with restitution e and rolls on. Contacts:
table_top_ball_0 (the sphere-box pair) and floor_ball_0 (the ball on the floor plane).
"""
from fmu_mb import Box, ModelBuilder, Plane, Sphere

DEFAULT_EXPERIMENT = {"stop_time": 1.5, "step_size": 0.01}


def build(**overrides):
    g = 9.81
    mb = ModelBuilder("table_ball", overrides, gravity=(0.0, 0.0, -g), description=__doc__)
    r = mb.param("r", 0.05, "m", "radius of the ball", min=1e-6)
    m = mb.param("m", 0.2, "kg", "mass of the ball", min=1e-9)
    mu = mb.param("mu", 0.3, "1", "Coulomb friction coefficient of the ball", min=0.0)
    e = mb.param("e", 0.5, "1", "restitution of the ball (table and floor)", min=0.0, max=1.0)
    v0 = mb.param("v0", 1.5, "m/s", "initial velocity along x")
    x0 = mb.param("x0", -0.3, "m", "initial position of the ball along the table")
    L = mb.param("L", 1.2, "m", "length of the table (along x)", min=1e-6)
    H = mb.param("H", 0.4, "m", "height of the table", min=1e-6)
    J = 2.0 / 5.0 * m * r * r
    ball = mb.body("ball", mass=m, inertia=(J, J, J), position=(x0, 0.0, r),
                   velocity=(v0, 0.0, 0.0))
    mb.shape(mb.ground, Box((L, 0.8, H)), name="table_top", position=(0.0, 0.0, -0.5 * H))
    mb.shape(mb.ground, Plane(normal=(0.0, 0.0, 1.0)), name="floor", position=(0.0, 0.0, -H))
    mb.shape(ball, Sphere(r), name="ball_shell", restitution=e, friction=mu)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate
    print(simulate(build(), 1.5)[-1])
