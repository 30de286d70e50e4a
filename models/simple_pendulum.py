"""IFToMM benchmark A01: the simple pendulum, a point mass on a massless rod released
horizontally from rest."""
from fmu_mb import ModelBuilder

DEFAULT_EXPERIMENT = {"stop_time": 10.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("simple_pendulum", overrides, description=__doc__)
    l = mb.param("l", 1.0, "m", "rod length", min=1e-6)
    m = mb.param("m", 1.0, "kg", "point mass", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    mb.gravity = (0.0, -g)
    bob = mb.body("bob", mass=m, inertia=0.0, position=(l, 0.0), angle=0.0)
    mb.revolute("O", mb.ground, bob, parent_point=(0.0, 0.0), child_point=(-l, 0.0))
    mb.initial("O", value=0.0, rate=0.0)
    return mb.build()
