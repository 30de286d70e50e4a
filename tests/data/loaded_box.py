"""A box (a Box shape: its four bottom corners touch) resting on a plane through the origin
tilted by `alpha` about y (gravity -z; normal n = (sin alpha, 0, cos alpha)), Coulomb
friction `mu`, loaded by a force `F` along body axis `axis` (structural: "x" up the slope's
line of steepest descent reversed, i.e. along body x, or "y" across the slope) at the point
(px, py, pz) of the box (body axes, from its centre) and a torque `T` about the plane's
normal. Below the sliding and tipping limits it stays at rest on four sticking corners whose
forces are the minimum-norm split of the load; beyond them it slides or tips."""
import math

from fmu_mb import Box, ModelBuilder, Plane

G = 9.81
DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("loaded_box", overrides, gravity=(0.0, 0.0, -G))
    alpha = mb.param("alpha", 0.3, "rad", "tilt of the plane about y", min=0.0, max=1.2)
    mu = mb.param("mu", 0.6, "1", "Coulomb friction coefficient of the plane", min=1e-6)
    m = mb.param("m", 1.0, "kg", "mass of the box", min=1e-9)
    force = mb.param("F", 1.0, "N", "the force on the box")
    axis = mb.param("axis", "y", "1", "the force's direction: body x or body y",
                    choices=("x", "y"), structural=True)
    px = mb.param("px", 0.05, "m", "the force's point along body x, from the centre")
    py = mb.param("py", 0.0, "m", "the force's point along body y, from the centre")
    pz = mb.param("pz", 0.025, "m", "the force's point along body z, from the centre")
    torque = mb.param("T", 0.0, "N.m", "the torque on the box about the plane's normal")
    a, b, c = 0.2, 0.1, 0.05
    ca, sa = math.cos(alpha), math.sin(alpha)
    n = (sa, 0.0, ca)
    box = mb.body("part", mass=m,
                  inertia=(m * (b * b + c * c) / 12.0, m * (a * a + c * c) / 12.0,
                           m * (a * a + b * b) / 12.0),
                  position=(c / 2.0 * sa, 0.0, c / 2.0 * ca),
                  orientation=(math.cos(alpha / 2.0), 0.0, math.sin(alpha / 2.0), 0.0))
    mb.shape(mb.ground, Plane(normal=n), name="slope")
    mb.shape(box, Box((a, b, c)), name="hull", friction=mu, restitution=0.0)
    mb.force("push", box, point=(px, py, pz),
             direction=(1.0, 0.0, 0.0) if axis == "x" else (0.0, 1.0, 0.0), frame="body",
             value=force, input=False)
    mb.torque("twist", box, axis=(0.0, 0.0, 1.0), frame="body", value=torque, input=False)
    return mb.build()
