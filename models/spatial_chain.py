"""Spatial chain of N uniform rods hanging from the ground on revolute or spherical joints (a
benchmark for the spatial formulations, bench/spatial_chain.py); gravity along -z.

Link frames: rod i lies along its body x axis from joint i to joint i + 1 (length L). The frame
of link i is that of link i - 1 turned by a quarter turn about x (Rx(-pi/2)) and then by the
joint angle q_i about the new z axis, so the revolute axes alternate between perpendicular
directions (y, -z, -y, z, ... at q = 0) and the motion is fully three-dimensional: the
layout of an Exudyn KinematicTree with RevoluteZ joints and jointTransformations Rx(-pi/2),
or MuJoCo hinge joints in bodies with quat Rx(-pi/2). Spherical joints (`joint="spherical"`)
sit at the same points and start from the same pose. Released at rest from the pose with
every joint angle q0 (the rods' inertia: m L^2 / 12 across, m r^2 / 2 along the axis).
Output: point `tip` at the free end.
"""
import math

import numpy as np

from fmu_mb import ModelBuilder
from fmu_mb.mechanics.spatial.rotations import from_matrix

DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.01}


def _rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def link_frames(n, L, q):
    """Joint points o_i and link rotation matrices R_i (body axes -> global) of the chain at
    joint angles q (n,), with the layout of the module docstring."""
    R, o = np.eye(3), np.zeros(3)
    points, frames = [], []
    for i in range(n):
        if i:
            o = o + R @ np.array([L, 0.0, 0.0])
        R = R @ _rx(-math.pi / 2) @ _rz(q[i])
        points.append(o.copy())
        frames.append(R.copy())
    return points, frames


def build(**overrides):
    mb = ModelBuilder("spatial_chain", overrides, gravity=(0.0, 0.0, -9.81),
                      description=__doc__)
    n = mb.param("N", 8, "1", "number of links", min=1, max=500, structural=True)
    joint = mb.param("joint", "revolute", "1", "joint kind", choices=("revolute", "spherical"),
                     structural=True)
    L = mb.param("link_length", 0.1, "m", "length of each link", min=1e-9)
    m = mb.param("link_mass", 0.1, "kg", "mass of each link", min=1e-9)
    r = mb.param("link_radius", 0.005, "m", "radius of each link (axial inertia)", min=0.0)
    q0 = mb.param("q0", 0.4, "rad", "initial angle of every joint")
    n = int(n)
    points, frames = link_frames(n, L, [q0] * n)
    inertia = (0.5 * m * r * r, m * L * L / 12.0, m * L * L / 12.0)
    parent = mb.ground
    for i in range(n):
        R = frames[i]
        link = mb.body(f"link{i}", mass=m, inertia=inertia,
                       position=tuple(points[i] + R @ np.array([L / 2, 0.0, 0.0])),
                       orientation=from_matrix(R))
        if joint == "revolute":
            mb.revolute(f"J{i}", parent, link, at=tuple(points[i]), axis=tuple(R[:, 2]))
        else:
            mb.spherical(f"J{i}", parent, link, at=tuple(points[i]))
        parent = link
    mb.point("tip", parent, (L / 2, 0.0, 0.0))
    return mb.build()
