/*
 * fmu_mb engine: the drive laws the kernels evaluate in C (fmu_mb.mechanics.motion's
 * constant_rate, harmonic and polynomial), shared by kernel.c, spatial_kernel.c and engine.c.
 */
#ifndef FMU_MB_LAWS_H
#define FMU_MB_LAWS_H

#include <math.h>

/* s(t), s'(t), s''(t) into v[0..2]: harmonic (P = A, w, phase, offset):
 * offset + A sin(w t + phase); else the polynomial P[0] + P[1] t + ... + P[cnt-1] t^(cnt-1)
 * and its derivatives by Horner's scheme (constant_rate is a polynomial of degree 1). */
static inline void drive_law_eval(int harmonic, const double *P, int cnt, double t, double *v)
{
    if (harmonic) {
        double sn = sin(P[1] * t + P[2]), cs = cos(P[1] * t + P[2]);
        v[0] = P[3] + P[0] * sn;
        v[1] = P[0] * P[1] * cs;
        v[2] = -P[0] * P[1] * P[1] * sn;
        return;
    }
    double a = 0.0, b = 0.0, c = 0.0;
    for (int i = cnt - 1; i >= 0; i--) {
        c = c * t + 2.0 * b;
        b = b * t + a;
        a = a * t + P[i];
    }
    v[0] = a;
    v[1] = b;
    v[2] = c;
}

#endif
