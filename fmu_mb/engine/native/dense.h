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

static const double RANK_RTOL = 3e-8;          /* fmu_mb.linalg.RANK_RTOL */
static const double PROJECTION_RTOL = 1e-13;   /* fmu_mb.linalg.PROJECTION_RTOL */
static const double PROJECTION_ACCEPT = 1e-10; /* fmu_mb.linalg.PROJECTION_ACCEPT */

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
 * [rtol max diag S, rtol trace S]; so tr_E <= 1e-2 rtol max diag S and lam_r >= 1e2 rtol
 * trace S keep exactly r eigenvalues on either route, and tr_E <= 1e-11 lam_r bounds the
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
    double stop = 1e-2 * rtol * dmax;
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
    if (!(lam_r >= 1e2 * rtol * tr) || !(trE <= 1e-11 * lam_r))
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

/* y = S^+ rhs for the symmetric positive semi-definite S in A (m x m; kept unless the Jacobi
 * fallback runs; V (m x m) and w (m) workspace) and nrhs right-hand sides (rhs and y: nrhs
 * columns of m, y apart from rhs): Cholesky when S is well conditioned, else the
 * eigen-decomposition (syev when given with its workspace, else Jacobi) with the eigenvalues
 * below rtol * max cut off (minimum-norm solution): rtol = RANK_RTOL for the multipliers,
 * PROJECTION_RTOL for the projections (fmu_mb.linalg.schur_solve); pivoted: dense_pc_minnorm
 * before the eigen-decomposition */
static int dense_psd_solve_x(double *A, double *V, double *w, int m, syev_fn syev,
                             double *work, int lwork, double rtol, int nrhs,
                             const double *rhs, double *y, int pivoted)
{
    memcpy(V, A, sizeof(double) * m * m);        /* keep S for the fallback */
    int ok = 1;
    double dmin = INFINITY, dmax = 0.0;
    for (int j = 0; j < m && ok; j++) {          /* L in the lower triangle of V */
        double s = V[j * m + j];
        for (int i = 0; i < j; i++)
            s -= V[j * m + i] * V[j * m + i];
        if (!(s > 0.0)) {
            ok = 0;
            break;
        }
        double d = sqrt(s);
        V[j * m + j] = d;
        dmin = fmin(dmin, d);
        dmax = fmax(dmax, d);
        for (int r = j + 1; r < m; r++) {
            double t = V[r * m + j];
            for (int i = 0; i < j; i++)
                t -= V[r * m + i] * V[j * m + i];
            V[r * m + j] = t / d;
        }
    }
    if (ok && dmin * dmin > rtol * 1e2 * dmax * dmax) {
        for (int c = 0; c < nrhs; c++) {
            const double *b = rhs + (size_t)c * m;
            double *x = y + (size_t)c * m;
            for (int i = 0; i < m; i++) {
                double t = b[i];
                for (int j = 0; j < i; j++)
                    t -= V[i * m + j] * x[j];
                x[i] = t / V[i * m + i];
            }
            for (int i = m - 1; i >= 0; i--) {
                double t = x[i];
                for (int j = i + 1; j < m; j++)
                    t -= V[j * m + i] * x[j];
                x[i] = t / V[i * m + i];
            }
        }
        return OK;
    }
    for (int i = 0; i < m * m; i++)
        if (!isfinite(A[i]))
            return ERR_NONFINITE;
    if (pivoted && dense_pc_minnorm(A, V, m, rtol, nrhs, rhs, y))
        return OK;
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
    double cut = rtol * fmax(wmax, 1e-300);
    for (int i = 0; i < nrhs * m; i++)
        y[i] = 0.0;
    for (int e = 0; e < m; e++) {
        if (!(w[e] > cut))
            continue;
        for (int c = 0; c < nrhs; c++) {
            const double *b = rhs + (size_t)c * m;
            double *x = y + (size_t)c * m, t = 0.0;
            for (int i = 0; i < m; i++)
                t += V[e * se + i * si] * b[i];
            t /= w[e];
            for (int i = 0; i < m; i++)
                x[i] += V[e * se + i * si] * t;
        }
    }
    return OK;
}

static int dense_psd_solve_n(double *A, double *V, double *w, int m, syev_fn syev,
                             double *work, int lwork, double rtol, int nrhs,
                             const double *rhs, double *y)
{
    return dense_psd_solve_x(A, V, w, m, syev, work, lwork, rtol, nrhs, rhs, y, 0);
}

/* dense_psd_solve_n with the pivoted Cholesky factorisation of dense_pc_minnorm before the
 * eigen-decomposition (redundant rows: the same minimum-norm solution to ~1e-11, without the
 * eigen-decomposition's cost) */
static int dense_psd_solve_pc(double *A, double *V, double *w, int m, double rtol, int nrhs,
                              const double *rhs, double *y)
{
    return dense_psd_solve_x(A, V, w, m, NULL, NULL, 0, rtol, nrhs, rhs, y, 1);
}

/* one right-hand side, the multipliers' cut-off RANK_RTOL */
static int dense_psd_solve(double *A, double *V, double *w, int m, syev_fn syev, double *work,
                           int lwork, const double *rhs, double *y)
{
    return dense_psd_solve_n(A, V, w, m, syev, work, lwork, RANK_RTOL, 1, rhs, y);
}

/* The stopping rule of the Newton projections (fmu_mb.linalg.projection_done): 1 when the
 * residual err <= tol * scale, or when a stalled (err > 0.5 prev from the third iteration) or
 * the last iterate has err <= PROJECTION_ACCEPT * scale (the conditioning floor near a
 * singular pose); -1 (drift: a lock-up or a change of assembly branch) when such an iterate is
 * above it or err is not finite; 0 to iterate on. */
static int dense_projection_done(int it, double err, double prev, double tol, double scale,
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
static int dense_projection_settled(int it, double step, double prev_step, double tol,
                                    double scale, int last)
{
    return !(step > tol * scale) || (it >= 2 && step > 0.5 * prev_step) || it >= last;
}

#endif
