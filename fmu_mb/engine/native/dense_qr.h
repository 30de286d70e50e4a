/*
 * The constrained accelerations without squaring the rows' condition, shared by the planar
 * kernel (kernel.c) and the spatial one (spatial_kernel.c) for model exchange near a dead
 * point (engine_me.h): the Schur complement S = D Mbar^-1 D' of the loop rows has the square
 * of the condition of D Mbar^-1/2, so that rows which are nearly dependent (singular values
 * of D Mbar^-1/2 below ~1e-4 of the largest) fall under the multipliers' cut-off RANK_RTOL
 * of S's eigenvalues and the accelerations then violate those rows' acceleration equations.
 * Here, with Mbar^-1 = L L' (Cholesky) and the Householder QR with column pivoting
 * B' P = Q R of B' = L' D' (n x m):
 *
 *   Mbar a + D' lam = fbar, D a = b  =>  a = a0 - L Q y,  R11' y = (P' rr)[0..r)
 *
 * (a0 = Mbar^-1 fbar the free motion, rr = D a0 - b as the kernels' Schur solve, r the rank:
 * the columns with |R_kk| > rtol |R_00|), the same a as the Schur solve where S is regular, and
 * the rows kept satisfied to the round-off of R (|R_kk| is the distance of the row from
 * the others', not its square). Model exchange runs in the compiled engine only, so this solve
 * has no Python twin (tests/test_model_exchange.py checks it against the N-four-bar's closed
 * form near its dead point).
 */
#ifndef FMU_MB_DENSE_QR_H
#define FMU_MB_DENSE_QR_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double QR_RANK_RTOL = 1e-12;    /* |R_kk| / |R_00| below: the row is dropped */

/* Cholesky A = L L' of the symmetric positive semi-definite A (n x n, row-major, lower
 * triangle used; L written over it, upper triangle zeroed): a pivot that is not positive
 * (a prescribed coordinate's zero row and column of Mbar^-1) leaves its column of L zero */
static void dense_chol_psd(double *A, int n)
{
    for (int j = 0; j < n; j++) {
        double s = A[j * n + j];
        for (int i = 0; i < j; i++)
            s -= A[j * n + i] * A[j * n + i];
        double d = s > 0.0 ? sqrt(s) : 0.0;
        A[j * n + j] = d;
        for (int r = j + 1; r < n; r++) {
            double t = A[r * n + j];
            for (int i = 0; i < j; i++)
                t -= A[r * n + i] * A[j * n + i];
            A[r * n + j] = d > 0.0 ? t / d : 0.0;
        }
        for (int c = j + 1; c < n; c++)
            A[j * n + c] = 0.0;
    }
}

/* a (n) = a0 - L Q y (above) for Minv = Mbar^-1 (n x n, symmetric, destroyed), D (m x n) the
 * rows' Jacobian, rr (m); *rank the rows kept. OK, or ERR_NONFINITE when out of memory or
 * not finite. */
static int dense_qr_accelerations(int n, int m, double *Minv, const double *D,
                                  const double *rr, const double *a0, double rtol, double *a,
                                  int *rank)
{
    size_t nn = (size_t)(n > 0 ? n : 1), mm = (size_t)(m > 0 ? m : 1);
    double *B = malloc(sizeof(double) * (nn * mm + 2 * mm + 2 * nn));   /* B' (n x m) */
    int *perm = malloc(sizeof(int) * mm);
    if (!B || !perm) {
        free(B);
        free(perm);
        return ERR_NONFINITE;
    }
    double *cn = B + nn * mm, *y = cn + mm, *z = y + mm, *w = z + nn;
    dense_chol_psd(Minv, n);
    const double *L = Minv;
    for (int i = 0; i < n; i++)             /* B'[i][r] = sum_j L[j][i] D[r][j], j >= i */
        for (int r = 0; r < m; r++) {
            double s = 0.0;
            for (int j = i; j < n; j++)
                s += L[(size_t)j * n + i] * D[(size_t)r * n + j];
            B[(size_t)i * m + r] = s;
        }
    for (int r = 0; r < m; r++) {
        perm[r] = r;
        double s = 0.0;
        for (int i = 0; i < n; i++)
            s += B[(size_t)i * m + r] * B[(size_t)i * m + r];
        cn[r] = s;
    }
    /* Householder QR with column pivoting: column k's reflector v (B'[k..n) [k] below the
     * diagonal, v_k = 1 implicit) and tau in y (reused after the rank decision) */
    int kmax = n < m ? n : m, r = 0;
    double r00 = 0.0;
    double *tau = z;                        /* (n >= kmax entries) */
    for (int k = 0; k < kmax; k++) {
        int p = k;                          /* the largest remaining column norm */
        for (int c = k + 1; c < m; c++)
            if (cn[c] > cn[p])
                p = c;
        if (p != k) {
            for (int i = 0; i < n; i++) {
                double t = B[(size_t)i * m + k];
                B[(size_t)i * m + k] = B[(size_t)i * m + p];
                B[(size_t)i * m + p] = t;
            }
            double t = cn[k];
            cn[k] = cn[p];
            cn[p] = t;
            int ti = perm[k];
            perm[k] = perm[p];
            perm[p] = ti;
        }
        double nrm = 0.0;
        for (int i = k; i < n; i++)
            nrm += B[(size_t)i * m + k] * B[(size_t)i * m + k];
        nrm = sqrt(nrm);
        if (k == 0)
            r00 = nrm;
        if (!(nrm > rtol * r00))            /* the rank: the rest depends on the kept rows */
            break;
        double x0 = B[(size_t)k * m + k];
        double beta = x0 >= 0.0 ? -nrm : nrm;
        double v0 = x0 - beta;
        for (int i = k + 1; i < n; i++)
            B[(size_t)i * m + k] /= v0;
        tau[k] = (beta - x0) / beta;
        B[(size_t)k * m + k] = beta;
        for (int c = k + 1; c < m; c++) {   /* apply H = I - tau v v' to column c */
            double s = B[(size_t)k * m + c];
            for (int i = k + 1; i < n; i++)
                s += B[(size_t)i * m + k] * B[(size_t)i * m + c];
            s *= tau[k];
            B[(size_t)k * m + c] -= s;
            for (int i = k + 1; i < n; i++)
                B[(size_t)i * m + c] -= s * B[(size_t)i * m + k];
        }
        for (int c = k + 1; c < m; c++) {   /* the remaining norms, recomputed (few columns) */
            double s = 0.0;
            for (int i = k + 1; i < n; i++)
                s += B[(size_t)i * m + c] * B[(size_t)i * m + c];
            cn[c] = s;
        }
        r = k + 1;
    }
    *rank = r;
    /* R11' y = (P' rr)[0..r): forward substitution with the upper-triangular R11 */
    for (int k = 0; k < r; k++) {
        double s = rr[perm[k]];
        for (int i = 0; i < k; i++)
            s -= B[(size_t)i * m + k] * y[i];
        y[k] = s / B[(size_t)k * m + k];
    }
    /* w = Q [y; 0] = H_0 ... H_{r-1} [y; 0] */
    for (int i = 0; i < n; i++)
        w[i] = i < r ? y[i] : 0.0;
    for (int k = r - 1; k >= 0; k--) {
        double s = w[k];
        for (int i = k + 1; i < n; i++)
            s += B[(size_t)i * m + k] * w[i];
        s *= tau[k];
        w[k] -= s;
        for (int i = k + 1; i < n; i++)
            w[i] -= s * B[(size_t)i * m + k];
    }
    int ok = 1;
    for (int j = 0; j < n; j++) {           /* a = a0 - L w */
        double s = 0.0;
        for (int i = 0; i <= j; i++)
            s += L[(size_t)j * n + i] * w[i];
        a[j] = a0[j] - s;
        ok &= isfinite(a[j]);
    }
    free(B);
    free(perm);
    return ok ? OK : ERR_NONFINITE;
}

#endif
