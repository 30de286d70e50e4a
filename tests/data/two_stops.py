"""Two sliders along x under gravity along -x, each on a stop at the start: slider a on its
upper stop (gravity pulls it away: the stop's force would pull), slider b on its lower
stop with a gap of `gap` inside contact_tol (gravity presses it on)."""
from fmu_mb import ModelBuilder


def build(**overrides):
    mb = ModelBuilder("two_stops", overrides, gravity=(-9.81, 0.0), description=__doc__)
    gap = mb.param("gap", 5e-10, "m", "slider b's initial gap to its stop", min=0.0)
    a = mb.body("a", mass=1.0, inertia=0.1, position=(0.0, 0.0))
    b = mb.body("b", mass=2.0, inertia=0.1, position=(0.0, 1.0))
    mb.prismatic("sa", "ground", a, axis=(1.0, 0.0), parent_point=(0.0, 0.0))
    mb.prismatic("sb", "ground", b, axis=(1.0, 0.0), parent_point=(0.0, 1.0))
    mb.joint_limit("stop_a", "sa", upper=0.0, restitution=0.0)
    mb.joint_limit("stop_b", "sb", lower=0.0, restitution=0.0)
    mb.initial("sa", value=0.0, rate=0.0)
    mb.initial("sb", value=gap, rate=0.0)
    return mb.build()
