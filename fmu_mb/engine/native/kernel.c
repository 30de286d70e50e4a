/*
 * fmu_mb native kernel: forward dynamics of a planar tree in joint coordinates by the
 * articulated-body algorithm (O(N) in the number of bodies), loops closed by the rows of cut
 * joints with their multipliers and drift control (section "closed loops"), its applied
 * forces, and the explicit integrators of fmu_mb (rk4, dopri5, dop853) run entirely in C,
 * plus one adaptive step at a time (mbk_step), and the contact event loop (events.c, included
 * at the end: impacts, persistent contacts, event location on the dense output).
 *
 * Loaded with ctypes by fmu_mb/engine/kernel.py, which compiles it with the system C
 * compiler (`cc -O2 -ffp-contract=off`) on first use and caches the library. Python checks
 * the model and passes flat arrays; nothing here allocates during a step.
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
 * The inertia pass (`articulate`, q only) is split from the bias and acceleration passes
 * (`solve_tau`), so Mbar^-1 tau for any generalised force tau costs one O(N) pass.
 *
 * Drives (section "drives"): a drive on a tree joint prescribes its coordinate,
 * q_j = s(t), qd_j = s'(t), qdd_j = s''(t), with s a law given as data (polynomial or
 * harmonic, fmu_mb.mechanics.motion). The articulated-body algorithm then runs in its hybrid
 * form (Featherstone, ch. 9): a prescribed joint passes its child's articulated inertia to
 * the parent unreduced, like a weld, and its known acceleration S s'' enters the bias, so
 * the other coordinates see exactly the constrained system (the drive row q_j - s(t) = 0
 * holds identically, for any value the integrator carries in q_j). The drive's multiplier
 * (tmt's lam of the row q_j - s(t), effort -lam) is the joint force S'F the motion needs,
 * from one inverse-dynamics pass over the final accelerations.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "laws.h"                              /* the drive laws, shared with the engine */

enum { J_WELD = 0, J_REV = 1, J_PRI = 2, J_FREE = 3 };
enum { E_TSDA = 1, E_RSDA = 2, E_FORCE = 3, E_TORQUE = 4 };
enum { OK = 0, ERR_NONFINITE = 1, ERR_SINGULAR = 2, ERR_STEP = 3, ERR_ELEMENT = 4,
       ERR_ARGS = 5, ERR_WORK = 12 /* the work budget (mbk_set_budget) used up */ };
#include "work.h"                              /* the work budget of one call */

#define JI 5          /* ints per joint: body, type, parent, jp, coord */
#define JD 8          /* doubles per joint: s, angle0, s_placed(2), s_other(2), axis(2) */
#define EI 5          /* ints per element: kind, a, b, input index, body frame */
#define ED 10         /* doubles per element: k, c, e0, value, sa(2), sb(2), dir(2) */
#define MAXS 16
#define KV 6          /* doubles per body of Kernel.kv */

typedef struct {
    int nb, n, ne;
    int *ji, *ei;
    double *jd, *ed, *mass, *inertia;
    double gx, gy;
    /* workspace, extended by the ground (index nb) */
    double *x, *xd, *xdd, *f, *S, *c, *IA, *pA, *U, *Dinv, *uu, *dd;
    /* cos and sin of each body's angle x[3 b + 2] (2 per body), set with x by kinematics */
    double *cs;
    /* integrator workspace */
    double *K, *ytmp, *ynew, *fy, *scale, *err;
    int last_error_body;
    /* closed loops: m constraint rows of the cut joints (mbk_set_rows) */
    int *entry;            /* (nb) joint entry that places body b */
    double *Ia, *Dv, *a0;  /* articulated inertias after the joint, S'IA S, qdd = 0 accels */
    int m, *ri, *nzc, *nnz, lwork;
    double *work, *rd, *phi, *conv, *Dq, *Wt, *Sm, *Vm, *ev, *lam, *rr, *qdd0, *qtmp;
    /* the structure of the rows (mbk_set_rows): Mbar is block diagonal over the subtrees
     * hanging from the ground (components), so W = Mbar^-1 Dq' has a row's entries only on
     * the coordinates of the components its two bodies belong to, and S = Dq W only between
     * rows that share a component: bcomp (nb + 1) the component of each body (-1: ground),
     * cj_start (ncomp + 1), cj: the joints of each component in tree order; rcomp (2 m) a
     * row's components (-1: none); rsup_start (m + 1), rsup: a row's coordinates (its
     * components', ascending; Dq and W are zero elsewhere); pr_start (m + 1), pr: the rows
     * l <= r sharing a component with row r, ascending; env (2 m): S's envelope (dense.h);
     * wacc (3 n) accumulators */
    int ncomp, *bcomp, *cj_start, *cj, *rcomp, *rsup_start, *rsup, *pr_start, *pr, *env;
    double *wacc;
    int rows_dirty;        /* the rows' bodies changed in place (the event loop's selection) */
    int mode;              /* 0: none, 1: projection, 2: baumgarte */
    double alpha, beta, proj_tol;
    /* drives (mbk_set_drives): nd prescribed coordinates */
    int nd, *di, *presc;   /* di (nd, DI): coordinate, law, offset in dp, count; presc (n) */
    double *dp, *qe, *qde, *sdd, *lamd;   /* law data; q, qd with s, s'; s'' per coord */
    /* hydraulic cylinders (mbk_set_gains): TSDA i has s -= sum_j G[i, j] u[j] */
    int ng, ni;
    double *G;
    /* LAPACK's dsyev for the rank-revealing solve at singular poses (a syev_fn, dense.h),
     * per kernel (mbk_set_eigensolver); NULL: the Jacobi eigen-decomposition of dense.h. The
     * engine library (engine.c) leaves it NULL, so the in-process engine and the native FMU
     * (no LAPACK there) compute the same numbers. */
    void *syev;
    Work work_budget;      /* of one call (mbk_set_budget; native/work.h) */
    /* planar shape pairs (mbk_set_pairs): npair records of PAIRD doubles, the data of the
     * R_PAIR rows (native/planar_pairs.h) */
    int npair;
    double *pair;
    /* sliding Coulomb friction (events.c sets it for a phase): nsl sliding point-line
     * contacts, per one the index of its gap row among the rows (slr), Coulomb's mu (slmu)
     * and the recorded slip direction s0 = +-1 along the tangent (sls0); capacity slcap */
    int nsl, slcap, *slr;
    double *slmu, *sls0;
    /* the event loop's phase kernel: its first msplit rows are the loops', the others the
     * contacts' (events.c), whose multipliers are re-split to their minimum norm
     * (split_contacts); 0: no re-split */
    int msplit;
    /* joint Coulomb friction (mbk_set_joint_torques): generalised forces on the tree
     * coordinates (n; the slipping joints' -F_c s0), added to every solve; NULL: none */
    double *jtau;
    /* what the velocity terms of kinematics take from the positions, per body (KV doubles):
     * P - r_p, r_b - P and a prismatic joint's axis u (kin_rates) */
    double *kv;
    /* the positions of mbk_loop_rows's pass at kq (n) kept for the next acceleration solve at
     * the same q (kq_ok; kinematics, mbk_set_rows, mbk_set_pairs and mbk_set_drives clear it,
     * and so does that solve): x, cs, S, dd, kv and the rows' Dq (nzc, nnz) */
    double *kq;
    int kq_ok, keep_dq;
} Kernel;

static int charge(Kernel *k) { return work_charge(&k->work_budget); }

/* The work budget of the calls that follow (0: none), the spent work reset; each right-hand
 * side and each projection iteration costs `unit`, and each loop solve its operation count
 * on top (native/work.h); mbk_spent: the units of the former */
void mbk_set_budget(Kernel *k, double budget, double unit)
{
    work_set(&k->work_budget, budget, unit);
}

double mbk_spent(const Kernel *k) { return k->work_budget.spent; }

void mbk_free(Kernel *k)
{
    if (!k)
        return;
    void *p[] = {k->ji, k->ei, k->jd, k->ed, k->mass, k->inertia, k->x, k->xd, k->xdd, k->f,
                 k->S, k->c, k->IA, k->pA, k->U, k->Dinv, k->uu, k->dd, k->cs, k->K, k->ytmp,
                 k->ynew, k->fy, k->scale, k->err, k->entry, k->Ia, k->Dv, k->a0, k->ri,
                 k->nzc, k->nnz, k->rd, k->phi, k->conv, k->Dq, k->Wt, k->Sm, k->Vm, k->ev,
                 k->lam, k->rr, k->qdd0, k->qtmp, k->work, k->di, k->presc, k->dp, k->qe,
                 k->qde, k->sdd, k->lamd, k->G, k->bcomp, k->cj_start, k->cj, k->rcomp,
                 k->rsup_start, k->rsup, k->pr_start, k->pr, k->env, k->wacc, k->pair, k->slr, k->slmu,
                 k->sls0, k->jtau, k->kv, k->kq};
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
    k->cs = calloc(2 * e, sizeof(double));
    k->K = calloc((MAXS + 1) * m, sizeof(double));
    k->ytmp = calloc(m, sizeof(double));
    k->ynew = calloc(m, sizeof(double));
    k->fy = calloc(m, sizeof(double));
    k->scale = calloc(m, sizeof(double));
    k->err = calloc(m, sizeof(double));
    k->entry = calloc(e, sizeof(int));
    k->Ia = calloc(9 * e, sizeof(double));
    k->Dv = calloc(e, sizeof(double));
    k->a0 = calloc(3 * e, sizeof(double));
    k->qdd0 = calloc(m, sizeof(double));
    k->qtmp = calloc(m, sizeof(double));
    k->kv = calloc(KV * e, sizeof(double));
    k->kq = calloc(m, sizeof(double));
    if (!k->entry || !k->Ia || !k->Dv || !k->a0 || !k->qdd0 || !k->qtmp || !k->kv || !k->kq) {
        mbk_free(k);
        return NULL;
    }
    for (int i = 0; i < nb; i++)
        if (ji[JI * i] >= 0 && ji[JI * i] < nb)
            k->entry[ji[JI * i]] = i;
    k->mode = 1;
    k->proj_tol = 1e-13;
    if (!k->ji || !k->jd || !k->ei || !k->ed || !k->mass || !k->inertia || !k->x || !k->xd ||
        !k->xdd || !k->f || !k->S || !k->c || !k->IA || !k->pA || !k->U || !k->Dinv ||
        !k->uu || !k->dd || !k->cs || !k->K || !k->ytmp || !k->ynew || !k->fy || !k->scale ||
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
    double *cs = k->cs;
    x[3 * nb] = x[3 * nb + 1] = x[3 * nb + 2] = 0.0;
    xd[3 * nb] = xd[3 * nb + 1] = xd[3 * nb + 2] = 0.0;
    cs[2 * nb] = 1.0;                       /* cos 0, sin 0 */
    cs[2 * nb + 1] = 0.0;
    k->kq_ok = 0;
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
            cs[2 * b] = cos(x[3 * b + 2]);
            cs[2 * b + 1] = sin(x[3 * b + 2]);
            continue;
        }
        double s = D[0];
        double rpx = x[3 * p], rpy = x[3 * p + 1], php = x[3 * p + 2];
        double vpx = xd[3 * p], vpy = xd[3 * p + 1], wp = xd[3 * p + 2];
        double qq = ic >= 0 ? q[ic] : 0.0, qv = ic >= 0 ? qd[ic] : 0.0;
        double phb = php + s * D[1] + (type == J_REV ? s * qq : 0.0);
        double wb = wp + (type == J_REV ? s * qv : 0.0);
        double cp = cs[2 * p], sp = cs[2 * p + 1], cb = cos(phb), sb = sin(phb);
        double aplx = cp * D[2] - sp * D[3], aply = sp * D[2] + cp * D[3];
        double aotx = cb * D[4] - sb * D[5], aoty = sb * D[4] + cb * D[5];
        double Px = rpx + aplx, Py = rpy + aply;
        double rbx = Px - aotx, rby = Py - aoty;
        double ux = 0.0, uy = 0.0;
        if (type == J_PRI) {
            double cj = (jp == b) ? cb : cp, sj = (jp == b) ? sb : sp;
            ux = cj * D[6] - sj * D[7];
            uy = sj * D[6] + cj * D[7];
            rbx += s * qq * ux;
            rby += s * qq * uy;
        }
        double dx = rbx - rpx, dy = rby - rpy;
        double vbx = vpx - wp * dy, vby = vpy + wp * dx;
        double *kv = k->kv + KV * b;
        kv[0] = Px - rpx;
        kv[1] = Py - rpy;
        kv[2] = rbx - Px;
        kv[3] = rby - Py;
        kv[4] = ux;
        kv[5] = uy;
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
        cs[2 * b] = cb;
        cs[2 * b + 1] = sb;
        xd[3 * b] = vbx;
        xd[3 * b + 1] = vby;
        xd[3 * b + 2] = wb;
        k->dd[2 * b] = dx;
        k->dd[2 * b + 1] = dy;
    }
}

/* The velocity terms of kinematics (xd, c) at the rates qd with the positions of the last
 * kinematics (x, cs, S, dd, kv): the same operations on the same numbers as kinematics(q, qd) */
static void kin_rates(Kernel *k, const double *qd)
{
    int nb = k->nb;
    double *xd = k->xd;
    xd[3 * nb] = xd[3 * nb + 1] = xd[3 * nb + 2] = 0.0;
    for (int i = 0; i < nb; i++) {
        const int *J = k->ji + JI * i;
        int b = J[0], type = J[1], p = J[2], ic = J[4];
        double *c = k->c + 3 * b;
        if (type == J_FREE) {
            for (int r = 0; r < 3; r++) {
                xd[3 * b + r] = qd[ic + r];
                c[r] = 0.0;
            }
            continue;
        }
        const double *kv = k->kv + KV * b;
        double s = k->jd[JD * i];
        double vpx = xd[3 * p], vpy = xd[3 * p + 1], wp = xd[3 * p + 2];
        double qv = ic >= 0 ? qd[ic] : 0.0;
        double wb = wp + (type == J_REV ? s * qv : 0.0);
        double dx = k->dd[2 * b], dy = k->dd[2 * b + 1];
        double vbx = vpx - wp * dy, vby = vpy + wp * dx;
        if (type == J_REV) {
            double ex = kv[2], ey = kv[3];
            vbx += s * qv * (-ey);
            vby += s * qv * ex;
            c[0] = -wp * wp * kv[0] - wb * wb * ex;
            c[1] = -wp * wp * kv[1] - wb * wb * ey;
        } else if (type == J_PRI) {
            double ux = kv[4], uy = kv[5];
            vbx += s * qv * ux;
            vby += s * qv * uy;
            c[0] = -wp * wp * dx - 2.0 * wp * s * qv * uy;
            c[1] = -wp * wp * dy + 2.0 * wp * s * qv * ux;
        } else {
            c[0] = -wp * wp * dx;
            c[1] = -wp * wp * dy;
        }
        c[2] = 0.0;
        xd[3 * b] = vbx;
        xd[3 * b + 1] = vby;
        xd[3 * b + 2] = wb;
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
            double ca = k->cs[2 * a], sa = k->cs[2 * a + 1];
            double cb = k->cs[2 * b], sb = k->cs[2 * b + 1];
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
            if (k->G && E[4] >= 0 && E[4] < k->ng) {    /* a cylinder: s = c l' - F_hyd */
                const double *g = k->G + (size_t)E[4] * k->ni;
                for (int j = 0; j < k->ni; j++)
                    sv -= g[j] * u[j];
            }
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
            double mag = P[3] + h;
            double cph = k->cs[2 * a], sph = k->cs[2 * a + 1];
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

/* ------------------------------------------------------------------ drives */
enum { L_POLY = 1, L_HARM = 2 };
#define DI 4          /* ints per drive: coordinate, law, offset in dp, number of values */

/* coordinate ic is prescribed by a drive */
static inline int prescribed(const Kernel *k, int ic)
{
    return k->nd > 0 && ic >= 0 && k->presc[ic] >= 0;
}

/* s(t), s'(t), s''(t) of drive d: polynomial c0 + c1 t + ... (Horner) or harmonic
 * offset + A sin(w t + phase) with (A, w, phase, offset) */
static void law(const Kernel *k, int d, double t, double *v)
{
    const int *D = k->di + DI * d;
    drive_law_eval(D[1] == L_HARM, k->dp + D[2], D[3], t, v);
}

/* (q, qd) with the prescribed coordinates set to s(t), s'(t) (in k->qe, k->qde; s'' in
 * k->sdd); returns the arrays to use */
static void prescribe(Kernel *k, double t, const double **q, const double **qd)
{
    int n = k->n;
    memcpy(k->qe, *q, sizeof(double) * n);
    memcpy(k->qde, *qd, sizeof(double) * n);
    for (int d = 0; d < k->nd; d++) {
        int j = k->di[DI * d];
        double v[3];
        law(k, d, t, v);
        k->qe[j] = v[0];
        k->qde[j] = v[1];
        k->sdd[j] = v[2];
    }
    *q = k->qe;
    *qd = k->qde;
}

/* the prescribed entries of y = (q, qd) set to s(t), s'(t) */
static void prescribe_state(Kernel *k, double t, double *y)
{
    for (int d = 0; d < k->nd; d++) {
        int j = k->di[DI * d];
        double v[3];
        law(k, d, t, v);
        y[j] = v[0];
        y[k->n + j] = v[1];
    }
}

/* nd drives: di (nd, DI) = coordinate, law (1 polynomial, 2 harmonic), offset, count;
 * dp the laws' numbers */
int mbk_set_drives(Kernel *k, int nd, const int *di, int ndp, const double *dp)
{
    k->kq_ok = 0;
    int n = k->n;
    free(k->di); free(k->presc); free(k->dp); free(k->qe); free(k->qde); free(k->sdd);
    free(k->lamd);
    k->nd = 0;
    k->di = dup(di, sizeof(int) * DI * nd);
    k->dp = dup(dp, sizeof(double) * ndp);
    k->presc = malloc(sizeof(int) * (n > 0 ? n : 1));
    k->qe = calloc(n > 0 ? n : 1, sizeof(double));
    k->qde = calloc(n > 0 ? n : 1, sizeof(double));
    k->sdd = calloc(n > 0 ? n : 1, sizeof(double));
    k->lamd = calloc(nd > 0 ? nd : 1, sizeof(double));
    if (!k->di || !k->dp || !k->presc || !k->qe || !k->qde || !k->sdd || !k->lamd)
        return ERR_ARGS;
    for (int j = 0; j < n; j++)
        k->presc[j] = -1;
    for (int d = 0; d < nd; d++) {
        const int *D = di + DI * d;
        if (D[0] < 0 || D[0] >= n || k->presc[D[0]] >= 0 || D[2] < 0 || D[3] < 0 ||
            D[2] > ndp - D[3] || (D[1] == L_HARM && D[3] != 4) ||
            (D[1] != L_HARM && D[1] != L_POLY))
            return ERR_ARGS;
        k->presc[D[0]] = d;
    }
    k->nd = nd;
    return OK;
}

/* the input gains of the TSDAs (ng x ni, row = the TSDA's ordinal in its element's last int):
 * hydraulic cylinders' F_hyd = sum gain * input enters as s -= G u */
int mbk_set_gains(Kernel *k, int ng, int ni, const double *G)
{
    free(k->G);
    k->ng = k->ni = 0;
    k->G = dup(G, sizeof(double) * (size_t)ng * (size_t)ni);
    if (!k->G)
        return ERR_ARGS;
    k->ng = ng;
    k->ni = ni;
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

/* Articulated inertias (depend on q only): IA per body, and for every joint with a
 * coordinate U = IA S, D = S'U and Ia = IA - U U'/D, the inertia the parent sees. */
static int articulate(Kernel *k)
{
    int nb = k->nb;
    double *IA = k->IA;
    for (int b = 0; b <= nb; b++) {
        double *I = IA + 9 * b;
        for (int r = 0; r < 9; r++)
            I[r] = 0.0;
        if (b < nb) {
            I[0] = I[4] = k->mass[b];
            I[8] = k->inertia[b];
        }
    }
    for (int i = nb - 1; i >= 0; i--) {
        const int *J = k->ji + JI * i;
        int b = J[0], type = J[1], p = J[2];
        if (type == J_FREE)
            continue;
        double *I = IA + 9 * b, *S = k->S + 9 * b, *Ia = k->Ia + 9 * b;
        if ((type == J_REV || type == J_PRI) && !prescribed(k, J[4])) {
            double *U = k->U + 3 * b;
            for (int r = 0; r < 3; r++)
                U[r] = I[3 * r] * S[0] + I[3 * r + 1] * S[1] + I[3 * r + 2] * S[2];
            double D = S[0] * U[0] + S[1] * U[1] + S[2] * U[2];
            double scale = fabs(S[0] * U[0]) + fabs(S[1] * U[1]) + fabs(S[2] * U[2]);
            if (!(D > 1e-13 * scale) || !(D > 0.0)) {      /* scale-free: D's own units */
                k->last_error_body = b;
                return ERR_SINGULAR;
            }
            k->Dinv[b] = 1.0 / D;
            k->Dv[b] = D;
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++)
                    Ia[3 * r + c] = I[3 * r + c] - U[r] * U[c] / D;
        } else {
            for (int r = 0; r < 9; r++)
                Ia[r] = I[r];
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
        double *Ip = IA + 9 * p;
        for (int c = 0; c < 3; c++) {
            Ip[c] += IX[c];
            Ip[3 + c] += IX[3 + c];
            Ip[6 + c] += -dy * IX[c] + dx * IX[3 + c] + IX[6 + c];
        }
    }
    return OK;
}

/* Bias forces and accelerations with the articulated inertias of `articulate`:
 * qdd = Mbar^-1 (tau + fbar) when bias is set (applied forces f and velocity terms c),
 * qdd = Mbar^-1 tau otherwise (tau may be NULL: zero). Leaves the body accelerations in xdd.
 * list (nl joint indices, each component's in tree order; NULL: every joint): the passes over
 * those joints only, for a tau that is zero elsewhere and bias 0 (qdd is then zero on the other
 * components' coordinates, and those entries are not written). */
static int solve_tau_joints(Kernel *k, const double *tau, int bias, double *qdd,
                            const int *list, int nl)
{
    int nb = k->nb;
    double *pA = k->pA, *f = k->f;
    if (!list)
        nl = nb;
    for (int ii = list ? 0 : -1; ii < nl; ii++) {   /* (ii = -1: the ground) */
        int b = ii < 0 ? nb : list ? k->ji[JI * list[ii]] : k->ji[JI * ii];
        pA[3 * b] = bias ? -f[3 * b] : 0.0;
        pA[3 * b + 1] = bias ? -f[3 * b + 1] : 0.0;
        pA[3 * b + 2] = bias ? -f[3 * b + 2] : 0.0;
    }
    for (int ii = nl - 1; ii >= 0; ii--) {
        int i = list ? list[ii] : ii;
        const int *J = k->ji + JI * i;
        int b = J[0], type = J[1], p = J[2], ic = J[4];
        if (type == J_FREE)
            continue;
        double *pb = pA + 3 * b, *S = k->S + 9 * b, *c = k->c + 3 * b, *Ia = k->Ia + 9 * b;
        double pa[3];
        int pr = (type == J_REV || type == J_PRI) && prescribed(k, ic);
        if (pr) {                  /* known acceleration S s'' joins the bias */
            double cs[3] = {c[0], c[1], c[2]};
            if (bias)
                for (int r = 0; r < 3; r++)
                    cs[r] += S[r] * k->sdd[ic];
            for (int r = 0; r < 3; r++)
                pa[r] = pb[r] + (bias ? Ia[3 * r] * cs[0] + Ia[3 * r + 1] * cs[1]
                                        + Ia[3 * r + 2] * cs[2] : 0.0);
        } else if (type == J_REV || type == J_PRI) {
            double *U = k->U + 3 * b, D = k->Dv[b];
            double uu = -(S[0] * pb[0] + S[1] * pb[1] + S[2] * pb[2]);
            if (tau && ic >= 0)
                uu += tau[ic];
            k->uu[b] = uu;
            for (int r = 0; r < 3; r++)
                pa[r] = pb[r] + (bias ? Ia[3 * r] * c[0] + Ia[3 * r + 1] * c[1]
                                        + Ia[3 * r + 2] * c[2] : 0.0) + U[r] * uu / D;
        } else {
            for (int r = 0; r < 3; r++)
                pa[r] = pb[r] + (bias ? Ia[3 * r] * c[0] + Ia[3 * r + 1] * c[1]
                                        + Ia[3 * r + 2] * c[2] : 0.0);
        }
        if (p == nb)
            continue;
        double dx = k->dd[2 * b], dy = k->dd[2 * b + 1];
        double *pp = pA + 3 * p;
        pp[0] += pa[0];
        pp[1] += pa[1];
        pp[2] += -dy * pa[0] + dx * pa[1] + pa[2];
    }
    double *a = k->xdd;
    a[3 * nb] = a[3 * nb + 1] = a[3 * nb + 2] = 0.0;
    for (int ii = 0; ii < nl; ii++) {
        int i = list ? list[ii] : ii;
        const int *J = k->ji + JI * i;
        int b = J[0], type = J[1], p = J[2], ic = J[4];
        double *ab = a + 3 * b;
        if (type == J_FREE) {
            double rhs[3] = {-pA[3 * b], -pA[3 * b + 1], -pA[3 * b + 2]};
            if (tau)
                for (int r = 0; r < 3; r++)
                    rhs[r] += tau[ic + r];
            if (solve3(k->IA + 9 * b, rhs, ab) != OK) {
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
        ab[0] = ap[0] - dy * ap[2] + (bias ? c[0] : 0.0);
        ab[1] = ap[1] + dx * ap[2] + (bias ? c[1] : 0.0);
        ab[2] = ap[2] + (bias ? c[2] : 0.0);
        if ((type == J_REV || type == J_PRI) && prescribed(k, ic)) {
            const double *S = k->S + 9 * b;
            double qa = bias ? k->sdd[ic] : 0.0;
            ab[0] += S[0] * qa;
            ab[1] += S[1] * qa;
            ab[2] += S[2] * qa;
            qdd[ic] = qa;
        } else if (type == J_REV || type == J_PRI) {
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

/* Bias forces and accelerations (above) over all joints */
static int solve_tau(Kernel *k, const double *tau, int bias, double *qdd)
{
    return solve_tau_joints(k, tau, bias, qdd, NULL, 0);
}

static int aba(Kernel *k, double *qdd)
{
    int rc = articulate(k);
    if (rc != OK)
        return rc;
    return solve_tau(k, k->jtau, 1, qdd);
}

/* The joints' Coulomb friction forces of a phase: tau (n) generalised forces on the tree
 * coordinates added to the applied forces of every solve (the slipping joints' -F_c s0;
 * fmu_mb.dynamics.friction.joint_forces); tau NULL: none. ERR_ARGS: out of memory or a
 * non-finite entry (the previous forces kept). */
int mbk_set_joint_torques(Kernel *k, const double *tau)
{
    if (!tau) {
        free(k->jtau);
        k->jtau = NULL;
        return OK;
    }
    for (int i = 0; i < k->n; i++)
        if (!isfinite(tau[i]))
            return ERR_ARGS;
    double *t = dup(tau, sizeof(double) * (size_t)(k->n > 0 ? k->n : 1));
    if (!t)
        return ERR_ARGS;
    free(k->jtau);
    k->jtau = t;
    return OK;
}

/* body accelerations a = X a_p + c + S qdd along the tree (qdd NULL: zero) */
static void body_acc(Kernel *k, const double *qdd, double *a)
{
    int nb = k->nb;
    a[3 * nb] = a[3 * nb + 1] = a[3 * nb + 2] = 0.0;
    for (int i = 0; i < nb; i++) {
        const int *J = k->ji + JI * i;
        int b = J[0], type = J[1], p = J[2], ic = J[4];
        double *ab = a + 3 * b;
        if (type == J_FREE) {
            for (int r = 0; r < 3; r++)
                ab[r] = qdd ? qdd[ic + r] : 0.0;
            continue;
        }
        double dx = k->dd[2 * b], dy = k->dd[2 * b + 1];
        const double *ap = a + 3 * p, *c = k->c + 3 * b, *S = k->S + 9 * b;
        double qa = (qdd && ic >= 0 && (type == J_REV || type == J_PRI)) ? qdd[ic] : 0.0;
        ab[0] = ap[0] - dy * ap[2] + c[0] + S[0] * qa;
        ab[1] = ap[1] + dx * ap[2] + c[1] + S[1] * qa;
        ab[2] = ap[2] + c[2] + S[2] * qa;
    }
}

/* ------------------------------------------------------------------ closed loops
 * The rows phi(x) = 0 of the cut joints (fmu_mb.mechanics.constraints, same primitives and
 * signs) at x = T(q): Dq = dphi/dq by the velocity of the rows' points per unit joint rate
 * (seed 001's kinematic differentials), conv_q = d(Dq)/dt qd from the body accelerations at
 * qdd = 0. With W = Mbar^-1 Dq' (one bias-free articulated pass per row) and the Schur
 * complement S = Dq W:
 *
 *   Mbar qdd + Dq' lam = fbar,  Dq qdd = b   =>   S lam = Dq qdd0 - b,  qdd = qdd0 - W lam
 *
 * (qdd0 = Mbar^-1 fbar the free motion, b = -conv_q, minus 2 alpha phi' + beta^2 phi with
 * Baumgarte). S is factorised by Cholesky; when a pivot is too small (a singular pose, the
 * N-four-bar's collinear links, or redundant rows) a Jacobi eigen-decomposition gives the
 * minimum-norm multipliers with eigenvalues below RANK_RTOL * max cut off, as
 * fmu_mb.linalg.schur_solve. The projections use the same W: least kinetic-energy changes.
 */
enum { R_PX = 0, R_PY = 1, R_ANG = 2, R_PRJ = 3, R_DST = 4, R_TAN = 5,
       R_PAIR = 7, /* a planar shape pair's feature: rd[0] its record (mbk_set_pairs) */
       R_PTAN = 8, /* a sticking shape-pair feature: its slip velocity (rd as R_PAIR's) */

       R_JRATE = 10 /* a sticking frictional joint: the rate of tree coordinate rd[0] (p, c:
                       the joint's parent and child bodies) */ };
#define RI 3          /* ints per row: kind, parent body p, child body c (nb = ground) */
#define RD 8          /* doubles per row: sp(2), sc(2), w0(2), offset, sign */
#include "dense.h"                             /* Cholesky / eigen solve of S, shared */
#include "friction.h"                          /* the friction law, shared */
enum { ERR_DRIFT = 6, ERR_PAINLEVE = 13 /* a frictional contact without a consistent state */ };

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The rest-state rule of p joints (friction.h fr_rest_states, shared by the event loops):
 * stick (p) 1/0 and s0 (p; the slipping ones' directions) from qdd = c + A f; ERR_ARGS when
 * out of memory or a bound is not > 0 */
int mbk_fr_rest_states(int p, const double *A, const double *c, const double *bound,
                       unsigned char *stick, double *s0)
{
    for (int j = 0; j < p; j++)
        if (!(bound[j] > 0.0 && isfinite(bound[j])))
            return ERR_ARGS;
    double *W = malloc(sizeof(double) * (size_t)(2 * p * p + 5 * p + 1));
    if (!W)
        return ERR_ARGS;
    fr_rest_states(p, A, c, bound, W, stick, s0);
    free(W);
    return OK;
}

/* the rows' structure (the Kernel's bcomp .. wacc) from the tree and the rows' bodies */
static int row_structure(Kernel *k)
{
    int nb = k->nb, n = k->n, m = k->m, nc = 0;
    free(k->bcomp); free(k->cj_start); free(k->cj); free(k->rcomp); free(k->rsup_start);
    free(k->rsup); free(k->pr_start); free(k->pr); free(k->env); free(k->wacc);
    k->bcomp = k->cj_start = k->cj = k->rcomp = k->rsup_start = k->rsup = k->pr_start = NULL;
    k->pr = k->env = NULL;
    k->wacc = NULL;
    k->rows_dirty = 0;
    k->bcomp = malloc(sizeof(int) * (size_t)(nb + 1));
    k->cj_start = calloc((size_t)nb + 2, sizeof(int));
    k->cj = malloc(sizeof(int) * (size_t)(nb + 1));
    k->rcomp = malloc(sizeof(int) * (size_t)(2 * m + 1));
    k->rsup_start = calloc((size_t)m + 1, sizeof(int));
    k->pr_start = calloc((size_t)m + 1, sizeof(int));
    k->env = malloc(sizeof(int) * (size_t)(2 * m + 1));
    k->wacc = calloc((size_t)(3 * n + 1), sizeof(double));
    int *ccount = calloc((size_t)nb + 1, sizeof(int)), *mark = malloc(sizeof(int) * (size_t)(m + 1));
    int *crows_start = calloc((size_t)nb + 2, sizeof(int)), *crows = malloc(sizeof(int) * (size_t)(2 * m + 1));
    int rc = ERR_ARGS;
    if (!k->bcomp || !k->cj_start || !k->cj || !k->rcomp || !k->rsup_start || !k->pr_start ||
        !k->env || !k->wacc || !ccount || !mark || !crows_start || !crows)
        goto done;
    k->bcomp[nb] = -1;
    for (int i = 0; i < nb; i++) {                 /* tree order: a parent before its child */
        const int *J = k->ji + JI * i;
        int b = J[0], p = J[2];
        if (b < 0 || b >= nb || p < 0 || p > nb || (p < nb && k->entry[p] >= i))
            goto done;
        k->bcomp[b] = p == nb ? nc++ : k->bcomp[p];
    }
    k->ncomp = nc;
    for (int i = 0; i < nb; i++)
        k->cj_start[k->bcomp[k->ji[JI * i]] + 1]++;
    for (int c = 0; c < nc; c++)
        k->cj_start[c + 1] += k->cj_start[c];
    for (int i = 0; i < nb; i++) {
        int c = k->bcomp[k->ji[JI * i]];
        k->cj[k->cj_start[c] + ccount[c]++] = i;
    }
    int nsup = 0;                                  /* rows' components and coordinates */
    for (int r = 0; r < m; r++) {
        const int *R = k->ri + RI * r;
        if (R[1] < 0 || R[1] > nb || R[2] < 0 || R[2] > nb)
            goto done;
        int c1 = k->bcomp[R[1]], c2 = k->bcomp[R[2]];
        if (c1 < 0 || c1 == c2) {
            c1 = c2;
            c2 = -1;
        }
        if (c1 < 0 && c2 >= 0) {
            c1 = c2;
            c2 = -1;
        }
        k->rcomp[2 * r] = c1;
        k->rcomp[2 * r + 1] = c2;
        for (int h = 0; h < 2; h++) {
            int c = k->rcomp[2 * r + h];
            if (c < 0)
                continue;
            crows_start[c + 1]++;
            for (int jj = k->cj_start[c]; jj < k->cj_start[c + 1]; jj++) {
                const int *J = k->ji + JI * k->cj[jj];
                nsup += J[1] == J_FREE ? 3 : (J[1] == J_REV || J[1] == J_PRI) && J[4] >= 0;
            }
        }
    }
    k->rsup = malloc(sizeof(int) * (size_t)(nsup + 1));
    if (!k->rsup)
        goto done;
    for (int r = 0, at = 0; r < m; r++) {
        k->rsup_start[r] = at;
        for (int h = 0; h < 2; h++) {
            int c = k->rcomp[2 * r + h];
            for (int jj = c < 0 ? 0 : k->cj_start[c]; c >= 0 && jj < k->cj_start[c + 1]; jj++) {
                const int *J = k->ji + JI * k->cj[jj];
                if (J[1] == J_FREE)
                    for (int d = 0; d < 3; d++)
                        k->rsup[at++] = J[4] + d;
                else if ((J[1] == J_REV || J[1] == J_PRI) && J[4] >= 0)
                    k->rsup[at++] = J[4];
            }
        }
        qsort(k->rsup + k->rsup_start[r], (size_t)(at - k->rsup_start[r]), sizeof(int), cmp_int);
        for (int i = k->rsup_start[r]; i < at; i++)
            if (k->rsup[i] < 0 || k->rsup[i] >= n)
                goto done;
        k->rsup_start[r + 1] = at;
    }
    for (int c = 0; c < nc; c++)                   /* the rows of each component */
        crows_start[c + 1] += crows_start[c];
    for (int c = 0; c <= nc; c++)
        ccount[c] = 0;
    for (int r = 0; r < m; r++)
        for (int h = 0; h < 2; h++) {
            int c = k->rcomp[2 * r + h];
            if (c >= 0)
                crows[crows_start[c] + ccount[c]++] = r;
        }
    size_t npr = 0, cap = (size_t)m + 1;           /* the pairs l <= r sharing a component */
    k->pr = malloc(sizeof(int) * cap);
    if (!k->pr)
        goto done;
    for (int r = 0; r < m; r++)
        mark[r] = -1;
    for (int r = 0; r < m; r++) {
        k->pr_start[r] = (int)npr;
        for (int h = 0; h < 2; h++) {
            int c = k->rcomp[2 * r + h];
            for (int i = c < 0 ? 0 : crows_start[c]; c >= 0 && i < crows_start[c + 1]; i++) {
                int l = crows[i];
                if (l > r || mark[l] == r)
                    continue;
                mark[l] = r;
                if (npr == cap) {
                    int *g = realloc(k->pr, sizeof(int) * (cap *= 2));
                    if (!g)
                        goto done;
                    k->pr = g;
                }
                k->pr[npr++] = l;
            }
        }
        if (mark[r] != r) {                        /* a row on no component (both ground) */
            if (npr == cap) {
                int *g = realloc(k->pr, sizeof(int) * (cap *= 2));
                if (!g)
                    goto done;
                k->pr = g;
            }
            k->pr[npr++] = r;
        }
        qsort(k->pr + k->pr_start[r], npr - (size_t)k->pr_start[r], sizeof(int), cmp_int);
        k->env[r] = k->pr[k->pr_start[r]];
    }
    k->pr_start[m] = (int)npr;
    dense_envelope_last(k->env, m);
    rc = OK;
done:
    free(ccount);
    free(mark);
    free(crows_start);
    free(crows);
    return rc;
}

#include "planar_pairs.h"                      /* planar shape pairs (R_PAIR rows) */
#define PAIRD 19      /* doubles per shape pair: kind a, kind b, feature id, size a (2),
                       * size b (2), shape a's rotation (2 x 2, row-major) and position (2)
                       * in body a's axes, the same of b */

/* the shape-pair records of the R_PAIR rows (np records of PAIRD doubles); ERR_ARGS (the
 * kernel's records unchanged) when a record's kinds are not a pair of planar_pairs.h, its
 * feature id is not one of the pair's or a number is not finite */
int mbk_set_pairs(Kernel *k, int np, const double *pd)
{
    k->kq_ok = 0;
    if (np < 0 || (np > 0 && !pd))
        return ERR_ARGS;
    for (int i = 0; i < np; i++) {
        const double *D = pd + (size_t)PAIRD * i;
        for (int j = 0; j < PAIRD; j++)
            if (!isfinite(D[j]))
                return ERR_ARGS;
        if (D[0] != floor(D[0]) || D[1] != floor(D[1]) || D[2] != floor(D[2]) ||
            fabs(D[0]) > 100.0 || fabs(D[1]) > 100.0 || D[2] < 0.0 ||
            D[2] >= mbpp_count((int)D[0], (int)D[1]))
            return ERR_ARGS;
    }
    free(k->pair);
    k->pair = dup(pd, sizeof(double) * PAIRD * (size_t)np);
    k->npair = k->pair ? np : 0;
    return k->pair ? OK : ERR_ARGS;
}

/* gap and rows of shape pair i between bodies a (shape a) and b at the current kinematics
 * (velocities zero when rates == 0: the gap only) */
static int pair_eval(const Kernel *k, int i, int a, int b, int rates, mbpp_rows_t *o)
{
    if (i < 0 || i >= k->npair)
        return ERR_ARGS;
    const double *D = k->pair + (size_t)PAIRD * i;
    mbpp_body B[2];
    int ab[2] = {a, b};
    for (int j = 0; j < 2; j++) {
        int bb = ab[j];
        B[j].r[0] = k->x[3 * bb];
        B[j].r[1] = k->x[3 * bb + 1];
        B[j].c = k->cs[2 * bb];
        B[j].s = k->cs[2 * bb + 1];
        B[j].v[0] = rates ? k->xd[3 * bb] : 0.0;
        B[j].v[1] = rates ? k->xd[3 * bb + 1] : 0.0;
        B[j].w = rates ? k->xd[3 * bb + 2] : 0.0;
    }
    int ka = (int)D[0], kb = (int)D[1], fid = (int)D[2];
    if (fid < 0 || fid >= mbpp_count(ka, kb))
        return ERR_ARGS;
    mbpp_rows(ka, D + 3, D + 7, D + 11, kb, D + 5, D + 13, D + 17, fid, &B[0], &B[1], o);
    return OK;
}

int mbk_set_rows(Kernel *k, int m, const int *ri, const double *rd)
{
    k->kq_ok = 0;
    int n = k->n;
    free(k->ri); free(k->rd); free(k->nzc); free(k->nnz); free(k->phi); free(k->conv);
    free(k->Dq); free(k->Wt); free(k->Sm); free(k->Vm); free(k->ev); free(k->lam); free(k->rr);
    size_t mm = (size_t)(m > 0 ? m : 1), nn = (size_t)(n > 0 ? n : 1);
    k->m = m;
    k->ri = dup(ri, sizeof(int) * RI * m);
    k->rd = dup(rd, sizeof(double) * RD * m);
    k->nzc = calloc(mm * nn, sizeof(int));
    k->nnz = calloc(mm, sizeof(int));
    k->phi = calloc(mm, sizeof(double));
    k->conv = calloc(mm, sizeof(double));
    k->Dq = calloc(mm * nn, sizeof(double));
    k->Wt = calloc(mm * nn, sizeof(double));
    k->Sm = calloc(mm * mm, sizeof(double));
    k->Vm = calloc(mm * mm, sizeof(double));
    k->ev = calloc(mm, sizeof(double));
    k->lam = calloc(mm, sizeof(double));
    k->rr = calloc(4 * mm, sizeof(double));   /* projections: 2 right-hand sides, 2 solutions */
    free(k->work);
    k->lwork = (int)(66 * mm + 16);
    k->work = calloc((size_t)k->lwork, sizeof(double));
    if (!k->work || !k->ri || !k->rd || !k->nzc || !k->nnz || !k->phi || !k->conv || !k->Dq || !k->Wt ||
        !k->Sm || !k->Vm || !k->ev || !k->lam || !k->rr || row_structure(k) != OK) {
        k->m = 0;
        return ERR_ARGS;
    }
    return OK;
}

void mbk_set_stabilization(Kernel *k, int mode, double alpha, double beta, double proj_tol)
{
    k->mode = mode;
    k->alpha = alpha;
    k->beta = beta;
    k->proj_tol = proj_tol;
}

/* point s of body b: position Q and arm e = A(phi_b) s */
static void body_point(const Kernel *k, int b, const double *s, double *Q, double *e)
{
    double c = k->cs[2 * b], sn = k->cs[2 * b + 1];           /* cos, sin of x[3 b + 2] */
    e[0] = c * s[0] - sn * s[1];
    e[1] = sn * s[0] + c * s[1];
    Q[0] = k->x[3 * b] + e[0];
    Q[1] = k->x[3 * b + 1] + e[1];
}

/* add w . (velocity of point Q, angular rate) of body b per unit rate of each coordinate
 * on b's path to the ground into row Dr (n) */
static void add_path(const Kernel *k, int b, const double *Q, const double *w, double *Dr)
{
    int nb = k->nb;
    while (b != nb) {
        const int *J = k->ji + JI * k->entry[b];
        int type = J[1], ic = J[4];
        double rx = Q[0] - k->x[3 * b], ry = Q[1] - k->x[3 * b + 1];
        if (type == J_FREE) {
            Dr[ic] += w[0];
            Dr[ic + 1] += w[1];
            Dr[ic + 2] += -w[0] * ry + w[1] * rx + w[2];
        } else if ((type == J_REV || type == J_PRI) && ic >= 0) {
            const double *S = k->S + 9 * b;
            Dr[ic] += w[0] * (S[0] - S[2] * ry) + w[1] * (S[1] + S[2] * rx) + w[2] * S[2];
        }
        b = J[2];
    }
}

/* The slip velocity of a point-line contact (fmu_mb.mechanics.friction) with row data P
 * (sp: the line's point A on p, sc: the circle's centre C on c, w0: the line's normal in p's
 * axes, offset: the radius r): v_t = d/dt[t . (C - A)] - r (w_c - w_p) along the tangent
 * t = e_z x n (n the normal w0 turned with p), at the current kinematics (returned). Dr (n,
 * or NULL): its row in joint rates; cv (or NULL): v_t' at the body accelerations a (k->a0:
 * the convective part at qdd = 0, or the full accelerations). A velocity row: no value. */
static double tan_row(const Kernel *k, int p, int c, const double *P, const double *a,
                      double *Dr, double *cv)
{
    double Qp[2], Qc[2], ep[2], ec[2];
    body_point(k, p, P, Qp, ep);
    body_point(k, c, P + 2, Qc, ec);
    double d[2] = {Qc[0] - Qp[0], Qc[1] - Qp[1]};
    const double *vp = k->xd + 3 * p, *vc = k->xd + 3 * c;
    double dd[2] = {vc[0] - vc[2] * ec[1] - vp[0] + vp[2] * ep[1],
                    vc[1] + vc[2] * ec[0] - vp[1] - vp[2] * ep[0]};
    double cs = k->cs[2 * p], sn = k->cs[2 * p + 1], wpr = vp[2], r = P[6];
    double w[2] = {cs * P[4] - sn * P[5], sn * P[4] + cs * P[5]}, t[2] = {-w[1], w[0]};
    double dw = d[0] * w[0] + d[1] * w[1], dt = d[0] * t[0] + d[1] * t[1];
    if (Dr) {
        double wc[3] = {t[0], t[1], -r}, wp[3] = {-t[0], -t[1], r - dw};
        memset(Dr, 0, sizeof(double) * (size_t)k->n);
        add_path(k, c, Qc, wc, Dr);
        add_path(k, p, Qp, wp, Dr);
    }
    if (cv) {
        const double *ap = a + 3 * p, *ac = a + 3 * c;
        double acc[2] = {ac[0] - ac[2] * ec[1] - vc[2] * vc[2] * ec[0]
                         - (ap[0] - ap[2] * ep[1] - vp[2] * vp[2] * ep[0]),
                         ac[1] + ac[2] * ec[0] - vc[2] * vc[2] * ec[1]
                         - (ap[1] + ap[2] * ep[0] - vp[2] * vp[2] * ep[1])};
        *cv = acc[0] * t[0] + acc[1] * t[1] - ap[2] * dw
              - 2.0 * wpr * (dd[0] * w[0] + dd[1] * w[1]) - wpr * wpr * dt
              - r * (ac[2] - ap[2]);
    }
    return dd[0] * t[0] + dd[1] * t[1] - wpr * dw - r * (vc[2] - vp[2]);
}

/* The slip velocity of a planar shape pair's feature with row data P (rd[0]: its record) at
 * the current kinematics (returned): the tangential row jt of planar_pairs.h at the surface
 * points times the bodies' rates. Dr (n, or NULL): its row in joint rates; cv (or NULL):
 * v_t' at the body accelerations a (as tan_row). The record is valid (mbk_set_pairs). */
static double pair_tan_row(const Kernel *k, int p, int c, const double *P, const double *a,
                           double *Dr, double *cv)
{
    mbpp_rows_t o;
    if (pair_eval(k, (int)P[0], p, c, 1, &o) != OK) {
        if (Dr)
            memset(Dr, 0, sizeof(double) * (size_t)k->n);
        if (cv)
            *cv = 0.0;
        return 0.0;
    }
    const double *vp = k->xd + 3 * p, *vc = k->xd + 3 * c;
    double vt = 0.0;
    for (int i = 0; i < 3; i++)
        vt += o.jt[i] * vp[i] + o.jt[3 + i] * vc[i];
    if (Dr) {
        double Xp[2] = {k->x[3 * p], k->x[3 * p + 1]}, Xc[2] = {k->x[3 * c], k->x[3 * c + 1]};
        memset(Dr, 0, sizeof(double) * (size_t)k->n);
        add_path(k, c, Xc, o.jt + 3, Dr);
        add_path(k, p, Xp, o.jt, Dr);
    }
    if (cv) {
        const double *ap = a + 3 * p, *ac = a + 3 * c;
        double g = o.gt;
        for (int i = 0; i < 3; i++)
            g += o.jt[i] * ap[i] + o.jt[3 + i] * ac[i];
        *cv = g;
    }
    return vt;
}

/* the slip velocity of a frictional contact whose gap row (or sticking row) is of kind
 * `kind`: a shape pair's (R_PAIR, R_PTAN) or a point-line contact's (tan_row) */
static double slip_row(const Kernel *k, int kind, int p, int c, const double *P,
                       const double *a, double *Dr, double *cv)
{
    if (kind == R_PAIR || kind == R_PTAN)
        return pair_tan_row(k, p, c, P, a, Dr, cv);
    return tan_row(k, p, c, P, a, Dr, cv);
}

/* phi, Dq (not with k->keep_dq: Dq, nzc and nnz of the current positions are kept) and conv
 * (when want_conv, needs k->a0) of the rows at the current kinematics:
 * the rows of the cut joints and, in a kernel made for a phase with persistent contacts,
 * the gap rows of those contacts (point-line: R_PRJ, point-point: R_DST, joint limits:
 * R_ANG or R_PRJ, each with its offset and side) */
static int rows(Kernel *k, int want_conv)
{
    int m = k->m, n = k->n;
    if (k->rows_dirty) {          /* new rows in place: their structure, Dq and W cleared */
        if (row_structure(k) != OK) {
            k->rows_dirty = 1;
            return ERR_ARGS;
        }
        memset(k->Dq, 0, sizeof(double) * (size_t)m * (size_t)n);
        memset(k->Wt, 0, sizeof(double) * (size_t)m * (size_t)n);
    }
    for (int r = 0; r < m; r++) {
        const int *R = k->ri + RI * r;
        const double *P = k->rd + RD * r;
        int kind = R[0], p = R[1], c = R[2];
        if (kind == R_JRATE) {      /* a sticking joint: its coordinate's rate, the unit row */
            double *Dr = k->Dq + (size_t)r * n;
            int ic = (int)P[0];
            if (ic < 0 || ic >= n)
                return ERR_ARGS;
            memset(Dr, 0, sizeof(double) * (size_t)n);
            Dr[ic] = 1.0;
            k->phi[r] = 0.0;
            k->conv[r] = 0.0;
            k->nzc[(size_t)r * n] = ic;
            k->nnz[r] = 1;
            continue;
        }
        if (kind == R_TAN || kind == R_PTAN) {    /* a sticking contact: v_t = 0 */
            double *Dr = k->Dq + (size_t)r * n, cv = 0.0;
            slip_row(k, kind, p, c, P, k->a0, Dr, want_conv ? &cv : NULL);
            k->phi[r] = 0.0;
            k->conv[r] = cv;
            int *nz = k->nzc + (size_t)r * n, cnt = 0;
            for (int j = 0; j < n; j++)
                if (Dr[j] != 0.0)
                    nz[cnt++] = j;
            k->nnz[r] = cnt;
            continue;
        }
        double Qp[2], Qc[2], ep[2], ec[2];
        body_point(k, p, P, Qp, ep);
        body_point(k, c, P + 2, Qc, ec);
        double d[2] = {Qc[0] - Qp[0], Qc[1] - Qp[1]};
        const double *vp = k->xd + 3 * p, *vc = k->xd + 3 * c;
        double dd[2] = {vc[0] - vc[2] * ec[1] - vp[0] + vp[2] * ep[1],
                        vc[1] + vc[2] * ec[0] - vp[1] - vp[2] * ep[0]};
        double acc[2] = {0.0, 0.0}, ang = 0.0;
        if (want_conv) {
            const double *ap = k->a0 + 3 * p, *ac = k->a0 + 3 * c;
            acc[0] = ac[0] - ac[2] * ec[1] - vc[2] * vc[2] * ec[0]
                     - (ap[0] - ap[2] * ep[1] - vp[2] * vp[2] * ep[0]);
            acc[1] = ac[1] + ac[2] * ec[0] - vc[2] * vc[2] * ec[1]
                     - (ap[1] + ap[2] * ep[0] - vp[2] * vp[2] * ep[1]);
            ang = ac[2] - ap[2];
        }
        double wc[3] = {0.0, 0.0, 0.0}, wp[3] = {0.0, 0.0, 0.0}, val = 0.0, cv = 0.0;
        if (kind == R_PAIR) {        /* the rows at the bodies' centres (planar_pairs.h) */
            mbpp_rows_t o;
            int rc = pair_eval(k, (int)P[0], p, c, 1, &o);
            if (rc != OK)
                return rc;
            val = o.gap;
            for (int i = 0; i < 3; i++) {
                wp[i] = o.jn[i];
                wc[i] = o.jn[3 + i];
            }
            Qp[0] = k->x[3 * p];
            Qp[1] = k->x[3 * p + 1];
            Qc[0] = k->x[3 * c];
            Qc[1] = k->x[3 * c + 1];
            cv = o.gn;
            if (want_conv) {
                const double *ap = k->a0 + 3 * p, *ac = k->a0 + 3 * c;
                for (int i = 0; i < 3; i++)
                    cv += wp[i] * ap[i] + wc[i] * ac[i];
            }
        } else if (kind == R_PX || kind == R_PY) {
            int i = kind == R_PY;
            val = d[i];
            wc[i] = 1.0;
            wp[i] = -1.0;
            cv = acc[i];
        } else if (kind == R_ANG) {
            val = k->x[3 * c + 2] - k->x[3 * p + 2];
            wc[2] = 1.0;
            wp[2] = -1.0;
            cv = ang;
        } else if (kind == R_PRJ) {
            double cs = k->cs[2 * p], sn = k->cs[2 * p + 1], wpr = k->xd[3 * p + 2];
            double w[2] = {cs * P[4] - sn * P[5], sn * P[4] + cs * P[5]}, pw[2] = {-w[1], w[0]};
            val = d[0] * w[0] + d[1] * w[1];
            wc[0] = w[0];
            wc[1] = w[1];
            wp[0] = -w[0];
            wp[1] = -w[1];
            wp[2] = d[0] * pw[0] + d[1] * pw[1];
            double alp = want_conv ? k->a0[3 * p + 2] : 0.0;
            cv = acc[0] * w[0] + acc[1] * w[1] + 2.0 * wpr * (dd[0] * pw[0] + dd[1] * pw[1])
                 + alp * (d[0] * pw[0] + d[1] * pw[1]) - wpr * wpr * val;
        } else if (kind == R_DST) {
            double l = sqrt(d[0] * d[0] + d[1] * d[1]);
            if (!(l > 0.0))
                return ERR_SINGULAR;
            double e[2] = {d[0] / l, d[1] / l}, ed = e[0] * dd[0] + e[1] * dd[1];
            val = l;
            wc[0] = e[0];
            wc[1] = e[1];
            wp[0] = -e[0];
            wp[1] = -e[1];
            cv = e[0] * acc[0] + e[1] * acc[1] + (dd[0] * dd[0] + dd[1] * dd[1] - ed * ed) / l;
        } else {
            return ERR_ARGS;
        }
        /* phi = sign (value - offset): a cut joint's rows have sign 1; a persistent
         * contact's gap row (fmu_mb.mechanics.contacts) its side */
        double sg = P[7];
        for (int i = 0; i < 3; i++) {
            wc[i] *= sg;
            wp[i] *= sg;
        }
        k->phi[r] = sg * (val - P[6]);
        k->conv[r] = sg * cv;
        if (k->keep_dq)            /* Dq of these positions is kept (mbk_loop_rows) */
            continue;
        double *Dr = k->Dq + (size_t)r * n;
        const int *sup = k->rsup + k->rsup_start[r];
        int ns = k->rsup_start[r + 1] - k->rsup_start[r];
        for (int i = 0; i < ns; i++)       /* (Dq is zero off the row's coordinates) */
            Dr[sup[i]] = 0.0;
        add_path(k, c, Qc, wc, Dr);
        add_path(k, p, Qp, wp, Dr);
        int *nz = k->nzc + (size_t)r * n, cnt = 0;
        for (int i = 0; i < ns; i++)
            if (Dr[sup[i]] != 0.0)
                nz[cnt++] = sup[i];
        k->nnz[r] = cnt;
    }
    return OK;
}

/* W = Mbar^-1 Dq' (rows of Wt; one bias-free pass over the row's components per row) and
 * S = Dq W, at the current articulated inertias: S's lower envelope (k->env) is written, its
 * entries between rows that share no component zero (dense.h reads only the envelope) */
static int schur(Kernel *k)
{
    int m = k->m, n = k->n, rc;
    for (int r = 0; r < m; r++)
        for (int h = 0; h < 2; h++) {
            int c = k->rcomp[2 * r + h];
            if (c >= 0 && (rc = solve_tau_joints(k, k->Dq + (size_t)r * n, 0,
                                                 k->Wt + (size_t)r * n,
                                                 k->cj + k->cj_start[c],
                                                 k->cj_start[c + 1] - k->cj_start[c])) != OK)
                return rc;
        }
    for (int r = 0; r < m; r++) {
        const double *Dr = k->Dq + (size_t)r * n;
        const int *nz = k->nzc + (size_t)r * n;
        double *Sr = k->Sm + (size_t)r * m;
        for (int l = k->env[r]; l <= r; l++)
            Sr[l] = 0.0;
        for (int i = k->pr_start[r]; i < k->pr_start[r + 1]; i++) {
            int l = k->pr[i];
            const double *Wl = k->Wt + (size_t)l * n;
            double acc = 0.0;
            for (int j = 0; j < k->nnz[r]; j++)
                acc += Dr[nz[j]] * Wl[nz[j]];
            Sr[l] = acc;
        }
    }
    return OK;
}

/* acc (n, zeroed first when clear) += sign sum_r Wt[r] y[r] over the rows' coordinates, rows
 * in order (each entry sums its terms as the dense product would, less the exact zeros) */
static void add_wt(const Kernel *k, const double *y, double sign, double *acc, int clear)
{
    int m = k->m, n = k->n;
    if (clear)
        for (int j = 0; j < n; j++)
            acc[j] = 0.0;
    for (int r = 0; r < m; r++) {
        const double *Wr = k->Wt + (size_t)r * n;
        const int *sup = k->rsup + k->rsup_start[r];
        int ns = k->rsup_start[r + 1] - k->rsup_start[r];
        double yr = y[r];
        if (sign < 0.0)
            for (int i = 0; i < ns; i++)
                acc[sup[i]] -= Wr[sup[i]] * yr;
        else
            for (int i = 0; i < ns; i++)
                acc[sup[i]] += Wr[sup[i]] * yr;
    }
}

/* Dq[r] . v over the row's non-zero entries */
static double dq_dot(const Kernel *k, int r, const double *v)
{
    const double *Dr = k->Dq + (size_t)r * k->n;
    const int *nz = k->nzc + (size_t)r * k->n;
    double acc = 0.0;
    for (int i = 0; i < k->nnz[r]; i++)
        acc += Dr[nz[i]] * v[nz[i]];
    return acc;
}

void mbk_set_eigensolver(Kernel *k, void *f) { k->syev = f; }

/* y = S^+ rhs for the symmetric positive semi-definite S in k->Sm (destroyed): Cholesky, or
 * the truncated eigen-decomposition near singularity (fmu_mb.linalg.schur_solve) */
static int psd_solve(Kernel *k, const double *rhs, double *y)
{
    if (k->m == 1) {        /* one row (a single persistent contact): dense_psd_solve's Cholesky
                             * of the scalar S, the same operations without its loops */
        double s = k->Sm[0];
        if (s > 0.0) {
            double d = sqrt(s);
            if (d * d > RANK_RTOL * 1e2 * d * d) {
                double x = rhs[0] / d;
                y[0] = x / d;
                return OK;
            }
        }
    }
    double ops = 0.0;
    int rc = dense_psd_solve_env(k->Sm, k->env, k->Vm, k->ev, k->m, (syev_fn)k->syev, k->work,
                                 k->lwork, RANK_RTOL, 1, rhs, y, &ops);
    return rc == OK ? work_ops(&k->work_budget, ops) : rc;
}

/* the multipliers y (nrhs columns of m) of a solve with contacts re-split: the contacts' part
 * of minimum norm, the loops' cut joints taking up the rest (dense_contact_split; as the
 * Python loop's fmu_mb.linalg.contact_split, where every joint is a row) */
static int split_contacts(Kernel *k, int nrhs, double *y)
{
    if (k->msplit <= 0 || k->m <= k->msplit)
        return OK;
    double ops = 0.0;
    int rc = dense_contact_split(k->Dq, k->m, k->msplit, k->n, RANK_RTOL, nrhs, y, &ops);
    return rc == OK ? work_ops(&k->work_budget, ops) : rc;
}

/* The sliding friction (native/friction.h; as spatial_kernel.c's slide_solve), after rows()
 * and schur() with k->rr the right-hand side of S lam = rr: the sliding contacts' forces
 * k_j lam_n,j (k_j = mu Dt_j' s_j, s_j the slip direction of v_t at the kinematics, or with
 * `fixed` the recorded s0) with responses y_j = Mbar^-1 k_j, lam0 = S^+ rr,
 * l_j = S^+ Dq y_j, c = (I - E L)^-1 E lam0, lam = lam0 + L c, out = base0 - W lam + Y c
 * (accelerations: base0 = qdd0; an impact: base0 = qd-, rr = Dq qd- - b). ERR_PAINLEVE
 * (I - E L singular): no consistent contact force. */
static int slide_solve(Kernel *k, const double *base0, int fixed, double *out)
{
    int m = k->m, n = k->n, p = k->nsl, rc;
    size_t nn = (size_t)(n > 0 ? n : 1), mm = (size_t)(m > 0 ? m : 1), np = (size_t)p;
    double *buf = malloc(sizeof(double) * (np * nn + nn + 2 * (np + 1) * mm + 2 * np * np
                                           + 2 * np));
    if (!buf)
        return ERR_ARGS;
    double *Y = buf, *kj = Y + np * nn, *rhs = kj + nn, *sol = rhs + (np + 1) * mm;
    double *S = sol + (np + 1) * mm, *Sw = S + np * np, *e0 = Sw + np * np, *c = e0 + np;
    for (int j = 0; j < p; j++) {
        int row = k->slr[j];
        const int *R = k->ri + RI * row;
        double vt = slip_row(k, R[0], R[1], R[2], k->rd + RD * row, NULL, kj, NULL), s;
        if (fixed)
            vt = 0.0;
        fr_slip_direction(1, &vt, k->sls0 + j, &s);
        for (int i = 0; i < n; i++)
            kj[i] *= k->slmu[j] * s;
        if ((rc = solve_tau(k, kj, 0, Y + (size_t)j * nn)) != OK)
            goto done;
    }
    memcpy(rhs, k->rr, sizeof(double) * (size_t)m);
    for (int j = 0; j < p; j++) {
        const double *yj = Y + (size_t)j * nn;
        double *rj = rhs + (size_t)(j + 1) * mm;
        for (int r = 0; r < m; r++) {
            const double *Dr = k->Dq + (size_t)r * n;
            double acc = 0.0;
            for (int i = 0; i < n; i++)
                acc += Dr[i] * yj[i];
            rj[r] = acc;
        }
    }
    /* (S is written on its envelope only: schur leaves the entries before it stale) */
    double ops = 0.0;
    rc = dense_psd_solve_env(k->Sm, k->env, k->Vm, k->ev, m, (syev_fn)k->syev, k->work,
                             k->lwork, RANK_RTOL, p + 1, rhs, sol, &ops);
    if (rc == OK)
        rc = work_ops(&k->work_budget, ops);
    if (rc == OK)
        rc = split_contacts(k, p + 1, sol);
    if (rc != OK)
        goto done;
    for (int j = 0; j < p; j++) {                     /* I - E L */
        const double *lj = sol + (size_t)(j + 1) * mm;
        for (int a = 0; a < p; a++)
            S[a * p + j] = (a == j ? 1.0 : 0.0) - lj[k->slr[a]];
    }
    for (int a = 0; a < p; a++)
        e0[a] = sol[k->slr[a]];
    if (fr_solve(p, S, Sw, e0, c) != 0) {
        rc = ERR_PAINLEVE;
        goto done;
    }
    for (int r = 0; r < m; r++) {
        double acc = sol[r];
        for (int j = 0; j < p; j++)
            acc += sol[(size_t)(j + 1) * mm + r] * c[j];
        k->lam[r] = acc;
    }
    for (int i = 0; i < n; i++) {
        double acc = base0[i];
        for (int r = 0; r < m; r++)
            acc -= k->Wt[(size_t)r * n + i] * k->lam[r];
        for (int j = 0; j < p; j++)
            acc += Y[(size_t)j * nn + i] * c[j];
        out[i] = acc;
    }
done:
    free(buf);
    return rc;
}

/* after kinematics and forces: the unconstrained qdd (k->qdd0), the loop rows and their
 * right-hand sides k->rr (with Baumgarte terms in mode 2) at the velocities qd */
static int loop_rhs(Kernel *k, const double *qd)
{
    int rc;
    if ((rc = articulate(k)) != OK)
        return rc;
    if ((rc = solve_tau(k, k->jtau, 1, k->qdd0)) != OK)
        return rc;
    body_acc(k, NULL, k->a0);
    if ((rc = rows(k, 1)) != OK)
        return rc;
    for (int r = 0; r < k->m; r++) {
        double b = -k->conv[r];
        if (k->mode == 2)
            b -= 2.0 * k->alpha * dq_dot(k, r, qd) + k->beta * k->beta * k->phi[r];
        k->rr[r] = dq_dot(k, r, k->qdd0) - b;
    }
    return OK;
}

/* qdd with the loop rows, after kinematics and forces; lam in k->lam */
static int loop_accel(Kernel *k, const double *qd, double *qdd)
{
    int n = k->n, rc;
    if ((rc = loop_rhs(k, qd)) != OK || (rc = schur(k)) != OK)
        return rc;
    if (k->nsl > 0)
        return slide_solve(k, k->qdd0, 0, qdd);
    if ((rc = psd_solve(k, k->rr, k->lam)) != OK || (rc = split_contacts(k, 1, k->lam)) != OK)
        return rc;
    if (qdd != k->qdd0)
        memcpy(qdd, k->qdd0, sizeof(double) * n);
    add_wt(k, k->lam, -1.0, qdd, 0);
    return OK;
}

#include "dense_qr.h"                          /* the loops' QR solve (model exchange) */

/* qdd (n) at time t with the loop rows solved by dense_qr_accelerations (Mbar^-1 from n
 * bias-free articulated passes, the rows' condition not squared): model exchange near a dead
 * point, where the Schur solve's cut-off drops rows that have become nearly dependent
 * (engine_me.h). *rank: the rows kept (m without rows). Sliding friction: the kernel's own
 * solve (loop_accel). */
int mbk_accelerations_qr(Kernel *k, double t, const double *q, const double *qd,
                         const double *u, double *qdd, int *rank)
{
    int m = k->m, n = k->n, rc;
    *rank = m;
    if (k->nd)
        prescribe(k, t, &q, &qd);
    kinematics(k, q, qd);
    if ((rc = forces(k, u)) != OK)
        return rc;
    if (m == 0)
        return aba(k, qdd);
    if (k->nsl > 0)
        return loop_accel(k, qd, qdd);
    if ((rc = loop_rhs(k, qd)) != OK)
        return rc;
    size_t nn = (size_t)n;
    double *Minv = malloc(sizeof(double) * (nn * nn + nn + 1)), *e = Minv + nn * nn;
    if (!Minv)
        return ERR_ARGS;
    memset(e, 0, sizeof(double) * nn);
    for (int j = 0; j < n && rc == OK; j++) {   /* row j of the symmetric Mbar^-1 */
        e[j] = 1.0;
        rc = solve_tau(k, e, 0, Minv + (size_t)j * nn);
        e[j] = 0.0;
    }
    if (rc == OK)
        rc = dense_qr_accelerations(n, m, Minv, k->Dq, k->rr, k->qdd0, QR_RANK_RTOL, qdd,
                                    rank);
    free(Minv);
    return rc;
}

/* kinetic energy of the velocities v at q (the bodies' centres of mass and rotations) */
static double kinetic(Kernel *k, const double *q, const double *v)
{
    kinematics(k, q, v);
    double e = 0.0;
    for (int b = 0; b < k->nb; b++) {
        const double *xd = k->xd + 3 * b;
        e += k->mass[b] * (xd[0] * xd[0] + xd[1] * xd[1]) + k->inertia[b] * xd[2] * xd[2];
    }
    return 0.5 * e;
}

/* The kinetic energy that the velocity projection at PROJECTION_RTOL (correction dqd of qd,
 * rhs = Dq qd) removes beyond what a projection at the multipliers' smooth cut-off RANK_RTOL
 * removes, given back to the projected velocity as the factor gain (>= 1) on it, as
 * fmu_mb.dynamics.formulations._minimal.kept_energy. Near a singular pose the multipliers
 * cut off the rows that have become nearly dependent, so the accelerations let qd leave
 * Dq qd = 0 along them, although the rows' forces, which do no work, would have kept it
 * there; the projection puts it back and removes v^2 / (2 w) of kinetic energy with it (w the
 * small eigenvalue; IFToMM A02 N = 10 lost 5e-8 of its energy at one crossing, 9e-6 rad of
 * crank phase after 20 s). Where no eigenvalue of S is below the cut-off both solves are the
 * same Cholesky solve, bit for bit, and gain is 1. Called after the projection's last solve
 * at q (rows and W current); leaves the kinematics at q. */
static int kept_energy(Kernel *k, const double *q, const double *qd, const double *rhs,
                       const double *dqd, double *gain)
{
    int m = k->m, n = k->n, rc;
    double ops = 0.0, *y = k->rr, *dqs = k->wacc + 2 * n, *v = k->qtmp;
    if ((rc = schur(k)) != OK ||        /* S again: the solve at PROJECTION_RTOL may have used it */
        (rc = dense_psd_solve_env(k->Sm, k->env, k->Vm, k->ev, m, (syev_fn)k->syev, k->work,
                                  k->lwork, RANK_RTOL, 1, rhs, y, &ops)) != OK ||
        (rc = work_ops(&k->work_budget, ops)) != OK)
        return rc;
    add_wt(k, y, 1.0, dqs, 1);
    int same = 1;
    for (int j = 0; j < n && same; j++)
        same = dqs[j] == dqd[j];
    if (same)
        return OK;
    for (int j = 0; j < n; j++)
        v[j] = qd[j] - dqs[j];
    double es = kinetic(k, q, v);
    for (int j = 0; j < n; j++)
        v[j] = qd[j] - dqd[j];
    double eh = kinetic(k, q, v);
    if (es > eh && eh > 0.0 && isfinite(es))
        *gain = sqrt(es / eh);
    return OK;
}

/* Project y = (q, qd) at time t onto the rows (the prescribed coordinates set to s(t),
 * s'(t); Newton with least kinetic-energy steps of the others, then qd onto Dq qd = 0), as
 * fmu_mb.dynamics.formulations._minimal.project. The projections are linear solves whose only
 * error is rounding, so S is cut off at PROJECTION_RTOL, not at the multipliers' RANK_RTOL: at
 * a singular pose (the N-four-bar's collinear links) the rows along which S is small still
 * fix q and qd up to the last few ulps, and cutting them left q and qd free there. Once the
 * residual is within tolerance, one solve gives both the Newton correction of q and the
 * velocity projection; the correction is applied and Newton goes on while it is larger than
 * the tolerance (dense_projection_settled), so that qd is projected at the converged q. */
static int project(Kernel *k, double t, double *y)
{
    int m = k->m, n = k->n, rc;
    if (k->nd)
        prescribe_state(k, t, y);
    if (m == 0)
        return OK;
    double *q = y, *qd = y + n, *zero = k->qtmp, *rhs = k->rr, *sol = k->rr + 2 * m;
    for (int j = 0; j < n; j++)
        zero[j] = 0.0;
    double prev = INFINITY, prev_step = INFINITY;
    for (int it = 0; it < 12; it++) {
        if ((rc = charge(k)) != OK)
            return rc;
        kinematics(k, q, zero);
        if ((rc = rows(k, 0)) != OK)
            return rc;
        double err = 0.0, scale = 0.0, step = 0.0;
        for (int r = 0; r < m; r++)
            err = fmax(err, fabs(k->phi[r]));
        for (int i = 0; i < 3 * k->nb; i++)
            scale = fmax(scale, fabs(k->x[i]));
        scale += 1.0;
        int done = dense_projection_done(it, err, prev, k->proj_tol, scale, 11);
        if (done < 0)
            return ERR_DRIFT;
        if ((rc = articulate(k)) != OK || (rc = schur(k)) != OK)
            return rc;
        memcpy(rhs, k->phi, sizeof(double) * m);
        for (int r = 0; done > 0 && r < m; r++)        /* and Dq qd */
            rhs[m + r] = dq_dot(k, r, qd);
        double ops = 0.0;
        if ((rc = dense_psd_solve_env(k->Sm, k->env, k->Vm, k->ev, m, (syev_fn)k->syev, k->work,
                                      k->lwork, PROJECTION_RTOL, done > 0 ? 2 : 1, rhs, sol,
                                      &ops)) != OK || (rc = work_ops(&k->work_budget, ops)) != OK)
            return rc;
        double *dq = k->wacc, *dqd = k->wacc + n;
        add_wt(k, sol, 1.0, dq, 1);            /* the Newton correction W sol */
        for (int j = 0; j < n; j++)
            step = fmax(step, fabs(dq[j]));
        if (done > 0 && dense_projection_settled(it, step, prev_step, k->proj_tol, scale, 11)) {
            /* a correction within tolerance is applied (it takes the residual to rounding;
             * Dq moves by less than the tolerance); a stalled one is not, its residual is
             * unknown. qd goes onto Dq qd = 0 with this Dq. */
            double small = step <= k->proj_tol * scale ? 1.0 : 0.0, gain = 1.0;
            add_wt(k, sol + m, 1.0, dqd, 1);
            if (k->nd == 0 && (rc = kept_energy(k, q, qd, rhs + m, dqd, &gain)) != OK)
                return rc;
            for (int j = 0; j < n; j++) {
                q[j] -= small * dq[j];
                qd[j] = gain * (qd[j] - dqd[j]);
            }
            return OK;
        }
        for (int j = 0; j < n; j++)
            q[j] -= dq[j];
        prev = err;
        prev_step = step;
    }
    return ERR_DRIFT;                 /* not reached: iteration 11 settles or drifts */
}

/* phi (m) of the rows at q (the gaps of a kernel made with every contact's row: the event
 * loop's gap values), q as given */
int mbk_row_values(Kernel *k, const double *q, double *phi)
{
    double *zero = k->qtmp;
    for (int j = 0; j < k->n; j++)
        zero[j] = 0.0;
    kinematics(k, q, zero);
    int rc = rows(k, 0);
    if (rc == OK)
        memcpy(phi, k->phi, sizeof(double) * k->m);
    return rc;
}

/* phi (m) of the rows at q and their Jacobian Dq (m x n, row by row) in the tree coordinates
 * (one kinematics pass, rates zero); ERR_ARGS when a row is not a closed loop's position row
 * (R_PX, R_PY, R_ANG, R_PRJ, R_DST): a sticking contact's or joint's rows are velocity rows.
 * The pass's positions and Dq are kept for the next acceleration solve if it is at this q
 * (accel: then only the velocity terms of the kinematics and the rows' conv are computed,
 * the same numbers as from a new pass) */
int mbk_loop_rows(Kernel *k, const double *q, double *phi, double *Dq)
{
    for (int r = 0; r < k->m; r++)
        if (k->ri[RI * r] < R_PX || k->ri[RI * r] > R_DST)
            return ERR_ARGS;
    double *zero = k->qtmp;
    for (int j = 0; j < k->n; j++)
        zero[j] = 0.0;
    kinematics(k, q, zero);
    int rc = rows(k, 0);
    if (rc == OK) {
        memcpy(phi, k->phi, sizeof(double) * (size_t)k->m);
        memcpy(Dq, k->Dq, sizeof(double) * (size_t)k->m * (size_t)k->n);
        memcpy(k->kq, q, sizeof(double) * (size_t)k->n);
        k->kq_ok = 1;
    }
    return rc;
}

/* y = (q, qd) projected in place at time t (tol as Settings.projection_tol) */
int mbk_project(Kernel *k, double t, double *y)
{
    return project(k, t, y);
}

/* multipliers of the loop rows, then of the drives, from the last mbk_accelerations */
void mbk_multipliers(Kernel *k, double *lam)
{
    if (k->m > 0)          /* (k->lam, k->lamd are NULL when empty: memcpy's NULL is UB) */
        memcpy(lam, k->lam, sizeof(double) * k->m);
    if (k->nd > 0)
        memcpy(lam + k->m, k->lamd, sizeof(double) * k->nd);
}

/* the drives' multipliers after an acceleration solve (body accelerations in k->xdd):
 * F_b = M_b a_b - f_b + sum over the children X' F_c is the force the joint of b passes
 * into b's subtree, S'F the generalised force (Mbar qdd - fbar)_j, and the row q_j - s(t)
 * of Mbar qdd + Dq' lam = fbar gives lam_j = -S'F - (Dq_loops' lam)_j */
static void drive_multipliers(Kernel *k)
{
    int nb = k->nb, n = k->n;
    double *F = k->pA, *a = k->xdd;
    for (int b = 0; b <= nb; b++) {
        double ms = b < nb ? k->mass[b] : 0.0, js = b < nb ? k->inertia[b] : 0.0;
        F[3 * b] = ms * a[3 * b] - k->f[3 * b];
        F[3 * b + 1] = ms * a[3 * b + 1] - k->f[3 * b + 1];
        F[3 * b + 2] = js * a[3 * b + 2] - k->f[3 * b + 2];
    }
    for (int i = nb - 1; i >= 0; i--) {
        const int *J = k->ji + JI * i;
        int b = J[0], type = J[1], p = J[2], ic = J[4];
        if (type == J_FREE)
            continue;
        const double *Fb = F + 3 * b;
        if ((type == J_REV || type == J_PRI) && prescribed(k, ic)) {
            const double *S = k->S + 9 * b;
            double tau = S[0] * Fb[0] + S[1] * Fb[1] + S[2] * Fb[2];
            for (int r = 0; r < k->m; r++)
                tau += k->Dq[(size_t)r * n + ic] * k->lam[r];
            k->lamd[k->presc[ic]] = -tau;
        }
        if (p == nb)
            continue;
        double dx = k->dd[2 * b], dy = k->dd[2 * b + 1];
        double *Fp = F + 3 * p;
        Fp[0] += Fb[0];
        Fp[1] += Fb[1];
        Fp[2] += -dy * Fb[0] + dx * Fb[1] + Fb[2];
    }
}

static int accel(Kernel *k, double t, const double *q, const double *qd, const double *u,
                 double *qdd)
{
    if (k->nd)
        prescribe(k, t, &q, &qd);
    /* the positions of the last mbk_loop_rows at this q, when nothing has changed them since */
    int kept = k->kq_ok && k->nd == 0 && k->m > 0 && k->nsl == 0 && !k->rows_dirty &&
               memcmp(q, k->kq, sizeof(double) * (size_t)k->n) == 0;
    k->kq_ok = 0;
    if (kept)
        kin_rates(k, qd);
    else
        kinematics(k, q, qd);
    int rc = forces(k, u);
    if (rc != OK)
        return rc;
    if (k->m > 0) {
        k->keep_dq = kept;
        rc = loop_accel(k, qd, qdd);
        k->keep_dq = 0;
        return rc;
    }
    return aba(k, qdd);
}

/* qdd (n,) at time t and, when x is not NULL, x, xd, xdd (3 nb each) of the bodies and
 * the drives' multipliers */
int mbk_accelerations(Kernel *k, double t, const double *q, const double *qd,
                      const double *u, double *qdd, double *x, double *xd, double *xdd)
{
    int rc = accel(k, t, q, qd, u, qdd);
    if (rc != OK)
        return rc;
    if (x) {
        if (k->m > 0)
            body_acc(k, qdd, k->xdd);
        if (k->nd)
            drive_multipliers(k);
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

/* ------------------------------------------------------------------ integrators
 * rk4, dopri5 and dop853 with scipy's step-size control: native/integrators.h, shared with
 * the spatial kernel; here the right-hand side with the inputs bound and the drift control
 * after each step (projection of the loop rows). */
#include "integrators.h"

int mbk_set_tableau(int which, int s, int order, const double *A, const double *B,
                    const double *C, const double *E, const double *E3, const double *E5)
{
    return integ_set_tableau(which, s, order, A, B, C, E, E3, E5);
}

typedef struct {
    Kernel *k;
    const double *u;
} Rhs;

static int rhs(void *ctx, double t, const double *y, double *dy)
{
    Kernel *k = ((Rhs *)ctx)->k;
    int n = k->n;
    if (charge(k) != OK)
        return ERR_WORK;
    memcpy(dy, y + n, sizeof(double) * n);
    int rc = accel(k, t, y, y + n, ((Rhs *)ctx)->u, dy + n);
    if (rc != OK)
        return rc;
    for (int d = 0; d < k->nd; d++)           /* q_j' = s'(t) */
        dy[k->di[DI * d]] = k->qde[k->di[DI * d]];
    for (int i = 0; i < 2 * n; i++)
        if (!isfinite(dy[i]))
            return ERR_NONFINITE;
    return OK;
}

static int post_project(void *ctx, double t, double *y, int *moved)
{
    *moved = 1;
    return project(((Rhs *)ctx)->k, t, y);
}

static Integ integ(Kernel *k, Rhs *ctx, int drift_control)
{
    Integ I = {2 * k->n, k->K, k->ytmp, k->ynew, k->fy, k->scale, k->err, rhs,
               drift_control && k->m > 0 && k->mode == 1 ? post_project : NULL, ctx, 0, NULL,
               NULL};
    return I;
}

/*
 * Integrate y = (q, qd) from t to t_end with inputs u held constant (integ_advance):
 * par = [t, t_end, h (in/out), rtol, atol, max_step, step, t_fail (out), max_steps (0: no
 * limit), fsal (in/out)]; fsal 0: y holds (q, qd) only; 1 or 2: y holds (q, qd, f) with f
 * (2 n) = f(t, y) on entry when 2, and 2 on return when f = f(t_end, y) (Integ.fsal)
 */
int mbk_advance(Kernel *k, int method, double *par, double *y, const double *u, int *nfev)
{
    Rhs ctx = {k, u};
    Integ I = integ(k, &ctx, 1);
    I.max_steps = (long)par[8];
    int fs = par[9] == 2.0 ? 2 : 1;
    if (par[9] != 0.0) {
        I.fsal = y + 2 * k->n;
        I.fsal_state = &fs;
    }
    int rc = integ_advance(&I, method, par[0], par[1], y, &par[2], par[3], par[4], par[5],
                           par[6], nfev, &par[7]);
    if (rc == OK && k->nd) {            /* the prescribed coordinates exactly at t_end */
        prescribe_state(k, par[1], y);
        fs = 1;                         /* (f was of the integrated y) */
    }
    if (par[9] != 0.0)
        par[9] = fs;
    return rc;
}

/* One accepted dopri5 (method 0) or dop853 (1) step for an event loop that keeps the dense
 * output and the drift control itself:
 * par = [t (in/out), t_end, h (in: hint or 0, out: next step size), rtol, atol, max_step,
 *        h_taken (out)]; y (2 n) the state at t, in: f(t, y) in K[0..2n) when have_f;
 * out: y the new (unprojected) state, K (s + 1 rows of 2 n) the stages, K[s] = f(t_new, y). */
int mbk_step(Kernel *k, int method, double *par, double *y, const double *u, int have_f,
             double *Kout, int *nfev)
{
    Rhs ctx = {k, u};
    Integ I = integ(k, &ctx, 0);
    int rc = integ_one_step(&I, method, par, y, have_f, Kout, nfev);
    if (rc == OK && k->nd)
        prescribe_state(k, par[0], y);
    return rc;
}

/* ------------------------------------------------------------------ contact events
 * The contact event loop in C (impacts, persistent contacts, event location on the dense
 * output): native/events.c, API in its header comment. */
#include "events.c"
