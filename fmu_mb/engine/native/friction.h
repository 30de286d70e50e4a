/*
 * fmu_mb's Coulomb friction law, kernel-independent (fmu_mb.dynamics.friction in C): the slip
 * direction and the small non-symmetric solve of the sliding forces, and the rest-state rule
 * of joints with Coulomb friction coupled through the mass matrix (fr_rest_states), shared by
 * the kernels (kernel.c, spatial_kernel.c; docs/contacts-friction.md).
 */
#ifndef FMU_MB_FRICTION_H
#define FMU_MB_FRICTION_H

#include <math.h>
#include <string.h>

/* A slip speed at or below FR_REST_SLIP [m/s] is a slip at rest: its direction is the recorded
 * s0 (fmu_mb.dynamics.friction.REST_SLIP). A slip counts as under way (its slip -> stick event
 * armed) once v_t . s0 exceeded FR_REST_ARM [m/s] (rounding of a slip held at rest stays
 * below). Sticking contacts within FR_TIE_CONE (relative to the largest mu f_n of the sticking
 * contacts) of their cone leave it with the one reaching it (friction.TIE_CONE). */
#define FR_REST_SLIP 1e-6
#define FR_REST_ARM 1e-13
#define FR_TIE_CONE 1e-9

/* s = sigma v / |v| (sigma = +1 when v . s0 >= 0, else -1), s = s0 when |v| <= FR_REST_SLIP
 * (kt values) */
static void fr_slip_direction(int kt, const double *v, const double *s0, double *s)
{
    double nv = 0.0, d = 0.0;
    for (int i = 0; i < kt; i++) {
        nv += v[i] * v[i];
        d += v[i] * s0[i];
    }
    nv = sqrt(nv);
    if (nv <= FR_REST_SLIP) {
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

/* The friction forces f (p) of the joints at rest, coupled through the accelerations
 * qdd = c + A f (A p x p symmetric positive semi-definite, row-major): the minimiser of
 * 1/2 f'A f + c'f with |f_j| <= bound_j (the dual of Coulomb's law at acceleration level,
 * fmu_mb.dynamics.friction.rest_states; unique accelerations). Projected Gauss-Seidel sweeps,
 * then the free joints' block solved exactly for the bounds PGS settled on (kept when the
 * result is feasible and its accelerations have the bound joints' signs). A joint whose
 * diagonal is ~0 (no acceleration of its own) gets f = 0. W: 2 p^2 + 3 p workspace; acc (p)
 * out: c + A f. */
static inline void fr_box_qp(int p, const double *A, const double *c,
                             const double *bound, double *W, double *f, double *acc)
{
    double amax = 0.0;
    for (int i = 0; i < p * p; i++)
        amax = fmax(amax, fabs(A[i]));
    double dmin = 1e-12 * fmax(1.0, amax);
    for (int j = 0; j < p; j++)
        f[j] = 0.0;
    for (int sweep = 0; sweep < 20000; sweep++) {
        double moved = 0.0;
        for (int j = 0; j < p; j++) {
            double d = A[j * p + j];
            if (!(d > dmin))
                continue;
            double g = c[j];
            for (int k = 0; k < p; k++)
                g += A[j * p + k] * f[k];
            double v = fmin(bound[j], fmax(-bound[j], f[j] - g / d));
            moved = fmax(moved, fabs(v - f[j]) / fmax(1.0, bound[j]));
            f[j] = v;
        }
        if (moved <= 1e-15)
            break;
    }
    /* polish: the free joints' block solved with the bound ones' forces fixed */
    double *Af = W, *Wk = W + p * p, *rhs = Wk + p * p, *x = rhs + p, *fp = x + p;
    int nf = 0, idx[64];
    if (p <= 64) {
        for (int j = 0; j < p; j++)
            if (A[j * p + j] > dmin && fabs(f[j]) < bound[j] * (1.0 - 1e-12))
                idx[nf++] = j;
        for (int a = 0; a < nf; a++) {
            double r = -c[idx[a]];
            for (int k = 0; k < p; k++) {
                int free_k = 0;
                for (int b = 0; b < nf; b++)
                    free_k |= idx[b] == k;
                if (!free_k)
                    r -= A[idx[a] * p + k] * f[k];
            }
            rhs[a] = r;
            for (int b = 0; b < nf; b++)
                Af[a * nf + b] = A[idx[a] * p + idx[b]];
        }
        if (nf == 0 || fr_solve(nf, Af, Wk, rhs, x) == 0) {
            memcpy(fp, f, sizeof(double) * (size_t)p);
            int ok = 1;
            for (int a = 0; a < nf; a++) {
                fp[idx[a]] = x[a];
                ok &= fabs(x[a]) <= bound[idx[a]];
            }
            for (int j = 0; ok && j < p; j++) {
                double g = c[j];
                for (int k = 0; k < p; k++)
                    g += A[j * p + k] * fp[k];
                double tiny = 1e-9 * fmax(1.0, fabs(c[j]));
                if (fabs(fp[j]) >= bound[j] * (1.0 - 1e-12) && A[j * p + j] > dmin)
                    ok &= fp[j] > 0.0 ? g <= tiny : g >= -tiny;   /* pushed against it */
            }
            if (ok)
                memcpy(f, fp, sizeof(double) * (size_t)p);
        }
    }
    for (int j = 0; j < p; j++) {
        double g = c[j];
        for (int k = 0; k < p; k++)
            g += A[j * p + k] * f[k];
        acc[j] = g;
    }
}

/* The stick/slip states of p joints at rest from their coupled problem (fr_box_qp; as
 * fmu_mb.dynamics.friction.rest_states): a joint sticks unless its force is at the bound and
 * it accelerates (|acc| > 1e-9 (1 + max |c|)), then slips along s0 = sign(acc) (stick[j] 1
 * or 0; s0[j] set for the slipping ones only). W: 2 p^2 + 5 p workspace. */
static inline void fr_rest_states(int p, const double *A, const double *c,
                                  const double *bound, double *W, unsigned char *stick,
                                  double *s0)
{
    double *f = W + 2 * p * p + 3 * p, *acc = f + p, cmax = 0.0;
    fr_box_qp(p, A, c, bound, W, f, acc);
    for (int j = 0; j < p; j++)
        cmax = fmax(cmax, fabs(c[j]));
    double tiny = 1e-9 * (1.0 + cmax);
    for (int j = 0; j < p; j++) {
        int at_bound = fabs(f[j]) >= bound[j] * (1.0 - 1e-9);
        stick[j] = !(at_bound && fabs(acc[j]) > tiny);
        if (!stick[j])
            s0[j] = acc[j] > 0.0 ? 1.0 : -1.0;
    }
}

#endif
