/*
 * fmu_mb's Coulomb friction law, kernel-independent (fmu_mb.dynamics.friction in C): the slip
 * direction and the small non-symmetric solve of the sliding forces, shared by the kernels
 * (spatial_kernel.c; docs/contacts-friction.md).
 */
#ifndef FMU_MB_FRICTION_H
#define FMU_MB_FRICTION_H

#include <math.h>
#include <string.h>

/* s = sigma v / |v| (sigma = +1 when v . s0 >= 0, else -1), s = s0 when v = 0 (kt values) */
static void fr_slip_direction(int kt, const double *v, const double *s0, double *s)
{
    double nv = 0.0, d = 0.0;
    for (int i = 0; i < kt; i++) {
        nv += v[i] * v[i];
        d += v[i] * s0[i];
    }
    nv = sqrt(nv);
    if (nv == 0.0) {
        memcpy(s, s0, sizeof(double) * (size_t)kt);
        return;
    }
    double f = d >= 0.0 ? 1.0 / nv : -1.0 / nv;
    for (int i = 0; i < kt; i++)
        s[i] = v[i] * f;
}

/* x = A^-1 b for the p x p matrix A (row-major; W: p x p workspace) by Gaussian elimination
 * with partial pivoting; 1 (singular: a pivot <= 1e-12 max(1, max |A|)), else 0 */
static int fr_solve(int p, const double *A, double *W, const double *b, double *x)
{
    double amax = 1.0;
    memcpy(W, A, sizeof(double) * (size_t)(p * p));
    memcpy(x, b, sizeof(double) * (size_t)p);
    for (int i = 0; i < p * p; i++)
        amax = fmax(amax, fabs(A[i]));
    for (int c = 0; c < p; c++) {
        int piv = c;
        for (int r = c + 1; r < p; r++)
            if (fabs(W[r * p + c]) > fabs(W[piv * p + c]))
                piv = r;
        if (!(fabs(W[piv * p + c]) > 1e-12 * amax))
            return 1;
        if (piv != c) {
            for (int j = 0; j < p; j++) {
                double t = W[c * p + j];
                W[c * p + j] = W[piv * p + j];
                W[piv * p + j] = t;
            }
            double t = x[c];
            x[c] = x[piv];
            x[piv] = t;
        }
        for (int r = c + 1; r < p; r++) {
            double f = W[r * p + c] / W[c * p + c];
            for (int j = c; j < p; j++)
                W[r * p + j] -= f * W[c * p + j];
            x[r] -= f * x[c];
        }
    }
    for (int c = p - 1; c >= 0; c--) {
        double acc = x[c];
        for (int j = c + 1; j < p; j++)
            acc -= W[c * p + j] * x[j];
        x[c] = acc / W[c * p + c];
    }
    return 0;
}

#endif
