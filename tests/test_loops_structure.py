"""The loop solves that exploit the rows' structure: the compiled kernel's envelope
Cholesky of S = Dq Mbar^-1 Dq' over the components the rows touch, its spectrum bound that keeps
Cholesky near singular poses when nothing would be cut off, and its LAPACK-free truncated eigen
solve (tridiagonal QL), against tmt (dense numpy) and numpy's eigen-decomposition."""
import numpy as np
import pytest

from fmu_mb import load_model
from fmu_mb.dynamics.formulations import tmt
from fmu_mb.dynamics.formulations import get_formulation
from fmu_mb.linalg import FILTER_WIDTH, RANK_RTOL, PROJECTION_RTOL, filter_ends, schur_solve

from conftest import MODELS


def truncated(S, rhs, rtol):
    """S^+ rhs by numpy's eigen-decomposition with the rule of schur_solve written out: for the
    multipliers' cut-off cut = rtol max(w) a smooth step, in log w, from weight 0 at
    cut x FILTER_WIDTH to 1 at cut (10 x^3 - 15 x^4 + 6 x^5); a hard cut at cut for the
    projections'."""
    w, V = np.linalg.eigh(S)
    cut = rtol * w.max()
    lo, hi = (cut * FILTER_WIDTH, cut) if rtol == RANK_RTOL else (cut, cut)
    keep = w > lo
    x = np.ones(keep.sum())
    if hi > lo:
        x = np.clip(np.log(w[keep] / lo) / np.log(hi / lo), 0.0, 1.0)
    step = 10 * x ** 3 - 15 * x ** 4 + 6 * x ** 5
    return V[:, keep] @ ((V[:, keep].T @ rhs) * (step / w[keep])[:, None])


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
        else:              # one eigenvalue 20 x the top of the smooth cut-off, its vector
            m = int(rng.integers(2, 12))               # near the last axis
            Q, _ = np.linalg.qr(np.eye(m) + 0.2 * rng.standard_normal((m, m)))
            w = rng.uniform(0.1, 1.0, m)
            w[-1] = 20.0 * filter_ends(rtol)[1] * w.max()
        S = (Q * w) @ Q.T
        S = 0.5 * (S + S.T)
        try:
            d = np.diag(np.linalg.cholesky(S))
            if d.min() ** 2 > filter_ends(rtol)[1] * 1e2 * d.max() ** 2:
                continue           # the pivot test's Cholesky (unchanged, not tested here)
        except np.linalg.LinAlgError:
            pass
        tested += 1
        rhs = rng.standard_normal((m, 2))
        ref = truncated(S, rhs, rtol)
        y, _ = schur_solve(S, rhs, rtol)
        cond = w.max() / w[w > filter_ends(rtol)[0] * w.max()].min()
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
    (envelope Cholesky, the spectrum bound, or the truncated eigen solve: dense.h's band route
    for this band of half-width 3, with or without LAPACK) equal tmt's numpy/scipy solve. At
    theta = 2e-3 eigenvalues of S lie inside the multipliers' smooth cut-off (down to 3e-9 of
    the largest): the multipliers along those directions carry the rounding of any
    eigen-decomposition amplified by 1 / w, eps x 3e8 ~ 7e-8 relative (the band route
    2.8e-8, LAPACK's dsyev 4.4e-9 from numpy's eigh), so they are compared to 1e-7 there;
    the accelerations, which those directions hardly move, to 1e-9 everywhere."""
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
    lam_tol = 1e-7 if theta == 2e-3 else 1e-8
    assert np.abs(dyn.lam_cut - ref.lam_cut).max() < lam_tol * max(1.0, np.abs(ref.lam_cut).max())


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


def test_the_cut_off_is_smooth_and_leaves_the_rest_unchanged():
    """An eigenvalue of S swept through the multipliers' cut-off: schur_solve's solution changes
    continuously (no step of the hard cut's size between neighbouring sweeps); eigenvalues
    above the smooth window and exactly redundant rows (eigenvalues at rounding) give the hard
    truncated solution to 1e-12; the weights are 0 at or below FILTER_WIDTH x the cut-off
    and 1 / w above the cut-off."""
    from fmu_mb.linalg import spectral_weights
    rng = np.random.default_rng(11)
    m = 12
    Q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    w = rng.uniform(0.2, 1.0, m)
    w[0] = 1.0
    rhs = rng.standard_normal(m)
    cut = RANK_RTOL
    lo, hi = (e * cut / RANK_RTOL for e in filter_ends(RANK_RTOL))
    sweep = np.logspace(np.log10(lo) - 1.0, np.log10(hi) + 1.0, 2001)
    ys = []
    for small in sweep:
        w[-1] = small
        ys.append(schur_solve((Q * w) @ Q.T, rhs)[0])
    ys = np.array(ys)
    jump = abs(Q[:, -1] @ rhs) / cut                  # what the hard cut jumps by at w = cut
    steps = np.abs(np.diff(ys, axis=0)).max(axis=1)
    assert steps.max() < 0.02 * jump
    # away from the window: the hard truncated eigen solution (w above cut: all kept)
    for small, expect_keep in ((3.0 * hi, True), (0.5 * lo, False), (1e-17, False)):
        w[-1] = small
        S = (Q * w) @ Q.T
        ref = truncated(S, rhs[:, None], RANK_RTOL)[:, 0]
        hard = np.linalg.pinv(S, rcond=hi if expect_keep else lo, hermitian=True) @ rhs
        y = schur_solve(S, rhs)[0]
        assert np.abs(y - hard).max() <= 1e-12 * np.abs(hard).max() * (1e4 if expect_keep else 1)
        assert np.abs(y - ref).max() <= 1e-12 * np.abs(ref).max() * (1e4 if expect_keep else 1)
    ww = np.array([1.0, 2 * hi, 1.0001 * hi, np.sqrt(lo * hi), lo, 1e-3 * lo])
    f = spectral_weights(ww, RANK_RTOL)
    assert f[0] == 1.0 and f[1] == 1.0 / ww[1] and f[2] == 1.0 / ww[2]
    assert f[4] == 0.0 and f[5] == 0.0 and 0.0 < f[3] * ww[3] < 1.0
    fp = spectral_weights(ww, 1e-9)             # below RANK_RTOL: a hard cut
    assert np.array_equal(fp > 0, ww > 1e-9)
