"""Slider-crank (as models/slider_crank.py) whose slider strikes an end stop near its outer
dead centre; the stop is a limit on the prismatic joint's coordinate."""
import math

from fmu_mb import ModelBuilder, deg, rod_inertia


def build(**overrides):
    mb = ModelBuilder("slider_crank_stop", overrides, description=__doc__)
    r = mb.param("crank_length", 0.1, "m", "crank radius", min=1e-9)
    l = mb.param("rod_length", 0.4, "m", "connecting-rod length", min=1e-9)
    m_crank = mb.param("crank_mass", 1.0, "kg", "crank mass", min=1e-9)
    m_rod = mb.param("rod_mass", 2.0, "kg", "connecting-rod mass", min=1e-9)
    m_slider = mb.param("slider_mass", 0.5, "kg", "slider mass", min=1e-9)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    stop = mb.param("stop", 0.48, "m", "position of the end stop on the guide")
    e = mb.param("e", 0.5, "1", "coefficient of restitution of the stop", min=0.0, max=1.0)
    theta0 = mb.param("theta0", deg(90.0), "rad", "initial crank angle")
    omega0 = mb.param("omega0", -10.0, "rad/s", "initial crank rate")
    mb.gravity = (0.0, -g)

    crank = mb.body("crank", mass=m_crank, inertia=rod_inertia(m_crank, r))
    rod = mb.body("rod", mass=m_rod, inertia=rod_inertia(m_rod, l))
    slider = mb.body("slider", mass=m_slider, inertia=1e-3, position=(r + l, 0.0))
    mb.revolute("O", mb.ground, crank, parent_point=(0.0, 0.0), child_point=(-r / 2, 0.0))
    mb.revolute("A", crank, rod, parent_point=(r / 2, 0.0), child_point=(-l / 2, 0.0))
    mb.revolute("B", rod, slider, parent_point=(l / 2, 0.0), child_point=(0.0, 0.0))
    mb.prismatic("guide", mb.ground, slider, axis=(1.0, 0.0))
    mb.joint_limit("end_stop", "guide", upper=stop, restitution=e)
    mb.torque("drive", crank)
    mb.initial("O", value=theta0, rate=omega0)
    phi_rod = -math.asin(r * math.sin(theta0) / l)       # assembly guesses: slider on y = 0
    mb.initial("A", guess=phi_rod - theta0)
    mb.initial("guide", guess=r * math.cos(theta0) + l * math.cos(phi_rod))
    return mb.build()
