"""The Python event loop's reuse of work within a step (fmu_mb.linalg's prepared solvers,
kinematics.projection written component by component, the tangent rows and accelerations
reused for the same state) against independent references: the full KKT matrix solved
directly, finite differences of the projection primitive, and the same simulation with the
reuse switched off, which must give the same numbers bit for bit."""
import numpy as np
import pytest

from fmu_mb import ModelBuilder, simulate
from fmu_mb.dynamics import integrate
from fmu_mb.dynamics.integrate import Settings
from fmu_mb.linalg import (contact_splitter, kkt_dense_solver, kkt_solver, schur_solver,
                           solve_kkt)
from fmu_mb.mechanics import kinematics as kin
from fmu_mb.mechanics.friction import tangent_rows

G = 9.81


def _kkt_reference(M, D, F, b):
    """a and D' lam of [M D'; D 0] [a; lam] = [F; b] by least squares on the full matrix
    (D' lam is unique where lam is not: redundant rows)."""
    n, m = M.shape[0], D.shape[0]
    K = np.zeros((n + m, n + m))
    K[:n, :n], K[:n, n:], K[n:, :n] = M, D.T, D
    sol = np.linalg.lstsq(K, np.concatenate([F, b]), rcond=None)[0]
    return sol[:n], D.T @ sol[n:]


@pytest.mark.parametrize("redundant", [False, True])
def test_prepared_kkt_solvers_solve_every_right_hand_side(redundant):
    """One kkt_solver / kkt_dense_solver per matrix, several right-hand sides: each solution
    equals the full KKT matrix's (accelerations and constraint forces), and the redundant
    rows' multipliers have the minimum norm (the eigen route of schur_solver)."""
    rng = np.random.default_rng(3)
    n = 9
    mass = rng.uniform(0.5, 2.0, n)
    D = rng.normal(size=(4, n))
    if redundant:
        D = np.vstack([D, D[1] + 2.0 * D[2]])       # a dependent row
    M = np.diag(mass)
    dense = rng.normal(size=(n, n))
    Md = dense @ dense.T + n * np.eye(n)
    diag_solve = kkt_solver(1.0 / mass, D)
    dense_solve = kkt_dense_solver(Md, D)
    for _ in range(3):
        F, b = rng.normal(size=n), rng.normal(size=D.shape[0])
        if redundant:
            b[4] = b[1] + 2.0 * b[2]                   # consistent
        for solve, MM in ((diag_solve, M), (dense_solve, Md)):
            a, lam = solve(F, b)
            a_ref, f_ref = _kkt_reference(MM, D, F, b)
            assert np.abs(a - a_ref).max() <= 1e-10 * (1 + np.abs(a_ref).max())
            assert np.abs(D.T @ lam - f_ref).max() <= 1e-10 * (1 + np.abs(f_ref).max())
            if redundant:      # minimum norm: lam orthogonal to the null space of D'
                null = np.linalg.svd(D.T)[2][-1]
                assert abs(null @ lam) <= 1e-9 * np.abs(lam).max()
        a1, lam1 = diag_solve(F, b)
        a2, lam2 = solve_kkt(1.0 / mass, D, F, b)      # the one-shot form: the same numbers
        assert np.array_equal(a1, a2) and np.array_equal(lam1, lam2)


def test_schur_solver_singular_and_empty():
    """A rank-deficient S: the minimum-norm solution and its rank; an empty S: zeros."""
    v = np.array([1.0, 2.0, 2.0])
    S = np.outer(v, v)
    y, rank = schur_solver(S)(S @ np.array([0.3, -0.1, 0.4]))
    assert rank == 1
    assert np.allclose(y, np.linalg.pinv(S) @ (S @ np.array([0.3, -0.1, 0.4])), atol=1e-12)
    y, rank = schur_solver(np.zeros((0, 0)))(np.zeros(0))
    assert rank == 0 and y.shape == (0,)


def test_contact_splitter_moves_the_split_not_the_force():
    """A contact row repeating a joint row: the split keeps A' lam and moves the whole
    force to the joint row (the contact's multipliers of minimum norm: 0), for every lam;
    independent rows: lam unchanged."""
    A = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    split = contact_splitter(A, 2)
    for lam in (np.array([0.5, 1.0, 2.0]), np.array([-1.0, 3.0, 0.25])):
        out = split(lam)
        assert np.allclose(A.T @ out, A.T @ lam, atol=1e-14)
        assert abs(out[2]) <= 1e-14                    # the contact's part: minimum norm
        assert out[0] == pytest.approx(lam[0] + lam[2], abs=1e-14)
    lam = np.array([0.5, 1.0, 2.0])
    assert np.array_equal(contact_splitter(np.eye(3), 2)(lam), lam)


def test_projection_matches_finite_differences():
    """kinematics.projection: J by central differences of the value, conv by those of
    J xd along the motion x + s xd (val'' = J xdd + conv with xdd = 0)."""
    rng = np.random.default_rng(7)
    ps = kin.PairSet.make([0, 2], [1, 0], rng.normal(size=(2, 2)), rng.normal(size=(2, 2)))
    w0 = rng.normal(size=(2, 2))
    w0 /= np.linalg.norm(w0, axis=1)[:, None]
    x, xd = np.append(rng.normal(size=6), np.zeros(3)), np.append(rng.normal(size=6),
                                                                  np.zeros(3))
    val, J, conv = kin.projection(ps, x, xd, w0)
    h = 1e-6
    for k in range(len(ps)):
        for j, col in enumerate(ps.cols[k]):
            if col >= 6:
                continue
            e = np.zeros(9)
            e[col] = h
            fd = (kin.projection(ps, x + e, xd, w0)[0][k]
                  - kin.projection(ps, x - e, xd, w0)[0][k]) / (2 * h)
            assert abs(fd - J[k, j]) <= 1e-8
    rate = kin.rate(J, ps.cols, xd)
    up = kin.rate(kin.projection(ps, x + h * xd, xd, w0)[1], ps.cols, xd)
    dn = kin.rate(kin.projection(ps, x - h * xd, xd, w0)[1], ps.cols, xd)
    assert np.abs((up - dn) / (2 * h) - conv).max() <= 1e-7
    assert rate.shape == (2,)


def _plank(v0=2.0):
    mb = ModelBuilder("plank", gravity=(0.0, -G))
    p = mb.body("plank", mass=3.0, inertia=1.0)
    mb.prismatic("rail", "ground", p, axis=(1.0, 0.0))
    b = mb.body("block", mass=1.0, inertia=0.01, position=(0.0, 0.05), velocity=(v0, 0.0))
    for k, sx in enumerate((-0.1, 0.1)):
        mb.contact(f"c{k}", b, (sx, -0.05), other=p, normal=(0.0, 1.0), restitution=0.0,
                   friction=0.4)
    return mb.build()


def test_tangent_rows_reused_for_the_same_state_only():
    """The same state gives the same (read-only) arrays; another state new ones, equal to a
    computation from scratch."""
    m = _plank()
    x = np.array([0.0, 0.0, 0.0, 0.01, 0.05, 0.2])
    xd = np.array([0.1, 0.0, 0.0, 2.0, 0.0, 0.3])
    Dt, cv = tangent_rows(m, x, xd)
    assert tangent_rows(m, x.copy(), xd.copy())[0] is Dt
    assert not Dt.flags.writeable and not cv.flags.writeable
    x2 = x.copy()
    x2[5] = 0.4
    Dt2, cv2 = tangent_rows(m, x2, xd)
    assert Dt2 is not Dt and not np.array_equal(Dt2, Dt)
    Dt3, cv3 = tangent_rows(m, x2.copy(), xd.copy())
    assert np.array_equal(Dt3, Dt2) and np.array_equal(cv3, cv2)


@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_reused_accelerations_change_no_number(method, monkeypatch):
    """The block thrown onto the plank (impact, slip, stick) by the Python loop with and
    without the reuse of accelerations: every output equal bit for bit."""
    S = Settings(formulation="newton_euler", method=method, step=5e-3)
    with_reuse = simulate(_plank(0.5), 0.2, 0.05, settings=S)
    monkeypatch.setattr(integrate, "REUSED_ACCELERATIONS", 0)
    without = simulate(_plank(0.5), 0.2, 0.05, settings=S)
    assert set(with_reuse["c0.state"]) >= {1.0, 2.0}      # it slipped, then stuck
    for n in with_reuse.dtype.names:
        assert np.array_equal(with_reuse[n], without[n]), n
