"""IFToMM benchmark A02: N parallel four-bars (2N + 1 uniform links of 1 m and 1 kg)."""
import math

from fmu_mb import ModelBuilder, rod_inertia


DEFAULT_EXPERIMENT = {"stop_time": 10.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("n_four_bar", overrides, description=__doc__)
    n = mb.param("N", 2, "1", "number of four-bar loops", min=1, max=200, structural=True)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    v0 = mb.param("v0", 1.0, "m/s", "initial x velocity of the tip B0 of the first crank")
    mb.gravity = (0.0, -g)
    L, m = 1.0, 1.0
    cranks = [mb.body(f"crank{i}", mass=m, inertia=rod_inertia(m, L), position=(i, L / 2),
                      angle=math.pi / 2) for i in range(n + 1)]
    couplers = [mb.body(f"coupler{i}", mass=m, inertia=rod_inertia(m, L),
                        position=(i + L / 2, L)) for i in range(n)]
    for i, crank in enumerate(cranks):
        mb.revolute(f"O{i}", mb.ground, crank, parent_point=(float(i), 0.0),
                    child_point=(-L / 2, 0.0))
        mb.initial(f"O{i}", value=math.pi / 2, rate=-v0 / L if i == 0 else None)
    for i, coupler in enumerate(couplers):
        mb.revolute(f"L{i}", cranks[i], coupler, parent_point=(L / 2, 0.0),
                    child_point=(-L / 2, 0.0))
        mb.revolute(f"R{i}", cranks[i + 1], coupler, parent_point=(L / 2, 0.0),
                    child_point=(L / 2, 0.0))
    mb.point("B0", cranks[0], (L / 2, 0.0))
    return mb.build()
