"""Cart-pole: a cart on a horizontal rail (force `push.h` as input) carrying a uniform pole
on a revolute joint; `pivot.angle` = 0 is the pole upright (counter-clockwise positive),
gravity along -y. An example plant for examples/closed_loop.py (not part of models/)."""
from fmu_mb import ModelBuilder, rod_inertia

DEFAULT_EXPERIMENT = {"stop_time": 5.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("cart_pole", overrides, description=__doc__)
    mc = mb.param("mc", 1.0, "kg", "cart mass", min=1e-9)
    m = mb.param("m", 0.2, "kg", "pole mass", min=1e-9)
    L = mb.param("L", 1.0, "m", "pole length", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    phi0 = mb.param("phi0", 0.1, "rad", "initial pole angle from upright (counter-clockwise)")
    mb.gravity = (0.0, -g)
    cart = mb.body("cart", mass=mc, inertia=0.01)
    pole = mb.body("pole", mass=m, inertia=rod_inertia(m, L), position=(0.0, L / 2))
    mb.prismatic("rail", mb.ground, cart, axis=(1.0, 0.0))
    mb.revolute("pivot", cart, pole, child_point=(0.0, -L / 2))
    mb.force("push", cart, direction=(1.0, 0.0))
    mb.initial("pivot", value=phi0, rate=0.0)
    return mb.build()
