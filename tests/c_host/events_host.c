/*
 * A C host of the contact event loop (fmu_mb/engine/native/events.c), with no Python in the
 * process: it reads a model's kernel data from a text file (written by
 * tests/test_kernel_events.py), builds the kernel and its event loop through the library's C
 * API (mbk_set_tableau, mbk_create, mbk_set_rows, mbk_set_gains, mbk_set_drives,
 * mbk_events_create), integrates with mbk_advance_events and prints the status, the state,
 * the next step size and the contact records (%.17g), as the native FMU's engine will.
 *
 *   events_host DATA_FILE
 */
#include <stdio.h>
#include <stdlib.h>

typedef struct Kernel Kernel;
typedef struct MbkEvents MbkEvents;
Kernel *mbk_create(int nb, int n, const int *ji, const double *jd, int ne, const int *ei,
                   const double *ed, const double *mass, const double *inertia, double gx,
                   double gy);
void mbk_free(Kernel *k);
int mbk_set_rows(Kernel *k, int m, const int *ri, const double *rd);
int mbk_set_gains(Kernel *k, int ng, int ni, const double *G);
int mbk_set_drives(Kernel *k, int nd, const int *di, int ndp, const double *dp);
int mbk_set_tableau(int which, int s, int order, const double *A, const double *B,
                    const double *C, const double *E, const double *E3, const double *E5);
MbkEvents *mbk_events_create(Kernel *base, int nc, const int *ci, const double *cd,
                             const double *e, int ni);
void mbk_events_free(MbkEvents *ev);
int mbk_advance_events(MbkEvents *ev, int method, double *par, double *y, const double *u,
                       double *rec);

static FILE *in;

static int geti(void)
{
    int v;
    if (fscanf(in, "%d", &v) != 1) {
        fprintf(stderr, "events_host: bad data file (expected an integer)\n");
        exit(2);
    }
    return v;
}

static double getd(void)
{
    double v;
    if (fscanf(in, "%lf", &v) != 1) {
        fprintf(stderr, "events_host: bad data file (expected a number)\n");
        exit(2);
    }
    return v;
}

static int *ints(int k)
{
    int *a = malloc(sizeof(int) * (k > 0 ? k : 1));
    for (int i = 0; i < k; i++)
        a[i] = geti();
    return a;
}

static double *dbls(int k)
{
    double *a = malloc(sizeof(double) * (k > 0 ? k : 1));
    for (int i = 0; i < k; i++)
        a[i] = getd();
    return a;
}

int main(int argc, char **argv)
{
    if (argc != 2 || !(in = fopen(argv[1], "r"))) {
        fprintf(stderr, "usage: events_host DATA_FILE\n");
        return 2;
    }
    for (int which = 0; which < 2; which++) {          /* tableaus: 0 RK45, 1 DOP853 */
        int s = geti(), order = geti(), has_e = geti(), has_e35 = geti();
        double *A = dbls(s * s), *B = dbls(s), *C = dbls(s);
        double *E = has_e ? dbls(s + 1) : NULL;
        double *E3 = has_e35 ? dbls(s + 1) : NULL, *E5 = has_e35 ? dbls(s + 1) : NULL;
        if (mbk_set_tableau(which, s, order, A, B, C, E, E3, E5)) {
            fprintf(stderr, "events_host: tableau refused\n");
            return 2;
        }
    }
    int nb = geti(), n = geti(), ne = geti();
    double gx = getd(), gy = getd();
    int *ji = ints(5 * nb);
    double *jd = dbls(8 * nb);
    int *ei = ints(5 * ne);
    double *ed = dbls(10 * ne), *mass = dbls(nb), *inertia = dbls(nb);
    Kernel *k = mbk_create(nb, n, ji, jd, ne, ei, ed, mass, inertia, gx, gy);
    int m = geti();
    int *ri = ints(3 * m);
    double *rd = dbls(8 * m);
    int ng = geti(), nig = geti();
    double *G = dbls(ng * nig);
    int nd = geti(), ndp = geti();
    int *di = ints(4 * nd);
    double *dp = dbls(ndp);
    if (!k || (m && mbk_set_rows(k, m, ri, rd)) || (ng && mbk_set_gains(k, ng, nig, G)) ||
        (nd && mbk_set_drives(k, nd, di, ndp, dp))) {
        fprintf(stderr, "events_host: the kernel refused the model data\n");
        return 2;
    }
    int nc = geti();
    int *ci = ints(3 * nc);
    double *cd = dbls(8 * nc), *e = dbls(nc);
    int ni = geti();
    double *u = dbls(ni);
    int method = geti();
    double *par = dbls(19), *y = dbls(2 * n), *rec = dbls(5 * nc);
    fclose(in);
    MbkEvents *ev = mbk_events_create(k, nc, ci, cd, e, ni);
    mbk_free(k);                          /* the event loop keeps its own copies */
    if (!ev) {
        fprintf(stderr, "events_host: mbk_events_create failed\n");
        return 2;
    }
    int rc = mbk_advance_events(ev, method, par, y, u, rec);
    printf("%d\n", rc);
    for (int i = 0; i < 2 * n; i++)
        printf("%.17g\n", y[i]);
    printf("%.17g\n", par[2]);
    for (int i = 0; i < 5 * nc; i++)
        printf("%.17g\n", rec[i]);
    mbk_events_free(ev);
    return 0;
}
