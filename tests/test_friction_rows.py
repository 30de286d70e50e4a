"""Tangential (slip) rows of fmu_mb.mechanics.friction: the slip velocity Dt xd equals the
relative velocity of the two bodies' material points at the contact point P = C - r n along
the tangent basis, computed here from the bodies' velocities directly; the convective term
equals a central finite difference of Dt(x) xd along x(t) = x + xd t + xdd t^2 / 2."""
import numpy as np
import pytest

from fmu_mb import ModelBuilder
from fmu_mb.mechanics.friction import tangent_basis, tangent_rows


def _planar():
    mb = ModelBuilder("rows2")
    a = mb.body("a", mass=2.0, inertia=0.3, position=(0.1, 0.2), angle=0.3)
    b = mb.body("b", mass=1.0, inertia=0.1, position=(0.4, 0.9), angle=-0.2)
    mb.contact("c", b, (0.05, -0.02), other=a, line_point=(0.1, 0.3), normal=(0.3, 1.0),
               radius=0.07, friction=0.4)
    return mb.build()


def _spatial():
    mb = ModelBuilder("rows3", gravity=(0.0, 0.0, -9.81))
    a = mb.body("a", mass=2.0, inertia=(0.3, 0.4, 0.5), position=(0.1, 0.2, 0.0))
    b = mb.body("b", mass=1.0, inertia=(0.1, 0.2, 0.15), position=(0.4, 0.9, 0.5))
    mb.contact("c", b, point=(0.05, -0.02, 0.1), other=a, plane_point=(0.1, 0.3, -0.2),
               normal=(0.3, 1.0, 0.5), radius=0.07, friction=0.4)
    return mb.build()


def _planar_slip(m, x, xd):
    c = m.contacts[0]
    ia, ib = [bd.name for bd in m.bodies].index("a"), [bd.name for bd in m.bodies].index("b")

    def rot(phi, s):
        return np.array([np.cos(phi) * s[0] - np.sin(phi) * s[1],
                         np.sin(phi) * s[0] + np.cos(phi) * s[1]])
    pa, pb = x[3 * ia:3 * ia + 3], x[3 * ib:3 * ib + 3]
    va, vb = xd[3 * ia:3 * ia + 3], xd[3 * ib:3 * ib + 3]
    n = rot(pa[2], np.array(c.normal))
    t = np.array([-n[1], n[0]])
    C = pb[:2] + rot(pb[2], np.array(c.point))
    P = C - c.offset * n

    def vel(p, v):
        r = P - p[:2]
        return v[:2] + v[2] * np.array([-r[1], r[0]])
    return t @ (vel(pb, vb) - vel(pa, va))


def test_planar_slip_velocity_and_convective_term():
    m = _planar()
    rng = np.random.default_rng(1)
    n = 3 * m.compiled.nb
    for _ in range(5):
        x, xd, xdd = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
        Dt, cv = tangent_rows(m, x, xd)
        assert abs(Dt[0, 0] @ xd - _planar_slip(m, x, xd)) < 1e-12
        h = 1e-5

        def vt(s):
            xs, xds = x + xd * s + xdd * s * s / 2, xd + xdd * s
            return tangent_rows(m, xs, xds)[0][0, 0] @ xds
        fd = (vt(h) - vt(-h)) / (2 * h)
        assert abs(Dt[0, 0] @ xdd + cv[0, 0] - fd) < 1e-7


def _spatial_slip(m, x, xd):
    from fmu_mb.mechanics.spatial import rotations as rot
    c = m.contacts[0]
    names = [bd.name for bd in m.bodies]
    ia, ib = names.index("a"), names.index("b")

    def pose(i):
        r, p = x[7 * i:7 * i + 3], x[7 * i + 3:7 * i + 7]
        v, pd = xd[7 * i:7 * i + 3], xd[7 * i + 3:7 * i + 7]
        A = rot.matrix(p[None])[0]
        w = 2.0 * rot.E_matrix(p[None])[0] @ pd
        return r, A, v, w
    ra, Aa, va, wa = pose(ia)
    rb, Ab, vb, wb = pose(ib)
    n = Aa @ np.array(c.normal)
    t1, t2 = (Aa @ t for t in tangent_basis(np.array(c.normal)))
    P = rb + Ab @ np.array(c.point) - c.offset * n
    vrel = (vb + np.cross(wb, P - rb)) - (va + np.cross(wa, P - ra))
    return np.array([t1 @ vrel, t2 @ vrel])


def test_spatial_slip_velocity_and_convective_term():
    m = _spatial()
    rng = np.random.default_rng(2)
    nb = m.compiled.nb
    for _ in range(5):
        x = rng.normal(size=7 * nb)
        xd = rng.normal(size=7 * nb)
        for i in range(nb):                       # unit Euler parameters, p . p' = 0
            p = x[7 * i + 3:7 * i + 7]
            p /= np.linalg.norm(p)
            pd = xd[7 * i + 3:7 * i + 7]
            pd -= p * (p @ pd)
        xdd = rng.normal(size=7 * nb)
        Dt, cv = tangent_rows(m, x, xd)
        np.testing.assert_allclose(Dt[0] @ xd, _spatial_slip(m, x, xd), atol=1e-12)
        h = 1e-5

        def vt(s):
            xs, xds = x + xd * s + xdd * s * s / 2, xd + xdd * s
            return tangent_rows(m, xs, xds)[0][0] @ xds
        fd = (vt(h) - vt(-h)) / (2 * h)
        np.testing.assert_allclose(Dt[0] @ xdd + cv[0], fd, atol=1e-6)


def test_tangent_basis_rule():
    t1, t2 = tangent_basis(np.array([0.0, 0.0, 1.0]))
    np.testing.assert_array_equal(t1, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(t2, [0.0, 1.0, 0.0])
    n = np.array([0.3, 1.0, 0.5]) / np.linalg.norm([0.3, 1.0, 0.5])
    t1, t2 = tangent_basis(n)
    F = np.array([n, t1, t2])
    np.testing.assert_allclose(F @ F.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(F) > 0


@pytest.mark.parametrize("call,message", [
    (lambda mb, b: mb.contact("c", b, friction=-0.1), "friction must be a coefficient"),
    (lambda mb, b: mb.contact("c", b, friction="x"), "friction must be a number"),
    (lambda mb, b: mb.contact_points("c", b, "ground", distance=1.0, friction=0.3),
     "friction on a distance limit"),
])
def test_friction_argument_errors(call, message):
    from fmu_mb import ModelError
    mb = ModelBuilder("bad")
    b = mb.body("b", mass=1.0, inertia=0.1)
    with pytest.raises(ModelError, match=message):
        call(mb, b)
