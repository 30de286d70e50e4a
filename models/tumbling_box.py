"""A spinning box dropped on a rigid floor (spatial, gravity along -z): a brick of edges a, b,
c with a sphere of radius r at each of its eight corners, tilted by the Cardan angles
(alpha0, beta0, 0) and spinning at (wx0, wy0, wz0) [rad/s, global axes], its centre at height
h0. Frictionless corner contacts with Newton's restitution e (seed 000 eq. 20): at an impact
of one corner with unit normal n at arm rho from the centre of mass, the impulse magnitude is

    P = -(1 + e) v_n / (1/m + (rho x n) . J^-1 (rho x n)),

v_n the corner's approach velocity, and v+ = v- + P n / m, w+ = w- + J^-1 (rho x P n): the
tangential momentum, the angular momentum about the corner and, for e = 1, the kinetic energy
are kept (tests/test_spatial_contacts.py checks these closed forms).

Parameter `shape` (structural) picks the contact geometry: "corners" the eight corner
spheres of radius r placed by hand (contacts corner<i><j><k>), "box" a Box shape on the body
against a Plane shape on the ground (docs/shapes.md), lowered to the box's eight vertices
(contacts floor_hull_<4 i + 2 j + k>; r unused). mu: Coulomb friction at every contact
(docs/contacts-friction.md); with friction the box comes to rest on a face."""
from fmu_mb import Box, ModelBuilder, Plane, cardan

DEFAULT_EXPERIMENT = {"stop_time": 1.5, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("tumbling_box", overrides, gravity=(0.0, 0.0, -9.81),
                      description=__doc__)
    m = mb.param("m", 2.0, "kg", "mass of the box", min=1e-9)
    a = mb.param("a", 0.4, "m", "edge along body x", min=1e-6)
    b = mb.param("b", 0.25, "m", "edge along body y", min=1e-6)
    c = mb.param("c", 0.15, "m", "edge along body z", min=1e-6)
    r = mb.param("r", 0.01, "m", "radius of the corner spheres", min=0.0)
    e = mb.param("e", 0.6, "1", "coefficient of restitution", min=0.0, max=1.0)
    h0 = mb.param("h0", 0.6, "m", "initial height of the centre of mass", min=0.0)
    alpha0 = mb.param("alpha0", 0.35, "rad", "initial Cardan angle alpha (about x)")
    beta0 = mb.param("beta0", -0.2, "rad", "initial Cardan angle beta (about y)")
    wx0 = mb.param("wx0", 1.0, "rad/s", "initial angular velocity about x")
    wy0 = mb.param("wy0", -2.0, "rad/s", "initial angular velocity about y")
    wz0 = mb.param("wz0", 6.0, "rad/s", "initial angular velocity about z (spin)")
    vx0 = mb.param("vx0", 0.5, "m/s", "initial velocity along x")
    shape = mb.param("shape", "corners", "1", "contact geometry: corner spheres or a box shape",
                     choices=("corners", "box"), structural=True)
    mu = mb.param("mu", 0.0, "1", "Coulomb friction coefficient of the contacts", min=0.0)
    inertia = (m * (b * b + c * c) / 12.0, m * (a * a + c * c) / 12.0,
               m * (a * a + b * b) / 12.0)
    box = mb.body("box", mass=m, inertia=inertia, position=(0.0, 0.0, h0),
                  orientation=cardan(alpha0, beta0, 0.0), velocity=(vx0, 0.0, 0.0),
                  angular_velocity=(wx0, wy0, wz0))
    if shape == "box":
        mb.shape(mb.ground, Plane(normal=(0.0, 0.0, 1.0)), name="floor")
        mb.shape(box, Box((a, b, c)), name="hull", restitution=e, friction=mu)
        return mb.build()
    for i, sx in enumerate((-1, 1)):
        for j, sy in enumerate((-1, 1)):
            for k, sz in enumerate((-1, 1)):
                mb.contact(f"corner{i}{j}{k}", box,
                           point=(sx * a / 2.0, sy * b / 2.0, sz * c / 2.0), radius=r,
                           normal=(0.0, 0.0, 1.0), restitution=e, friction=mu)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 1.5)[-1])
