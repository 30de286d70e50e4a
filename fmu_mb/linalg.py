"""Solvers for the saddle-point (KKT) systems of constrained dynamics.

    [ M  D' ] [ a   ]   [ F ]
    [ D  0  ] [ lam ] = [ b ]

with M symmetric positive definite. We eliminate a: S lam = D M^-1 F - b with the Schur
complement S = D M^-1 D', then a = M^-1 (F - D' lam). S is factorised by Cholesky; when it is
singular or nearly so (redundant constraints, or a singular configuration such as the
N-four-bar's collinear pose) we switch to a symmetric eigen-decomposition and a truncated
pseudo-inverse, which gives the unique accelerations (Gauss's principle of least constraint)
and the minimum-norm multipliers. The same M-weighted minimum-norm solve projects positions
and velocities onto the constraint manifold.
"""
import importlib
import math

import numpy as np

from .errors import DriftError, SingularSystemError


class LazyModule:
    """A module imported on first attribute use, each attribute then cached on the proxy.
    scipy costs ~250 ms to import and a model in the compiled kernel never calls it, so
    importing fmu_mb or instantiating an FMU does not load it (bench/fmu_step.py)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)
        return value


sla = LazyModule("scipy.linalg")

#: largest Schur complement solved with numpy (Cholesky as the rank test, then LU on S):
#: measured on one BLAS thread, numpy 25 / 20 / 56 / 143 us against scipy's cho_factor +
#: cho_solve 28 / 30 / 41 / 62 us for m = 4 / 16 / 32 / 64; larger S go to scipy
SMALL = 24

#: relative size below which an eigenvalue of S counts as zero (1.7e-4 relative on the
#: singular values of D). Near a singular pose (the N-four-bar's collinear links) the M-metric
#: projection along an almost dependent constraint direction removes kinetic energy like
#: eps^2 / sigma (eps the integration error, sigma the small eigenvalue); measured on IFToMM A02
#: (N = 2, 10 s, 0.01 s intervals) the error of B0 was 7e-5 m with 1e-10, 6e-7 with 1e-9,
#: 1e-8 with 1e-8 and 4e-10 with 3e-8, while 1e-6 let the residual drift past the projection.
#: (Measured when the projections used it too; today it is the multipliers' cut-off, and with
#: the projections at PROJECTION_RTOL a smaller one, 1e-10, still put B0 1e-5 m off after 4 s
#: at N = 40: near the pose the stages' integration error is amplified along those rows.)
RANK_RTOL = 3e-8

#: relative size below which an eigenvalue of S counts as zero in the projections onto
#: Phi = 0 and D v = -Phi_t. Those are linear solves whose only error is rounding, so their
#: cut-off is a few hundred ulps, not RANK_RTOL: at a singular pose the rows along which S is
#: small (S ~ dist^2 near the N-four-bar's collinear pose) still fix the positions and
#: velocities, and cutting them at RANK_RTOL left the velocities free for a moment there
#: (IFToMM A02, N = 40: B0's velocity 4.7e-5 m/s off at 0.4 ms past a pose)
PROJECTION_RTOL = 1e-13

#: width of the smooth cut-off of schur_solve's multipliers: the weights of S's eigenvalues w
#: go from 0 (w at or below FILTER_WIDTH x the cut-off rtol x the largest) to 1 (w above the
#: cut-off) along a smooth step in log w, instead of a hard cut at the cut-off (see
#: spectral_weights)
FILTER_WIDTH = 1e-1

#: largest relative residual a stalled position projection may end with (singular poses)
PROJECTION_ACCEPT = 1e-10


def projection_done(model, t, it, err, prev, tol, scale, last=11):
    """The stopping rule of the Newton position projections (newton_euler in x, tmt and
    lagrange in q; native/dense.h has the same for both compiled kernels): True when the residual err is at most
    tol * scale; near a singular pose Newton stalls at the conditioning floor, so a stalled
    (err > 0.5 prev from the third iteration) or last iterate is accepted while err <=
    PROJECTION_ACCEPT * scale; otherwise a stall, the last iteration or a non-finite residual
    raises DriftError (a lock-up, or the mechanism left its assembly branch)."""
    if err <= tol * scale:
        return True
    stalled = it >= 2 and err > 0.5 * prev
    if (stalled or it == last) and err <= PROJECTION_ACCEPT * scale:
        return True
    if stalled or it == last or not np.isfinite(err):
        raise DriftError(f"model '{model.name}': cannot restore the constraints at "
                         f"t = {t:.9g} s (residual {err:.3g}); the mechanism may have "
                         f"locked up or left its assembly branch")
    return False


def projection_settled(it, step, prev_step, tol, scale, last=11):
    """The second half of the stopping rule of the Newton position projections, for an
    iterate whose residual projection_done accepted (native/dense.h has the same): True when
    the Newton correction computed there (its largest entry, step) is at most tol * scale, or
    stalls (step > 0.5 prev_step from the third iteration: the rounding floor), or it is the
    last iteration. Near a singular pose a residual below tolerance can still hide a position
    error of residual / sigma along the nearly dependent rows (sigma their small singular
    value), which the velocity projection turns into a velocity error of that size times
    rate / distance to the pose; so Newton goes on while its correction is larger."""
    return not step > tol * scale or (it >= 2 and step > 0.5 * prev_step) or it >= last


def _no_cut(S, rtol):
    """True when no eigenvalue of S is at or below rtol times the largest: the Cholesky
    factorisation of S - sigma I with sigma = 2 rtol x the largest absolute row sum of S (an
    upper bound of the largest eigenvalue) succeeds only when every eigenvalue exceeds sigma
    (the compiled kernels' dense.h, step 2). The truncated eigen-decomposition then keeps every
    eigenvalue and equals S^-1, which S's Cholesky factor gives."""
    sigma = 2.0 * rtol * np.abs(S).sum(axis=1).max()
    try:
        np.linalg.cholesky(S - sigma * np.eye(S.shape[0]))
    except np.linalg.LinAlgError:
        return False
    return True


def filter_ends(rtol):
    """The ends of the smooth cut-off, relative to the largest eigenvalue, for the cut-off
    rtol: rtol x FILTER_WIDTH and rtol for the multipliers' (rtol >= RANK_RTOL), rtol and
    rtol (a hard cut) for the projections' (PROJECTION_RTOL, whose only error is rounding).
    Everything the hard cut at rtol kept is kept with the same weight 1 / w."""
    if rtol >= RANK_RTOL:
        return rtol * FILTER_WIDTH, rtol
    return rtol, rtol


def spectral_weights(w, rtol):
    """The factors f(w_i) of S^+ = V diag(f(w)) V' for S's eigenvalues w (dense.h's
    dense_filter), (bottom, top) = filter_ends(rtol): 0 at or below lo = bottom x max(w)
    (rows that have become dependent, and exactly redundant rows, are cut off), 1 / w at or
    above hi = top x max(w), and s(x) / w in between, s the smooth step 10x^3 - 15x^4 + 6x^5
    of x = log(w / lo) / log(hi / lo) (s and its first two derivatives continuous): an
    eigenvalue that crosses the cut-off as a singular pose approaches changes the solution
    smoothly, not by a jump."""
    w = np.asarray(w, dtype=float)
    wmax = max(w.max(initial=0.0), 1e-300)
    bottom, top = filter_ends(rtol)
    lo, hi = bottom * wmax, top * wmax
    f = np.zeros_like(w)
    full = w >= hi
    f[full] = 1.0 / w[full]
    mid = (w > lo) & ~full
    if mid.any():
        x = np.log(w[mid] / lo) / math.log(hi / lo)
        f[mid] = x * x * x * (x * (6.0 * x - 15.0) + 10.0) / w[mid]
    return f


def schur_solve(S, rhs, rtol=RANK_RTOL, numpy_only=False):
    """Solve S y = rhs for symmetric positive semi-definite S; minimum-norm if S is singular.

    Cholesky when its pivots are within sqrt(100 top) of each other (top = filter_ends(rtol)[1]),
    or when the shifted factorisation (_no_cut) shows that no eigenvalue is below top x the
    largest; else the eigen-
    decomposition with the eigenvalues below rtol x the largest cut off smoothly
    (spectral_weights: minimum norm over the rows that have become dependent).

    rhs : (m,) or (m, k). rtol: the relative eigenvalue cut-off (RANK_RTOL for multipliers,
    PROJECTION_RTOL for projections). Returns y and the numerical rank of S. numpy_only:
    numpy's solve at every size (a one-off solve, e.g. the assembly of an FMU's start values,
    that must not import scipy).
    """
    return schur_solver(S, rtol, numpy_only)(rhs)


def schur_solver(S, rtol=RANK_RTOL, numpy_only=False):
    """schur_solve prepared for one S: solve(rhs) -> (y, rank), the same result as
    schur_solve(S, rhs, rtol, numpy_only) for every rhs, S's factorisation (and the choice
    of route) made once for all of them."""
    m = S.shape[0]
    if m == 0:
        return lambda rhs: (np.zeros(np.shape(rhs)), 0)
    top = filter_ends(rtol)[1]   # every eigenvalue above top x the largest: S^-1 rhs
    direct = None
    try:
        if m <= SMALL or numpy_only:   # numpy: a small model does not import scipy (250 ms)
            L = np.linalg.cholesky(S)
            d = np.abs(np.diag(L))
            if d.min() ** 2 > top * 1e2 * d.max() ** 2 or _no_cut(S, top):
                def direct(rhs):
                    return np.linalg.solve(S, rhs)
        else:                # scipy's Cholesky solve: O(m^2) per solve once factorised
            c, low = sla.cho_factor(S, lower=True, check_finite=False)
            d = np.abs(np.diag(c))
            if d.min() ** 2 > top * 1e2 * d.max() ** 2 or _no_cut(S, top):
                def direct(rhs):
                    return sla.cho_solve((c, low), rhs, check_finite=False)
    except (np.linalg.LinAlgError, ValueError):
        pass
    eigen = []                         # (Vk, fk, rank) of the eigen route, made when needed

    def by_eigen(rhs):
        if not eigen:
            if not np.all(np.isfinite(S)):
                raise SingularSystemError("constraint matrix contains NaN or infinite entries")
            w, V = eigh_banded(S, numpy_only)
            f = spectral_weights(w, rtol)
            keep = f > 0.0
            eigen.append((V[:, keep], f[keep], int(np.sum(w > rtol * max(w.max(), 1e-300)))))
        Vk, fk, rank = eigen[0]
        return Vk @ ((Vk.T @ rhs) * (fk if np.ndim(rhs) == 1 else fk[:, None])), rank

    if direct is None:
        return by_eigen

    def solve(rhs):
        try:
            return direct(rhs), m
        except (np.linalg.LinAlgError, ValueError):
            return by_eigen(rhs)
    return solve


#: widest half-bandwidth of S, relative to its rows, that schur_solve's eigen route
#: decomposes as a band matrix (native/dense.h's DENSE_BAND_WIDEST)
BAND_EIGEN_WIDEST = 0.25


def half_bandwidth(S):
    """The largest i - j with S[i, j] != 0, i >= j (native/dense.h's dense_bandwidth)."""
    rows, cols = np.nonzero(np.tril(S))
    return int((rows - cols).max(initial=0))


def eigh_banded(S, numpy_only=False):
    """Eigenvalues (ascending) and eigenvectors of the symmetric S (m x m): as a band matrix
    (scipy.linalg.eig_banded, LAPACK's band reduction) when m > SMALL and its half-bandwidth b
    is at most BAND_EIGEN_WIDEST m (the Schur complement of a chain of loops: the compiled
    kernels then take dense.h's band route, the band reduced to tridiagonal by plane rotations,
    O(m^2 b)), else numpy's dense eigh (also with numpy_only: no scipy import)."""
    m = S.shape[0]
    if numpy_only or m <= SMALL:
        return np.linalg.eigh(S)
    b = half_bandwidth(S)
    if b > BAND_EIGEN_WIDEST * m:
        return np.linalg.eigh(S)
    band = np.zeros((b + 1, m))
    for d in range(b + 1):
        band[d, :m - d] = np.diagonal(S, -d)
    return sla.eig_banded(band, lower=True, check_finite=False)


def solve_kkt(Minv, D, F, b, mass=None):
    """Solve M a + D' lam = F, D a = b for a, lam with M = diag(mass).

    Minv : (n,) inverse mass diagonal (used when every mass entry is > 0); D : (m, n);
    F : (n,); b : (m,); mass : (n,) diagonal of M, needed when it has zero entries (point
    masses with zero inertia, massless links): then the full KKT matrix is solved by LU, and
    by least squares if it is singular. Returns a (n,), lam (m,).
    """
    return kkt_solver(Minv, D, mass)(F, b)


def kkt_solver(Minv, D, mass=None):
    """solve_kkt prepared for one Minv, D, mass: solve(F, b) -> (a, lam), the same result as
    solve_kkt(Minv, D, F, b, mass), the Schur complement formed and factorised once."""
    if mass is not None and not np.all(mass > 0):
        n, m = D.shape[1], D.shape[0]
        K = np.zeros((n + m, n + m))
        K[np.arange(n), np.arange(n)] = mass
        K[:n, n:] = D.T
        K[n:, :n] = D

        def solve_full(F, b):
            rhs = np.concatenate([F, b])
            try:
                sol = np.linalg.solve(K, rhs)
                if np.all(np.isfinite(sol)):
                    return sol[:n], sol[n:]
            except np.linalg.LinAlgError:
                pass
            sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
            return sol[:n], sol[n:]
        return solve_full
    if D.shape[0] == 0:
        return lambda F, b: (Minv * F, np.zeros(0))
    DMi = D * Minv
    schur = schur_solver(DMi @ D.T)
    Dt = D.T

    def solve(F, b):
        lam, _ = schur(DMi @ F - b)
        return Minv * (F - Dt @ lam), lam
    return solve


def kept_energy(kinetic, v, dv_hard, dv_smooth):
    """The factor on the projected velocity v - dv_hard that gives back the kinetic energy the
    projection at PROJECTION_RTOL (correction dv_hard) removes beyond the projection at the
    multipliers' smooth cut-off RANK_RTOL (dv_smooth): sqrt(E(v - dv_smooth) / E(v - dv_hard))
    when that exceeds 1, else 1 (native/kernel.c's kept_energy; kinetic(v) the kinetic energy).
    Near a singular pose the multipliers cut off the rows that have become nearly dependent,
    so the accelerations let the velocity leave the rows along them, although the rows' forces,
    which do no work, would have kept it there; the projection puts it back and removes
    v^2 / (2 w) of kinetic energy with it (w the small eigenvalue of S). Where no eigenvalue is
    below the cut-off both corrections are the same Cholesky solve and the factor is 1."""
    if np.array_equal(dv_hard, dv_smooth):
        return 1.0
    es, eh = kinetic(v - dv_smooth), kinetic(v - dv_hard)
    return math.sqrt(es / eh) if es > eh > 0.0 and math.isfinite(es) else 1.0


def min_norm_correction(Minv, D, r, rtol=RANK_RTOL, numpy_only=False):
    """Smallest M-norm dx with D dx = r (least squares if inconsistent): M^-1 D' S^+ r.
    r (m,) or (m, k) (then dx (n, k)); rtol the cut-off of S's eigenvalues, numpy_only: see
    schur_solve."""
    if D.shape[0] == 0:
        return np.zeros((Minv.shape[0],) + np.shape(r)[1:])
    DMi = D * Minv
    y, _ = schur_solve(DMi @ D.T, r, rtol, numpy_only)
    return DMi.T @ y


#: fewest rows for which numerical_rank looks for a band structure of D D' (below it, one
#: dense SVD costs less than finding the band)
RANK_BANDED_ROWS = 200
#: widest band of D D' (relative to its rows) that numerical_rank solves as a band matrix
RANK_BAND_WIDEST = 0.125


def numerical_rank(D):
    """Rank of D by singular values with the tolerance used throughout: the singular values
    above sqrt(RANK_RTOL) times the largest. A large sparse D (a long chain's constraint
    rows: each row's nonzeros span one or two bodies) gets them from the eigenvalues of
    G = D D' (sigma^2), which a reverse Cuthill-McKee ordering of G's rows turns into a band
    matrix (bandwidth b). Full rank is shown by one band Cholesky factorisation of G shifted
    by the cut-off (_banded_full_rank, O(m b^2)); otherwise the band eigensolver counts the
    eigenvalues above the cut-off (O(m^2), instead of the dense SVD's O(m^2 n)). Both carry
    round-off of about eps sigma_max^2, far below the cut-off RANK_RTOL sigma_max^2, so they
    count the singular values the SVD counts (unless one lies within ~1e-8 relative of the
    cut-off). A wide band (b > RANK_BAND_WIDEST m) takes the dense SVD."""
    if D.size == 0:
        return 0
    if D.shape[0] >= RANK_BANDED_ROWS and np.all(np.isfinite(D)):
        band = _gram_band(D)
        if band is not None:
            if _banded_full_rank(band):
                return D.shape[0]
            w = sla.eigvals_banded(band, lower=True, check_finite=False)
            s = np.sqrt(np.maximum(w, 0.0))
            return int(np.sum(s > np.sqrt(RANK_RTOL) * max(s.max(), 1e-300)))
    s = np.linalg.svd(D, compute_uv=False)
    return int(np.sum(s > np.sqrt(RANK_RTOL) * max(s.max(), 1e-300)))


def _gram_band(D, widest=None):
    """G = D D' with its rows and columns in reverse Cuthill-McKee order, in lower band
    storage (G[i, j] at [i - j, j]), or None when the band is wider than `widest` times the
    rows."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    m = D.shape[0]
    widest = RANK_BAND_WIDEST if widest is None else widest
    Ds = sp.csr_matrix(D)
    G = (Ds @ Ds.T).tocsr()
    order = reverse_cuthill_mckee(G, symmetric_mode=True)
    G = G[order][:, order].tocoo()
    lower = G.row >= G.col
    rows, cols, vals = G.row[lower], G.col[lower], G.data[lower]
    bw = int((rows - cols).max(initial=0))
    if bw > widest * m:
        return None
    band = np.zeros((bw + 1, m))
    band[rows - cols, cols] = vals
    return band


def _banded_full_rank(band):
    """True when every eigenvalue of the band matrix G (lower band storage) exceeds RANK_RTOL
    times the largest: the Cholesky factorisation of G - sigma I succeeds, sigma = RANK_RTOL x
    the largest absolute row sum of G (a bound of the largest eigenvalue), O(m b^2)."""
    m = band.shape[1]
    rowsum = np.abs(band).sum(axis=0)           # column sums of the lower part ...
    for d in range(1, band.shape[0]):           # ... plus the rows' entries left of the diagonal
        rowsum[d:] += np.abs(band[d, :m - d])
    shifted = band.copy()
    shifted[0] -= RANK_RTOL * rowsum.max(initial=0.0)
    try:
        sla.cholesky_banded(shifted, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return False
    return True


def solve_kkt_dense(M, D, F, b):
    """Solve M a + D' lam = F, D a = b for a full symmetric M that is positive definite only
    on the null space of D (spatial bodies: 4 G' J G is singular along p; slender rods have no
    axial inertia).

    The rows D a = b are added to the first block with a weight c (augmented Lagrangian form):
    (M + c D'D) a + D' lam = F + c D' b has the same solution, and M + c D'D is positive
    definite, so it is factorised by Cholesky and the multipliers come from the Schur
    complement S = D (M + c D'D)^-1 D' with schur_solve (redundant rows: minimum-norm lam).
    A singular M + c D'D (a mechanism with a massless direction left free) falls back to least
    squares on the full KKT matrix. Returns a (n,), lam (m,).
    """
    return kkt_dense_solver(M, D)(F, b)


def kkt_dense_solver(M, D):
    """solve_kkt_dense prepared for one M and D: solve(F, b) -> (a, lam), the same result as
    solve_kkt_dense(M, D, F, b), M + c D'D and the Schur complement factorised once."""
    n, m = M.shape[0], D.shape[0]
    if m == 0:
        return lambda F, b: (np.linalg.solve(M, F), np.zeros(0))
    DtD = D.T @ D
    c = max(np.abs(np.diag(M)).max(initial=0.0), 1e-300) / max(np.abs(np.diag(DtD)).max(), 1e-300)
    Mc = M + c * DtD
    try:
        fac = sla.cho_factor(Mc, lower=True, check_finite=False)
        d = np.abs(np.diag(fac[0]))
        if d.min() ** 2 <= 1e-13 * d.max() ** 2:
            raise np.linalg.LinAlgError("ill-conditioned")
    except (np.linalg.LinAlgError, ValueError):
        if not (np.all(np.isfinite(M)) and np.all(np.isfinite(D))):
            raise SingularSystemError("mass or constraint matrix contains NaN or infinite "
                                      "entries") from None
        K = np.zeros((n + m, n + m))
        K[:n, :n], K[:n, n:], K[n:, :n] = M, D.T, D

        def solve_full(F, b):
            sol = np.linalg.lstsq(K, np.concatenate([F, b]), rcond=None)[0]
            return sol[:n], sol[n:]
        return solve_full
    Dt = D.T
    MiDt = sla.cho_solve(fac, Dt, check_finite=False)
    S = D @ MiDt
    schur = schur_solver(0.5 * (S + S.T))
    MiD = MiDt.T

    def solve(F, b):
        Fc = F + c * (Dt @ b)
        lam, _ = schur(MiD @ Fc - b)
        return sla.cho_solve(fac, Fc - Dt @ lam, check_finite=False), lam
    return solve


def contact_split(A, m, lam, rtol=RANK_RTOL):
    """The multipliers lam (k,) or (k, p) of the rows A (k, n) re-split so that the last k - m
    (the contacts') have the minimum norm among all multipliers with the same generalised
    force A' lam, the first m (joints and other bilateral rows) taking up the rest: lam + N z
    with N a basis of the null space of A' (dependent rows; A' N = 0, so the force and the
    accelerations are unchanged) and z the least-squares solution of N_c z = -lam_c. This is
    the split of a solve in joint coordinates, where the joints are eliminated and only the
    contacts' rows are solved with minimum norm (the compiled engine). Rows are normalised
    before the rank decision (singular values of the unit rows below sqrt(rtol) times the
    largest count as dependent). lam unchanged when no dependent combination involves both
    kinds of rows."""
    return contact_splitter(A, m, rtol)(lam)


def _unchanged(lam):
    return lam


def contact_splitter(A, m, rtol=RANK_RTOL):
    """contact_split prepared for one A and m: split(lam), the same result as
    contact_split(A, m, lam, rtol) for every lam, A's decompositions made once."""
    k = A.shape[0]
    if m <= 0 or k <= m:
        return _unchanged
    norms = np.sqrt(np.einsum("ij,ij->i", A, A))
    scale = np.where(norms > 0.0, norms, 1.0)
    U, sv, _ = np.linalg.svd(A / scale[:, None], full_matrices=True)
    smax = sv.max(initial=0.0)
    rank = int(np.sum(sv > np.sqrt(rtol) * max(smax, 1e-300)))
    if rank >= k:
        return _unchanged
    N, _ = np.linalg.qr(U[:, rank:] / scale[:, None])     # orthonormal, A' N = 0
    Uc, sc, Vct = np.linalg.svd(N[m:], full_matrices=False)
    keep = sc > 1e-8                          # the combinations with a contacts' part
    if not keep.any():
        return _unchanged
    W = N @ Vct[keep].T                       # those combinations, (k, r)
    if not np.abs(W[:m]).max(initial=0.0) > 1e-12:
        return _unchanged                     # only the contacts' own combinations
    UcT, sk = Uc[:, keep].T, sc[keep]

    def split(lam):
        lc = lam[m:]
        z = -(UcT @ lc) / (sk if np.ndim(lc) == 1 else sk[:, None])
        return lam + W @ z
    return split
