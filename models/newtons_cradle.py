"""Newton's cradle: n balls on pendulums of length l in a row, a small clearance between
neighbours at rest; the first ball is pulled back by theta0 and released."""
from fmu_mb import ModelBuilder, deg


def build(**overrides):
    mb = ModelBuilder("newtons_cradle", overrides, description=__doc__)
    n = mb.param("n", 3, "1", "number of balls", min=2, max=20, structural=True)
    l = mb.param("l", 1.0, "m", "pendulum length (pivot to ball centre)", min=1e-9)
    r = mb.param("r", 0.02, "m", "ball radius", min=1e-9)
    m = mb.param("m", 0.1, "kg", "ball mass", min=1e-9)
    c = mb.param("clearance", 1e-4, "m", "gap between neighbouring balls at rest", min=0.0)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    theta0 = mb.param("theta0", deg(20.0), "rad", "pull-back angle of the first ball",
                      min=0.0, max=deg(80.0))
    e = mb.param("e", 1.0, "1", "coefficient of restitution between balls", min=0.0,
                 max=1.0)
    mb.gravity = (0.0, -g)

    balls = []
    for i in range(n):
        xp = i * (2 * r + c)
        b = mb.body(f"ball{i}", mass=m, inertia=0.4 * m * r ** 2, position=(xp, -l))
        mb.revolute(f"pivot{i}", mb.ground, b, parent_point=(xp, 0.0), child_point=(0.0, l))
        mb.initial(f"pivot{i}", value=-theta0 if i == 0 else 0.0, rate=0.0)
        balls.append(b)
    for i in range(n - 1):
        mb.contact_points(f"c{i}{i + 1}", balls[i], balls[i + 1], distance=2 * r,
                          side="apart", restitution=e)
    return mb.build()
