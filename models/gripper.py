"""A two-finger gripper lifting a block by friction (spatial, gravity along -z).

A carriage slides on a vertical prismatic joint; two fingers slide on prismatic joints along x
on the carriage, their pads (Plane shapes on the fingers, facing each other, gap0 away from its
sides at the start) grip a block (a Box shape) that rests on the table (a Plane shape on the
ground). Inputs:
`grip.h`, the squeeze force [N] pulling the fingers together (a TSDA between them, positive
in tension), and `lift.h`, the vertical force on the carriage [N] beyond the weight of the
carriage and fingers (a constant part of the force carries that weight, so with both inputs 0
everything rests). Coulomb friction mu at the pads, mu_table on the table.

While the pads stick, the carriage, fingers and block move as one: with a lift force F above
the block's weight m g they rise with a = (F - m g) / (m + m_carriage + 2 m_finger), which
holds while 2 mu grip >= m (g + a); a smaller grip lets the block slip down between the pads."""
from fmu_mb import Box, ModelBuilder, Plane

DEFAULT_EXPERIMENT = {"stop_time": 0.5, "step_size": 0.01}


def build(**overrides):
    g = 9.81
    mb = ModelBuilder("gripper", overrides, gravity=(0.0, 0.0, -g), description=__doc__)
    m = mb.param("m", 0.2, "kg", "mass of the block", min=1e-9)
    a = mb.param("a", 0.06, "m", "edge of the block along x (between the pads)", min=1e-6)
    b = mb.param("b", 0.05, "m", "edge of the block along y", min=1e-6)
    c = mb.param("c", 0.1, "m", "height of the block", min=1e-6)
    mc = mb.param("m_carriage", 1.0, "kg", "mass of the carriage", min=1e-9)
    mf = mb.param("m_finger", 0.1, "kg", "mass of each finger", min=1e-9)
    mu = mb.param("mu", 0.8, "1", "Coulomb friction coefficient of the pads", min=0.0)
    gap0 = mb.param("gap0", 0.002, "m", "initial gap between each pad and the block", min=0.0)
    mu_table = mb.param("mu_table", 0.3, "1", "Coulomb friction coefficient of the table",
                        min=0.0)
    h = c / 2.0
    block = mb.body("block", mass=m, inertia=(m * (b * b + c * c) / 12.0,
                                              m * (a * a + c * c) / 12.0,
                                              m * (a * a + b * b) / 12.0),
                    position=(0.0, 0.0, h))
    carriage = mb.body("carriage", mass=mc, inertia=(0.01, 0.01, 0.01), position=(0.0, 0.0, h))
    xf = a / 2.0 + gap0
    left = mb.body("finger_l", mass=mf, inertia=(1e-4, 1e-4, 1e-4), position=(-xf, 0.0, h))
    right = mb.body("finger_r", mass=mf, inertia=(1e-4, 1e-4, 1e-4), position=(xf, 0.0, h))
    mb.prismatic("lift_joint", mb.ground, carriage, at=(0.0, 0.0, h), axis=(0.0, 0.0, 1.0))
    mb.prismatic("left_joint", carriage, left, at=(-xf, 0.0, h), axis=(1.0, 0.0, 0.0))
    mb.prismatic("right_joint", carriage, right, at=(xf, 0.0, h), axis=(1.0, 0.0, 0.0))
    mb.tsda("grip", left, right)
    mb.force("lift", carriage, direction=(0.0, 0.0, 1.0), value=(mc + 2.0 * mf) * g)
    mb.shape(mb.ground, Plane(normal=(0.0, 0.0, 1.0)), name="table", friction=mu_table)
    mb.shape(block, Box((a, b, c)), name="part", restitution=0.0)   # pads close inelastically
    mb.shape(left, Plane(normal=(1.0, 0.0, 0.0)), name="pad_l", friction=mu)
    mb.shape(right, Plane(normal=(-1.0, 0.0, 0.0)), name="pad_r", friction=mu)
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 0.5, inputs={"grip.h": 20.0,
                                         "lift.h": lambda t: 5.0 if t >= 0.1 else 0.0})[-1])
