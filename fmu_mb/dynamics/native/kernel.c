/*
 * fmu_mb native kernel: forward dynamics of a planar open tree in joint coordinates by the
 * articulated-body algorithm (O(N) in the number of bodies), its applied forces, and the
 * explicit integrators of fmu_mb (rk4, dopri5, dop853) run entirely in C.
 *
 * Loaded with ctypes by fmu_mb/kernel.py, which compiles it with the system C compiler
 * (`cc -O2 -ffp-contract=off`) on first use and caches the library. Python checks the model
 * (open tree, no cut joints, drives or contacts) and passes flat arrays; nothing here
 * allocates during a step.
 *
 * Coordinates and symbols follow fmu_mb (seed 000): absolute coordinates x = (x, y, phi) per
 * body at its centre of mass, M = diag(m, m, J), tree joint coordinates q (fmu_mb.tree).
 * Every body b is placed by one tree joint from the body `parent[b]` already placed
 * (nb = ground, at rest at the origin):
 *
 *   phi_b = phi_p + s (angle0 + q)                 (revolute; weld and prismatic without q)
 *   P     = r_p + A(phi_p) s_placed                (joint point)
 *   r_b   = P - A(phi_b) s_other (+ s q A(phi_jp) axis for a prismatic joint)
 *
 * so that xd_b = X(d) xd_p + S qd and xdd_b = X(d) xdd_p + S qdd + c with d = r_b - r_p,
 * X(d) = [[1, 0, -d_y], [0, 1, d_x], [0, 0, 1]] and
 *
 *   revolute : S = s (-(r_b - P)_y, (r_b - P)_x, 1),  c = (-w_p^2 (P - r_p) - w_b^2 (r_b - P), 0)
 *   prismatic: S = s (u, 0), u = A(phi_jp) axis,     c = (-w^2 d + 2 w s qd perp(u), 0)
 *   weld     : no S,                                 c = (-w_p^2 d, 0)
 *   free     : a floating root, q = (x, y, phi) of the body itself, S = identity, c = 0.
 *
 * Articulated-body algorithm (Featherstone) in these coordinates: per body the articulated
 * inertia IA (3 x 3) and bias force pA with the Newton-Euler equation f_joint = IA xdd + pA,
 * starting from IA = M_b, pA = -f_b (applied forces; a planar body at its centre of mass has
 * no velocity-product force). Leaves to root: U = IA S, D = S'U, uu = -S'pA,
 * Ia = IA - U U'/D, pa = pA + Ia c + U uu / D, then IA_p += X' Ia X and pA_p += X' pa.
 * Root to leaves: a' = X a_p + c, qdd = (uu - U'a') / D, a_b = a' + S qdd.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { J_WELD = 0, J_REV = 1, J_PRI = 2, J_FREE = 3 };
enum { E_TSDA = 1, E_RSDA = 2, E_FORCE = 3, E_TORQUE = 4 };
enum { OK = 0, ERR_NONFINITE = 1, ERR_SINGULAR = 2, ERR_STEP = 3, ERR_ELEMENT = 4,
       ERR_ARGS = 5 };

#define JI 5          /* ints per joint: body, type, parent, jp, coord */
#define JD 8          /* doubles per joint: s, angle0, s_placed(2), s_other(2), axis(2) */
#define EI 5          /* ints per element: kind, a, b, input index, body frame */
#define ED 10         /* doubles per element: k, c, e0, value, sa(2), sb(2), dir(2) */
#define MAXS 16

typedef struct {
    int nb, n, ne;
    int *ji, *ei;
    double *jd, *ed, *mass, *inertia;
    double gx, gy;
    /* workspace, extended by the ground (index nb) */
    double *x, *xd, *xdd, *f, *S, *c, *IA, *pA, *U, *Dinv, *uu, *dd;
    /* integrator workspace */
    double *K, *ytmp, *ynew, *fy, *scale, *err;
    int last_error_body;
} Kernel;

typedef struct {
    int s;                 /* stages (without the FSAL stage) */
    int order;             /* order of the error estimator */
    int dop853;            /* error norm of DOP853 (E3 and E5) */
    double A[MAXS * MAXS], B[MAXS], C[MAXS], E[MAXS + 1], E3[MAXS + 1], E5[MAXS + 1];
    int ready;
} Tableau;

static Tableau TAB[2];     /* 0: dopri5 (scipy RK45), 1: dop853 */

int mbk_set_tableau(int which, int s, int order, const double *A, const double *B,
                    const double *C, const double *E, const double *E3, const double *E5)
{
    if (which < 0 || which > 1 || s < 1 || s > MAXS)
        return ERR_ARGS;
    Tableau *T = &TAB[which];
    memset(T, 0, sizeof *T);
    T->s = s;
    T->order = order;
    T->dop853 = (E3 != NULL && E5 != NULL);
    memcpy(T->A, A, sizeof(double) * s * s);
    memcpy(T->B, B, sizeof(double) * s);
    memcpy(T->C, C, sizeof(double) * s);
    if (E)
        memcpy(T->E, E, sizeof(double) * (s + 1));
    if (E3)
        memcpy(T->E3, E3, sizeof(double) * (s + 1));
    if (E5)
        memcpy(T->E5, E5, sizeof(double) * (s + 1));
    T->ready = 1;
    return OK;
}

void mbk_free(Kernel *k)
{
    if (!k)
        return;
    void *p[] = {k->ji, k->ei, k->jd, k->ed, k->mass, k->inertia, k->x, k->xd, k->xdd, k->f,
                 k->S, k->c, k->IA, k->pA, k->U, k->Dinv, k->uu, k->dd, k->K, k->ytmp,
                 k->ynew, k->fy, k->scale, k->err};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
    free(k);
}

static void *dup(const void *src, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p && bytes)
        memcpy(p, src, bytes);
    return p;
}

Kernel *mbk_create(int nb, int n, const int *ji, const double *jd, int ne, const int *ei,
                   const double *ed, const double *mass, const double *inertia, double gx,
                   double gy)
{
    Kernel *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->nb = nb;
    k->n = n;
    k->ne = ne;
    k->gx = gx;
    k->gy = gy;
    size_t e = (size_t)(nb + 1);
    size_t m = (size_t)(2 * n + 1);
    k->ji = dup(ji, sizeof(int) * JI * nb);
    k->jd = dup(jd, sizeof(double) * JD * nb);
    k->ei = dup(ei, sizeof(int) * EI * ne);
    k->ed = dup(ed, sizeof(double) * ED * ne);
    k->mass = dup(mass, sizeof(double) * nb);
    k->inertia = dup(inertia, sizeof(double) * nb);
    k->x = calloc(3 * e, sizeof(double));
    k->xd = calloc(3 * e, sizeof(double));
    k->xdd = calloc(3 * e, sizeof(double));
    k->f = calloc(3 * e, sizeof(double));
    k->S = calloc(9 * e, sizeof(double));
    k->c = calloc(3 * e, sizeof(double));
    k->IA = calloc(9 * e, sizeof(double));
    k->pA = calloc(3 * e, sizeof(double));
    k->U = calloc(9 * e, sizeof(double));
    k->Dinv = calloc(9 * e, sizeof(double));
    k->uu = calloc(3 * e, sizeof(double));
    k->dd = calloc(2 * e, sizeof(double));
    k->K = calloc((MAXS + 1) * m, sizeof(double));
    k->ytmp = calloc(m, sizeof(double));
    k->ynew = calloc(m, sizeof(double));
    k->fy = calloc(m, sizeof(double));
    k->scale = calloc(m, sizeof(double));
    k->err = calloc(m, sizeof(double));
    if (!k->ji || !k->jd || !k->ei || !k->ed || !k->mass || !k->inertia || !k->x || !k->xd ||
        !k->xdd || !k->f || !k->S || !k->c || !k->IA || !k->pA || !k->U || !k->Dinv ||
        !k->uu || !k->dd || !k->K || !k->ytmp || !k->ynew || !k->fy || !k->scale ||
        !k->err) {
        mbk_free(k);
        return NULL;
    }
    return k;
}

int mbk_last_error_index(Kernel *k) { return k->last_error_body; }

/* ------------------------------------------------------------------ kinematics */
static void kinematics(Kernel *k, const double *q, const double *qd)
{
    int nb = k->nb;
    double *x = k->x, *xd = k->xd;
    x[3 * nb] = x[3 * nb + 1] = x[3 * nb + 2] = 0.0;
    xd[3 * nb] = xd[3 * nb + 1] = xd[3 * nb + 2] = 0.0;
    for (int i = 0; i < nb; i++) {
        const int *J = k->ji + JI * i;
        const double *D = k->jd + JD * i;
        int b = J[0], type = J[1], p = J[2], jp = J[3], ic = J[4];
        double *S = k->S + 9 * b, *c = k->c + 3 * b;
        if (type == J_FREE) {
            for (int r = 0; r < 3; r++) {
                x[3 * b + r] = q[ic + r];
                xd[3 * b + r] = qd[ic + r];
                c[r] = 0.0;
            }
            k->dd[2 * b] = k->dd[2 * b + 1] = 0.0;
            continue;
        }
        double s = D[0];
        double rpx = x[3 * p], rpy = x[3 * p + 1], php = x[3 * p + 2];
        double vpx = xd[3 * p], vpy = xd[3 * p + 1], wp = xd[3 * p + 2];
        double qq = ic >= 0 ? q[ic] : 0.0, qv = ic >= 0 ? qd[ic] : 0.0;
        double phb = php + s * D[1] + (type == J_REV ? s * qq : 0.0);
        double wb = wp + (type == J_REV ? s * qv : 0.0);
        double cp = cos(php), sp = sin(php), cb = cos(phb), sb = sin(phb);
        double aplx = cp * D[2] - sp * D[3], aply = sp * D[2] + cp * D[3];
        double aotx = cb * D[4] - sb * D[5], aoty = sb * D[4] + cb * D[5];
        double Px = rpx + aplx, Py = rpy + aply;
        double rbx = Px - aotx, rby = Py - aoty;
        double ux = 0.0, uy = 0.0;
        if (type == J_PRI) {
            double pj = (jp == b) ? phb : php;
            double cj = cos(pj), sj = sin(pj);
            ux = cj * D[6] - sj * D[7];
            uy = sj * D[6] + cj * D[7];
            rbx += s * qq * ux;
            rby += s * qq * uy;
        }
        double dx = rbx - rpx, dy = rby - rpy;
        double vbx = vpx - wp * dy, vby = vpy + wp * dx;
        for (int r = 0; r < 9; r++)
            S[r] = 0.0;
        if (type == J_REV) {
            double ex = rbx - Px, ey = rby - Py;            /* joint point to centre of mass */
            S[0] = -s * ey;
            S[1] = s * ex;
            S[2] = s;
            vbx += s * qv * (-ey);
            vby += s * qv * ex;
            c[0] = -wp * wp * (Px - rpx) - wb * wb * ex;
            c[1] = -wp * wp * (Py - rpy) - wb * wb * ey;
        } else if (type == J_PRI) {
            S[0] = s * ux;
            S[1] = s * uy;
            vbx += s * qv * ux;
            vby += s * qv * uy;
            c[0] = -wp * wp * dx - 2.0 * wp * s * qv * uy;
            c[1] = -wp * wp * dy + 2.0 * wp * s * qv * ux;
        } else {
            c[0] = -wp * wp * dx;
            c[1] = -wp * wp * dy;
        }
        c[2] = 0.0;
        x[3 * b] = rbx;
        x[3 * b + 1] = rby;
        x[3 * b + 2] = phb;
        xd[3 * b] = vbx;
        xd[3 * b + 1] = vby;
        xd[3 * b + 2] = wb;
        k->dd[2 * b] = dx;
        k->dd[2 * b + 1] = dy;
    }
}

/* ------------------------------------------------------------------ applied forces */
static int forces(Kernel *k, const double *u)
{
    int nb = k->nb;
    const double *x = k->x, *xd = k->xd;
    double *f = k->f;
    for (int b = 0; b < nb; b++) {
        f[3 * b] = k->mass[b] * k->gx;
        f[3 * b + 1] = k->mass[b] * k->gy;
        f[3 * b + 2] = 0.0;
    }
    f[3 * nb] = f[3 * nb + 1] = f[3 * nb + 2] = 0.0;
    for (int i = 0; i < k->ne; i++) {
        const int *E = k->ei + EI * i;
        const double *P = k->ed + ED * i;
        int kind = E[0], a = E[1], b = E[2];
        double h = E[3] >= 0 ? u[E[3]] : 0.0;
        if (kind == E_TSDA) {
            double ca = cos(x[3 * a + 2]), sa = sin(x[3 * a + 2]);
            double cb = cos(x[3 * b + 2]), sb = sin(x[3 * b + 2]);
            double asx = ca * P[4] - sa * P[5], asy = sa * P[4] + ca * P[5];
            double bsx = cb * P[6] - sb * P[7], bsy = sb * P[6] + cb * P[7];
            double dx = x[3 * b] + bsx - x[3 * a] - asx, dy = x[3 * b + 1] + bsy - x[3 * a + 1] - asy;
            double l = sqrt(dx * dx + dy * dy);
            if (!(l > 0.0)) {
                k->last_error_body = i;
                return ERR_ELEMENT;
            }
            double ex = dx / l, ey = dy / l;
            double vax = xd[3 * a] - asy * xd[3 * a + 2], vay = xd[3 * a + 1] + asx * xd[3 * a + 2];
            double vbx = xd[3 * b] - bsy * xd[3 * b + 2], vby = xd[3 * b + 1] + bsx * xd[3 * b + 2];
            double ld = ex * (vbx - vax) + ey * (vby - vay);
            double sv = P[0] * (l - P[2]) + P[1] * ld + h;
            double Fx = sv * ex, Fy = sv * ey;          /* on a; -F on b */
            f[3 * a] += Fx;
            f[3 * a + 1] += Fy;
            f[3 * a + 2] += asx * Fy - asy * Fx;
            f[3 * b] -= Fx;
            f[3 * b + 1] -= Fy;
            f[3 * b + 2] -= bsx * Fy - bsy * Fx;
        } else if (kind == E_RSDA) {
            double th = x[3 * b + 2] - x[3 * a + 2], thd = xd[3 * b + 2] - xd[3 * a + 2];
            double sv = P[0] * (th - P[2]) + P[1] * thd + h;
            f[3 * b + 2] -= sv;
            f[3 * a + 2] += sv;
        } else if (kind == E_FORCE) {
            double mag = P[3] + h, ph = x[3 * a + 2];
            double cph = cos(ph), sph = sin(ph);
            double dx = P[8], dy = P[9];
            if (E[4]) {
                dx = cph * P[8] - sph * P[9];
                dy = sph * P[8] + cph * P[9];
            }
            double Fx = dx * mag, Fy = dy * mag;
            double asx = cph * P[4] - sph * P[5], asy = sph * P[4] + cph * P[5];
            f[3 * a] += Fx;
            f[3 * a + 1] += Fy;
            f[3 * a + 2] += asx * Fy - asy * Fx;
        } else if (kind == E_TORQUE) {
            double T = P[3] + h;
            f[3 * a + 2] += T;
            f[3 * b + 2] -= T;
        }
    }
    return OK;
}

/* ------------------------------------------------------------------ articulated bodies */
static int solve3(const double *A, const double *b, double *x)
{
    /* symmetric positive definite 3 x 3 by Cholesky */
    double l00 = A[0];
    if (!(l00 > 0.0))
        return ERR_SINGULAR;
    l00 = sqrt(l00);
    double l10 = A[3] / l00, l20 = A[6] / l00;
    double d1 = A[4] - l10 * l10;
    if (!(d1 > 1e-14 * A[4]))
        return ERR_SINGULAR;
    double l11 = sqrt(d1);
    double l21 = (A[7] - l20 * l10) / l11;
    double d2 = A[8] - l20 * l20 - l21 * l21;
    if (!(d2 > 1e-14 * A[8]))
        return ERR_SINGULAR;
    double l22 = sqrt(d2);
    double y0 = b[0] / l00, y1 = (b[1] - l10 * y0) / l11, y2 = (b[2] - l20 * y0 - l21 * y1) / l22;
    x[2] = y2 / l22;
    x[1] = (y1 - l21 * x[2]) / l11;
    x[0] = (y0 - l10 * x[1] - l20 * x[2]) / l00;
    return OK;
}

static int aba(Kernel *k, double *qdd)
{
    int nb = k->nb;
    double *IA = k->IA, *pA = k->pA, *f = k->f;
    for (int b = 0; b <= nb; b++) {
        double *I = IA + 9 * b;
        for (int r = 0; r < 9; r++)
            I[r] = 0.0;
        if (b < nb) {
            I[0] = I[4] = k->mass[b];
            I[8] = k->inertia[b];
        }
        pA[3 * b] = -f[3 * b];
        pA[3 * b + 1] = -f[3 * b + 1];
        pA[3 * b + 2] = -f[3 * b + 2];
    }
    for (int i = nb - 1; i >= 0; i--) {
        const int *J = k->ji + JI * i;
        int b = J[0], type = J[1], p = J[2];
        if (type == J_FREE)
            continue;
        double *I = IA + 9 * b, *pb = pA + 3 * b, *S = k->S + 9 * b, *c = k->c + 3 * b;
        double Ia[9], pa[3];
        if (type == J_REV || type == J_PRI) {
            double *U = k->U + 3 * b;
            for (int r = 0; r < 3; r++)
                U[r] = I[3 * r] * S[0] + I[3 * r + 1] * S[1] + I[3 * r + 2] * S[2];
            double D = S[0] * U[0] + S[1] * U[1] + S[2] * U[2];
            double scale = fabs(S[0] * U[0]) + fabs(S[1] * U[1]) + fabs(S[2] * U[2]);
            if (!(D > 1e-13 * scale) || !(D > 0.0)) {      /* scale-free: D's own units */
                k->last_error_body = b;
                return ERR_SINGULAR;
            }
            double uu = -(S[0] * pb[0] + S[1] * pb[1] + S[2] * pb[2]);
            k->Dinv[b] = 1.0 / D;
            k->uu[b] = uu;
            for (int r = 0; r < 3; r++)
                for (int s = 0; s < 3; s++)
                    Ia[3 * r + s] = I[3 * r + s] - U[r] * U[s] / D;
            for (int r = 0; r < 3; r++)
                pa[r] = pb[r] + Ia[3 * r] * c[0] + Ia[3 * r + 1] * c[1] + Ia[3 * r + 2] * c[2]
                        + U[r] * uu / D;
        } else {
            for (int r = 0; r < 9; r++)
                Ia[r] = I[r];
            for (int r = 0; r < 3; r++)
                pa[r] = pb[r] + I[3 * r] * c[0] + I[3 * r + 1] * c[1] + I[3 * r + 2] * c[2];
        }
        if (p == nb)
            continue;
        double dx = k->dd[2 * b], dy = k->dd[2 * b + 1];
        /* X' Ia X with X = [[1, 0, -dy], [0, 1, dx], [0, 0, 1]] */
        double IX[9];
        for (int r = 0; r < 3; r++) {
            IX[3 * r] = Ia[3 * r];
            IX[3 * r + 1] = Ia[3 * r + 1];
            IX[3 * r + 2] = -dy * Ia[3 * r] + dx * Ia[3 * r + 1] + Ia[3 * r + 2];
        }
        double *Ip = IA + 9 * p, *pp = pA + 3 * p;
        for (int s = 0; s < 3; s++) {
            Ip[s] += IX[s];
            Ip[3 + s] += IX[3 + s];
            Ip[6 + s] += -dy * IX[s] + dx * IX[3 + s] + IX[6 + s];
        }
        pp[0] += pa[0];
        pp[1] += pa[1];
        pp[2] += -dy * pa[0] + dx * pa[1] + pa[2];
    }
    double *a = k->xdd;
    a[3 * nb] = a[3 * nb + 1] = a[3 * nb + 2] = 0.0;
    for (int i = 0; i < nb; i++) {
        const int *J = k->ji + JI * i;
        int b = J[0], type = J[1], p = J[2], ic = J[4];
        double *ab = a + 3 * b;
        if (type == J_FREE) {
            double rhs[3] = {-pA[3 * b], -pA[3 * b + 1], -pA[3 * b + 2]};
            if (solve3(IA + 9 * b, rhs, ab) != OK) {
                k->last_error_body = b;
                return ERR_SINGULAR;
            }
            qdd[ic] = ab[0];
            qdd[ic + 1] = ab[1];
            qdd[ic + 2] = ab[2];
            continue;
        }
        double dx = k->dd[2 * b], dy = k->dd[2 * b + 1];
        const double *ap = a + 3 * p, *c = k->c + 3 * b;
        ab[0] = ap[0] - dy * ap[2] + c[0];
        ab[1] = ap[1] + dx * ap[2] + c[1];
        ab[2] = ap[2] + c[2];
        if (type == J_REV || type == J_PRI) {
            const double *U = k->U + 3 * b, *S = k->S + 9 * b;
            double qa = (k->uu[b] - (U[0] * ab[0] + U[1] * ab[1] + U[2] * ab[2])) * k->Dinv[b];
            ab[0] += S[0] * qa;
            ab[1] += S[1] * qa;
            ab[2] += S[2] * qa;
            if (ic >= 0)
                qdd[ic] = qa;
        }
    }
    return OK;
}

static int accel(Kernel *k, const double *q, const double *qd, const double *u, double *qdd)
{
    kinematics(k, q, qd);
    int rc = forces(k, u);
    if (rc != OK)
        return rc;
    return aba(k, qdd);
}

/* qdd (n,) and, when x is not NULL, x, xd, xdd (3 nb each) of the bodies */
int mbk_accelerations(Kernel *k, const double *q, const double *qd, const double *u,
                      double *qdd, double *x, double *xd, double *xdd)
{
    int rc = accel(k, q, qd, u, qdd);
    if (rc != OK)
        return rc;
    if (x) {
        memcpy(x, k->x, sizeof(double) * 3 * k->nb);
        memcpy(xd, k->xd, sizeof(double) * 3 * k->nb);
        memcpy(xdd, k->xdd, sizeof(double) * 3 * k->nb);
    }
    return OK;
}

/* x, xd (3 nb each) of the bodies at (q, qd): forward kinematics only */
void mbk_kinematics(Kernel *k, const double *q, const double *qd, double *x, double *xd)
{
    kinematics(k, q, qd);
    memcpy(x, k->x, sizeof(double) * 3 * k->nb);
    memcpy(xd, k->xd, sizeof(double) * 3 * k->nb);
}

/* generalised applied forces f (3 nb) at (q, qd): for tests and outputs */
int mbk_applied_forces(Kernel *k, const double *q, const double *qd, const double *u, double *f)
{
    kinematics(k, q, qd);
    int rc = forces(k, u);
    if (rc == OK)
        memcpy(f, k->f, sizeof(double) * 3 * k->nb);
    return rc;
}

/* ------------------------------------------------------------------ integrators */
static int rhs(Kernel *k, const double *y, const double *u, double *dy)
{
    int n = k->n;
    memcpy(dy, y + n, sizeof(double) * n);
    int rc = accel(k, y, y + n, u, dy + n);
    if (rc != OK)
        return rc;
    for (int i = 0; i < 2 * n; i++)
        if (!isfinite(dy[i]))
            return ERR_NONFINITE;
    return OK;
}

static int all_finite(const double *y, int m)
{
    for (int i = 0; i < m; i++)
        if (!isfinite(y[i]))
            return 0;
    return 1;
}

static double rms(const double *v, int m)
{
    double s = 0.0;
    for (int i = 0; i < m; i++)
        s += v[i] * v[i];
    return sqrt(s) / sqrt((double)m);
}

/* scipy.integrate._ivp.common.select_initial_step */
static int initial_step(Kernel *k, const Tableau *T, double t, const double *y, const double *f0,
                        double t_end, double max_step, double rtol, double atol,
                        const double *u, double *h_out)
{
    int m = 2 * k->n;
    double interval = fabs(t_end - t);
    if (interval == 0.0) {
        *h_out = 0.0;
        return OK;
    }
    double *sc = k->scale, *y1 = k->ytmp, *f1 = k->fy;
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
    int rc = rhs(k, y1, u, f1);
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

/*
 * Integrate y = (q, qd) from t to t_end with inputs u held constant.
 * method 0: dopri5, 1: dop853 (adaptive, scipy's step-size control, first step h_io when
 * > 0), 2: rk4 with steps of at most `step`. On success y holds the state at t_end and h_io
 * the step-size hint to continue with; on failure y is unchanged and t_fail holds the time.
 */
static int advance(Kernel *k, int method, double t, double t_end, double *y, double *h_io,
                   const double *u, double rtol, double atol, double max_step, double step,
                   int *nfev, double *t_fail)
{
    int n = k->n, m = 2 * n, rc;
    double *K = k->K, *yt = k->ytmp, *yn = k->ynew;
    *nfev = 0;
    *t_fail = t;
    if (m == 0)                                /* no coordinates: nothing moves */
        return OK;
    if (method == 2) {
        double span = t_end - t;
        double ns = ceil(span / step - 1e-9);
        long nsteps = ns < 1.0 ? 1 : (long)ns;
        double dt = span / (double)nsteps;
        double *k1 = K, *k2 = K + m, *k3 = K + 2 * m, *k4 = K + 3 * m, *yc = K + 4 * m;
        memcpy(yc, y, sizeof(double) * m);
        for (long s = 0; s < nsteps; s++) {
            double tk = t + s * dt;
            *t_fail = tk;
            if ((rc = rhs(k, yc, u, k1)) != OK)
                return rc;
            for (int i = 0; i < m; i++)
                yt[i] = yc[i] + dt / 2 * k1[i];
            if ((rc = rhs(k, yt, u, k2)) != OK)
                return rc;
            for (int i = 0; i < m; i++)
                yt[i] = yc[i] + dt / 2 * k2[i];
            if ((rc = rhs(k, yt, u, k3)) != OK)
                return rc;
            for (int i = 0; i < m; i++)
                yt[i] = yc[i] + dt * k3[i];
            if ((rc = rhs(k, yt, u, k4)) != OK)
                return rc;
            *nfev += 4;
            for (int i = 0; i < m; i++)
                yc[i] = yc[i] + dt / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
            if (!all_finite(yc, m))
                return ERR_NONFINITE;
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
    if ((rc = rhs(k, yc, u, f)) != OK)
        return rc;
    *nfev += 1;
    double h_abs = *h_io;
    if (h_abs > 0.0) {
        if (h_abs > t_end - t)
            h_abs = t_end - t;
    } else {
        if ((rc = initial_step(k, T, tc, yc, f, t_end, max_step, rtol, atol, u, &h_abs)) != OK)
            return rc;
        *nfev += 1;
    }
    const double safety = 0.9, min_factor = 0.2, max_factor = 10.0;
    const double expo = -1.0 / (T->order + 1);
    while (tc < t_end) {
        *t_fail = tc;
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
                if ((rc = rhs(k, yt, u, K + st * m)) != OK)
                    break;
            }
            if (rc == OK) {
            for (int i = 0; i < m; i++) {
                double acc = 0.0;
                for (int j = 0; j < s; j++)
                    acc += K[j * m + i] * T->B[j];
                yn[i] = yc[i] + h * acc;
            }
            rc = rhs(k, yn, u, K + s * m);
            }
            *nfev += s;
            if (rc == ERR_NONFINITE) {          /* a stage left the finite range: shrink */
                h_abs *= min_factor;
                rejected = 1;
                continue;
            }
            if (rc != OK)
                return rc;
            double *sc = k->scale, err;
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
                double *ev = k->err;
                for (int i = 0; i < m; i++) {
                    double acc = 0.0;
                    for (int j = 0; j <= s; j++)
                        acc += K[j * m + i] * T->E[j];
                    ev[i] = acc * h / sc[i];
                }
                err = rms(ev, m);
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
                break;
            }
            h_abs *= fmax(min_factor, safety * pow(err, expo));
            rejected = 1;
        }
        memcpy(yc, yn, sizeof(double) * m);
        memcpy(f, K + s * m, sizeof(double) * m);
        if (!all_finite(yc, m)) {
            *t_fail = tc;
            return ERR_NONFINITE;
        }
    }
    memcpy(y, yc, sizeof(double) * m);
    *h_io = h_abs;
    return OK;
}

/* mbk_advance with the scalars in one array (fewer foreign-call arguments):
 * par = [t, t_end, h (in/out), rtol, atol, max_step, step, t_fail (out)] */
int mbk_advance(Kernel *k, int method, double *par, double *y, const double *u, int *nfev)
{
    return advance(k, method, par[0], par[1], y, &par[2], u, par[3], par[4], par[5], par[6],
                   nfev, &par[7]);
}
