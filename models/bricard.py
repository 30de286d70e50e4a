"""Bricard mechanism, IFToMM benchmark A04: five slender rods (1 m, 1 kg) closed by six
revolute joints; Grübler count 0, mobility 1 (one redundant constraint). Falls from rest under
gravity 9.81 m/s2 along -y; the marker P3 sits at the joint P3."""
from fmu_mb import ModelBuilder, slender_rod_inertia

DEFAULT_EXPERIMENT = {"stop_time": 10.0, "step_size": 0.01}

# joint points and axes at the reference pose (IFToMM A04)
POINTS = {"P1": (0, 0, 0), "P2": (1, 0, 0), "P3": (1, -1, 0), "P4": (1, -1, 1),
          "P5": (0, -1, 1), "P6": (0, 0, 1)}
AXES = {"P1": (0, 1, 0), "P2": (0, 0, 1), "P3": (1, 0, 0), "P4": (0, 1, 0), "P5": (0, 0, 1),
        "P6": (1, 0, 0)}


def build(**overrides):
    mb = ModelBuilder("bricard", overrides, gravity=(0.0, -9.81, 0.0), description=__doc__)
    m = mb.param("m", 1.0, "kg", "mass of each rod", min=1e-9)
    names = list(POINTS)
    rods = []
    for i in range(5):
        a, b = POINTS[names[i]], POINTS[names[i + 1]]
        axis = "xyz"[[abs(b[k] - a[k]) for k in range(3)].index(1)]
        rods.append(mb.body(f"rod{i + 1}", mass=m, inertia=slender_rod_inertia(m, 1.0, axis),
                            position=tuple((a[k] + b[k]) / 2 for k in range(3))))
    chain = [mb.ground] + rods + [mb.ground]
    for i, n in enumerate(names):                  # joint J<i> at point P<i>
        mb.revolute(f"J{i + 1}", chain[i], chain[i + 1], at=POINTS[n], axis=AXES[n])
    mb.point("P3", rods[1], at=POINTS["P3"])
    return mb.build()


if __name__ == "__main__":
    print(build().topology)
