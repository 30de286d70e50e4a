/*
 * me_rows_check: the model-exchange closure's rows without Jacobians (engine_me.h
 * me_joint_rows) against the Jacobian rows of engine_spatial.h joint_terms, for every
 * spatial joint kind (tests/test_me_rows.py compiles it with the engine's sources): the
 * values must be the same numbers, the rates the Jacobian rows times the bodies' rates (x' of
 * the two bodies, the ground's zero) to round-off. Random poses of two bodies and the ground,
 * random joint points and frames, quaternions off the unit sphere by up to 1e-3 (the closure
 * evaluates its rows off the constraint manifold) and random rates.
 *
 * usage: me_rows_check [TRIALS]; prints "kinds=... rate_error=... value_mismatches=..." and
 * exits 1 when a count differs, a value is not the same number or a rate is off by more than
 * 1e-13 relative.
 */
#include "engine.c"

static double rnd(void)
{
    return 2.0 * rand() / RAND_MAX - 1.0;
}

int main(int argc, char** argv)
{
    int trials = argc > 1 ? atoi(argv[1]) : 2000, nb = 2, kinds = 0, mismatches = 0;
    double xe[21], xd[14], P[25], worst = 0.0;
    const int pairs[3][2] = {{0, 1}, {2, 1}, {0, 2}};     /* (parent, child); 2: the ground */
    srand(12345);
    for (int trial = 0; trial < trials; trial++) {
        for (int b = 0; b < nb; b++) {
            double* p = xe + 7 * b + 3, n = 0.0;
            for (int i = 0; i < 3; i++) {
                xe[7 * b + i] = rnd();
            }
            for (int i = 0; i < 4; i++) {
                p[i] = rnd();
                n += p[i] * p[i];
            }
            for (int i = 0; i < 4; i++) {
                p[i] *= (1.0 + 1e-3 * rnd()) / sqrt(n);
            }
        }
        for (int i = 0; i < 7; i++) {
            xe[7 * nb + i] = i == 3 ? 1.0 : 0.0;
        }
        for (int i = 0; i < 7 * nb; i++) {
            xd[i] = rnd();
        }
        for (int i = 0; i < 25; i++) {
            P[i] = rnd();
        }
        for (int kind = SJ_SPH; kind <= SJ_DST; kind++) {
            for (int w = 0; w < 3; w++) {
                Frames3 f = {xe, P, P + 3, P + 6, P + 15, pairs[w][0], pairs[w][1]};
                STerm t[6];
                double v[6], d[6], length = 0.5 * rnd();
                int k1 = joint_terms(kind, &f, length, t);
                int k2 = me_joint_rows(kind, &f, xd, nb, length, v, d);
                if (k1 != k2) {
                    printf("kind %d: %d rows, expected %d\n", kind, k2, k1);
                    return 1;
                }
                for (int r = 0; r < k1; r++) {
                    double s = 0.0, scale = 0.0;
                    for (int i = 0; i < 7; i++) {
                        if (f.p < nb) {
                            s += t[r].J[i] * xd[7 * f.p + i];
                            scale += fabs(t[r].J[i] * xd[7 * f.p + i]);
                        }
                        if (f.c < nb) {
                            s += t[r].J[7 + i] * xd[7 * f.c + i];
                            scale += fabs(t[r].J[7 + i] * xd[7 * f.c + i]);
                        }
                    }
                    worst = fmax(worst, fabs(s - d[r]) / (1.0 + scale));
                    mismatches += !(t[r].v == v[r]);
                }
            }
            kinds |= 1 << kind;
        }
    }
    printf("kinds=%d rate_error=%.3g value_mismatches=%d\n", kinds, worst, mismatches);
    return worst <= 1e-13 && mismatches == 0 ? 0 : 1;
}
