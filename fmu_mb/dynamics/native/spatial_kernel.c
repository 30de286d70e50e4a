/*
 * fmu_mb spatial native kernel: forward dynamics of a spatial open tree in the joint
 * coordinates of fmu_mb.mechanics.spatial.tree by the articulated-body algorithm (O(N) in the
 * number of bodies), and the explicit integrators rk4, dopri5 and dop853 run entirely in C.
 * Its own file, next to the planar kernel.c (loaded by fmu_mb/dynamics/spatial_kernel.py).
 *
 * Joint kinds (every joint placed from its parent, the joint's declared parent):
 *   revolute  q = angle, ω_rel = a q'            (a = z of the parent's joint frame, global)
 *   prismatic q = position, slide u q            (u = z of the parent's joint frame)
 *   spherical q = p (Euler parameters of the child joint frame in the parent joint frame),
 *             velocity w = 2 E(p) p' (parent joint frame), ω_rel = R w, R = A_parent F_parent
 *   weld      no coordinate
 *   free      a floating root: q = (r, p) of the body, velocity (ω = 2 E(p) p', r')
 * Bodies: pose (r, A) at the centre of mass, twist V = (ω, v) and accelerations (α, a) in global
 * axes at the centre of mass. With P_c the joint point on the child, h = r_b - P_c and
 * d = r_b - r_p:
 *   V_b = X(d) V_p + S nu,       X(d) = [[I, 0], [-d~, I]]
 *   A_b = X(d) A_p + S nu' + c,  c_w = ω_p x ω_rel,
 *   c_v = ω_p x (ω_p x (P_c - r_p)) + 2 ω_p x u s' + c_w x h + ω_b x (ω_b x h)
 * with S columns (e, e x h) for a rotation axis e and (0, u) for a slide. Newton-Euler at the
 * centre of mass: wrench (n, f) = I_b A_b + (ω x J ω, 0) with I_b = diag(J_global, m I).
 * Articulated-body algorithm (Featherstone): IA = I_b, pA = (ω x J ω, 0) - (applied); leaves to
 * root: U = IA S, D = S'U, uu = -S'pA, Ia = IA - U D^-1 U', pa = pA + Ia c + U D^-1 uu,
 * IA_p += X'Ia X, pA_p += X'pa; root to leaves: a' = X A_p + c, nu' = D^-1 (uu - U'a'),
 * A_b = a' + S nu'. Euler-parameter coordinates: p'' = 1/2 E(p')' w + 1/2 E(p)' w'.
 * After each accepted step the Euler-parameter sets are put back on |p| = 1, p . p' = 0.
 * Applied loads: gravity only (the Python side refuses models with force elements).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { K_WELD = 0, K_REV = 1, K_PRI = 2, K_SPH = 3, K_FREE = 4 };
enum { OK = 0, ERR_NONFINITE = 1, ERR_SINGULAR = 2, ERR_STEP = 3, ERR_ARGS = 5 };

#define RI 4          /* ints per row: kind, parent (nb = ground), body, coordinate offset */
#define RD 24         /* doubles per row: s_p(3), s_c(3), F_p(9), F_c(9) (row-major) */
#define MAXS 16

typedef struct {
    int nb, n;
    int *ri;
    double *rd, *mass, *J;            /* J: (nb, 9) body axes, row-major */
    double g[3];
    /* workspace per body (ground = nb) */
    double *r, *A, *w, *v, *S, *c, *IA, *pA, *U, *Dinv, *uu, *acc, *nu;
    int *dof;
    double *K, *ytmp, *ynew, *fy, *scale, *err;
} SK;

typedef struct {
    int s, order, dop853;
    double A[MAXS * MAXS], B[MAXS], C[MAXS], E[MAXS + 1], E3[MAXS + 1], E5[MAXS + 1];
    int ready;
} Tableau;

static Tableau TAB[2];

int sk_set_tableau(int which, int s, int order, const double *A, const double *B,
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

void sk_free(SK *k)
{
    if (!k)
        return;
    void *p[] = {k->ri, k->rd, k->mass, k->J, k->r, k->A, k->w, k->v, k->S, k->c, k->IA,
                 k->pA, k->U, k->Dinv, k->uu, k->acc, k->nu, k->dof, k->K, k->ytmp, k->ynew,
                 k->fy, k->scale, k->err};
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

SK *sk_create(int nb, int n, const int *ri, const double *rd, const double *mass,
              const double *J, double gx, double gy, double gz)
{
    SK *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->nb = nb;
    k->n = n;
    k->g[0] = gx;
    k->g[1] = gy;
    k->g[2] = gz;
    size_t e = (size_t)(nb + 1), m = (size_t)(2 * n + 1);
    k->ri = dup(ri, sizeof(int) * RI * nb);
    k->rd = dup(rd, sizeof(double) * RD * nb);
    k->mass = dup(mass, sizeof(double) * nb);
    k->J = dup(J, sizeof(double) * 9 * nb);
    k->r = calloc(3 * e, sizeof(double));
    k->A = calloc(9 * e, sizeof(double));
    k->w = calloc(3 * e, sizeof(double));
    k->v = calloc(3 * e, sizeof(double));
    k->S = calloc(36 * e, sizeof(double));
    k->c = calloc(6 * e, sizeof(double));
    k->IA = calloc(36 * e, sizeof(double));
    k->pA = calloc(6 * e, sizeof(double));
    k->U = calloc(36 * e, sizeof(double));
    k->Dinv = calloc(36 * e, sizeof(double));
    k->uu = calloc(6 * e, sizeof(double));
    k->acc = calloc(6 * e, sizeof(double));
    k->nu = calloc(6 * e, sizeof(double));
    k->dof = calloc(e, sizeof(int));
    k->K = calloc((MAXS + 2) * m, sizeof(double));
    k->ytmp = calloc(m, sizeof(double));
    k->ynew = calloc(m, sizeof(double));
    k->fy = calloc(m, sizeof(double));
    k->scale = calloc(m, sizeof(double));
    k->err = calloc(m, sizeof(double));
    if (!k->ri || !k->rd || !k->mass || !k->J || !k->r || !k->A || !k->w || !k->v || !k->S ||
        !k->c || !k->IA || !k->pA || !k->U || !k->Dinv || !k->uu || !k->acc || !k->nu ||
        !k->dof || !k->K || !k->ytmp || !k->ynew || !k->fy || !k->scale || !k->err) {
        sk_free(k);
        return NULL;
    }
    for (int i = 0; i < 9; i += 4)
        k->A[9 * nb + i] = 1.0;                  /* the ground: A = I at the origin */
    return k;
}

/* ------------------------------------------------------------------ small algebra */
static void cross(const double *a, const double *b, double *o)
{
    double x = a[1] * b[2] - a[2] * b[1], y = a[2] * b[0] - a[0] * b[2],
           z = a[0] * b[1] - a[1] * b[0];
    o[0] = x;
    o[1] = y;
    o[2] = z;
}

static void mat3(const double *A, const double *x, double *o)     /* o = A x */
{
    for (int i = 0; i < 3; i++)
        o[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}

static void mul33(const double *A, const double *B, double *O)    /* O = A B */
{
    double T[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            T[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
    memcpy(O, T, sizeof T);
}

static void mul33t(const double *A, const double *B, double *O)   /* O = A B' */
{
    double T[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            T[3 * i + j] = A[3 * i] * B[3 * j] + A[3 * i + 1] * B[3 * j + 1]
                           + A[3 * i + 2] * B[3 * j + 2];
    memcpy(O, T, sizeof T);
}

static void quat_matrix(const double *p, double *A)    /* A(p / |p|), row-major */
{
    double n2 = p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3];
    double e0 = p[0], e1 = p[1], e2 = p[2], e3 = p[3], s = 1.0 / n2;
    A[0] = s * (e0 * e0 + e1 * e1 - e2 * e2 - e3 * e3);
    A[1] = s * 2 * (e1 * e2 - e0 * e3);
    A[2] = s * 2 * (e1 * e3 + e0 * e2);
    A[3] = s * 2 * (e1 * e2 + e0 * e3);
    A[4] = s * (e0 * e0 - e1 * e1 + e2 * e2 - e3 * e3);
    A[5] = s * 2 * (e2 * e3 - e0 * e1);
    A[6] = s * 2 * (e1 * e3 - e0 * e2);
    A[7] = s * 2 * (e2 * e3 + e0 * e1);
    A[8] = s * (e0 * e0 - e1 * e1 - e2 * e2 + e3 * e3);
}

static void E_times(const double *p, const double *pd, double *o)  /* o = E(p) pd */
{
    o[0] = -p[1] * pd[0] + p[0] * pd[1] - p[3] * pd[2] + p[2] * pd[3];
    o[1] = -p[2] * pd[0] + p[3] * pd[1] + p[0] * pd[2] - p[1] * pd[3];
    o[2] = -p[3] * pd[0] - p[2] * pd[1] + p[1] * pd[2] + p[0] * pd[3];
}

static void Et_times(const double *p, const double *w, double *o)  /* o = E(p)' w */
{
    o[0] = -p[1] * w[0] - p[2] * w[1] - p[3] * w[2];
    o[1] = p[0] * w[0] + p[3] * w[1] - p[2] * w[2];
    o[2] = -p[3] * w[0] + p[0] * w[1] + p[1] * w[2];
    o[3] = p[2] * w[0] - p[1] * w[1] + p[0] * w[2];
}

/* Solve the symmetric positive definite (m x m, m <= 6) D: Dinv by Gauss-Jordan with
 * partial pivoting; singular (relative pivot below 1e-13) -> ERR_SINGULAR. */
static int invert(const double *D, int m, double *Dinv)
{
    double a[6][12];
    double scale = 0.0;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < m; j++) {
            a[i][j] = D[6 * i + j];
            a[i][m + j] = (i == j);
        }
        scale = fmax(scale, fabs(D[7 * i]));
    }
    for (int col = 0; col < m; col++) {
        int piv = col;
        for (int i = col + 1; i < m; i++)
            if (fabs(a[i][col]) > fabs(a[piv][col]))
                piv = i;
        if (!(fabs(a[piv][col]) > 1e-13 * scale))
            return ERR_SINGULAR;
        if (piv != col)
            for (int j = 0; j < 2 * m; j++) {
                double t = a[col][j];
                a[col][j] = a[piv][j];
                a[piv][j] = t;
            }
        double d = a[col][col];
        for (int j = 0; j < 2 * m; j++)
            a[col][j] /= d;
        for (int i = 0; i < m; i++)
            if (i != col && a[i][col] != 0.0) {
                double f = a[i][col];
                for (int j = 0; j < 2 * m; j++)
                    a[i][j] -= f * a[col][j];
            }
    }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            Dinv[6 * i + j] = a[i][m + j];
    return OK;
}

/* ------------------------------------------------------------------ kinematics */
/* Poses, twists, motion subspaces S (6 x dof, column-major: column j at S + 6 j) and the
 * velocity-product accelerations c of every body, in placement order. */
static void kinematics(SK *k, const double *q, const double *qd)
{
    int nb = k->nb;
    for (int b = 0; b < nb; b++) {
        const int *ri = k->ri + RI * b;
        const double *rd = k->rd + RD * b;
        int kind = ri[0], p = ri[1], o = ri[3];
        int y = ri[2];
        double *rY = k->r + 3 * y, *AY = k->A + 9 * y, *wY = k->w + 3 * y, *vY = k->v + 3 * y;
        double *S = k->S + 36 * y, *c = k->c + 6 * y;
        memset(S, 0, sizeof(double) * 36);
        memset(c, 0, sizeof(double) * 6);
        if (kind == K_FREE) {
            double w[3];
            rY[0] = q[o];
            rY[1] = q[o + 1];
            rY[2] = q[o + 2];
            quat_matrix(q + o + 3, AY);
            E_times(q + o + 3, qd + o + 3, w);
            for (int i = 0; i < 3; i++) {
                wY[i] = 2.0 * w[i];
                vY[i] = qd[o + i];
                S[6 * i + i] = 1.0;
                S[6 * (3 + i) + 3 + i] = 1.0;
            }
            k->dof[y] = 6;
            continue;
        }
        const double *rP = k->r + 3 * p, *AP = k->A + 9 * p, *wP = k->w + 3 * p,
                     *vP = k->v + 3 * p;
        const double *sp = rd, *sc = rd + 3, *Fp = rd + 6, *Fc = rd + 15;
        double R[9], Rrel[9], u[3], arm[3], Pc[3], h[3], wrel[3] = {0, 0, 0}, sd = 0.0;
        mul33(AP, Fp, R);                           /* parent joint frame, global */
        for (int i = 0; i < 3; i++)
            u[i] = R[3 * i + 2];                    /* its z axis */
        for (int i = 0; i < 9; i++)
            Rrel[i] = (i % 4 == 0);
        if (kind == K_REV) {
            double cs = cos(q[o]), sn = sin(q[o]);
            Rrel[0] = cs;
            Rrel[1] = -sn;
            Rrel[3] = sn;
            Rrel[4] = cs;
            for (int i = 0; i < 3; i++)
                wrel[i] = u[i] * qd[o];
        } else if (kind == K_SPH) {
            double wl[3];
            quat_matrix(q + o, Rrel);
            E_times(q + o, qd + o, wl);
            for (int i = 0; i < 3; i++)
                wl[i] *= 2.0;
            mat3(R, wl, wrel);
        }
        /* A_Y = R Rrel Fc' */
        double T[9];
        mul33(R, Rrel, T);
        mul33t(T, Fc, AY);
        mat3(AP, sp, arm);                          /* P_p - r_p */
        if (kind == K_PRI) {
            sd = qd[o];
            for (int i = 0; i < 3; i++)
                arm[i] += u[i] * q[o];              /* P_c - r_p */
        }
        double Asc[3];
        mat3(AY, sc, Asc);
        for (int i = 0; i < 3; i++) {
            Pc[i] = rP[i] + arm[i];
            rY[i] = Pc[i] - Asc[i];
            h[i] = -Asc[i];
            wY[i] = wP[i] + wrel[i];
        }
        /* v_Y = v_p + ω_p x (P_c - r_p) + u s' + ω_Y x h */
        double t1[3], t2[3];
        cross(wP, arm, t1);
        cross(wY, h, t2);
        for (int i = 0; i < 3; i++)
            vY[i] = vP[i] + t1[i] + u[i] * sd + t2[i];
        /* S and c */
        int dof = 0;
        if (kind == K_REV) {
            cross(u, h, t1);
            for (int i = 0; i < 3; i++) {
                S[i] = u[i];
                S[3 + i] = t1[i];
            }
            dof = 1;
        } else if (kind == K_PRI) {
            for (int i = 0; i < 3; i++)
                S[3 + i] = u[i];
            dof = 1;
        } else if (kind == K_SPH) {
            for (int j = 0; j < 3; j++) {
                double e[3] = {R[j], R[3 + j], R[6 + j]};       /* column j of R */
                cross(e, h, t1);
                for (int i = 0; i < 3; i++) {
                    S[6 * j + i] = e[i];
                    S[6 * j + 3 + i] = t1[i];
                }
            }
            dof = 3;
        }
        k->dof[y] = dof;
        double cw[3], a1[3], a2[3], a3[3], a4[3];
        cross(wP, wrel, cw);
        cross(wP, arm, t1);
        cross(wP, t1, a1);                           /* ω_p x (ω_p x (P_c - r_p)) */
        cross(wP, u, a2);                            /* ω_p x u */
        cross(cw, h, a3);
        cross(wY, h, t2);
        cross(wY, t2, a4);
        for (int i = 0; i < 3; i++) {
            c[i] = cw[i];
            c[3 + i] = a1[i] + 2.0 * sd * a2[i] + a3[i] + a4[i];
        }
    }
}

/* ------------------------------------------------------------------ ABA */
static int aba(SK *k, const double *q, const double *qd, double *qdd)
{
    int nb = k->nb;
    for (int b = 0; b <= nb; b++) {
        memset(k->IA + 36 * b, 0, sizeof(double) * 36);
        memset(k->pA + 6 * b, 0, sizeof(double) * 6);
    }
    for (int b = 0; b < nb; b++) {              /* rigid-body inertia and bias */
        double *IA = k->IA + 36 * b, *pA = k->pA + 6 * b, Jg[9], T[9], Jw[3], gyro[3];
        const double *A = k->A + 9 * b, *w = k->w + 3 * b;
        mul33(A, k->J + 9 * b, T);
        mul33t(T, A, Jg);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                IA[6 * i + j] = Jg[3 * i + j];
        for (int i = 0; i < 3; i++)
            IA[6 * (3 + i) + 3 + i] = k->mass[b];
        mat3(Jg, w, Jw);
        cross(w, Jw, gyro);
        for (int i = 0; i < 3; i++) {
            pA[i] += gyro[i];
            pA[3 + i] += -k->mass[b] * k->g[i];
        }
    }
    /* leaves to root */
    for (int row = nb - 1; row >= 0; row--) {
        const int *ri = k->ri + RI * row;
        int y = ri[2], p = ri[1], dof = k->dof[y];
        double *IA = k->IA + 36 * y, *pA = k->pA + 6 * y, *S = k->S + 36 * y, *U = k->U + 36 * y;
        double *Dinv = k->Dinv + 36 * y, *uu = k->uu + 6 * y, *c = k->c + 6 * y;
        double D[36], Ia[36], pa[6], Duu[6];
        for (int j = 0; j < dof; j++)
            for (int i = 0; i < 6; i++) {
                double s = 0.0;
                for (int l = 0; l < 6; l++)
                    s += IA[6 * i + l] * S[6 * j + l];
                U[6 * j + i] = s;
            }
        for (int a = 0; a < dof; a++) {
            for (int b2 = 0; b2 < dof; b2++) {
                double s = 0.0;
                for (int i = 0; i < 6; i++)
                    s += S[6 * a + i] * U[6 * b2 + i];
                D[6 * a + b2] = s;
            }
            double s = 0.0;
            for (int i = 0; i < 6; i++)
                s += S[6 * a + i] * pA[i];
            uu[a] = -s;
        }
        if (dof && invert(D, dof, Dinv) != OK)
            return ERR_SINGULAR;
        for (int a = 0; a < dof; a++) {
            double s = 0.0;
            for (int b2 = 0; b2 < dof; b2++)
                s += Dinv[6 * a + b2] * uu[b2];
            Duu[a] = s;
        }
        if (p == nb)
            continue;                           /* the ground takes no articulated inertia */
        /* Ia = IA - U Dinv U', pa = pA + Ia c + U Dinv uu */
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++) {
                double s = IA[6 * i + j];
                for (int a = 0; a < dof; a++)
                    for (int b2 = 0; b2 < dof; b2++)
                        s -= U[6 * a + i] * Dinv[6 * a + b2] * U[6 * b2 + j];
                Ia[6 * i + j] = s;
            }
        for (int i = 0; i < 6; i++) {
            double s = pA[i];
            for (int j = 0; j < 6; j++)
                s += Ia[6 * i + j] * c[j];
            for (int a = 0; a < dof; a++)
                s += U[6 * a + i] * Duu[a];
            pa[i] = s;
        }
        /* X(d) = [[I, 0], [-d~, I]], d = r_y - r_p: IA_p += X' Ia X, pA_p += X' pa */
        double d[3], Xm[36];
        for (int i = 0; i < 3; i++)
            d[i] = k->r[3 * y + i] - k->r[3 * p + i];
        memset(Xm, 0, sizeof Xm);
        for (int i = 0; i < 6; i++)
            Xm[7 * i] = 1.0;
        double dt[9] = {0, -d[2], d[1], d[2], 0, -d[0], -d[1], d[0], 0};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                Xm[6 * (3 + i) + j] = -dt[3 * i + j];
        double IX[36];
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++) {
                double s = 0.0;
                for (int l = 0; l < 6; l++)
                    s += Ia[6 * i + l] * Xm[6 * l + j];
                IX[6 * i + j] = s;
            }
        double *IAp = k->IA + 36 * p, *pAp = k->pA + 6 * p;
        for (int i = 0; i < 6; i++) {
            for (int j = 0; j < 6; j++) {
                double s = 0.0;
                for (int l = 0; l < 6; l++)
                    s += Xm[6 * l + i] * IX[6 * l + j];
                IAp[6 * i + j] += s;
            }
            double s = 0.0;
            for (int l = 0; l < 6; l++)
                s += Xm[6 * l + i] * pa[l];
            pAp[i] += s;
        }
    }
    /* root to leaves */
    for (int row = 0; row < nb; row++) {
        const int *ri = k->ri + RI * row;
        int kind = ri[0], y = ri[2], p = ri[1], o = ri[3], dof = k->dof[y];
        double *acc = k->acc + 6 * y, *S = k->S + 36 * y, *U = k->U + 36 * y;
        double *Dinv = k->Dinv + 36 * y, *uu = k->uu + 6 * y, *c = k->c + 6 * y, nu[6];
        const double *ap = k->acc + 6 * p;
        double d[3], t[3];
        for (int i = 0; i < 3; i++)
            d[i] = k->r[3 * y + i] - k->r[3 * p + i];
        cross(ap, d, t);                        /* α_p x d */
        for (int i = 0; i < 3; i++) {
            acc[i] = ap[i] + c[i];
            acc[3 + i] = ap[3 + i] + t[i] + c[3 + i];
        }
        double rhs[6];
        for (int a = 0; a < dof; a++) {
            double s = uu[a];
            for (int i = 0; i < 6; i++)
                s -= U[6 * a + i] * acc[i];
            rhs[a] = s;
        }
        for (int a = 0; a < dof; a++) {
            double s = 0.0;
            for (int b2 = 0; b2 < dof; b2++)
                s += Dinv[6 * a + b2] * rhs[b2];
            nu[a] = s;
        }
        for (int a = 0; a < dof; a++)
            for (int i = 0; i < 6; i++)
                acc[i] += S[6 * a + i] * nu[a];
        /* coordinate accelerations */
        if (kind == K_REV || kind == K_PRI) {
            qdd[o] = nu[0];
        } else if (kind == K_SPH || kind == K_FREE) {
            const double *pp = q + o + (kind == K_FREE ? 3 : 0);
            const double *pd = qd + o + (kind == K_FREE ? 3 : 0);
            double *pdd = qdd + o + (kind == K_FREE ? 3 : 0);
            double w[3], wd[3], t1[4], t2[4];
            E_times(pp, pd, w);
            for (int i = 0; i < 3; i++)
                w[i] *= 2.0;
            if (kind == K_SPH) {
                /* nu = w' in the parent joint frame */
                memcpy(wd, nu, sizeof wd);
            } else {
                memcpy(wd, nu, sizeof wd);          /* α (global) */
                for (int i = 0; i < 3; i++)
                    qdd[o + i] = nu[3 + i];
            }
            Et_times(pd, w, t1);
            Et_times(pp, wd, t2);
            for (int i = 0; i < 4; i++)
                pdd[i] = 0.5 * (t1[i] + t2[i]);
        }
    }
    return OK;
}

int sk_accelerations(SK *k, const double *q, const double *qd, double *qdd)
{
    if (k->n)
        memset(qdd, 0, sizeof(double) * k->n);
    kinematics(k, q, qd);
    return aba(k, q, qd, qdd);
}

/* ------------------------------------------------------------------ integrators
 * The same methods and step-size control as the planar kernel.c (scipy's RK45 and DOP853
 * tableaus and controller, rk4 with equal steps); after each accepted step the
 * Euler-parameter sets are normalised (|p| = 1, p . p' = 0). */
static int rhs(SK *k, const double *y, double *dy)
{
    int n = k->n;
    memcpy(dy, y + n, sizeof(double) * n);
    int rc = sk_accelerations(k, y, y + n, dy + n);
    if (rc != OK)
        return rc;
    for (int i = 0; i < 2 * n; i++)
        if (!isfinite(dy[i]))
            return ERR_NONFINITE;
    return OK;
}

static int normalise(SK *k, double *y)      /* 1 when the model has Euler parameters */
{
    int n = k->n, any = 0;
    for (int row = 0; row < k->nb; row++) {
        const int *ri = k->ri + RI * row;
        if (ri[0] != K_SPH && ri[0] != K_FREE)
            continue;
        any = 1;
        int o = ri[3] + (ri[0] == K_FREE ? 3 : 0);
        double *p = y + o, *pd = y + n + o;
        double nn = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3]);
        for (int i = 0; i < 4; i++)
            p[i] /= nn;
        double dp = p[0] * pd[0] + p[1] * pd[1] + p[2] * pd[2] + p[3] * pd[3];
        for (int i = 0; i < 4; i++)
            pd[i] -= dp * p[i];
    }
    return any;
}

static int all_finite(const double *y, int m)
{
    for (int i = 0; i < m; i++)
        if (!isfinite(y[i]))
            return 0;
    return 1;
}

static int initial_step(SK *k, const Tableau *T, double t, const double *y, const double *f0,
                        double t_end, double max_step, double rtol, double atol, double *h_out)
{
    int m = 2 * k->n;
    double interval = fabs(t_end - t);
    double *sc = k->scale, *y1 = k->ytmp, *f1 = k->fy;
    for (int i = 0; i < m; i++)
        sc[i] = atol + fabs(y[i]) * rtol;
    double s0 = 0.0, s1 = 0.0;
    for (int i = 0; i < m; i++) {
        s0 += (y[i] / sc[i]) * (y[i] / sc[i]);
        s1 += (f0[i] / sc[i]) * (f0[i] / sc[i]);
    }
    double d0 = sqrt(s0 / m), d1 = sqrt(s1 / m);
    double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    if (h0 > interval)
        h0 = interval;
    for (int i = 0; i < m; i++)
        y1[i] = y[i] + h0 * f0[i];
    int rc = rhs(k, y1, f1);
    if (rc != OK)
        return rc;
    double s2 = 0.0;
    for (int i = 0; i < m; i++) {
        double v = (f1[i] - f0[i]) / sc[i];
        s2 += v * v;
    }
    double d2 = sqrt(s2 / m) / h0, h1;
    if (d1 <= 1e-15 && d2 <= 1e-15)
        h1 = fmax(1e-6, h0 * 1e-3);
    else
        h1 = pow(0.01 / fmax(d1, d2), 1.0 / (T->order + 1));
    double h = fmin(100 * h0, h1);
    h = fmin(h, interval);
    *h_out = fmin(h, max_step);
    return OK;
}

static int advance(SK *k, int method, double t, double t_end, double *y, double *h_io,
                   double rtol, double atol, double max_step, double step, int *nfev,
                   double *t_fail)
{
    int n = k->n, m = 2 * n, rc;
    double *K = k->K, *yt = k->ytmp, *yn = k->ynew;
    *nfev = 0;
    *t_fail = t;
    if (m == 0 || t_end <= t)
        return OK;
    if (method == 2) {
        double span = t_end - t, ns = ceil(span / step - 1e-9);
        long nsteps = ns < 1.0 ? 1 : (long)ns;
        double dt = span / (double)nsteps;
        double *k1 = K, *k2 = K + m, *k3 = K + 2 * m, *k4 = K + 3 * m, *yc = K + 4 * m;
        memcpy(yc, y, sizeof(double) * m);
        for (long s = 0; s < nsteps; s++) {
            *t_fail = t + s * dt;
            if ((rc = rhs(k, yc, k1)) != OK)
                return rc;
            for (int i = 0; i < m; i++)
                yt[i] = yc[i] + dt / 2 * k1[i];
            if ((rc = rhs(k, yt, k2)) != OK)
                return rc;
            for (int i = 0; i < m; i++)
                yt[i] = yc[i] + dt / 2 * k2[i];
            if ((rc = rhs(k, yt, k3)) != OK)
                return rc;
            for (int i = 0; i < m; i++)
                yt[i] = yc[i] + dt * k3[i];
            if ((rc = rhs(k, yt, k4)) != OK)
                return rc;
            *nfev += 4;
            for (int i = 0; i < m; i++)
                yc[i] += dt / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
            normalise(k, yc);
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
    double *yc = K + (s + 1) * m, *f = K;
    memcpy(yc, y, sizeof(double) * m);
    double tc = t;
    if ((rc = rhs(k, yc, f)) != OK)
        return rc;
    *nfev += 1;
    double h_abs = *h_io;
    if (h_abs > 0.0) {
        if (h_abs > t_end - t)
            h_abs = t_end - t;
    } else {
        if ((rc = initial_step(k, T, tc, yc, f, t_end, max_step, rtol, atol, &h_abs)) != OK)
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
            rc = OK;
            for (int st = 1; st < s; st++) {
                const double *a = T->A + st * s;
                for (int i = 0; i < m; i++) {
                    double acc = 0.0;
                    for (int j = 0; j < st; j++)
                        acc += K[j * m + i] * a[j];
                    yt[i] = yc[i] + acc * h;
                }
                if ((rc = rhs(k, yt, K + st * m)) != OK)
                    break;
            }
            if (rc == OK) {
                for (int i = 0; i < m; i++) {
                    double acc = 0.0;
                    for (int j = 0; j < s; j++)
                        acc += K[j * m + i] * T->B[j];
                    yn[i] = yc[i] + h * acc;
                }
                rc = rhs(k, yn, K + s * m);
            }
            *nfev += s;
            if (rc == ERR_NONFINITE) {
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
                err = (e5 == 0.0 && e3 == 0.0) ? 0.0 : h_abs * e5 / sqrt((e5 + 0.01 * e3) * m);
            } else {
                double e2 = 0.0;
                for (int i = 0; i < m; i++) {
                    double acc = 0.0;
                    for (int j = 0; j <= s; j++)
                        acc += K[j * m + i] * T->E[j];
                    acc *= h / sc[i];
                    e2 += acc * acc;
                }
                err = sqrt(e2 / m);
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
        int moved = normalise(k, yc);
        if (!all_finite(yc, m)) {
            *t_fail = tc;
            return ERR_NONFINITE;
        }
        if (moved) {                            /* f at the normalised state */
            if ((rc = rhs(k, yc, f)) != OK)
                return rc;
            *nfev += 1;
        } else {
            memcpy(f, K + s * m, sizeof(double) * m);     /* first same as last */
        }
    }
    memcpy(y, yc, sizeof(double) * m);
    *h_io = h_abs;
    return OK;
}

/* par = [t, t_end, h (in/out), rtol, atol, max_step, step, t_fail (out)] */
int sk_advance(SK *k, int method, double *par, double *y, int *nfev)
{
    return advance(k, method, par[0], par[1], y, &par[2], par[3], par[4], par[5], par[6], nfev,
                   &par[7]);
}
