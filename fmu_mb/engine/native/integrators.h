/*
 * fmu_mb's explicit integrators in C, shared by the planar kernel (kernel.c) and the spatial
 * kernel (spatial_kernel.c): rk4 with equal steps, and dopri5 and dop853 with scipy's own
 * coefficients (compiled in from native/tableaus.h, made by fmu_mb/engine/tableaus.py) and scipy's step-size control
 * (select_initial_step, RK45's and DOP853's error norms, safety 0.9, factors 0.2 .. 10).
 *
 * Included by each kernel source in its integrator section (each library gets its own copy:
 * the functions are static). The including file defines before it: <math.h>, <string.h>,
 * the status codes OK, ERR_NONFINITE, ERR_STEP, ERR_ARGS and MAXS (most stages). It calls
 * the integrators with an Integ: the state size m, its work arrays (K: (MAXS + 1) m at
 * least, ytmp, ynew, fy, scale, err: m each) and two callbacks on its own context:
 *   rhs(ctx, y, dy)          dy = f(y) (inputs bound in ctx); ERR_NONFINITE for a non-finite
 *                            dy, another status for a failure;
 *   post(ctx, y, &moved)     drift control after an accepted step (projection, Euler
 *                            parameters' normalisation), NULL for none; moved = 1 when y
 *                            changed (f is then evaluated again).
 */
#ifndef FMU_MB_INTEGRATORS_H
#define FMU_MB_INTEGRATORS_H

typedef struct {
    int s;                 /* stages (without the FSAL stage) */
    int order;             /* order of the error estimator */
    int dop853;            /* error norm of DOP853 (E3 and E5) */
    double A[MAXS * MAXS], B[MAXS], C[MAXS], E[MAXS + 1], E3[MAXS + 1], E5[MAXS + 1];
    int ready;
} Tableau;

/* 0: dopri5 (scipy RK45), 1: dop853: compiled-in constants (no state set at load time, so
 * instances may live in several threads and a host may dlclose/dlopen the library) */
#include "tableaus.h"

typedef struct {
    int m;
    double *K, *ytmp, *ynew, *fy, *scale, *err;
    int (*rhs)(void *ctx, double t, const double *y, double *dy);   /* dy = f(t, y) */
    int (*post)(void *ctx, double t, double *y, int *moved);   /* drift control at t */
    void *ctx;
    long max_steps;        /* most steps (accepted and rejected) of one integ_advance; 0: no limit */
    /* first same as last across calls of integ_advance (NULL: none): fsal (m) holds f(t, y)
     * on entry when *fsal_state == 2 (the caller vouches that t, y, the inputs and the model
     * are those of the last call's end); on return *fsal_state = 2 with f(t_end, y) in fsal
     * after dopri5 and dop853, 1 otherwise (rk4 ends without f, or a failure) */
    double *fsal;
    int *fsal_state;
} Integ;

/* integ_advance stopped after I->max_steps steps (the caller's budget; y is unchanged) */
#define INTEG_ERR_BUDGET 7

/* The kernels' old load-time setter, kept as a check: OK when the given tableau is the
 * compiled-in one bit for bit (fmu_mb/engine/tableaus.py), ERR_ARGS otherwise. */
static int integ_set_tableau(int which, int s, int order, const double *A, const double *B,
                             const double *C, const double *E, const double *E3,
                             const double *E5)
{
    if (which < 0 || which > 1 || s < 1 || s > MAXS)
        return ERR_ARGS;
    const Tableau *T = &TAB[which];
    if (T->s != s || T->order != order || T->dop853 != (E3 != NULL && E5 != NULL) ||
        memcmp(T->A, A, sizeof(double) * s * s) || memcmp(T->B, B, sizeof(double) * s) ||
        memcmp(T->C, C, sizeof(double) * s) ||
        (E && memcmp(T->E, E, sizeof(double) * (s + 1))) ||
        (E3 && memcmp(T->E3, E3, sizeof(double) * (s + 1))) ||
        (E5 && memcmp(T->E5, E5, sizeof(double) * (s + 1))))
        return ERR_ARGS;
    return OK;
}

static int integ_all_finite(const double *y, int m)
{
    for (int i = 0; i < m; i++)
        if (!isfinite(y[i]))
            return 0;
    return 1;
}

static double integ_rms(const double *v, int m)
{
    double s = 0.0;
    for (int i = 0; i < m; i++)
        s += v[i] * v[i];
    return sqrt(s) / sqrt((double)m);
}

/* scipy.integrate._ivp.common.select_initial_step */
static int integ_initial_step(const Integ *I, const Tableau *T, double t, const double *y,
                              const double *f0, double t_end, double max_step, double rtol,
                              double atol, double *h_out)
{
    int m = I->m;
    double interval = fabs(t_end - t);
    if (interval == 0.0) {
        *h_out = 0.0;
        return OK;
    }
    double *sc = I->scale, *y1 = I->ytmp, *f1 = I->fy;
    for (int i = 0; i < m; i++)
        sc[i] = atol + fabs(y[i]) * rtol;
    double s0 = 0.0, s1 = 0.0;
    for (int i = 0; i < m; i++) {
        s0 += (y[i] / sc[i]) * (y[i] / sc[i]);
        s1 += (f0[i] / sc[i]) * (f0[i] / sc[i]);
    }
    double d0 = sqrt(s0) / sqrt((double)m), d1 = sqrt(s1) / sqrt((double)m);
    double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    if (h0 > interval)
        h0 = interval;
    for (int i = 0; i < m; i++)
        y1[i] = y[i] + h0 * f0[i];
    int rc = I->rhs(I->ctx, t + h0, y1, f1);
    if (rc != OK)
        return rc;
    double s2 = 0.0;
    for (int i = 0; i < m; i++) {
        double v = (f1[i] - f0[i]) / sc[i];
        s2 += v * v;
    }
    double d2 = sqrt(s2) / sqrt((double)m) / h0;
    double h1;
    if (d1 <= 1e-15 && d2 <= 1e-15)
        h1 = fmax(1e-6, h0 * 1e-3);
    else
        h1 = pow(0.01 / fmax(d1, d2), 1.0 / (T->order + 1));
    double h = 100 * h0;
    if (h1 < h)
        h = h1;
    if (interval < h)
        h = interval;
    if (max_step < h)
        h = max_step;
    *h_out = h;
    return OK;
}

/* One accepted step of an explicit Runge-Kutta pair with scipy's error control from
 * (tc, yc = K[(s+1) m], f = K[0]) toward t_end: on success tc and I->ynew hold the new time
 * and state, K the stages (K[s] = f(tc, ynew)), h_abs the next step size, h_taken the step. */
static int integ_rk_step(const Integ *I, const Tableau *T, double *tc_io, double t_end,
                         double *h_io, double rtol, double atol, double max_step, int *nfev,
                         double *h_taken)
{
    int m = I->m, s = T->s, rc;
    double *K = I->K, *yt = I->ytmp, *yn = I->ynew, *yc = K + (s + 1) * m;
    double tc = *tc_io, h_abs = *h_io;
    const double safety = 0.9, min_factor = 0.2, max_factor = 10.0;
    const double expo = -1.0 / (T->order + 1);
    double min_step = 10 * fabs(nextafter(tc, INFINITY) - tc);
    if (h_abs > max_step)
        h_abs = max_step;
    else if (h_abs < min_step)
        h_abs = min_step;
    int rejected = 0;
    for (;;) {
        if (h_abs < min_step)
            return ERR_STEP;
        double t_new = tc + h_abs;
        if (t_new - t_end > 0)
            t_new = t_end;
        double h = t_new - tc;
        h_abs = fabs(h);
        /* stages: K[0] = f(tc, yc) */
        rc = OK;
        for (int st = 1; st < s; st++) {
            const double *a = T->A + st * s;
            for (int i = 0; i < m; i++) {
                double acc = 0.0;
                for (int j = 0; j < st; j++)
                    acc += K[j * m + i] * a[j];
                yt[i] = yc[i] + acc * h;
            }
            if ((rc = I->rhs(I->ctx, tc + T->C[st] * h, yt, K + st * m)) != OK)
                break;
        }
        if (rc == OK) {
            for (int i = 0; i < m; i++) {
                double acc = 0.0;
                for (int j = 0; j < s; j++)
                    acc += K[j * m + i] * T->B[j];
                yn[i] = yc[i] + h * acc;
            }
            rc = I->rhs(I->ctx, t_new, yn, K + s * m);
        }
        *nfev += s;
        if (rc == ERR_NONFINITE) {          /* a stage left the finite range: shrink */
            h_abs *= min_factor;
            rejected = 1;
            continue;
        }
        if (rc != OK)
            return rc;
        double *sc = I->scale, err;
        for (int i = 0; i < m; i++)
            sc[i] = atol + fmax(fabs(yc[i]), fabs(yn[i])) * rtol;
        if (T->dop853) {
            double e5 = 0.0, e3 = 0.0;
            for (int i = 0; i < m; i++) {
                double a5 = 0.0, a3 = 0.0;
                for (int j = 0; j <= s; j++) {
                    a5 += K[j * m + i] * T->E5[j];
                    a3 += K[j * m + i] * T->E3[j];
                }
                a5 /= sc[i];
                a3 /= sc[i];
                e5 += a5 * a5;
                e3 += a3 * a3;
            }
            if (e5 == 0.0 && e3 == 0.0)
                err = 0.0;
            else
                err = h_abs * e5 / sqrt((e5 + 0.01 * e3) * m);
        } else {
            double *ev = I->err;
            for (int i = 0; i < m; i++) {
                double acc = 0.0;
                for (int j = 0; j <= s; j++)
                    acc += K[j * m + i] * T->E[j];
                ev[i] = acc * h / sc[i];
            }
            err = integ_rms(ev, m);
        }
        if (!isfinite(err)) {
            h_abs *= min_factor;
            rejected = 1;
            continue;
        }
        if (err < 1.0) {
            double factor = err == 0.0 ? max_factor : fmin(max_factor, safety * pow(err, expo));
            if (rejected && factor > 1.0)
                factor = 1.0;
            h_abs *= factor;
            tc = t_new;
            if (h_taken)
                *h_taken = h;
            break;
        }
        h_abs *= fmax(min_factor, safety * pow(err, expo));
        rejected = 1;
    }
    *tc_io = tc;
    *h_io = h_abs;
    return OK;
}

/*
 * Integrate y (m) from t to t_end. method 0: dopri5, 1: dop853 (adaptive, scipy's step-size
 * control, first step h_io when > 0, no larger than the error estimate allows: a step whose
 * estimate exceeds the tolerance is rejected and retried shorter), 2: rk4 with steps of at
 * most `step`. I->post runs after every accepted step; f at the start comes from I->fsal
 * when the caller vouches for it (first same as last across communication steps). On success y holds the state at t_end and h_io the step-size hint to
 * continue with; on failure y is unchanged and t_fail holds the time.
 */
static int integ_advance(const Integ *I, int method, double t, double t_end, double *y,
                         double *h_io, double rtol, double atol, double max_step, double step,
                         int *nfev, double *t_fail)
{
    int m = I->m, rc, moved;
    double *K = I->K, *yt = I->ytmp, *yn = I->ynew;
    *nfev = 0;
    *t_fail = t;
    if (m == 0)                                /* no coordinates: nothing moves */
        return OK;
    if (method == 2) {
        if (I->fsal)
            *I->fsal_state = 1;
        double span = t_end - t;
        double ns = ceil(span / step - 1e-9);
        long nsteps = ns < 1.0 ? 1 : (long)ns;
        if (I->max_steps > 0 && nsteps > I->max_steps)
            return INTEG_ERR_BUDGET;
        double dt = span / (double)nsteps;
        double *k1 = K, *k2 = K + m, *k3 = K + 2 * m, *k4 = K + 3 * m, *yc = K + 4 * m;
        memcpy(yc, y, sizeof(double) * m);
        for (long s = 0; s < nsteps; s++) {
            double tk = t + s * dt;
            *t_fail = tk;
            if ((rc = I->rhs(I->ctx, tk, yc, k1)) != OK)
                return rc;
            for (int i = 0; i < m; i++)
                yt[i] = yc[i] + dt / 2 * k1[i];
            if ((rc = I->rhs(I->ctx, tk + dt / 2, yt, k2)) != OK)
                return rc;
            for (int i = 0; i < m; i++)
                yt[i] = yc[i] + dt / 2 * k2[i];
            if ((rc = I->rhs(I->ctx, tk + dt / 2, yt, k3)) != OK)
                return rc;
            for (int i = 0; i < m; i++)
                yt[i] = yc[i] + dt * k3[i];
            if ((rc = I->rhs(I->ctx, tk + dt, yt, k4)) != OK)
                return rc;
            *nfev += 4;
            for (int i = 0; i < m; i++)
                yc[i] = yc[i] + dt / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
            if (!integ_all_finite(yc, m))
                return ERR_NONFINITE;
            if (I->post) {
                *t_fail = s == nsteps - 1 ? t_end : t + (s + 1) * dt;
                if ((rc = I->post(I->ctx, *t_fail, yc, &moved)) != OK)
                    return rc;
            }
        }
        memcpy(y, yc, sizeof(double) * m);
        *h_io = dt;
        return OK;
    }
    const Tableau *T = &TAB[method == 1 ? 1 : 0];
    if (!T->ready)
        return ERR_ARGS;
    int s = T->s;
    double *yc = K + (s + 1) * m, *f = K;      /* K rows 0..s, then the current y */
    memcpy(yc, y, sizeof(double) * m);
    double tc = t;
    if (I->fsal && *I->fsal_state == 2) {
        memcpy(f, I->fsal, sizeof(double) * m);    /* the last call's final stage */
        *I->fsal_state = 1;
    } else {
        if (I->fsal)
            *I->fsal_state = 1;
        if ((rc = I->rhs(I->ctx, tc, yc, f)) != OK)
            return rc;
        *nfev += 1;
    }
    double h_abs = *h_io;
    if (h_abs > 0.0) {
        if (h_abs > t_end - t)
            h_abs = t_end - t;
    } else {
        if ((rc = integ_initial_step(I, T, tc, yc, f, t_end, max_step, rtol, atol, &h_abs))
            != OK)
            return rc;
        *nfev += 1;
    }
    long taken = 0;
    while (tc < t_end) {
        *t_fail = tc;
        if (I->max_steps > 0 && ++taken > I->max_steps)
            return INTEG_ERR_BUDGET;
        /* the controller's proposal; a last step shortened to end at t_end and accepted
         * leaves the larger of its own proposal and this one (the next interval starts
         * from the error estimate, not from the remainder the interval's end left) */
        double prop = fmin(h_abs, max_step), t_before = tc;
        if ((rc = integ_rk_step(I, T, &tc, t_end, &h_abs, rtol, atol, max_step, nfev, NULL))
            != OK)
            return rc;
        if (tc >= t_end && t_end - t_before < prop && h_abs < prop)
            h_abs = prop;
        memcpy(yc, yn, sizeof(double) * m);
        memcpy(f, K + s * m, sizeof(double) * m);
        if (!integ_all_finite(yc, m)) {
            *t_fail = tc;
            return ERR_NONFINITE;
        }
        moved = 0;
        if (I->post) {                             /* drift control after every step */
            *t_fail = tc;
            if ((rc = I->post(I->ctx, *t_fail, yc, &moved)) != OK)
                return rc;
        }
        if (moved) {                               /* f at the corrected state */
            if ((rc = I->rhs(I->ctx, tc, yc, f)) != OK)
                return rc;
            *nfev += 1;
        }
    }
    memcpy(y, yc, sizeof(double) * m);
    *h_io = h_abs;
    if (I->fsal) {                                 /* f(t_end, y) for the next call */
        memcpy(I->fsal, f, sizeof(double) * m);
        *I->fsal_state = 2;
    }
    return OK;
}

/* One accepted dopri5 (method 0) or dop853 (1) step for an event loop that keeps the dense
 * output and the drift control itself:
 * par = [t (in/out), t_end, h (in: hint or 0, out: next step size), rtol, atol, max_step,
 *        h_taken (out)]; y (m) the state at t, in: f(t, y) in Kout[0..m) when have_f;
 * out: y the new (unprojected) state, Kout (s + 1 rows of m) the stages, K[s] = f(t_new, y). */
static int integ_one_step(const Integ *I, int method, double *par, double *y, int have_f,
                          double *Kout, int *nfev)
{
    int m = I->m, rc;
    const Tableau *T = &TAB[method == 1 ? 1 : 0];
    if (!T->ready || m == 0)
        return ERR_ARGS;
    int s = T->s;
    double *K = I->K, *yc = K + (s + 1) * m;
    *nfev = 0;
    memcpy(yc, y, sizeof(double) * m);
    if (have_f) {
        memcpy(K, Kout, sizeof(double) * m);
    } else {
        if ((rc = I->rhs(I->ctx, par[0], yc, K)) != OK)
            return rc;
        *nfev += 1;
    }
    double tc = par[0], h_abs = par[2];
    if (h_abs > 0.0) {
        if (h_abs > par[1] - tc)
            h_abs = par[1] - tc;
    } else {
        if ((rc = integ_initial_step(I, T, tc, yc, K, par[1], par[5], par[3], par[4], &h_abs))
            != OK)
            return rc;
        *nfev += 1;
    }
    if ((rc = integ_rk_step(I, T, &tc, par[1], &h_abs, par[3], par[4], par[5], nfev, &par[6]))
        != OK)
        return rc;
    if (!integ_all_finite(I->ynew, m))
        return ERR_NONFINITE;
    memcpy(y, I->ynew, sizeof(double) * m);
    memcpy(Kout, K, sizeof(double) * (s + 1) * m);
    par[0] = tc;
    par[2] = h_abs;
    return OK;
}

#endif
