"""The re-split of redundant contact multipliers of the compiled kernels (native/dense.h
dense_contact_split: the contacts' part of minimum norm, the loops' rows taking up the rest)
against the Python loop's fmu_mb.linalg.contact_split, through a small C harness compiled with
dense.h, on random rows (joint coordinates, loop rows first, then contact rows) with
dependent combinations of both kinds of rows, of the contacts' rows alone, and none; with
fewer contact rows than coordinates and more (the two sizes of its Gram matrix)."""
import os
import shutil
import subprocess

import numpy as np
import pytest

from fmu_mb.engine import engine as _engine
from fmu_mb.linalg import RANK_RTOL, contact_split

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
/* stdin: cases of "m mj nv nrhs D(m*nv) y(nrhs*m)"; stdout per case: rc, then y */
int main(void)
{
    int m, mj, nv, nrhs;
    while (scanf("%d %d %d %d", &m, &mj, &nv, &nrhs) == 4) {
        double *D = malloc(sizeof(double) * m * nv), *y = malloc(sizeof(double) * m * nrhs);
        for (int i = 0; i < m * nv; i++)
            if (scanf("%lf", &D[i]) != 1) return 2;
        for (int i = 0; i < m * nrhs; i++)
            if (scanf("%lf", &y[i]) != 1) return 2;
        double ops = 0.0;
        int rc = dense_contact_split(D, m, mj, nv, RANK_RTOL, nrhs, y, &ops);
        printf("%d", rc);
        for (int i = 0; i < m * nrhs; i++)
            printf(" %.17g", y[i]);
        printf("\n");
        free(D); free(y);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def split_c(tmp_path_factory):
    d = tmp_path_factory.mktemp("split")
    src, exe = d / "h.c", d / "h"
    src.write_text(HARNESS)
    subprocess.run([CC, "-O2", "-ffp-contract=off", f"-I{NATIVE}", "-o", str(exe), str(src),
                    "-lm"], check=True)

    def run(cases):
        text = "".join(f"{D.shape[0]} {mj} {D.shape[1]} {y.shape[1]} "
                       + " ".join(map(repr, D.ravel().tolist())) + " "
                       + " ".join(map(repr, y.T.ravel().tolist())) + "\n"
                       for D, mj, y in cases)
        out = subprocess.run([str(exe)], input=text, capture_output=True, text=True,
                             check=True).stdout.split("\n")
        res = []
        for (D, mj, y), line in zip(cases, out):
            f = line.split()
            assert int(f[0]) == 0
            res.append(np.array(f[1:], float).reshape(y.shape[1], -1).T)
        return res
    return run


def _rows(rng, nv, mj, mc, mixed, own):
    """(D, mj): mj loop rows of rank mj - 1 (one redundant), mc contact rows of which `mixed`
    lie in the loop rows' span (a load the loop can take up) and `own` repeat other contact
    rows' combinations (the contacts' own redundancy); the others random (with mc > nv - mj
    they too combine with the loop's rows)."""
    Dj = rng.normal(size=(mj, nv))
    Dj[-1] = Dj[0] - 0.5 * Dj[1]
    Dc = rng.normal(size=(mc, nv))
    for i in range(mixed):
        Dc[i] = rng.normal(size=mj - 1) @ Dj[:mj - 1]
    for i in range(mixed, mixed + own):
        Dc[i] = rng.normal(size=2) @ Dc[mixed + own:mixed + own + 2]
    return np.vstack([Dj, Dc]), mj


CASES = [(6, 3, 10, 2, 2), (6, 3, 4, 1, 1), (9, 5, 12, 3, 4), (3, 2, 8, 1, 3),
         (5, 3, 6, 0, 2)]


@pytest.mark.parametrize("seed", range(4))
def test_contact_split_c_equals_python(split_c, seed):
    """Every column of multipliers (a minimum-norm solve's and random ones): the C split equals
    linalg.contact_split's to 1e-10 (relative to the largest multiplier), keeps the
    generalised force D' y, and makes the contacts' part smaller."""
    rng = np.random.default_rng(seed)
    cases, refs = [], []
    for nv, mj, mc, mixed, own in CASES:
        D, mj = _rows(rng, nv, mj, mc, mixed, own)
        lam = np.linalg.pinv(D.T) @ rng.normal(size=nv)        # a minimum-norm solve's
        y = np.column_stack([lam, rng.normal(size=D.shape[0])])
        cases.append((D, mj, y))
        refs.append(np.column_stack([contact_split(D, mj, y[:, c]) for c in range(2)]))
    for (D, mj, y), ref, got in zip(cases, refs, split_c(cases)):
        scale = np.abs(ref).max()
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10 * scale)
        np.testing.assert_allclose(D.T @ got, D.T @ y, rtol=0, atol=1e-10 * scale)
        if not np.array_equal(ref, y):
            # the contacts' part is smaller than before, and no other one with the same
            # force is smaller still: orthogonal to the contacts' parts the loop can absorb
            assert np.linalg.norm(got[mj:]) < np.linalg.norm(y[mj:])
        else:
            np.testing.assert_array_equal(got, y)


def test_contact_split_without_mixed_combinations_keeps_every_bit(split_c):
    """The loop's rows on three coordinates, the contacts' (10 rows of rank 3) on the other
    three: only the contacts' own dependent combinations, which the minimum-norm solve has
    already used; nothing to re-split."""
    rng = np.random.default_rng(7)
    Dj = np.hstack([rng.normal(size=(3, 3)), np.zeros((3, 3))])
    Dc = np.hstack([np.zeros((10, 3)), rng.normal(size=(10, 3))])
    D = np.vstack([Dj, Dc])
    y = np.linalg.pinv(D.T) @ rng.normal(size=(6, 2))
    got, = split_c([(D, 3, y)])
    np.testing.assert_array_equal(got, y)
    np.testing.assert_array_equal(contact_split(D, 3, y[:, 0]), y[:, 0])


def test_contact_split_frees_the_load_the_loop_can_take(split_c):
    """Two contact rows equal to the loop's one row: the contacts' minimum-norm part is 0, the
    loop row takes the whole force."""
    D = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    y = np.array([[0.5, 1.0, 1.5, 2.0]]).T
    got, = split_c([(D, 1, y)])
    np.testing.assert_allclose(got[:, 0], [3.0, 0.0, 0.0, 2.0], rtol=0, atol=1e-14)
