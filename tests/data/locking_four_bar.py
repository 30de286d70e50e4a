"""Non-Grashof four-bar whose driven crank locks up near t = 0.86 s."""
from fmu_mb import ModelBuilder, constant_rate


def build(**overrides):
    mb = ModelBuilder("locking_four_bar", overrides, gravity=(0.0, 0.0))
    rate = mb.param("rate", 1.0, "rad/s", "crank rate")
    crank = mb.body("crank", mass=1.0, inertia=0.01)
    coupler = mb.body("coupler", mass=1.0, inertia=0.01)
    rocker = mb.body("rocker", mass=1.0, inertia=0.01)
    mb.revolute("O", mb.ground, crank, child_point=(-0.1, 0.0))
    mb.revolute("A", crank, coupler, parent_point=(0.1, 0.0), child_point=(-0.1, 0.0))
    mb.revolute("B", coupler, rocker, parent_point=(0.1, 0.0), child_point=(0.1, 0.0))
    mb.revolute("C", mb.ground, rocker, parent_point=(0.5, 0.0), child_point=(-0.1, 0.0))
    mb.drive("spin", "O", constant_rate(rate))
    mb.torque("load", rocker)
    mb.initial("A", guess=1.0)
    mb.initial("C", guess=2.0)
    return mb.build()
