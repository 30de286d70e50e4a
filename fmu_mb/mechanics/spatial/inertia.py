"""Inertia tensors of uniform bodies about the centre of mass, in body axes, for spatial
bodies: principal moments (Ixx, Iyy, Izz) [kg.m2], exported as fmu_mb.slender_rod_inertia,
cylinder_inertia_3d, box_inertia_3d and sphere_inertia (the planar helpers rod_inertia,
disc_inertia, box_inertia and cylinder_inertia return the single planar moment)."""

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
