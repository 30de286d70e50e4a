"""The minimum-norm solve of native/dense.h by the pivoted Cholesky factorisation
(dense_pc_minnorm, used by the spatial kernel before the eigen-decomposition for redundant
contact rows) against numpy's truncated eigen-decomposition (the rule of
fmu_mb.linalg.schur_solve: eigenvalues below RANK_RTOL * max dropped), through a small C
harness compiled with dense.h: when it accepts a matrix, its solution equals the eigen route's
to 1e-10 relative; it hands back (0) a matrix whose eigenvalues do not split cleanly at the
cut-off, a full-rank one, and one larger than its stack workspace."""
import os
import shutil
import subprocess

import numpy as np
import pytest

from fmu_mb.engine import engine as _engine
from fmu_mb.linalg import RANK_RTOL

CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="needs a C compiler")
NATIVE = os.path.join(os.path.dirname(_engine.__file__), "native")

HARNESS = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define OK 0
#define ERR_NONFINITE 3
#include "dense.h"
/* stdin: cases of "m nrhs S(m*m) rhs(nrhs*m)"; stdout per case: accepted, then y */
int main(void)
{
    int m, nrhs;
    while (scanf("%d %d", &m, &nrhs) == 2) {
        double *S = malloc(sizeof(double) * m * m), *V = malloc(sizeof(double) * m * m);
        double *b = malloc(sizeof(double) * m * nrhs), *y = calloc((size_t)m * nrhs, 8);
        for (int i = 0; i < m * m; i++)
            if (scanf("%lf", &S[i]) != 1) return 2;
        for (int i = 0; i < m * nrhs; i++)
            if (scanf("%lf", &b[i]) != 1) return 2;
        int ok = dense_pc_minnorm(S, V, m, RANK_RTOL, nrhs, b, y);
        printf("%d", ok);
        for (int i = 0; i < m * nrhs; i++)
            printf(" %.17g", y[i]);
        printf("\n");
        free(S); free(V); free(b); free(y);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    d = tmp_path_factory.mktemp("dense")
    src, exe = d / "h.c", d / "h"
    src.write_text(HARNESS)
    subprocess.run([CC, "-O2", "-ffp-contract=off", f"-I{NATIVE}", "-o", str(exe), str(src),
                    "-lm"], check=True)

    def run(cases):
        text = "".join(f"{S.shape[0]} {b.shape[1]} " + " ".join(map(repr, S.ravel().tolist()))
                       + " " + " ".join(map(repr, b.T.ravel().tolist())) + "\n"
                       for S, b in cases)
        out = subprocess.run([str(exe)], input=text, capture_output=True, text=True,
                             check=True).stdout.split("\n")
        res = []
        for (S, b), line in zip(cases, out):
            f = line.split()
            res.append((int(f[0]), np.array(f[1:], float).reshape(b.shape[1], -1).T))
        return res
    return run


def eig_minnorm(S, b):
    """fmu_mb.linalg.schur_solve's eigen route: the truncated pseudo-inverse."""
    w, V = np.linalg.eigh(S)
    keep = w > RANK_RTOL * max(w.max(), 1e-300)
    return V[:, keep] @ ((V[:, keep].T @ b) / w[keep][:, None])


def box_rows(pose_seed=0):
    """A box of 2 kg resting on four sticking corners of a plane (normal z, tangents x, y):
    the 4 normal and 8 tangential rows of its velocity (v, w) at the corners, S = D M^-1 D'
    (12 x 12, rank 6)."""
    rng = np.random.default_rng(pose_seed)
    a, b, c, m = 0.4, 0.25, 0.15, 2.0
    J = np.diag([m * (b * b + c * c), m * (a * a + c * c), m * (a * a + b * b)]) / 12.0
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    Jg = Q @ J @ Q.T if pose_seed else J
    rows = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            rho = np.array([sx * a / 2, sy * b / 2, -c / 2])
            for e in np.eye(3):            # v + w x rho along e: e . v + (rho x e) . w
                rows.append(np.concatenate([e, np.cross(rho, e)]))
    D = np.array(rows)
    Minv = np.zeros((6, 6))
    Minv[:3, :3] = np.eye(3) / m
    Minv[3:, 3:] = np.linalg.inv(Jg)
    return D @ Minv @ D.T, D


def test_accepted_solutions_equal_the_truncated_eigen_decomposition(harness):
    rng = np.random.default_rng(36)
    cases = []
    for k in range(400):
        m = int(rng.integers(2, 25))
        r = int(rng.integers(1, m))
        # the first 200: Gaussian factors (a clean gap, as redundant contact rows have); the
        # others with columns scaled over 4 decades (eigenvalues near the cut-off: some are
        # handed back)
        G = rng.normal(size=(m, r)) * (10.0 ** rng.uniform(-2, 2, size=r) if k >= 200 else 1.0)
        S = (G @ G.T) * 10.0 ** rng.uniform(-3, 3)
        nrhs = int(rng.integers(1, 4))
        if rng.random() < 0.5:             # consistent: rhs in the range of S
            b = S @ rng.normal(size=(m, nrhs))
        else:                              # least squares
            b = rng.normal(size=(m, nrhs))
        cases.append((S, b))
    for seed in range(20):                 # the box on four sticking corners
        S, D = box_rows(seed)
        cases.append((S, S @ rng.normal(size=(12, 2))))
    res = harness(cases)
    accepted = 0
    for (S, b), (ok, y) in zip(cases, res):
        if not ok:
            continue
        accepted += 1
        ref = eig_minnorm(S, b)
        assert np.abs(y - ref).max() <= 1e-10 * np.abs(ref).max(), (S.shape, np.abs(y - ref).max())
    assert sum(ok for ok, _ in res[:200]) >= 190 and accepted >= 250
    assert all(ok for ok, _ in res[-20:])          # every box pose


def test_the_box_rows_give_the_minimum_norm_forces(harness):
    """Four corners share a vertical load equally (the minimum-norm split), with no
    tangential force."""
    S, D = box_rows(0)
    b = np.zeros((12, 1))
    b[2::3, 0] = 1.0                       # every corner's normal row: the same rate
    (ok, y), = harness([(S, b)])
    ref = eig_minnorm(S, b)
    assert ok and np.allclose(y, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    assert np.allclose(y[2::3], y[2, 0], rtol=1e-12) and np.abs(y[0::3]).max() < 1e-12 * abs(y[2, 0])


def test_unclean_rank_gaps_are_handed_to_the_eigen_decomposition(harness):
    rng = np.random.default_rng(7)
    Q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    near = Q @ np.diag([1.0, 0.5, 0.2, 0.1, 5e-8, 0.0, 0.0, 0.0]) @ Q.T   # one at the cut
    full = Q @ np.diag(np.linspace(1.0, 2.0, 8)) @ Q.T                     # full rank
    G = rng.normal(size=(50, 10))
    big = G @ G.T                                                          # m > DENSE_PC_MAX
    zero = np.zeros((4, 4))
    res = harness([(near, rng.normal(size=(8, 1))), (full, rng.normal(size=(8, 1))),
                   (big, rng.normal(size=(50, 1))), (zero, np.ones((4, 1)))])
    assert [ok for ok, _ in res] == [0, 0, 0, 0]
