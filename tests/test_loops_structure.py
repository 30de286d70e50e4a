"""The loop solves that exploit the rows' structure (issue 33): the compiled kernel's envelope
Cholesky of S = Dq Mbar^-1 Dq' over the components the rows touch, its spectrum bound that keeps
Cholesky near singular poses when nothing would be cut off, and its LAPACK-free truncated eigen
solve (tridiagonal QL), against tmt (dense numpy) and numpy's eigen-decomposition."""
import numpy as np
import pytest

from fmu_mb import load_model
from fmu_mb.dynamics.formulations import tmt
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.linalg import RANK_RTOL, PROJECTION_RTOL, schur_solve

from conftest import MODELS


def truncated(S, rhs, rtol):
    w, V = np.linalg.eigh(S)
    keep = w > rtol * w.max()
    return V[:, keep] @ ((V[:, keep].T @ rhs) / w[keep][:, None])


@pytest.mark.parametrize("rtol", [RANK_RTOL, PROJECTION_RTOL])
def test_schur_solve_takes_cholesky_only_when_nothing_is_cut(rtol, monkeypatch):
    """Matrices that fail the pivot test: spectra spread over many decades with a gap of a
    decade around the cut-off, and spectra whose smallest eigenvalue is 20 x the cut-off:
    schur_solve equals the truncated eigen-decomposition whether its shifted factorisation
    lets Cholesky through (the second kind) or not (the first)."""
    import fmu_mb.linalg as linalg
    seen = []
    shifted = linalg._no_cut
    monkeypatch.setattr(linalg, "_no_cut", lambda *a: seen.append(shifted(*a)) or seen[-1])
    rng = np.random.default_rng(7)
    tested = 0
    for trial in range(60):
        if trial % 2:      # some below the cut, none within a decade of it
            m = int(rng.integers(2, 40))
            Q, _ = np.linalg.qr(rng.standard_normal((m, m)))
            w = 10.0 ** rng.uniform(np.log10(rtol) - 4.0, 0.0, m)
            w[np.abs(np.log10(w / (rtol * w.max()))) < 1.0] = 10.0 * rtol * w.max()
        else:              # one eigenvalue 20 x the cut, its vector near the last axis
            m = int(rng.integers(2, 12))
            Q, _ = np.linalg.qr(np.eye(m) + 0.2 * rng.standard_normal((m, m)))
            w = rng.uniform(0.1, 1.0, m)
            w[-1] = 20.0 * rtol * w.max()
        S = (Q * w) @ Q.T
        S = 0.5 * (S + S.T)
        try:
            d = np.diag(np.linalg.cholesky(S))
            if d.min() ** 2 > rtol * 1e2 * d.max() ** 2:
                continue           # the pivot test's Cholesky (unchanged, not tested here)
        except np.linalg.LinAlgError:
            pass
        tested += 1
        rhs = rng.standard_normal((m, 2))
        ref = truncated(S, rhs, rtol)
        y, _ = schur_solve(S, rhs, rtol)
        cond = w.max() / w[w > rtol * w.max()].min()
        # rounding amplified by the condition of the kept part, in every method (numpy's too)
        assert np.abs(y - ref).max() <= 1e-15 * m * cond * np.abs(ref).max(), trial
    assert tested > 20 and True in seen and False in seen      # both routes taken


def a02_state(N, theta):
    """The N-four-bar as a parallelogram with every crank at angle theta (theta = 0: the
    collinear pose, where the x rows of the loops vanish) turning at 1 rad/s."""
    m = load_model(str(MODELS / "n_four_bar.py"), N=N)
    names = tmt.coordinates(m)
    q = np.array([theta if n.startswith("O") else -theta if n.startswith("L") else 0.0
                  for n in names])
    qd = np.array([1.0 if n.startswith("O") else -1.0 if n.startswith("L") else 0.0
                   for n in names])
    return m, q, qd


@pytest.mark.parametrize("lapack", [True, False])
@pytest.mark.parametrize("theta", [0.4, 0.02, 2e-3, 0.0])
def test_a02_n40_kernel_solves_match_tmt_near_the_collinear_pose(theta, lapack):
    """N = 40 (80 rows in one chain of loops): the kernel's accelerations and multipliers
    (envelope Cholesky, the spectrum bound, or the truncated eigen solve by LAPACK's dsyev or
    by the kernel's own tridiagonal QL) equal tmt's dense numpy solve."""
    from fmu_mb.engine.kernel import _eigensolver, library, tree_kernel
    m, q, qd = a02_state(40, theta)
    ref = tmt.accelerations(m, q, qd, 0.0, np.zeros(0))
    k = tree_kernel(m)
    if not lapack:
        library().mbk_set_eigensolver(k.handle, None)
    try:
        dyn = get_formulation("recursive").accelerations(m, q, qd, 0.0, np.zeros(0))
    finally:
        library().mbk_set_eigensolver(k.handle, _eigensolver())
    scale = np.abs(ref.qdd).max()
    assert np.abs(dyn.qdd - ref.qdd).max() < 1e-9 * scale
    assert np.abs(dyn.lam_cut - ref.lam_cut).max() < 1e-8 * max(1.0, np.abs(ref.lam_cut).max())


@pytest.mark.parametrize("theta", [0.4, 2e-3])
def test_a02_n40_kernel_projection_matches_tmt(theta):
    """Newton projection of a perturbed state onto the 80 rows (least kinetic-energy steps):
    the kernel's result equals tmt's."""
    m, q, qd = a02_state(40, theta)
    rng = np.random.default_rng(3)
    y = np.concatenate([q + 1e-5 * rng.standard_normal(q.size),
                        qd + 1e-4 * rng.standard_normal(qd.size)])
    a, b = y.copy(), y.copy()
    get_formulation("recursive").project(m, a, 0.0, 1e-13)
    tmt.project(m, b, 0.0, 1e-13)
    assert np.abs(a - b).max() < 1e-10
