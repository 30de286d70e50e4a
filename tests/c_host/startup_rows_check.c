/*
 * startup_rows_check: the planar initialisation's rows by body blocks (engine.c given_rows,
 * plrow_set, plrow_gram, nzrows_pl, min_norm, nz_velocity_residual) against the dense rows
 * the engine builds independently (model_rows with a dense D, the given joint coordinates'
 * rows added column by column) at random poses near the model's assembled one
 * (tests/test_startup_scale.py compiles it with the engine's sources):
 * - the rows and their right-hand sides, of the positions and of the velocities: the same
 *   numbers;
 * - every product of two rows over their shared bodies (plrow_gram) and every row times a
 *   random vector (the velocity residual): the dense sums' numbers;
 * - the minimum M-norm correction dx = M^-1 A' (A M^-1 A')^-1 r of min_norm over the rows'
 *   nonzeros against the same formula evaluated densely here (a plain Cholesky of the dense
 *   A M^-1 A'), and against the dense fine cut min_norm_fine: relative to 1e-9.
 *
 * usage: startup_rows_check BLOB [TRIALS]; BLOB: the model data (fmu_mb.engine.data
 * EngineData.to_bytes) of a planar model; prints "rows=... row_mismatches=...
 * gram_mismatches=... residual_mismatches=... min_norm_error=... fine_error=..." and exits
 * 1 when a number differs or an error exceeds 1e-9.
 */
#include "blob_file.h"
#include "engine.c"

static double rnd(void)
{
    return 2.0 * rand() / RAND_MAX - 1.0;
}

/* the reference: the rows of given_rows as dense rows D (k x 3 nb), rhs alike */
static int dense_given_rows(MbEngine *e, const double *x, double t, int rates, double *rhs,
                            double *D)
{
    int nb = e->nb, nc = 3 * nb, k = e->nrows;
    if (model_rows(e, x, t, rates ? e->phi : rhs, e->phit, D) != OK)
        return -1;
    for (int i = 0; rates && i < e->nrows; i++)
        rhs[i] = -e->phit[i];
    extend(e, x, e->xde);
    for (int i = 0; i < e->ncj; i++) {
        if (!IA(e, A_IINIT)[3 * i + rates])
            continue;
        double v, rate, J[6];
        int p, c;
        coordinate(e, i, e->xde, NULL, &v, &rate, J, &p, &c);
        double *Dk = D + (size_t)k * nc;
        memset(Dk, 0, sizeof(double) * nc);
        for (int j = 0; j < 3; j++) {
            if (p < nb)
                Dk[3 * p + j] += J[j];
            if (c < nb)
                Dk[3 * c + j] += J[3 + j];
        }
        rhs[k++] = rates ? DA(e, A_DINIT)[3 * i + 1] : v - DA(e, A_DINIT)[3 * i];
    }
    return k;
}

/* dx = M^-1 D' (D M^-1 D')^-1 r densely (D: k x nc of full row rank); 0 when the Cholesky
 * fails */
static int dense_min_norm(const double *D, int k, int nc, const double *Minv, const double *r,
                          double *dx)
{
    double *L = calloc((size_t)k * k + k, sizeof(double)), *y = L + (size_t)k * k;
    if (!L)
        return 0;
    for (int a = 0; a < k; a++)
        for (int b = 0; b <= a; b++) {
            double s = 0.0;
            for (int i = 0; i < nc; i++)
                s += D[(size_t)a * nc + i] * Minv[i] * D[(size_t)b * nc + i];
            for (int p = 0; p < b; p++)
                s -= L[(size_t)a * k + p] * L[(size_t)b * k + p];
            if (a == b) {
                if (!(s > 0.0)) {
                    free(L);
                    return 0;
                }
                L[(size_t)a * k + a] = sqrt(s);
            } else {
                L[(size_t)a * k + b] = s / L[(size_t)b * k + b];
            }
        }
    for (int a = 0; a < k; a++) {
        double s = r[a];
        for (int p = 0; p < a; p++)
            s -= L[(size_t)a * k + p] * y[p];
        y[a] = s / L[(size_t)a * k + a];
    }
    for (int a = k - 1; a >= 0; a--) {
        double s = y[a];
        for (int p = a + 1; p < k; p++)
            s -= L[(size_t)p * k + a] * y[p];
        y[a] = s / L[(size_t)a * k + a];
    }
    for (int i = 0; i < nc; i++) {
        double s = 0.0;
        for (int a = 0; a < k; a++)
            s += D[(size_t)a * nc + i] * y[a];
        dx[i] = Minv[i] * s;
    }
    free(L);
    return 1;
}

static double rel_error(const double *a, const double *b, int n)
{
    double d = 0.0, m = 0.0;
    for (int i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
        m = fmax(m, fabs(b[i]));
    }
    return isfinite(d) ? d / fmax(m, 1e-300) : INFINITY;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: startup_rows_check BLOB [TRIALS]\n");
        return 2;
    }
    int trials = argc > 2 ? atoi(argv[2]) : 20;
    long size;
    unsigned char *blob = read_blob(argv[1], &size);
    if (!blob)
        return 2;
    char err[1024];
    MbEngine *e = mbe_create(blob, (size_t)size, err, sizeof err);
    if (!e || e->kind != 0 || mbe_initialize(e, 0.0, err, sizeof err) != MBE_OK) {
        fprintf(stderr, "not a planar model that initializes: %s\n", err);
        return 2;
    }
    int nb = e->nb, nc = 3 * nb, nr = e->nrows + e->ncj + 1;
    double t = DA(e, A_DT0)[0];
    const double *Minv = DA(e, A_DMINV);
    double *x = malloc(sizeof(double) * nc), *xd = malloc(sizeof(double) * nc);
    double *D = malloc(sizeof(double) * (size_t)nr * nc), *A = malloc(sizeof(double) * (size_t)nr * nc);
    double *rhs = malloc(sizeof(double) * nr), *rhs2 = malloc(sizeof(double) * nr);
    double *v = malloc(sizeof(double) * nr), *v2 = malloc(sizeof(double) * nr);
    double *dx = malloc(sizeof(double) * nc), *dx2 = malloc(sizeof(double) * nc);
    double *dx3 = malloc(sizeof(double) * nc);
    if (!x || !xd || !D || !A || !rhs || !rhs2 || !v || !v2 || !dx || !dx2 || !dx3) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    long rows = 0, row_mm = 0, gram_mm = 0, res_mm = 0, full = 0;
    double mn_err = 0.0, fine_err = 0.0, singular_err = 0.0;
    srand(4242);
    for (int trial = 0; trial < trials; trial++)
        for (int rates = 0; rates < 2; rates++) {
            for (int i = 0; i < nc; i++) {
                x[i] = e->xa[i] + 0.05 * rnd();
                xd[i] = rnd();
            }
            PlRow *R = e->pr;
            int k = given_rows(e, x, t, rates, rhs, R), k2 = dense_given_rows(e, x, t, rates,
                                                                                rhs2, D);
            if (k < 0 || k != k2) {
                printf("row counts %d != %d\n", k, k2);
                return 1;
            }
            rows += k;
            plrows_dense(R, k, nb, A);
            for (int a = 0; a < k; a++) {
                row_mm += rhs[a] != rhs2[a];
                for (int i = 0; i < nc; i++)
                    row_mm += A[(size_t)a * nc + i] != D[(size_t)a * nc + i];
                for (int b = 0; b < k; b++) {
                    double s = 0.0;
                    for (int i = 0; i < nc; i++)
                        s += D[(size_t)a * nc + i] * D[(size_t)b * nc + i];
                    gram_mm += plrow_gram(R + a, R + b) != s;
                }
            }
            NzRows Z = nzrows_pl(e, R, k);
            double r1 = nz_velocity_residual(&Z, xd, rhs2, v);
            double r2 = velocity_residual(D, k, nc, xd, rhs2, v2);
            res_mm += r1 != r2;
            for (int a = 0; a < k; a++)
                res_mm += v[a] != v2[a];
            if (min_norm(e, &Z, Minv, rhs2, dx) != OK ||
                min_norm_fine(e, D, k, Minv, rhs2, dx3) != OK) {
                printf("a solve failed (trial %d)\n", trial);
                return 1;
            }
            if (dense_min_norm(D, k, nc, Minv, rhs2, dx2)) {
                mn_err = fmax(mn_err, rel_error(dx, dx2, nc));
                fine_err = fmax(fine_err, rel_error(dx3, dx2, nc));
                full++;
            } else {               /* redundant rows: the two pseudo-inverses' corrections */
                singular_err = fmax(singular_err, rel_error(dx, dx3, nc));
            }
        }
    printf("rows=%ld row_mismatches=%ld gram_mismatches=%ld residual_mismatches=%ld "
           "full_rank_solves=%ld min_norm_error=%.3g fine_error=%.3g singular_error=%.3g\n",
           rows, row_mm, gram_mm, res_mm, full, mn_err, fine_err, singular_err);
    mbe_free(e);
    return row_mm || gram_mm || res_mm || !full || !(mn_err <= 1e-9) || !(fine_err <= 1e-9) ||
           !(singular_err <= 1e-9);
}
