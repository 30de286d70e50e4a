"""Inertia tensors of uniform bodies about the centre of mass, in body axes, for spatial
bodies: principal moments (Ixx, Iyy, Izz) [kg.m2], exported as fmu_mb.slender_rod_inertia,
cylinder_inertia_3d, box_inertia_3d and sphere_inertia (the planar helpers rod_inertia,
disc_inertia, box_inertia and cylinder_inertia return the single planar moment)."""

import math

_AXES = ("x", "y", "z")


def _about(axis, axial, transverse):
    if axis not in _AXES:
        from ...errors import ModelError

        raise ModelError(f"inertia helper: axis must be one of {list(_AXES)}, received "
                         f"{axis!r}")
    return tuple(axial if a == axis else transverse for a in _AXES)


def slender_rod(mass, length, axis="x"):
    """Slender rod along `axis`: zero axial moment, m l^2 / 12 about the other two axes."""
    return _about(axis, 0.0, mass * length ** 2 / 12.0)


def cylinder(mass, radius, length, axis="z"):
    """Solid cylinder along `axis`: m r^2 / 2 axial, m (3 r^2 + l^2) / 12 transverse."""
    return _about(axis, mass * radius ** 2 / 2.0, mass * (3 * radius ** 2 + length ** 2) / 12.0)


def box(mass, a, b, c):
    """Box of edge lengths a, b, c along x, y, z: m (b^2 + c^2) / 12, ..."""
    return (mass * (b * b + c * c) / 12.0, mass * (a * a + c * c) / 12.0,
            mass * (a * a + b * b) / 12.0)


def sphere(mass, radius):
    """Solid sphere: 2 m r^2 / 5 about every axis."""
    return (0.4 * mass * radius ** 2,) * 3


def max_abs_eigenvalue(J):
    """The largest |eigenvalue| of the symmetric 3x3 matrix J (its upper triangle is read),
    by cyclic Jacobi rotations on Python floats: +, -, *, /, sqrt and fabs only, in a fixed
    order, so that the engine's C twin (engine_spatial.h, spatial_max_eig) gives the same
    bits on any IEEE machine (the projection metric of a spatial model is derived from it
    when a parameter changes a mass or an inertia). A diagonal J gives max |J_ii| exactly;
    otherwise the result agrees with numpy.linalg.eigvalsh to a few units in the last place."""
    J = [[float(J[i][j]) for j in range(3)] for i in range(3)]
    d = [J[0][0], J[1][1], J[2][2]]
    a = {(0, 1): J[0][1], (0, 2): J[0][2], (1, 2): J[1][2]}
    for _ in range(50):
        if a[0, 1] == 0.0 and a[0, 2] == 0.0 and a[1, 2] == 0.0:
            break
        for p, q, r in ((0, 1, 2), (0, 2, 1), (1, 2, 0)):
            apq = a[p, q]
            if apq == 0.0:
                continue
            g = 100.0 * math.fabs(apq)
            if math.fabs(d[p]) + g == math.fabs(d[p]) and math.fabs(d[q]) + g == math.fabs(d[q]):
                a[p, q] = 0.0                 # below the diagonal's last place
                continue
            theta = (d[q] - d[p]) / (2.0 * apq)
            if math.fabs(theta) > 1e150:
                t = 0.5 / theta
            else:
                t = 1.0 / (math.fabs(theta) + math.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
            c = 1.0 / math.sqrt(t * t + 1.0)
            s = t * c
            d[p] = d[p] - t * apq
            d[q] = d[q] + t * apq
            a[p, q] = 0.0
            rp, rq = (min(r, p), max(r, p)), (min(r, q), max(r, q))
            arp, arq = a[rp], a[rq]
            a[rp] = c * arp - s * arq
            a[rq] = s * arp + c * arq
    return max(math.fabs(d[0]), math.fabs(d[1]), math.fabs(d[2]))
