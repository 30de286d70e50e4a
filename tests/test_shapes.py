"""The narrowphase of collision shapes (fmu_mb.mechanics.shapes, engine/native/geometry.h).

Checked against independent computations: the distance of two separated convex shapes by
scipy.optimize over points of both solids (box coordinates within bounds, points of a
capsule's core segment), the lowest point of a cylinder's rim by a dense sample of the rim;
invariance under rigid motions of both shapes, symmetry of (a, b) and (b, a), points on the
surfaces; and the C twin equal to 1e-12 on random poses of every pair."""
import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fmu_mb.mechanics import shapes as sh
from fmu_mb.mechanics.shapes import (Box, Capsule, Circle, Cylinder, Line, Plane, Rectangle,
                                     Segment, Sphere, collide, distance)

optimize = pytest.importorskip("scipy.optimize", reason="scipy minimises the distances")

NATIVE = Path(sh.__file__).resolve().parents[1] / "engine" / "native"

SPATIAL = {"sphere": Sphere(0.3), "capsule": Capsule(0.2, 0.7), "box": Box((0.6, 0.4, 0.3)),
           "cylinder": Cylinder(0.25, 0.5), "plane": Plane()}
PLANAR = {"circle": Circle(0.3), "segment": Segment(0.8, 0.1),
          "rectangle": Rectangle((0.6, 0.35)), "line": Line()}


def rotation(rng, d=3):
    if d == 2:
        a = rng.uniform(-np.pi, np.pi)
        return np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def pose(rng, d=3, spread=1.5):
    return rotation(rng, d), rng.uniform(-spread, spread, d)


# ------------------------------------------------------------------ the C twin
_HARNESS = r"""
#include "geometry.h"
int collide(int ka, const double *sa, const double *Ra, const double *pa, int kb,
            const double *sb, const double *Rb, const double *pb, int *ids, double *rows) {
    mbg_contact out[MBG_MAX_POINTS];
    int m = mbg_collide(ka, sa, Ra, pa, kb, sb, Rb, pb, out);
    for (int k = 0; k < m; k++) {
        ids[k] = out[k].id;
        for (int i = 0; i < 3; i++) {
            rows[10 * k + i] = out[k].pa[i];
            rows[10 * k + 3 + i] = out[k].pb[i];
            rows[10 * k + 6 + i] = out[k].n[i];
        }
        rows[10 * k + 9] = out[k].gap;
    }
    return m;
}
"""


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("geometry")
    (d / "harness.c").write_text(_HARNESS)
    so = d / "harness.so"
    subprocess.run([cc, "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-Wall", "-Werror",
                    f"-I{NATIVE}", str(d / "harness.c"), "-o", str(so), "-lm"], check=True)
    lib = ctypes.CDLL(str(so))
    lib.collide.restype = ctypes.c_int

    def run(a, Ra, pa, b, Rb, pb):
        ids = np.zeros(200, np.intc)
        rows = np.zeros((200, 10))
        arr = [np.ascontiguousarray(v, float) for v in
               (list(a.size) or [0.0], Ra, pa, list(b.size) or [0.0], Rb, pb)]
        P = ctypes.c_void_p
        m = lib.collide(sh.KIND_CODES[a.kind], P(arr[0].ctypes.data), P(arr[1].ctypes.data),
                        P(arr[2].ctypes.data), sh.KIND_CODES[b.kind], P(arr[3].ctypes.data),
                        P(arr[4].ctypes.data), P(arr[5].ctypes.data), P(ids.ctypes.data),
                        P(rows.ctypes.data))
        return m, ids[:max(m, 0)], rows[:max(m, 0)]
    return run


def all_pairs():
    for table in (SPATIAL, PLANAR):
        for ka in table:
            for kb in table:
                if sh.supported(ka, kb):
                    yield table[ka], table[kb]


@pytest.mark.parametrize("a,b", list(all_pairs()), ids=lambda s: s.kind)
def test_c_equals_python(native, a, b):
    rng = np.random.default_rng(hash((a.kind, b.kind)) % 2 ** 32)
    d = 3 if a.kind in sh.SPATIAL_KINDS else 2
    for _ in range(60):
        (Ra, pa), (Rb, pb) = pose(rng, d, 0.6), pose(rng, d, 0.6)
        ref = collide(a, Ra, pa, b, Rb, pb)
        m, ids, rows = native(a, Ra, pa, b, Rb, pb)
        assert m == len(ref)
        assert list(ids) == [c.id for c in ref]
        for c, row in zip(ref, rows):
            got = np.concatenate([c.point_a, c.point_b, c.normal])
            assert np.abs(row[:9].reshape(3, 3)[:, :d] - got.reshape(3, d)).max() < 1e-12
            assert abs(row[9] - c.gap) < 1e-12


def test_c_refuses_unknown_pairs(native):
    I3, I2 = np.eye(3), np.eye(2)
    assert native(Plane(), I3, np.zeros(3), Plane(), I3, np.zeros(3))[0] == -1
    assert native(Cylinder(1, 1), I3, np.zeros(3), Box((1, 1, 1)), I3, np.zeros(3))[0] == -1
    assert native(Sphere(1), I3, np.zeros(3), Circle(1), I2, np.zeros(2))[0] == -1
    with pytest.raises(ValueError, match="no contact between a cylinder and a box"):
        collide(Cylinder(1, 1), I3, np.zeros(3), Box((1, 1, 1)), I3, np.zeros(3))


# ------------------------------------------------------------------ independent distances
def _solid_points(s, R, p):
    """(n_params, bounds, point(params)) of the solid's core (its points less the radius)
    and that radius: a box's or rectangle's points, a capsule's or segment's core segment,
    a sphere's centre."""
    if s.kind in ("box", "rectangle"):
        h = 0.5 * np.asarray(s.size)
        return len(h), [(-x, x) for x in h], (lambda u: p + R @ u), 0.0
    if s.kind in ("capsule", "segment"):
        axis, half, r = ((R[:, 2], 0.5 * s.length, s.radius) if s.kind == "capsule"
                         else (R[:, 0], 0.5 * s.length, s.radius))
        return 1, [(-half, half)], (lambda u: p + u[0] * axis), r
    return 0, [], (lambda u: p), s.radius


def reference_distance(a, Ra, pa, b, Rb, pb, rng):
    """min |x_a - x_b| over the cores of a and b by L-BFGS-B from several starts, less the
    radii (separated shapes)."""
    na, ba, fa, ra = _solid_points(a, Ra, pa)
    nb, bb, fb, rb = _solid_points(b, Rb, pb)
    if na + nb == 0:
        return np.linalg.norm(pa - pb) - ra - rb

    def f(u):
        return np.sum((fa(u[:na]) - fb(u[na:])) ** 2)
    best = np.inf
    for _ in range(8):
        x0 = np.array([rng.uniform(lo, hi) for lo, hi in ba + bb])
        res = optimize.minimize(f, x0, method="L-BFGS-B", bounds=ba + bb,
                                options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 500})
        best = min(best, res.fun)
    return np.sqrt(max(best, 0.0)) - ra - rb


SEPARATED = [("sphere", "sphere"), ("sphere", "capsule"), ("capsule", "capsule"),
             ("capsule", "box"), ("sphere", "box"), ("box", "box"), ("circle", "circle"), ("circle", "segment"),
             ("segment", "segment"), ("circle", "rectangle"), ("segment", "rectangle"),
             ("rectangle", "rectangle")]


@pytest.mark.parametrize("ka,kb", SEPARATED)
def test_distance_against_optimisation(ka, kb):
    table = SPATIAL if ka in SPATIAL else PLANAR
    a, b = table[ka], table[kb]
    d = 3 if ka in SPATIAL else 2
    rng = np.random.default_rng(7)
    checked = 0
    while checked < 12:
        (Ra, pa), (Rb, pb) = pose(rng, d, 0.2), pose(rng, d, 0.2)
        pb = pb + rng.normal(size=d) / np.sqrt(d) * 1.4
        ref = reference_distance(a, Ra, pa, b, Rb, pb, rng)
        if ref < 0.02:
            continue                     # overlapping or touching: not this test
        got = collide(a, Ra, pa, b, Rb, pb)
        assert distance(a, Ra, pa, b, Rb, pb) == pytest.approx(ref, abs=1e-6)
        c = min(got, key=lambda c: c.gap)
        assert np.linalg.norm(c.point_b - c.point_a) == pytest.approx(ref, abs=1e-6)
        assert np.allclose(c.point_b - c.point_a, c.gap * c.normal, atol=1e-9)
        checked += 1


def _on_surface(s, R, p, x):
    """Signed distance of point x to the surface of shape s (zero on it)."""
    if s.kind in ("box", "rectangle"):
        return sh.point_box(x, R, p, 0.5 * np.asarray(s.size))[2]
    if s.kind in ("plane", "line"):
        return R[:, -1] @ (x - p)
    if s.kind == "cylinder":
        local = R.T @ (x - p)
        return max(np.hypot(local[0], local[1]) - s.radius, abs(local[2]) - 0.5 * s.length)
    na, ba, fa, r = _solid_points(s, R, p)
    if na == 0:
        return np.linalg.norm(x - p) - r
    e0, e1 = fa([ba[0][0]]), fa([ba[0][1]])
    return np.linalg.norm(x - sh._point_segment(x, e0, e1)) - r


@pytest.mark.parametrize("a,b", list(all_pairs()), ids=lambda s: s.kind)
def test_points_on_surfaces_symmetry_and_invariance(a, b):
    rng = np.random.default_rng(3)
    d = 3 if a.kind in sh.SPATIAL_KINDS else 2
    for _ in range(20):
        (Ra, pa), (Rb, pb) = pose(rng, d, 0.6), pose(rng, d, 0.6)
        got = collide(a, Ra, pa, b, Rb, pb)
        rev = collide(b, Rb, pb, a, Ra, pa)
        assert len(got) == len(rev)
        assert sorted(c.gap for c in got) == pytest.approx(sorted(c.gap for c in rev), abs=1e-12)
        if a.kind == b.kind:            # the ids name the features of the first shape first
            rev = got
        Q, t = pose(rng, d)
        moved = collide(a, Q @ Ra, Q @ pa + t, b, Q @ Rb, Q @ pb + t)
        for c, r, m in zip(got, rev, moved):
            assert np.linalg.norm(c.normal) == pytest.approx(1.0, abs=1e-12)
            if r is not c:
                assert c.id == r.id and c.gap == pytest.approx(r.gap, abs=1e-12)
                assert np.allclose(c.point_a, r.point_b, atol=1e-12)
                assert np.allclose(c.normal, -r.normal, atol=1e-12)
            assert m.id == c.id and m.gap == pytest.approx(c.gap, abs=1e-12)
            assert np.allclose(m.point_a, Q @ c.point_a + t, atol=1e-12)
            assert np.allclose(m.normal, Q @ c.normal, atol=1e-12)
        c = min(got, key=lambda c: c.gap)   # separated: the nearest points lie on the surfaces
        if c.gap <= 0.0:
            continue
        if a.kind not in ("plane", "line"):
            assert abs(_on_surface(a, Ra, pa, c.point_a)) < 1e-12
        if b.kind not in ("plane", "line"):
            assert abs(_on_surface(b, Rb, pb, c.point_b)) < 1e-12


def test_plane_against_rim_samples():
    """The cylinder's rim points are the lowest of each end circle (a dense sample agrees)."""
    rng = np.random.default_rng(11)
    cyl = Cylinder(0.25, 0.5)
    for _ in range(20):
        (Ra, pa), (Rb, pb) = pose(rng), pose(rng)
        n = Ra[:, 2]
        th = np.linspace(0, 2 * np.pi, 20001)
        for c, z in zip(collide(Plane(), Ra, pa, cyl, Rb, pb), (-0.25, 0.25)):
            rim = pb + z * Rb[:, 2] + 0.25 * (np.outer(np.cos(th), Rb[:, 0])
                                              + np.outer(np.sin(th), Rb[:, 1]))
            assert c.gap == pytest.approx(((rim - pa) @ n).min(), abs=1e-8)
            assert c.gap <= ((rim - pa) @ n).min() + 1e-14


def test_box_flat_on_a_plane_rests_on_four_corners():
    R = sh_rot = np.eye(3)
    got = collide(Plane(), R, np.zeros(3), Box((0.4, 0.2, 0.1)), sh_rot, np.array([0, 0, 0.05]))
    touching = [c.id for c in got if abs(c.gap) < 1e-15]
    assert touching == [0, 2, 4, 6]          # the corners with z sign -: bit 0 clear
    assert sorted(c.gap for c in got)[4:] == pytest.approx([0.1] * 4)


def test_box_on_a_box_face_to_face_and_edge_to_edge():
    I = np.eye(3)
    top = collide(Box((1, 1, 1)), I, np.zeros(3), Box((0.5, 0.5, 0.5)), I, [0.1, 0.2, 0.75])
    assert sorted(c.id for c in top if abs(c.gap) < 1e-15) == [8, 10, 12, 14]
    # two boxes turned 45 degrees about perpendicular axes meet edge to edge
    c45, s45 = np.cos(np.pi / 4), np.sin(np.pi / 4)
    Rx = np.array([[1, 0, 0], [0, c45, -s45], [0, s45, c45]])
    Ry = np.array([[c45, 0, s45], [0, 1, 0], [-s45, 0, c45]])
    gap = 0.01
    pb = np.array([0.0, 0.0, 2 * np.sqrt(2) / 2 + gap])
    got = collide(Box((1, 1, 1)), Rx, np.zeros(3), Box((1, 1, 1)), Ry, pb)
    best = min(got, key=lambda c: c.gap)
    assert best.id >= 16                     # an edge-edge feature
    assert best.gap == pytest.approx(gap, abs=1e-12)
    assert np.allclose(best.normal, [0, 0, 1], atol=1e-12)


def test_planar_rectangle_flat_on_a_line():
    got = collide(Line(), np.eye(2), np.zeros(2), Rectangle((0.6, 0.2)), np.eye(2),
                  np.array([0.3, 0.1]))
    assert [c.id for c in got if abs(c.gap) < 1e-15] == [0, 2]
