"""The banded eigen route of the truncated Schur solve (native/dense.h dense_band_solve: band
reduction to tridiagonal by plane rotations and the implicit QL on the right-hand sides,
O(m^2 b); fmu_mb.linalg.eigh_banded: scipy's eig_banded) against the dense eigen routes it
replaces for narrow bands (dense.h's Householder + QL, dense_tridiagonal_solve, and numpy's
eigh with fmu_mb.linalg.spectral_weights), through a small C harness compiled with dense.h.

Where the kept eigenvalues are well separated from the cut-off the routes agree to 1e-10
(relative): random banded positive semi-definite S with nearly dependent rows (cut off), and
the Schur complement of IFToMM A02 (N = 40) at its collinear pose, just off it (all 40
nearly dependent directions cut) and far from it. Where eigenvalues sit inside the smooth
cut-off's window, any two eigen-decompositions differ by their rounding, eps |S| per
eigenvalue, amplified by 1 / w: there the routes are compared in the energy norm
sqrt(dy' S dy) (the norm of the accelerations' change) against a bound of 100 eps times the
condition number of the kept part, which the existing dense routes (Householder + QL against
eigh) meet as well; the eigen-directions dropped and kept are the same.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import linalg
from fmu_mb.engine import engine as _engine
from fmu_mb.linalg import (PROJECTION_RTOL, RANK_RTOL, eigh_banded, filter_ends,
                           half_bandwidth, schur_solve, spectral_weights)

CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="needs a C compiler")
NATIVE = os.path.join(os.path.dirname(_engine.__file__), "native")
EPS = np.finfo(float).eps

HARNESS = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define OK 0
#define ERR_NONFINITE 3
#include "dense.h"
/* stdin: cases of "route m nrhs rtol S(m*m) rhs(nrhs*m)"; route 0: dense_band_solve,
 * 1: dense_tridiagonal_solve (Householder + QL), 2: dense_eigen_solve_n without LAPACK (the
 * native FMU's dispatch), 3: dense_psd_solve_env on S's lower envelope (the planar kernel's
 * call; the entries outside it overwritten). stdout per case: rc, bandwidth, ops, w (m,
 * sorted), y */
static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
int main(void)
{
    int route, m, nrhs;
    double rtol;
    while (scanf("%d %d %d %lf", &route, &m, &nrhs, &rtol) == 4) {
        double *S = malloc(sizeof(double) * m * m), *V = malloc(sizeof(double) * m * m);
        double *w = malloc(sizeof(double) * m), *b = malloc(sizeof(double) * m * nrhs);
        double *y = calloc((size_t)m * nrhs, sizeof(double)), ops = 0.0;
        for (int i = 0; i < m * m; i++)
            if (scanf("%lf", &S[i]) != 1) return 2;
        for (int i = 0; i < m * nrhs; i++)
            if (scanf("%lf", &b[i]) != 1) return 2;
        int rc, bw = dense_bandwidth(S, m);
        memcpy(y, b, sizeof(double) * m * nrhs);
        if (route == 0)
            rc = dense_band_solve(S, bw, V, w, m, rtol, nrhs, y, &ops);
        else if (route == 1)
            rc = dense_tridiagonal_solve(S, V, w, m, rtol, nrhs, y);
        else if (route == 2)
            rc = dense_eigen_solve_n(S, V, w, m, NULL, NULL, 0, rtol, nrhs, b, y, &ops);
        else {          /* S on its lower envelope, stale entries elsewhere (the kernel's S) */
            int *env = malloc(sizeof(int) * 2 * m);
            dense_envelope(S, m, env);
            for (int r = 0; r < m; r++)
                for (int l = 0; l < m; l++)
                    if (l < env[r] || l > r)
                        S[r * m + l] = 1e3 + r - l;
            rc = dense_psd_solve_env(S, env, V, w, m, NULL, NULL, 0, rtol, nrhs, b, y, &ops);
            free(env);
        }
        qsort(w, m, sizeof(double), cmp);
        printf("%d %d %.17g", rc, bw, ops);
        for (int i = 0; i < m; i++)
            printf(" %.17g", w[i]);
        for (int i = 0; i < m * nrhs; i++)
            printf(" %.17g", y[i]);
        printf("\n");
        free(S); free(V); free(w); free(b); free(y);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    d = tmp_path_factory.mktemp("band")
    src, exe = d / "h.c", d / "h"
    src.write_text(HARNESS)
    subprocess.run([CC, "-O2", "-ffp-contract=off", f"-I{NATIVE}", "-o", str(exe), str(src),
                    "-lm"], check=True)

    def run(route, S, B, rtol):
        m, k = B.shape
        text = (f"{route} {m} {k} {rtol!r} " + " ".join(map(repr, S.ravel().tolist())) + " "
                + " ".join(map(repr, B.T.ravel().tolist())) + "\n")
        f = subprocess.run([str(exe)], input=text, capture_output=True, text=True,
                           check=True).stdout.split()
        assert int(f[0]) == 0, "the C route failed"
        vals = np.array(f[3:], float)
        return {"bw": int(f[1]), "ops": float(f[2]), "w": vals[:m],
                "y": vals[m:].reshape(k, m).T}
    return run


def eigh_route(S, B, rtol, decompose=np.linalg.eigh):
    """schur_solve's eigen route: V diag(spectral_weights(w)) V' B."""
    w, V = decompose(S)
    return V @ (spectral_weights(w, rtol)[:, None] * (V.T @ B)), w


def rel(y, y0):
    return np.abs(y - y0).max() / np.abs(y0).max()


def energy(S, y, y0):
    """sqrt(dy' S dy) / sqrt(y0' S y0), the largest over the columns."""
    d = y - y0
    return np.sqrt(np.einsum("ij,ik,kj->j", d, S, d)
                   / np.einsum("ij,ik,kj->j", y0, S, y0)).max()


def kept_condition(w, rtol):
    """The largest eigenvalue over the smallest one the cut-off keeps (weight > 0)."""
    wmax = w.max()
    return wmax / w[w > filter_ends(rtol)[0] * wmax].min()


def random_banded(rng, m, b, near):
    """S = D D' (half-bandwidth b + 1) for banded rows D (m x m + b, row i on columns
    i .. i + b, diagonally dominant) with the rows in `near` replaced by a multiple of their
    predecessor plus 10^-9 times their own: m - len(near) eigenvalues of S of order 1 .. 10,
    len(near) at ~1e-18 of the largest (rows that have become dependent)."""
    D = np.zeros((m, m + b))
    for i in range(m):
        D[i, i:i + b + 1] = rng.uniform(-0.5, 0.5, b + 1)
        D[i, i] += 2.0
    for i in near:
        D[i] = rng.uniform(0.5, 2.0) * D[i - 1] + 1e-9 * D[i]
    return D @ D.T


def test_the_band_choice_is_linalgs():
    """dense.h's DENSE_BAND_WIDEST and DENSE_BAND_FEWEST are fmu_mb.linalg's
    BAND_EIGEN_WIDEST and SMALL: both sides take the band route for the same matrices."""
    text = (Path(NATIVE) / "dense.h").read_text()
    widest = re.findall(r"#define DENSE_BAND_WIDEST ([0-9.eE+-]+)", text)
    fewest = re.findall(r"#define DENSE_BAND_FEWEST ([0-9]+)", text)
    assert [float(v) for v in widest] == [linalg.BAND_EIGEN_WIDEST]
    assert [int(v) for v in fewest] == [linalg.SMALL]


@pytest.mark.parametrize("seed", range(6))
def test_band_route_equals_the_dense_eigen_route_on_random_bands(harness, seed):
    """Random banded S (m = 30 .. 90, half-bandwidth 2 .. 6) with 2 .. 6 nearly dependent
    rows, two right-hand sides, both cut-offs: the band route of C and of Python equal the
    dense eigen routes to 1e-10, with the same eigenvalues (to 1e-12 of the largest) and the
    same number of eigen-directions cut off; dense_eigen_solve_n takes the band route (the
    same numbers, bit for bit) and charges fewer operations than the Householder route."""
    rng = np.random.default_rng(seed)
    m, b = int(rng.integers(30, 91)), int(rng.integers(1, 6))
    near = np.sort(rng.choice(np.arange(1, m), size=int(rng.integers(2, 7)), replace=False))
    S = random_banded(rng, m, b, near)
    b = half_bandwidth(S)                   # b + 1: a dependent row reaches one row back
    B = rng.normal(size=(m, 2))
    for rtol in (RANK_RTOL, PROJECTION_RTOL):
        y0, w0 = eigh_route(S, B, rtol)
        yp, wp = eigh_route(S, B, rtol, eigh_banded)
        band, dense, chosen = (harness(r, S, B, rtol) for r in (0, 1, 2))
        assert band["bw"] == b
        for y in (band["y"], dense["y"], yp):
            assert rel(y, y0) < 1e-10, rel(y, y0)
        assert rel(band["y"], yp) < 1e-10
        for w in (band["w"], dense["w"], wp):
            assert np.abs(np.sort(w) - w0).max() < 1e-12 * w0.max()
        lo = filter_ends(rtol)[0] * w0.max()
        assert np.sum(band["w"] <= lo) == np.sum(w0 <= lo) == len(near)
        assert np.array_equal(chosen["y"], band["y"]) and chosen["ops"] == band["ops"]
        assert band["ops"] < m * m * (4 / 3 * m + 40 + 16 * 2)     # the Householder's charge
        assert schur_solve(S, B, rtol)[1] == m - len(near)


def test_wide_bands_keep_the_dense_route(harness):
    """A band wider than BAND_EIGEN_WIDEST x m (and any S of at most SMALL rows) takes the
    Householder route in C, bit for bit, and numpy's eigh in Python."""
    rng = np.random.default_rng(7)
    for m, b in ((40, 11), (20, 2)):
        S = random_banded(rng, m, b, [5, 9])
        B = rng.normal(size=(m, 1))
        dense, chosen = harness(1, S, B, RANK_RTOL), harness(2, S, B, RANK_RTOL)
        assert np.array_equal(chosen["y"], dense["y"])
        w, V = eigh_banded(S)
        w0, V0 = np.linalg.eigh(S)
        assert np.array_equal(w, w0) and np.array_equal(V, V0)


@pytest.mark.parametrize("seed", range(3))
def test_the_kernels_envelope_call_is_the_band_route(harness, seed):
    """dense_psd_solve_env given S on its lower envelope (the planar kernel's S, whose other
    entries are stale) takes the band route on the envelope without completing S: the same
    numbers as dense_eigen_solve_n on the full S, bit for bit, for random bands with nearly
    dependent rows and A02 N = 20 near its collinear pose."""
    rng = np.random.default_rng(20 + seed)
    m = int(rng.integers(30, 91))
    cases = [random_banded(rng, m, int(rng.integers(1, 6)), [5, 17, m - 3])]
    if seed == 0:
        cases.append(a02_schur(20, -3 * np.pi + 5e-4))
    for i, S in enumerate(cases):
        B = rng.normal(size=(S.shape[0], 2))
        # (A02 at PROJECTION_RTOL: no eigenvalue cut off, Cholesky)
        for rtol in (RANK_RTOL, PROJECTION_RTOL) if i == 0 else (RANK_RTOL,):
            full, env = harness(2, S, B, rtol), harness(3, S, B, rtol)
            assert np.array_equal(env["y"], full["y"])
            assert np.array_equal(env["w"], full["w"])
            if i == 0:      # (A02 at 5e-4 rad: eigenvalues inside the window, see below)
                assert rel(env["y"], eigh_route(S, B, rtol)[0]) < 1e-10


@pytest.mark.parametrize("m, b", [(30, 6), (40, 9), (100, 3)])
def test_band_rotations_in_the_workspace_or_their_own_buffer(harness, m, b):
    """The band reduction keeps its rotations in the m x m workspace after the band when
    they fit (about m^2 (b - 1) / (2 b) of them, 2 numbers each, beside m (b + 2) for the
    band: m >= ~b^2 + 2b, here m = 100, b + 1 = 4) and in a buffer of its own otherwise
    (m = 30, 40 with the widest bands taken as bands): the same results as the dense routes
    either way, both cut-offs."""
    rng = np.random.default_rng(m + b)
    S = random_banded(rng, m, b - 1, [4, m // 2, m - 2])
    assert half_bandwidth(S) == b and b <= linalg.BAND_EIGEN_WIDEST * m
    B = rng.normal(size=(m, 2))
    for rtol in (RANK_RTOL, PROJECTION_RTOL):
        y0, w0 = eigh_route(S, B, rtol)
        band, dense = harness(0, S, B, rtol), harness(1, S, B, rtol)
        assert rel(band["y"], y0) < 1e-10 and rel(dense["y"], y0) < 1e-10
        assert np.abs(np.sort(band["w"]) - w0).max() < 1e-12 * w0.max()


def test_band_route_in_the_cut_offs_window(harness):
    """Nearly dependent rows whose eigenvalues lie inside the multipliers' smooth cut-off
    (between FILTER_WIDTH x RANK_RTOL and RANK_RTOL of the largest): the weights there depend
    on the eigenvalues, which any two decompositions compute to eps |S|, so the solutions are
    compared in the energy norm against 100 eps times the kept part's condition number; the
    existing Householder route meets the same bound against numpy's eigh."""
    rng = np.random.default_rng(11)
    m, b = 60, 3
    D = np.zeros((m, m + b))
    for i in range(m):
        D[i, i:i + b + 1] = rng.uniform(-0.5, 0.5, b + 1)
        D[i, i] += 2.0
    for i, delta in ((10, 3.5e-4), (30, 4.5e-4), (50, 3.0e-4)):
        D[i] = D[i - 1] + delta * D[i]
    S = D @ D.T
    B = rng.normal(size=(m, 2))
    y0, w0 = eigh_route(S, B, RANK_RTOL)
    lo, hi = (e * w0.max() for e in filter_ends(RANK_RTOL))
    assert np.sum((w0 > lo) & (w0 < hi)) >= 2       # inside the window
    bound = 100 * EPS * kept_condition(w0, RANK_RTOL)
    band, dense = harness(0, S, B, RANK_RTOL), harness(1, S, B, RANK_RTOL)
    yp, _ = eigh_route(S, B, RANK_RTOL, eigh_banded)
    for y in (band["y"], dense["y"], yp):
        assert energy(S, y, y0) < bound, (energy(S, y, y0), bound)
    wp = eigh_banded(S)[0]
    for w in (band["w"], wp):
        assert np.sum(w <= lo) == np.sum(w0 <= lo)
        assert np.sum(w < hi) == np.sum(w0 < hi)
    assert np.abs(np.sort(wp) - w0).max() < 1e-13 * w0.max()


def a02_schur(N, theta):
    """S = Dq Mbar^-1 Dq' of IFToMM A02 (models/n_four_bar.py) on its parallelogram branch at
    crank angle theta, from tmt's terms (joint coordinates, loop rows in declared order)."""
    from conftest import model
    from fmu_mb.dynamics.formulations import tmt
    from fmu_mb.mechanics import constraints
    from fmu_mb.mechanics.tree import tree_map

    m = model("n_four_bar", N=N)
    names = tmt.coordinates(m)
    q = np.array([theta if n.startswith("O") else -theta if n.startswith("L") else 0.0
                  for n in names])
    x, _, Tq, _ = tmt.kinematics(m, q, np.zeros(len(q)))
    _, D, _, _ = constraints.evaluate(m, x, np.zeros_like(x), 0.0, need_conv=False)
    Dq = D[tree_map(m).cut_rows] @ Tq
    Mbar = Tq.T @ (m.compiled.mass_diag[:, None] * Tq)
    S = Dq @ np.linalg.solve(Mbar, Dq.T)
    return 0.5 * (S + S.T)


@pytest.mark.parametrize("offset", [0.0, 3e-5, 1e-1])
def test_a02_rows_at_and_near_the_collinear_pose(harness, offset):
    """A02, N = 40 (80 loop rows, half-bandwidth 3) at the collinear pose theta = -3 pi, 3e-5 rad
    from it (all 40 nearly dependent directions below the multipliers' cut-off) and 0.1 rad
    from it: C's band route, Python's eig_banded and the dense routes (Householder + QL,
    numpy's eigh) to 1e-10, with the same eigen-directions cut off at both cut-offs."""
    S = a02_schur(40, -3 * np.pi + offset)
    m = S.shape[0]
    assert m == 80 and half_bandwidth(S) <= 0.25 * m
    B = np.random.default_rng(3).normal(size=(m, 3))
    rtols = (RANK_RTOL, PROJECTION_RTOL) if offset != 3e-5 else (RANK_RTOL,)
    for rtol in rtols:
        y0, w0 = eigh_route(S, B, rtol)
        yp, wp = eigh_route(S, B, rtol, eigh_banded)
        band, dense, chosen = (harness(r, S, B, rtol) for r in (0, 1, 2))
        for y in (band["y"], dense["y"], yp):
            assert rel(y, y0) < 1e-10, (rtol, rel(y, y0))
        assert rel(band["y"], yp) < 1e-10
        lo = filter_ends(rtol)[0] * w0.max()
        assert np.sum(band["w"] <= lo) == np.sum(wp <= lo) == np.sum(w0 <= lo)
        assert np.array_equal(chosen["y"], band["y"])
    if offset < 1e-3:
        assert np.sum(w0 <= filter_ends(RANK_RTOL)[0] * w0.max()) == 40


@pytest.mark.parametrize("offset", [1e-3, 3e-4])
def test_a02_rows_inside_the_window(harness, offset):
    """A02, N = 40 at 1e-3 and 3e-4 rad from the collinear pose, where 4 to 20 of S's
    eigenvalues lie inside the multipliers' smooth cut-off: C's band route and Python's
    eig_banded against numpy's eigh in the energy norm (100 eps x the kept part's condition
    number, which the Householder route meets too), the same eigen-directions dropped (below
    the window) and weighted (inside it)."""
    S = a02_schur(40, -3 * np.pi + offset)
    B = np.random.default_rng(5).normal(size=(S.shape[0], 2))
    y0, w0 = eigh_route(S, B, RANK_RTOL)
    lo, hi = (e * w0.max() for e in filter_ends(RANK_RTOL))
    assert np.sum((w0 > lo) & (w0 < hi)) >= 4
    bound = 100 * EPS * kept_condition(w0, RANK_RTOL)
    band, dense = harness(0, S, B, RANK_RTOL), harness(1, S, B, RANK_RTOL)
    yp, wp = eigh_route(S, B, RANK_RTOL, eigh_banded)
    for y in (band["y"], dense["y"], yp):
        assert energy(S, y, y0) < bound, (energy(S, y, y0), bound)
    for w in (band["w"], wp):
        assert np.sum(w <= lo) == np.sum(w0 <= lo)
        assert np.sum(w < hi) == np.sum(w0 < hi)
