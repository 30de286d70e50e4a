"""A wheel (a disc of radius R) rolling and steering on the ground (spatial, gravity along -z):
a Cylinder shape of length `width` whose axis is the body's y axis, on the ground's Plane
shape, with Coulomb friction mu at its rim (contact floor_tyre_0: the lowest point of the
circle, which moves on the wheel; docs/shapes.md). A width > 0 gives a flat tread with two
rims, floor_tyre_0 and floor_tyre_1, which resists turning by scrub. It starts at the origin
leaning by lean0 about x (0: upright), its rim on the ground, moving along +x at v0 and
spinning at w0 about its axis (w0 = v0 / R rolls).

Inputs: `drive.h`, a torque about the wheel's axis [N.m] (positive drives it forward), and
`steer.h`, a torque about the vertical +z [N.m] (the spinning disc answers gyroscopically:
it leans and its path curves).

Thrown sliding (w0 = 0) it slips until t* = v0 / (3 mu g) and then rolls at 2/3 v0
(J = m R^2 / 2 about the axis)."""
import math

from fmu_mb import Cylinder, ModelBuilder, Plane, cardan

DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("wheel", overrides, gravity=(0.0, 0.0, -9.81), description=__doc__)
    R = mb.param("R", 0.3, "m", "radius of the wheel", min=1e-6)
    width = mb.param("width", 0.0, "m", "width of the tread (0: a disc, one rim)", min=0.0)
    m = mb.param("m", 2.0, "kg", "mass of the wheel", min=1e-9)
    mu = mb.param("mu", 0.8, "1", "Coulomb friction coefficient of the tyre", min=0.0)
    v0 = mb.param("v0", 2.0, "m/s", "initial velocity along x")
    w0 = mb.param("w0", 2.0 / 0.3, "rad/s", "initial spin about the wheel's axis (body y)")
    lean0 = mb.param("lean0", 0.0, "rad", "initial lean about the direction of travel (x)",
                     min=-1.2, max=1.2)
    Ja, Jt = m * R * R / 2.0, m * (3.0 * R * R + width * width) / 12.0
    ca, sa = math.cos(lean0), math.sin(lean0)
    wheel = mb.body("wheel", mass=m, inertia=(Jt, Ja, Jt),
                    position=(0.0, 0.0, R * ca + width / 2.0 * abs(sa)),
                    orientation=cardan(lean0, 0.0, 0.0), velocity=(v0, 0.0, 0.0),
                    angular_velocity=(0.0, w0 * ca, w0 * sa))
    mb.shape(mb.ground, Plane(normal=(0.0, 0.0, 1.0)), name="floor")
    mb.shape(wheel, Cylinder(R, width), name="tyre", orientation=cardan(-math.pi / 2, 0.0, 0.0),
             friction=mu, restitution=0.0)
    mb.torque("drive", wheel, axis=(0.0, 1.0, 0.0), frame="body")
    mb.torque("steer", wheel, axis=(0.0, 0.0, 1.0), frame="global")
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 1.0, inputs={"drive.h": 0.5, "steer.h": 0.2})[-1])
