/*
 * Dense symmetric linear algebra shared by the planar kernel (kernel.c) and the spatial one
 * (spatial_kernel.c): the Schur complement S = D Mbar^-1 D' of the loop rows is solved by
 * Cholesky, or by its truncated eigen-decomposition near a singular (redundant or collinear)
 * configuration, as fmu_mb.linalg.schur_solve does in Python; and the stopping rule of the
 * Newton projections onto Phi = 0 (fmu_mb.linalg.projection_done). Included after the includer
 * defines OK and ERR_NONFINITE. The constants are fmu_mb.linalg's (tests/test_kernel.py
 * checks that they agree).
 */
#ifndef FMU_MB_DENSE_H
#define FMU_MB_DENSE_H
#include <float.h>
#include <stddef.h>

#include "unused.h"

static const double RANK_RTOL = 3e-8;          /* fmu_mb.linalg.RANK_RTOL */
static const double PROJECTION_RTOL = 1e-13;   /* fmu_mb.linalg.PROJECTION_RTOL */
static const double PROJECTION_ACCEPT = 1e-10; /* fmu_mb.linalg.PROJECTION_ACCEPT */
static const double FILTER_WIDTH = 1e-1;       /* fmu_mb.linalg.FILTER_WIDTH */

/* The ends of the smooth cut-off, relative to the largest eigenvalue, for the cut-off rtol:
 * rtol * FILTER_WIDTH and rtol for the multipliers' cut-off (rtol >= RANK_RTOL), rtol and rtol
 * (a hard cut) for the projections' (fmu_mb.linalg.filter_ends) */
static double dense_filter_bottom(double rtol)
{
    return rtol >= RANK_RTOL ? rtol * FILTER_WIDTH : rtol;
}

static double dense_filter_top(double rtol)
{
    return rtol;
}

/* The factor f(w) of S^+ = V diag(f(w)) V' for an eigenvalue w of S (fmu_mb.linalg.
 * spectral_weights), wmax the largest eigenvalue: 0 at or below lo = dense_filter_bottom(rtol)
 * wmax, 1 / w at or above hi = dense_filter_top(rtol) wmax, and s(x) / w in between,
 * s(x) = 6x^5 - 15x^4 + 10x^3 the smooth step of x = log(w / lo) / log(hi / lo): an eigenvalue
 * passing the cut-off changes the solution smoothly */
static double dense_filter(double w, double wmax, double rtol)
{
    double lo = dense_filter_bottom(rtol) * wmax, hi = dense_filter_top(rtol) * wmax;
    if (!(w > lo))
        return 0.0;
    if (w >= hi)
        return 1.0 / w;
    double x = log(w / lo) / log(hi / lo);
    return x * x * x * (x * (6.0 * x - 15.0) + 10.0) / w;
}

/* cyclic Jacobi: A (m x m, symmetric, destroyed) = V diag(w) V' */
static void dense_jacobi(double *A, double *V, double *w, int m)
{
    for (int i = 0; i < m * m; i++)
        V[i] = 0.0;
    for (int i = 0; i < m; i++)
        V[i * m + i] = 1.0;
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0, dg = 0.0;
        for (int i = 0; i < m; i++) {
            dg += A[i * m + i] * A[i * m + i];
            for (int j = i + 1; j < m; j++)
                off += A[i * m + j] * A[i * m + j];
        }
        if (!(off > 1e-30 * dg))                    /* converged to rounding */
            break;
        int rotated = 0;
        for (int p = 0; p < m; p++)
            for (int q = p + 1; q < m; q++) {
                double apq = A[p * m + q];
                if (!(apq * apq > 1e-32 * dg / ((double)m * m)))   /* negligible entry */
                    continue;
                rotated = 1;
                double th = (A[q * m + q] - A[p * m + p]) / (2.0 * apq);
                double t = (th >= 0.0 ? 1.0 : -1.0) / (fabs(th) + sqrt(th * th + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int r = 0; r < m; r++) {               /* columns p, q */
                    double a = A[r * m + p], b = A[r * m + q];
                    A[r * m + p] = c * a - s * b;
                    A[r * m + q] = s * a + c * b;
                }
                for (int r = 0; r < m; r++) {               /* rows p, q */
                    double a = A[p * m + r], b = A[q * m + r];
                    A[p * m + r] = c * a - s * b;
                    A[q * m + r] = s * a + c * b;
                }
                A[p * m + q] = A[q * m + p] = 0.0;
                for (int r = 0; r < m; r++) {
                    double a = V[r * m + p], b = V[r * m + q];
                    V[r * m + p] = c * a - s * b;
                    V[r * m + q] = s * a + c * b;
                }
            }
        if (!rotated)
            break;
    }
    for (int i = 0; i < m; i++)
        w[i] = A[i * m + i];
}

/* LAPACK's dsyev (scipy.linalg.cython_lapack, set by mbk_set_eigensolver); NULL: Jacobi */
typedef void (*syev_fn)(char *, char *, int *, double *, int *, double *, double *, int *,
                        int *);

/* u = (I - tau v v') u with the Householder reflector k of dense_tridiagonal_solve: v in
 * column k of V below the diagonal (v_k+1 .. v_m-1), tau in V[k m + m - 1] (0: none) */
static void dense_reflect(const double *V, int m, int k, double *u)
{
    double tau = V[(size_t)k * m + m - 1], t = 0.0;
    if (tau == 0.0)
        return;
    for (int i = k + 1; i < m; i++)
        t += V[(size_t)i * m + k] * u[i];
    t *= tau;
    for (int i = k + 1; i < m; i++)
        u[i] -= t * V[(size_t)i * m + k];
}
/* sqrt(a^2 + b^2) without libm's hypot (the QL iteration and the band reduction call it once
 * per plane rotation, and hypot costs as much as the rest of the rotation): the plain square
 * root where a^2 + b^2 neither overflows nor loses digits to underflow, hypot otherwise */
static double dense_hypot(double a, double b)
{
    double r = sqrt(a * a + b * b);
    return r > 1e-150 && r < 1e150 ? r : hypot(a, b);
}

/* The tridiagonal T (diagonal w, subdiagonal e: e[i] = T[i+1][i], e[m-1] unused) = Z diag(d) Z'
 * by the implicit QL iteration (tqli), its plane rotations applied to the nrhs right-hand
 * sides in y (Z' u, on entry) and, stored, to the filtered ones (u <- Z diag(d)^+ Z' u on
 * return), the eigenvalues d below rtol * max cut off smoothly (dense_filter). w (m): the
 * eigenvalues on return; e destroyed. nrot (may be NULL): incremented by the rotations done.
 * Returns 0, or -1 when QL does not converge or memory runs out. */
static int dense_tql_filter(double *w, double *e, int m, double rtol, int nrhs, double *y,
                            double *nrot_out)
{
    size_t nrot = 0, cap = (size_t)m * m + 16;
    int *ri = malloc(sizeof(int) * cap);
    double *rcs = malloc(sizeof(double) * 2 * cap);
    if (!ri || !rcs) {
        free(ri);
        free(rcs);
        return -1;
    }
    if (m >= 1)
        e[m - 1] = 0.0;
    int fail = 0;
    for (int l = 0; l < m && !fail; l++) {         /* implicit QL (tqli) */
        int iter = 0, mm;
        do {
            for (mm = l; mm < m - 1; mm++) {
                double dd = fabs(w[mm]) + fabs(w[mm + 1]);
                if (fabs(e[mm]) <= DBL_EPSILON * dd)
                    break;
            }
            if (mm != l) {
                if (iter++ == 60) {
                    fail = 1;
                    break;
                }
                double g = (w[l + 1] - w[l]) / (2.0 * e[l]), r = dense_hypot(g, 1.0);
                g = w[mm] - w[l] + e[l] / (g + (g >= 0.0 ? fabs(r) : -fabs(r)));
                double sn = 1.0, cs = 1.0, p = 0.0;
                int i;
                for (i = mm - 1; i >= l; i--) {
                    double f = sn * e[i], b = cs * e[i];
                    e[i + 1] = (r = dense_hypot(f, g));
                    if (r == 0.0) {
                        w[i + 1] -= p;
                        e[mm] = 0.0;
                        break;
                    }
                    sn = f / r;
                    cs = g / r;
                    g = w[i + 1] - p;
                    r = (w[i] - g) * sn + 2.0 * cs * b;
                    w[i + 1] = g + (p = sn * r);
                    g = cs * r - b;
                    if (nrot == cap) {
                        cap *= 2;
                        int *g1 = realloc(ri, sizeof(int) * cap);
                        if (g1)
                            ri = g1;
                        double *g2 = g1 ? realloc(rcs, sizeof(double) * 2 * cap) : NULL;
                        if (g2)
                            rcs = g2;
                        if (!g1 || !g2) {
                            fail = 1;
                            break;
                        }
                    }
                    ri[nrot] = i;
                    rcs[2 * nrot] = cs;
                    rcs[2 * nrot + 1] = sn;
                    nrot++;
                    for (int c = 0; c < nrhs; c++) {   /* u <- R' u (Z' Q' rhs) */
                        double *u = y + (size_t)c * m, fu = u[i + 1];
                        u[i + 1] = sn * u[i] + cs * fu;
                        u[i] = cs * u[i] - sn * fu;
                    }
                }
                if (fail)
                    break;
                if (r == 0.0 && i >= l)
                    continue;
                w[l] -= p;
                e[l] = g;
                e[mm] = 0.0;
            }
        } while (mm != l);
    }
    if (fail) {
        free(ri);
        free(rcs);
        return -1;
    }
    double wmax = 0.0;
    for (int i = 0; i < m; i++)
        wmax = fmax(wmax, w[i]);
    for (int c = 0; c < nrhs; c++) {
        double *u = y + (size_t)c * m;
        for (int i = 0; i < m; i++)                /* diag(d)^+, cut off smoothly */
            u[i] *= dense_filter(w[i], fmax(wmax, 1e-300), rtol);
        for (size_t t = nrot; t-- > 0;) {          /* u <- R u (Z u) */
            int i = ri[t];
            double cs = rcs[2 * t], sn = rcs[2 * t + 1], a = u[i], b = u[i + 1];
            u[i] = cs * a + sn * b;
            u[i + 1] = -sn * a + cs * b;
        }
    }
    if (nrot_out)
        *nrot_out += (double)nrot;
    free(ri);
    free(rcs);
    return 0;
}

/* y = S^+ rhs (nrhs right-hand sides in y on entry, the solutions on return) for the full
 * symmetric S in A (m x m, kept), eigenvalues below rtol * max cut off, without forming the
 * eigenvectors: Householder tridiagonalisation S = Q T Q' (reflectors in V's lower triangle),
 * T = Z diag(d) Z' by the implicit QL iteration (dense_tql_filter: its plane rotations, stored,
 * give Z'c and Z u as O(m) products each), y = Q Z diag(d)^+ Z' Q' rhs. O(4/3 m^3 + m^2)
 * against the cyclic Jacobi's tens of m^3. Returns 0 on success, -1 when QL does not converge
 * or memory runs out (the caller falls back to Jacobi). w (m): the eigenvalues. */
static int dense_tridiagonal_solve(const double *A, double *V, double *w, int m, double rtol,
                                   int nrhs, double *y)
{
    memcpy(V, A, sizeof(double) * (size_t)m * m);
    for (int k = 0; k + 2 < m; k++) {             /* reflector H_k on rows/columns k+1.. */
        double *x = V + (size_t)(k + 1) * m + k, nx = 0.0;
        int r = m - k - 1;
        for (int i = 0; i < r; i++)
            nx += x[(size_t)i * m] * x[(size_t)i * m];
        nx = sqrt(nx);
        double x0 = x[0], alpha = x0 > 0.0 ? -nx : nx, tau = 0.0;
        if (nx > 0.0 && alpha != x0) {
            x[0] = x0 - alpha;                     /* v = x - alpha e1 in column k */
            tau = 1.0 / (alpha * (alpha - x0));    /* 2 / v'v */
            double *p = w + k + 1, K = 0.0;        /* p = tau B v (w as scratch) */
            for (int i = 0; i < r; i++) {
                const double *Bi = V + (size_t)(k + 1 + i) * m + k + 1;
                double t = 0.0;
                for (int j = 0; j < r; j++)
                    t += Bi[j] * x[(size_t)j * m];
                p[i] = tau * t;
                K += p[i] * x[(size_t)i * m];
            }
            K *= 0.5 * tau;
            for (int i = 0; i < r; i++)            /* q = p - K v */
                p[i] -= K * x[(size_t)i * m];
            for (int i = 0; i < r; i++) {          /* B -= v q' + q v' */
                double *Bi = V + (size_t)(k + 1 + i) * m + k + 1, vi = x[(size_t)i * m];
                for (int j = 0; j < r; j++)
                    Bi[j] -= vi * p[j] + p[i] * x[(size_t)j * m];
            }
        } else {
            alpha = x0;
        }
        V[(size_t)k * m + k + 1] = alpha;          /* e[k], above the diagonal */
        V[(size_t)k * m + m - 1] = tau;            /* (k + 2 < m: not e's place) */
    }
    double *e = malloc(sizeof(double) * (size_t)(m > 0 ? m : 1));
    if (!e)
        return -1;
    for (int i = 0; i < m; i++)
        w[i] = V[(size_t)i * m + i];
    if (m >= 2)
        V[(size_t)(m - 2) * m + m - 1] = V[(size_t)(m - 1) * m + m - 2];
    for (int i = 0; i + 1 < m; i++)                /* e[i] = T[i+1][i] */
        e[i] = V[(size_t)i * m + i + 1];
    for (int c = 0; c < nrhs; c++) {               /* Q' rhs */
        double *u = y + (size_t)c * m;
        for (int k = 0; k + 2 < m; k++)
            dense_reflect(V, m, k, u);
    }
    int rc = dense_tql_filter(w, e, m, rtol, nrhs, y, NULL);
    free(e);
    if (rc != 0)
        return -1;
    for (int c = 0; c < nrhs; c++) {
        double *u = y + (size_t)c * m;
        for (int k = m - 3; k >= 0; k--)          /* Q u */
            dense_reflect(V, m, k, u);
    }
    return 0;
}

/* The eigen route solves S (m x m, half-bandwidth b) as a band matrix (dense_band_solve) when
 * m > DENSE_BAND_FEWEST and b <= DENSE_BAND_WIDEST m (fmu_mb.linalg.SMALL and
 * BAND_EIGEN_WIDEST: the same choice as fmu_mb.linalg.eigh_banded) */
#define DENSE_BAND_FEWEST 24
#define DENSE_BAND_WIDEST 0.25

/* The half-bandwidth of the symmetric A (m x m, all entries): the largest r - l with
 * A[r m + l] != 0 */
static int dense_bandwidth(const double *A, int m)
{
    int b = 0;
    for (int r = 1; r < m; r++)
        for (int l = 0; l < r - b; l++)
            if (A[(size_t)r * m + l] != 0.0) {
                b = r - l;
                break;
            }
    return b;
}

/* The plane rotation G = [c s; -s c] on rows and columns i, i + 1 of the symmetric band
 * matrix in L (lower band storage with W = b + 2 diagonals: entry (r, j), 0 <= r - j <= b + 1,
 * at L[j W + r - j]; the band of half-width b and the one bulge entry at distance b + 1 that
 * the reduction creates): L <- G L G' on the lower triangle. Row part (columns j < i of
 * rows i, i + 1, from i - b: the entry (i, i - b - 1) is zero whenever a rotation runs, as no
 * bulge is left there), the 2 x 2 diagonal block, column part (rows i + 2 .. i + b + 1 of
 * columns i, i + 1). */
static void dense_band_rotate(double *L, int W, int m, int i, double c, double s)
{
    int b = W - 2, j0 = i - b > 0 ? i - b : 0, r1 = i + b + 1 < m - 1 ? i + b + 1 : m - 1;
    for (int j = j0; j < i; j++) {                  /* rows i, i + 1 left of the block */
        double *Lj = L + (size_t)j * W + (i - j), x = Lj[0], y = Lj[1];
        Lj[0] = c * x + s * y;
        Lj[1] = -s * x + c * y;
    }
    double *Li = L + (size_t)i * W, *Lk = Li + W;  /* columns i, i + 1 */
    double x = Li[0], y = Li[1], z = Lk[0];        /* [x y; y z] <- G [x y; y z] G' */
    double cx = c * x + s * y, cy = c * y + s * z, sx = -s * x + c * y, sy = -s * y + c * z;
    Li[0] = c * cx + s * cy;
    Li[1] = -s * cx + c * cy;
    Lk[0] = -s * sx + c * sy;
    for (int r = i + 2; r <= r1; r++) {             /* rows below the block */
        double u = Li[r - i], v = Lk[r - i - 1];
        Li[r - i] = c * u + s * v;
        Lk[r - i - 1] = -s * u + c * v;
    }
}

/* y = S^+ rhs (nrhs right-hand sides in y on entry, the solutions on return) for the banded
 * symmetric S in A (m x m, lower triangle read, kept; half-bandwidth b = dense_bandwidth),
 * eigenvalues below rtol * max cut off smoothly, as dense_tridiagonal_solve but with the band
 * reduced to tridiagonal T = G S G' by plane rotations (Schwarz's band reduction, LAPACK's
 * dsbtrd without the vectors: each entry outside the tridiagonal is rotated away from the
 * bottom of its column, and the bulge that the rotation creates b + 1 below the diagonal is
 * chased down the band, b rows at a time), on S's lower band (b + 2 diagonals in V, O(m b)),
 * each rotation O(b) and applied to the right-hand sides (G rhs) and, stored, to the
 * solutions in reverse (G' u); then dense_tql_filter. O(m^2 b) instead of the Householder
 * reduction's 4/3 m^3. first (may be NULL): S's lower envelope (dense_envelope; the entries
 * of row r before first[r] are zero and not read). V (m x m): workspace, w (m):
 * the eigenvalues (w may hold first: it is read before w is written). ops (may be NULL):
 * incremented by the operations done. Returns 0, or -1 when QL does not converge or memory
 * runs out. */
static int dense_band_solve_env(const double *A, const int *first, int b, double *V,
                                double *w, int m, double rtol, int nrhs, double *y, double *ops)
{
    int W = b + 2;
    double *L = V;
    for (int j = 0; j < m; j++)                     /* the lower band, and a zero bulge slot */
        for (int d = 0; d < W; d++) {
            int r = j + d;
            L[(size_t)j * W + d] = d <= b && r < m && (!first || first[r] <= j)
                                       ? A[(size_t)r * m + j] : 0.0;
        }
    /* cap: the most rotations the reduction can take (each chase below runs while p < m) */
    size_t nrot = 0, cap = 16, room = (size_t)m * m - (size_t)m * W;
    for (int j = 0; j + 2 < m && b >= 2; j++)
        for (int k = j + 2; k <= j + b && k < m; k++)
            cap += 1 + (size_t)((m - 1 - k) / b);
    /* the rotations' (c, s) in V after the band when they fit (V is the caller's workspace,
     * m x m: no fresh memory to fault in per solve), else in a buffer of their own */
    int *rp = malloc(sizeof(int) * cap);
    double *own = 2 * cap <= room ? NULL : malloc(sizeof(double) * 2 * cap);
    double *rcs = own ? own : V + (size_t)m * W;
    double *e = malloc(sizeof(double) * (size_t)(m > 0 ? m : 1));
    if (!rp || (2 * cap > room && !own) || !e) {
        free(rp);
        free(own);
        free(e);
        return -1;
    }
    for (int j = 0; j + 2 < m && b >= 2; j++) {
        int kmax = j + b < m - 1 ? j + b : m - 1;
        for (int k = kmax; k >= j + 2; k--) {
            /* zero (k, j) by the rotation of rows/columns k - 1, k; then the bulge it
             * creates at (p + b, p - 1), p = k, by the rotation of p + b - 1, p + b */
            int col = j, p = k;
            for (;;) {
                double *Lc = L + (size_t)col * W + (p - 1 - col), a = Lc[0], bb = Lc[1];
                if (bb == 0.0)
                    break;                         /* nothing to rotate: no bulge below */
                double r = dense_hypot(a, bb), c = a / r, s = bb / r;
                dense_band_rotate(L, W, m, p - 1, c, s);
                Lc[1] = 0.0;                       /* (p, col), rotated away */
                if (nrot == cap) {                 /* (cap bounds the count: not reached) */
                    free(rp);
                    free(own);
                    free(e);
                    return -1;
                }
                rp[nrot] = p - 1;
                rcs[2 * nrot] = c;
                rcs[2 * nrot + 1] = s;
                nrot++;
                for (int q = 0; q < nrhs; q++) {   /* u <- G u */
                    double *u = y + (size_t)q * m, ua = u[p - 1], ub = u[p];
                    u[p - 1] = c * ua + s * ub;
                    u[p] = -s * ua + c * ub;
                }
                if (p + b >= m)
                    break;
                col = p - 1;                       /* the bulge at (p + b, p - 1) */
                p += b;
            }
        }
    }
    for (int i = 0; i < m; i++)
        w[i] = L[(size_t)i * W];
    for (int i = 0; i + 1 < m; i++)
        e[i] = L[(size_t)i * W + 1];
    double nql = 0.0;
    int rc = dense_tql_filter(w, e, m, rtol, nrhs, y, &nql);
    free(e);
    if (rc == 0)
        for (int q = 0; q < nrhs; q++) {
            double *u = y + (size_t)q * m;
            for (size_t t = nrot; t-- > 0;) {      /* u <- G' u */
                int p = rp[t];
                double c = rcs[2 * t], s = rcs[2 * t + 1], ua = u[p], ub = u[p + 1];
                u[p] = c * ua - s * ub;
                u[p + 1] = s * ua + c * ub;
            }
        }
    if (ops)
        *ops += (double)m * W + (double)nrot * (8.0 * W + 12.0 * nrhs)
                + nql * (20.0 + 12.0 * nrhs);
    free(rp);
    free(own);
    return rc;
}

/* dense_band_solve_env with S's lower triangle read in full */
static int dense_band_solve(const double *A, int b, double *V, double *w, int m, double rtol,
                            int nrhs, double *y, double *ops)
{
    return dense_band_solve_env(A, NULL, b, V, w, m, rtol, nrhs, y, ops);
}

/* Largest S for dense_pc_minnorm (its workspace is on the stack). */
#define DENSE_PC_MAX 48

/* The minimum-norm solution y = S^+ rhs (nrhs columns of m) of a rank-deficient S whose
 * eigenvalues split cleanly at the cut-off rtol * lambda_max, without an eigen-decomposition:
 * the Cholesky factorisation with diagonal pivoting S = P L L' P' (L m x r, r the rank) gives
 * S^+ = P L (L'L)^-2 L' P'. Accepted (1) only when that equals the truncated
 * eigen-decomposition's solution of dense_psd_solve_n to ~1e-11 relative: with E the trailing
 * Schur complement dropped (|E|_2 <= tr_E, its Frobenius norm) and lam_r >=
 * 1 / |C^-1|_F^2 (L'L = C C') a lower bound of the r kept eigenvalues, Weyl's inequalities put
 * S's r largest eigenvalues >= lam_r and the others <= tr_E; the eigen cut-off lies in
 * [rtol max diag S, rtol trace S], and its smooth step (dense_filter) runs from
 * dense_filter_bottom(rtol) to dense_filter_top(rtol) times the same; so tr_E <= 1e-2 bottom
 * max diag S and lam_r >= 1e2 top trace S keep exactly r eigenvalues, with the weights 1 / w,
 * on either route, and tr_E <= 1e-11 lam_r bounds the
 * relative difference of the two rank-r pseudo-inverses (~3 tr_E / lam_r). Otherwise 0 (the
 * caller takes the eigen-decomposition). A: S (m x m, kept); V: m x m workspace. */
static int dense_pc_minnorm(const double *A, double *V, int m, double rtol, int nrhs,
                            const double *rhs, double *y)
{
    if (m > DENSE_PC_MAX)
        return 0;
    int perm[DENSE_PC_MAX];
    double C[DENSE_PC_MAX * DENSE_PC_MAX], X[DENSE_PC_MAX * DENSE_PC_MAX];
    double z[DENSE_PC_MAX], u[DENSE_PC_MAX];
    double tr = 0.0, dmax = 0.0;
    for (int i = 0; i < m; i++) {
        perm[i] = i;
        tr += A[i * m + i];
        dmax = fmax(dmax, A[i * m + i]);
    }
    if (!(dmax > 0.0))
        return 0;
    double stop = 1e-2 * dense_filter_bottom(rtol) * dmax;
    memcpy(V, A, sizeof(double) * m * m);
    /* V's lower triangle: L in columns < j, the trailing Schur complement from j */
    int r = 0;
    for (int j = 0; j < m; j++) {
        int k = j;
        for (int i = j + 1; i < m; i++)
            if (V[i * m + i] > V[k * m + k])
                k = i;
        if (!(V[k * m + k] > stop))
            break;
        if (k != j) {                    /* symmetric swap of j and k in the lower triangle */
            double t;
            for (int c = 0; c < j; c++) {
                t = V[j * m + c];
                V[j * m + c] = V[k * m + c];
                V[k * m + c] = t;
            }
            t = V[j * m + j];
            V[j * m + j] = V[k * m + k];
            V[k * m + k] = t;
            for (int i = j + 1; i < k; i++) {
                t = V[i * m + j];
                V[i * m + j] = V[k * m + i];
                V[k * m + i] = t;
            }
            for (int i = k + 1; i < m; i++) {
                t = V[i * m + j];
                V[i * m + j] = V[i * m + k];
                V[i * m + k] = t;
            }
            int pt = perm[j];
            perm[j] = perm[k];
            perm[k] = pt;
        }
        double d = sqrt(V[j * m + j]);
        V[j * m + j] = d;
        for (int i = j + 1; i < m; i++)
            V[i * m + j] /= d;
        for (int i = j + 1; i < m; i++) {
            double lij = V[i * m + j];
            for (int l = j + 1; l <= i; l++)
                V[i * m + l] -= lij * V[l * m + j];
        }
        r++;
    }
    if (r == 0 || r == m)
        return 0;
    double trE = 0.0;                                /* |E|_F >= |E|_2 */
    for (int i = r; i < m; i++) {
        trE += V[i * m + i] * V[i * m + i];
        for (int l = r; l < i; l++)
            trE += 2.0 * V[i * m + l] * V[i * m + l];
    }
    trE = sqrt(trE);
    if (!(trE <= 1e-2 * rtol * dmax))
        return 0;
    /* L'L = C C' (r x r, C lower), then C^-1 in place of C */
    for (int a = 0; a < r; a++)
        for (int b = 0; b <= a; b++) {
            double acc = 0.0;
            for (int i = a; i < m; i++)              /* L[i][b] = 0 for i < b <= a */
                acc += V[i * m + a] * V[i * m + b];
            C[a * r + b] = acc;
        }
    for (int j = 0; j < r; j++) {
        double s = C[j * r + j];
        for (int i = 0; i < j; i++)
            s -= C[j * r + i] * C[j * r + i];
        if (!(s > 0.0))
            return 0;
        double d = sqrt(s);
        C[j * r + j] = d;
        for (int rw = j + 1; rw < r; rw++) {
            double t = C[rw * r + j];
            for (int i = 0; i < j; i++)
                t -= C[rw * r + i] * C[j * r + i];
            C[rw * r + j] = t / d;
        }
    }
    double fro = 0.0;                                /* X = C^-1 (lower), |X|_F^2 */
    for (int j = 0; j < r; j++) {
        X[j * r + j] = 1.0 / C[j * r + j];
        for (int i = 0; i < j; i++)
            X[i * r + j] = 0.0;
        for (int i = j + 1; i < r; i++) {
            double t = 0.0;
            for (int l = j; l < i; l++)
                t -= C[i * r + l] * X[l * r + j];
            X[i * r + j] = t / C[i * r + i];
        }
        for (int i = j; i < r; i++)
            fro += X[i * r + j] * X[i * r + j];
    }
    double lam_r = 1.0 / fro;
    if (!(lam_r >= 1e2 * dense_filter_top(rtol) * tr) || !(trE <= 1e-11 * lam_r))
        return 0;
    for (int c = 0; c < nrhs; c++) {
        const double *b = rhs + (size_t)c * m;
        double *x = y + (size_t)c * m;
        for (int a = 0; a < r; a++) {                /* z = L' P' b */
            double acc = 0.0;
            for (int i = a; i < m; i++)
                acc += V[i * m + a] * b[perm[i]];
            z[a] = acc;
        }
        for (int pass = 0; pass < 2; pass++) {       /* z = (L'L)^-2 z = (X'X)^2 z */
            for (int i = r - 1; i >= 0; i--) {       /* u = X z (lower: from the bottom) */
                double acc = 0.0;
                for (int l = 0; l <= i; l++)
                    acc += X[i * r + l] * z[l];
                u[i] = acc;
            }
            for (int i = 0; i < r; i++) {            /* z = X' u */
                double acc = 0.0;
                for (int l = i; l < r; l++)
                    acc += X[l * r + i] * u[l];
                z[i] = acc;
            }
        }
        for (int i = 0; i < m; i++) {                /* x = P L z */
            double acc = 0.0;
            int top = i < r ? i : r - 1;
            for (int a = 0; a <= top; a++)
                acc += V[i * m + a] * z[a];
            x[perm[i]] = acc;
        }
    }
    return 1;
}

/* last = env + m from first = env (dense_envelope) */
static void dense_envelope_last(int *env, int m)
{
    int *last = env + m;
    for (int l = 0; l < m; l++)
        last[l] = l;
    for (int r = 0; r < m; r++)
        for (int l = env[r]; l < r; l++)
            if (last[l] < r)
                last[l] = r;
}

/* The lower envelope (profile) of the symmetric S in A (m x m), env (2 m): first = env,
 * first[r] = the first column l <= r with A[r m + l] != 0 (r when there is none), and
 * last = env + m, last[l] = the last row r >= l with first[r] <= l. The Cholesky factor of S has no entry
 * outside the envelope (no fill before a row's first entry), so the factorisation and the
 * triangular solves on the envelope compute the dense algorithm's numbers, operation for
 * operation, skipping only products with exact zeros: O(m b^2) for a band of width b (the
 * Schur complement of a chain of loops), not O(m^3). */
static void dense_envelope(const double *A, int m, int *env)
{
    for (int r = 0; r < m; r++) {
        int l = 0;
        while (l < r && A[r * m + l] == 0.0)
            l++;
        env[r] = l;
    }
    dense_envelope_last(env, m);
}

/* S^+ rhs by the eigen-decomposition of the full symmetric S in A (m x m; kept unless the
 * Jacobi fallback runs): eigenvalues below rtol * max cut off smoothly (dense_filter;
 * minimum-norm solution). ops (may be NULL): incremented by an estimate of the floating-point
 * operations done (the tridiagonal QL's 4/3 m^3 + O(m^2), dsyev's ~9 m^3, Jacobi's ~60 m^3) */
static int dense_eigen_solve_n(double *A, double *V, double *w, int m, syev_fn syev,
                               double *work, int lwork, double rtol, int nrhs,
                               const double *rhs, double *y, double *ops)
{
    double mm = (double)m;
    for (int i = 0; i < m * m; i++)
        if (!isfinite(A[i]))
            return ERR_NONFINITE;
    int b = m > DENSE_BAND_FEWEST ? dense_bandwidth(A, m) : m;
    if (b <= DENSE_BAND_WIDEST * m) {    /* banded: band reduction and QL, O(m^2 b) */
        memcpy(y, rhs, sizeof(double) * (size_t)nrhs * m);
        if (dense_band_solve(A, b, V, w, m, rtol, nrhs, y, ops) == 0)
            return OK;
    }
    if (!(syev && work)) {               /* no LAPACK: tridiagonal QL on the right-hand sides */
        memcpy(y, rhs, sizeof(double) * (size_t)nrhs * m);
        if (ops)
            *ops += mm * mm * (4.0 / 3.0 * mm + 40.0 + 16.0 * nrhs);
        if (dense_tridiagonal_solve(A, V, w, m, rtol, nrhs, y) == 0)
            return OK;
    }
    if (ops)
        *ops += mm * mm * ((syev && work ? 9.0 : 60.0) * mm + 4.0 * nrhs);
    int se = 1, si = m;                  /* component i of eigenvector e: V[e se + i si] */
    int info = 1;
    if (syev && work) {
        char jobz = 'V', uplo = 'L';
        int nn = m, lda = m, lw = lwork;
        memcpy(V, A, sizeof(double) * m * m);
        syev(&jobz, &uplo, &nn, V, &lda, w, work, &lw, &info);
        se = m;
        si = 1;                          /* column-major eigenvectors */
    }
    if (info != 0) {
        dense_jacobi(A, V, w, m);
        se = 1;
        si = m;
    }
    double wmax = 0.0;
    for (int i = 0; i < m; i++)
        wmax = fmax(wmax, w[i]);
    for (int i = 0; i < nrhs * m; i++)
        y[i] = 0.0;
    for (int e = 0; e < m; e++) {
        double f = dense_filter(w[e], fmax(wmax, 1e-300), rtol);
        if (!(f > 0.0))
            continue;
        for (int c = 0; c < nrhs; c++) {
            const double *b = rhs + (size_t)c * m;
            double *x = y + (size_t)c * m, t = 0.0;
            for (int i = 0; i < m; i++)
                t += V[e * se + i * si] * b[i];
            t *= f;
            for (int i = 0; i < m; i++)
                x[i] += V[e * se + i * si] * t;
        }
    }
    return OK;
}

/* Row r of a lower envelope stored row by row: entry (r, l) is ENV_ROW(A, off, r, m)[l] for
 * first[r] <= l <= r. off NULL: the dense m x m layout (row r at A + r m); else row r's
 * entries are packed at A + off[r] + first[r] (off[r] = the entries of the rows before r
 * minus first[r]: dense_env_offsets), O(the envelope's size) memory instead of O(m^2). */
#define ENV_ROW(A, off, r, m) ((A) + ((off) ? (off)[r] : (ptrdiff_t)(r) * (m)))

/* off (m) of the packed envelope first = env (ENV_ROW); returns its number of entries */
MB_MAYBE_UNUSED static size_t dense_env_offsets(const int *env, int m, ptrdiff_t *off)
{
    size_t k = 0;
    for (int r = 0; r < m; r++) {
        off[r] = (ptrdiff_t)k - env[r];
        k += (size_t)(r - env[r] + 1);
    }
    return k;
}

/* L L' = S - shift I in V's lower envelope (S in A's lower envelope env, dense_envelope;
 * both in the layout off, ENV_ROW); 1 when every pivot is positive, 0 when one is not. dmin,
 * dmax (may be NULL): the smallest and largest diagonal entries of L. */
static int dense_env_cholesky_at(const double *A, const ptrdiff_t *off, const int *env,
                                 double *V, int m, double shift, double *dmin, double *dmax)
{
    const int *first = env, *last = env + m;
    for (int j = 0; j < m; j++) {
        const double *Aj = ENV_ROW(A, off, j, m);
        double *Vj = ENV_ROW(V, off, j, m);
        int fj = first[j];
        double s = Aj[j] - shift;
        for (int i = fj; i < j; i++)
            s -= Vj[i] * Vj[i];
        if (!(s > 0.0))
            return 0;
        double d = sqrt(s);
        Vj[j] = d;
        if (dmin) {
            *dmin = fmin(*dmin, d);
            *dmax = fmax(*dmax, d);
        }
        for (int r = j + 1; r <= last[j]; r++) {
            int fr = first[r];
            if (fr > j)
                continue;
            double *Vr = ENV_ROW(V, off, r, m), t = ENV_ROW(A, off, r, m)[j];
            for (int i = fr > fj ? fr : fj; i < j; i++)
                t -= Vr[i] * Vj[i];
            Vr[j] = t / d;
        }
    }
    return 1;
}

/* Steps 1 and 2 of dense_psd_solve_envx on S's lower envelope env in the layout off
 * (ENV_ROW; V in the same layout): 1 and y = S^-1 rhs by the envelope Cholesky when it is
 * accepted, 0 when the eigen route is due (y then overwritten). ops (may be NULL):
 * incremented by extra when the shifted factorisation of step 2 runs. */
static int dense_env_chol_solve(const double *A, const ptrdiff_t *off, const int *env,
                                double *V, int m, double rtol, int nrhs, const double *rhs,
                                double *y, double extra, double *ops)
{
    const int *first = env, *last = env + m;
    double dmin = INFINITY, dmax = 0.0;
    int ok = dense_env_cholesky_at(A, off, env, V, m, 0.0, &dmin, &dmax);
    double top = dense_filter_top(rtol);         /* every eigenvalue above it: S^-1 */
    int chol = ok && dmin * dmin > top * 1e2 * dmax * dmax;
    if (ok && !chol) {
        double gmax = 0.0;
        if (ops)
            *ops += extra;                        /* the row sums, two more factors */
        for (int r = 0; r < m; r++)               /* row sums of |S| in y */
            y[r] = 0.0;
        for (int r = 0; r < m; r++) {
            const double *Ar = ENV_ROW(A, off, r, m);
            for (int l = first[r]; l <= r; l++) {
                double a = fabs(Ar[l]);
                y[r] += a;
                if (l < r)
                    y[l] += a;
            }
        }
        for (int r = 0; r < m; r++)
            gmax = fmax(gmax, y[r]);
        /* Cholesky of S - sigma I, sigma = 2 top gmax (gmax >= the largest eigenvalue):
         * it succeeds only when every eigenvalue of S exceeds sigma (up to rounding, m eps
         * |S| << sigma), i.e. when the eigen solve would cut nothing off; then S's own
         * factor, computed again in V, is used */
        chol = dense_env_cholesky_at(A, off, env, V, m, 2.0 * top * gmax, NULL, NULL) &&
               dense_env_cholesky_at(A, off, env, V, m, 0.0, NULL, NULL);
    }
    if (!chol)
        return 0;
    for (int c = 0; c < nrhs; c++) {
        const double *b = rhs + (size_t)c * m;
        double *x = y + (size_t)c * m;
        for (int i = 0; i < m; i++) {
            const double *Vi = ENV_ROW(V, off, i, m);
            double t = b[i];
            for (int j = first[i]; j < i; j++)
                t -= Vi[j] * x[j];
            x[i] = t / Vi[i];
        }
        for (int i = m - 1; i >= 0; i--) {
            double t = x[i];
            for (int j = i + 1; j <= last[i]; j++)
                if (first[j] <= i)
                    t -= ENV_ROW(V, off, j, m)[i] * x[j];
            x[i] = t / ENV_ROW(V, off, i, m)[i];
        }
    }
    return 1;
}

/* y = S^+ rhs for the symmetric positive semi-definite S (m x m) and nrhs right-hand sides
 * (rhs and y: nrhs columns of m, y apart from rhs), as fmu_mb.linalg.schur_solve:
 *   1. Cholesky on the lower envelope `first` of S (entries A[r m + l], first[r] <= l <= r;
 *      the rest of A is not read); accepted when its pivots d satisfy
 *      min d^2 > 100 top max d^2 (well conditioned), top = dense_filter_top(rtol), the
 *      top of the smooth cut-off (rtol itself for a hard cut);
 *   2. when Cholesky succeeds but that test fails (near a singular pose): accepted when the
 *      Cholesky factorisation of S - sigma I, sigma = 2 top times the largest absolute row
 *      sum of S (an upper bound of the largest eigenvalue), succeeds too: every eigenvalue then
 *      exceeds the smooth cut-off of step 3, whose result is then S^-1 rhs, which the factor gives in
 *      O(m b^2) instead of an O(m^3) eigen-decomposition;
 *   3. otherwise (pivoted: first dense_pc_minnorm, the same minimum-norm solution when the
 *      rank gap is clean) the eigen-decomposition (syev when given, else tridiagonal QL)
 *      with the eigenvalues below rtol * max cut off smoothly (dense_filter; minimum-norm
 *      solution over the rows that have become dependent): A is completed to the full symmetric matrix first.
 * rtol = RANK_RTOL for the multipliers, PROJECTION_RTOL for the projections. V (m x m) and w
 * (m) are workspace; env (2 m, dense_envelope) NULL: the envelope is read off A (then all of
 * A is S), kept in w. */
static int dense_psd_solve_envx(double *A, const int *env, double *V, double *w, int m,
                                syev_fn syev, double *work, int lwork, double rtol, int nrhs,
                                const double *rhs, double *y, int pivoted, double *ops)
{
    int full = !env;
    if (full) {
        int *fw = (int *)(void *)w;       /* 2 m ints in the m doubles of w, until step 3 */
        dense_envelope(A, m, fw);
        env = fw;
    }
    const int *first = env;
    double e1 = 0.0, e2 = 0.0;            /* sum of the envelope's row widths, and of squares */
    if (ops) {
        for (int r = 0; r < m; r++) {
            double wr = (double)(r - first[r] + 1);
            e1 += wr;
            e2 += wr * wr;
        }
        *ops += (full ? (double)m * m : 0.0) + e2 + 4.0 * e1 * nrhs;   /* a factor, the solves */
    }
    if (dense_env_chol_solve(A, NULL, env, V, m, rtol, nrhs, rhs, y, e1 + 2.0 * e2, ops))
        return OK;
    if (ops)
        *ops += (double)m * m;
    if (!pivoted && !full && m > DENSE_BAND_FEWEST) {
        /* the band route of dense_eigen_solve_n on the envelope, without completing S: the
         * same half-bandwidth (dense_bandwidth of the completed S), the same finiteness test
         * and band, the same numbers (S given on its envelope) */
        int b = 0, finite = 1;
        for (int r = 0; r < m; r++) {
            int l = first[r];
            while (l < r && A[(size_t)r * m + l] == 0.0)
                l++;
            b = r - l > b ? r - l : b;
            for (int j = first[r]; j <= r && finite; j++)
                finite = isfinite(A[(size_t)r * m + j]);
        }
        if (!finite)
            return ERR_NONFINITE;
        if (b <= DENSE_BAND_WIDEST * m) {
            memcpy(y, rhs, sizeof(double) * (size_t)nrhs * m);
            if (dense_band_solve_env(A, first, b, V, w, m, rtol, nrhs, y, ops) == 0)
                return OK;
        }
    }
    for (int r = 0; !full && r < m; r++)         /* the full symmetric S from its envelope */
        for (int l = 0; l < r; l++)
            A[(size_t)l * m + r] = A[(size_t)r * m + l] = l < first[r] ? 0.0 : A[(size_t)r * m + l];
    if (pivoted) {                               /* 2b. the pivoted Cholesky's minimum norm */
        int finite = 1;
        for (int i = 0; i < m * m && finite; i++)
            finite = isfinite(A[i]);
        if (ops)
            *ops += (double)m * m * (m + 4.0 * nrhs);
        if (finite && dense_pc_minnorm(A, V, m, rtol, nrhs, rhs, y))
            return OK;
    }
    return dense_eigen_solve_n(A, V, w, m, syev, work, lwork, rtol, nrhs, rhs, y, ops);
}

/* dense_psd_solve_envx without the pivoted Cholesky; ops (may be NULL): incremented by an
 * estimate of the floating-point operations of the route taken (the envelope Cholesky's
 * O(sum of the squared row widths of the envelope), the eigen-decomposition's O(m^3)), what a
 * caller charges against a work budget */
static int dense_psd_solve_env(double *A, const int *env, double *V, double *w, int m,
                               syev_fn syev, double *work, int lwork, double rtol, int nrhs,
                               const double *rhs, double *y, double *ops)
{
    return dense_psd_solve_envx(A, env, V, w, m, syev, work, lwork, rtol, nrhs, rhs, y, 0,
                                ops);
}

/* y = S^+ rhs for the symmetric positive semi-definite S in A (all m x m entries; kept unless
 * the Jacobi fallback runs), as dense_psd_solve_env with the envelope read off A */
static int dense_psd_solve_n(double *A, double *V, double *w, int m, syev_fn syev,
                             double *work, int lwork, double rtol, int nrhs,
                             const double *rhs, double *y)
{
    return dense_psd_solve_env(A, NULL, V, w, m, syev, work, lwork, rtol, nrhs, rhs, y, NULL);
}

/* dense_psd_solve_n with the pivoted Cholesky factorisation of dense_pc_minnorm before the
 * eigen-decomposition (redundant rows: the same minimum-norm solution to ~1e-11, without the
 * eigen-decomposition's cost) */
MB_MAYBE_UNUSED static int dense_psd_solve_pc(double *A, double *V, double *w, int m, double rtol, int nrhs,
                              const double *rhs, double *y)
{
    return dense_psd_solve_envx(A, NULL, V, w, m, NULL, NULL, 0, rtol, nrhs, rhs, y, 1, NULL);
}

/* one right-hand side, the multipliers' cut-off RANK_RTOL */
MB_MAYBE_UNUSED static int dense_psd_solve(double *A, double *V, double *w, int m, syev_fn syev, double *work,
                           int lwork, const double *rhs, double *y)
{
    return dense_psd_solve_n(A, V, w, m, syev, work, lwork, RANK_RTOL, 1, rhs, y);
}

/* The multipliers y (nrhs columns of m, column c at y + c m) of the rows D (m x nv,
 * row-major: the first mj the loops' cut joints, drives and couplers, the other mc = m - mj
 * the contacts' gap, tangential and sticking joints' rows) re-split so that the contacts'
 * part has the minimum norm among all multipliers with the same generalised force D' y, the
 * first mj taking up the rest (fmu_mb.linalg.contact_split). With Dj, Dc the two blocks and
 * Q the projector onto the complement of range(Dj'), the contacts' parts that the joints can
 * take up are those with Q Dc' n_c = 0, so the minimum-norm contacts' part is y_c projected
 * onto range(Dc Q): P y_c, P from the eigen-decomposition of the Gram matrix of Q Dc' in the
 * smaller of its dimensions (mc or nv; eigenvalues at most rtol times the squared Frobenius
 * norm of Dc count as 0); the joints take up d = P y_c - y_c by the minimum-norm solution of
 * Dj' n_j = -Dc' d, (Dj Dj')^+ Dj (-Dc' d) (eigenvalues at most rtol times the largest count
 * as 0). A column whose contacts' part moves by at most 1e-12 of its largest entry (no
 * dependent combination of contacts' and joints' rows: P y_c = y_c up to rounding) is left
 * as it is. ops (may be NULL): incremented by an estimate of the operations (the Jacobi
 * eigen-decompositions' ~60 k^3). OK, or ERR_NONFINITE (D not finite, out of memory: y
 * unchanged). */
MB_MAYBE_UNUSED static int dense_contact_split(const double *D, int m, int mj, int nv, double rtol, int nrhs,
                               double *y, double *ops)
{
    if (mj <= 0 || m <= mj || nrhs <= 0 || nv <= 0)
        return OK;
    int mc = m - mj, kg = mc <= nv ? mc : nv;   /* the Gram matrix's size */
    size_t sj = (size_t)mj, sv = (size_t)nv, sc = (size_t)mc, sg = (size_t)kg;
    double *buf = malloc(sizeof(double) * (2 * sj * sj + sj + sv * sj + sc * sv + 2 * sg * sg
                                           + sg + sv + 3 * sc + sj));
    if (!buf)
        return ERR_NONFINITE;
    double *Gj = buf, *Vj = Gj + sj * sj, *wj = Vj + sj * sj, *U = wj + sj, *QC = U + sv * sj;
    double *K = QC + sc * sv, *Vk = K + sg * sg, *wk = Vk + sg * sg, *b = wk + sg;
    double *u = b + sv, *yc = u + sc, *d = yc + sc, *x = d + sc;
    const double *Dc = D + sj * sv;
    int rc = OK;
    if (ops)
        *ops += 60.0 * ((double)mj * mj * mj + (double)kg * kg * kg)
                + 4.0 * (double)m * (double)nv * (double)(mj + kg);
    for (int i = 0; i < m * nv; i++)
        if (!isfinite(D[i])) {
            rc = ERR_NONFINITE;
            goto done;
        }
    /* Gj = Dj Dj' = Vj diag(wj) Vj'; U (nv x rj, row-major nv rows of mj): the orthonormal
     * basis Dj' v_k / sqrt(w_k) of range(Dj') */
    for (int i = 0; i < mj; i++)
        for (int l = 0; l <= i; l++) {
            double acc = 0.0;
            for (int j = 0; j < nv; j++)
                acc += D[(size_t)i * sv + j] * D[(size_t)l * sv + j];
            Gj[i * mj + l] = Gj[l * mj + i] = acc;
        }
    dense_jacobi(Gj, Vj, wj, mj);
    double wjmax = 0.0;
    for (int k = 0; k < mj; k++)
        wjmax = fmax(wjmax, wj[k]);
    int rj = 0;
    for (int k = 0; k < mj; k++) {
        if (!(wj[k] > rtol * wjmax))
            continue;
        double f = 1.0 / sqrt(wj[k]);
        for (int j = 0; j < nv; j++) {
            double acc = 0.0;
            for (int i = 0; i < mj; i++)
                acc += D[(size_t)i * sv + j] * Vj[i * mj + k];
            U[(size_t)j * sj + rj] = acc * f;
        }
        wj[rj] = wj[k];                          /* the kept ones first, their vectors too */
        for (int i = 0; i < mj; i++)
            Vj[i * mj + rj] = Vj[i * mj + k];
        rj++;
    }
    /* QC: the contacts' rows with their part in range(Dj') removed (mc x nv) */
    double fro = 0.0;
    for (int i = 0; i < mc; i++) {
        const double *Di = Dc + (size_t)i * sv;
        double *q = QC + (size_t)i * sv;
        for (int j = 0; j < nv; j++) {
            q[j] = Di[j];
            fro += Di[j] * Di[j];
        }
        for (int k = 0; k < rj; k++) {
            double dot = 0.0;
            for (int j = 0; j < nv; j++)
                dot += U[(size_t)j * sj + k] * Di[j];
            for (int j = 0; j < nv; j++)
                q[j] -= dot * U[(size_t)j * sj + k];
        }
    }
    /* the Gram matrix of QC: (QC)(QC)' (mc x mc) or (QC)'(QC) (nv x nv) */
    for (int a = 0; a < kg; a++)
        for (int c = 0; c <= a; c++) {
            double acc = 0.0;
            if (kg == mc)
                for (int j = 0; j < nv; j++)
                    acc += QC[(size_t)a * sv + j] * QC[(size_t)c * sv + j];
            else
                for (int i = 0; i < mc; i++)
                    acc += QC[(size_t)i * sv + a] * QC[(size_t)i * sv + c];
            K[a * kg + c] = K[c * kg + a] = acc;
        }
    dense_jacobi(K, Vk, wk, kg);
    for (int r = 0; r < nrhs; r++) {
        double *yr = y + (size_t)r * m, ymax = 0.0, dmax = 0.0;
        memcpy(yc, yr + mj, sizeof(double) * sc);
        for (int i = 0; i < mc; i++) {
            d[i] = -yc[i];
            ymax = fmax(ymax, fabs(yc[i]));
        }
        for (int k = 0; k < kg; k++) {           /* d = P y_c - y_c */
            if (!(wk[k] > rtol * fro))
                continue;
            if (kg == mc) {                      /* P = sum v_k v_k' */
                double dot = 0.0;
                for (int i = 0; i < mc; i++)
                    dot += Vk[i * kg + k] * yc[i];
                for (int i = 0; i < mc; i++)
                    d[i] += dot * Vk[i * kg + k];
            } else {                             /* P = sum u_k u_k' / w_k, u_k = QC v_k */
                double dot = 0.0;
                for (int i = 0; i < mc; i++) {
                    double acc = 0.0;
                    for (int j = 0; j < nv; j++)
                        acc += QC[(size_t)i * sv + j] * Vk[j * kg + k];
                    u[i] = acc;
                    dot += acc * yc[i];
                }
                dot /= wk[k];
                for (int i = 0; i < mc; i++)
                    d[i] += dot * u[i];
            }
        }
        for (int i = 0; i < mc; i++)
            dmax = fmax(dmax, fabs(d[i]));
        if (!(dmax > 1e-12 * ymax))
            continue;
        /* the joints' part: n_j = (Dj Dj')^+ Dj b with b = -Dc' d */
        for (int j = 0; j < nv; j++) {
            double acc = 0.0;
            for (int i = 0; i < mc; i++)
                acc -= Dc[(size_t)i * sv + j] * d[i];
            b[j] = acc;
        }
        for (int i = 0; i < mj; i++) {           /* u = Dj b */
            double acc = 0.0;
            for (int j = 0; j < nv; j++)
                acc += D[(size_t)i * sv + j] * b[j];
            x[i] = acc;
        }
        for (int k = 0; k < rj; k++) {
            double dot = 0.0;
            for (int i = 0; i < mj; i++)
                dot += Vj[i * mj + k] * x[i];
            dot /= wj[k];
            for (int i = 0; i < mj; i++)
                yr[i] += dot * Vj[i * mj + k];
        }
        for (int i = 0; i < mc; i++)
            yr[mj + i] = yc[i] + d[i];
    }
done:
    free(buf);
    return rc;
}

/* The stopping rule of the Newton projections (fmu_mb.linalg.projection_done): 1 when the
 * residual err <= tol * scale, or when a stalled (err > 0.5 prev from the third iteration) or
 * the last iterate has err <= PROJECTION_ACCEPT * scale (the conditioning floor near a
 * singular pose); -1 (drift: a lock-up or a change of assembly branch) when such an iterate is
 * above it or err is not finite; 0 to iterate on. */
MB_MAYBE_UNUSED static int dense_projection_done(int it, double err, double prev, double tol, double scale,
                                 int last)
{
    if (!isfinite(err))
        return -1;
    if (err <= tol * scale)
        return 1;
    int stalled = it >= 2 && err > 0.5 * prev;
    if (stalled || it == last)
        return err <= PROJECTION_ACCEPT * scale ? 1 : -1;
    return 0;
}

/* The second half of the stopping rule (fmu_mb.linalg.projection_settled), for an iterate
 * whose residual dense_projection_done accepted: 1 when the Newton correction computed there,
 * step (largest entry), is at most tol * scale, or stalls (step > 0.5 prev_step from the
 * third iteration), or it is the last iteration; 0 to apply it and iterate on. Near a singular
 * pose a residual below tolerance can still hide a position error of residual / sigma along
 * the nearly dependent rows (sigma their small singular value), which the velocity projection
 * would turn into a velocity error of that size times rate / distance to the pose. */
MB_MAYBE_UNUSED static int dense_projection_settled(int it, double step, double prev_step, double tol,
                                    double scale, int last)
{
    return !(step > tol * scale) || (it >= 2 && step > 0.5 * prev_step) || it >= last;
}

#endif
