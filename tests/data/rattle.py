"""A slider (1 kg, no gravity) between two elastic stops at +-clearance, started at rate v
from the middle: it rattles, hitting the upper stop at clearance / v, then every
4 clearance / v; `extra` more sliders rest far from their stops (two joint limits each:
2 (extra + 1) contacts, which widen the Zeno guard's per-model windows)."""
from fmu_mb import ModelBuilder


def build(**overrides):
    mb = ModelBuilder("rattle", overrides, gravity=(0.0, 0.0), description=__doc__)
    v = mb.param("v", 100.0, "m/s", "initial rate of the rattling slider")
    clearance = mb.param("clearance", 1e-6, "m", "distance of each stop from the middle",
                         min=1e-12)
    extra = mb.param("extra", 5, "1", "sliders at rest", min=0, max=20, structural=True)
    for k in range(extra + 1):
        b = mb.body(f"b{k}", mass=1.0, inertia=0.1, position=(0.0, float(k)))
        mb.prismatic(f"s{k}", "ground", b, axis=(1.0, 0.0), parent_point=(0.0, float(k)))
        d = clearance if k == 0 else 1.0
        mb.joint_limit(f"lim{k}", f"s{k}", lower=-d, upper=d, restitution=1.0)
    mb.initial("s0", rate=v)
    return mb.build()
