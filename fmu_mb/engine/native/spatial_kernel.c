/*
 * fmu_mb spatial native kernel: forward dynamics of a spatial tree in the joint coordinates
 * of fmu_mb.mechanics.spatial.tree by the articulated-body algorithm (O(N) in the number of
 * bodies), with force elements, the cut joints that close loops as multiplier rows, and the
 * explicit integrators rk4, dopri5 and dop853, all in C (loaded by
 * fmu_mb/engine/spatial_kernel.py).
 *
 * Tree joint kinds (each row places body Y from the placed body X; X is the joint's parent
 * when the row is forward, its child when reversed):
 *   revolute  q = angle, ω_rel = σ a q'          (a = z of X's joint frame, global; σ = -1
 *                                                 for a reversed row)
 *   prismatic q = position, slide σ a q
 *   spherical q = p (Euler parameters of the child joint frame in the parent joint frame);
 *             forward: velocity ν = w = 2 E(p) p' (parent joint frame), ω_rel = R_X w;
 *             reversed: ν = 2 G(p) p' (child joint frame = X's), ω_rel = -R_X ν
 *   weld      no coordinate
 *   free      a floating root: q = (r, p) of the body, velocity ν = (ω = 2 E(p) p', r')
 * The velocity coordinates ν (nv of them) are q' except for the Euler-parameter sets.
 * Bodies: pose (r, A) at the centre of mass, twist V = (ω, v) and accelerations (α, a) in
 * global axes at the centre of mass. With P_c the joint point on Y, h = r_Y - P_c and
 * d = r_Y - r_X:
 *   V_Y = X(d) V_X + S ν,       X(d) = [[I, 0], [-d~, I]]
 *   A_Y = X(d) A_X + S ν' + c,  c_w = ω_X x ω_rel,
 *   c_v = ω_X x (ω_X x (P_c - r_X)) + 2 ω_X x u s' + c_w x h + ω_Y x (ω_Y x h)
 * with S columns (e, e x h) for a rotation axis e and (0, u) for a slide. Newton-Euler at the
 * centre of mass: wrench (n, f) = I_b A_b + (ω x J ω, 0) with I_b = diag(J_global, m I).
 * Articulated-body algorithm (Featherstone): `articulate` (positions only): IA = I_b; leaves
 * to root U = IA S, D = S'U, Ia = IA - U D^-1 U', IA_X += X'Ia X; `solve` (a generalised
 * force tau on ν, with or without the bias): pA = (ω x J ω, 0) - (applied wrench),
 * uu = tau - S'pA, pa = pA + Ia c + U D^-1 uu, pA_X += X'pa; root to leaves: a' = X A_X + c,
 * ν' = D^-1 (uu - U'a'), A_Y = a' + S ν'. Euler parameters: p'' = 1/2 E(p')' w + 1/2 E(p)' w'
 * (G for a reversed spherical row).
 *
 * Force elements (fmu_mb.mechanics.spatial.elements, same laws and signs): TSDA
 * s = k (l - l0) + c l' + h along the line of its points; RSDA on a revolute joint
 * s = k wrap(theta - theta0) + c theta' + h; bushing s = K (e - e0) + C e'; force and torque
 * (value + h) along a direction in global or body axes. A scalar elongation e with twist
 * Jacobian j (e' = j . (V_p, V_c)) and force s applies the wrenches -s j to its two bodies.
 *
 * Closed loops (seed 000 ch.2 eq. 20 in the tree coordinates, as the planar kernel.c): the
 * cut joints' rows phi (fmu_mb.mechanics.spatial.constraints: spherical, revolute,
 * universal, cylindrical, prismatic, weld, distance) with twist Jacobians j and velocity
 * products gamma (phi'' = j . A + gamma); Dv = dphi'/dν by the path of each body to the
 * ground; W = Mbar^-1 Dv' by one bias-free `solve` per row; S = Dv W;
 * S lam = phi''(free motion) (+ Baumgarte terms), ν' = ν0' - W lam. S is solved by Cholesky,
 * or a truncated eigen-decomposition at singular poses and for redundant rows (Bricard), as
 * fmu_mb.linalg.schur_solve. Drift control after each accepted step (projection): Newton on
 * phi with least kinetic-energy steps Δν = -W S^+ phi, then ν onto Dv ν = 0; the
 * Euler-parameter sets are normalised (|p| = 1, p . p' = 0).
 *
 * Drives (sk_set_drives): a drive prescribes the coordinate of a revolute (angle of the child
 * frame's x about the parent frame's z) or prismatic (z_p . d) joint, q(x) = s(t), with s a
 * law given as data (polynomial c0 + c1 t + ... or harmonic offset + A sin(w t + phase), as
 * the planar kernel). Its row phi = q - s(t) (angle wrapped into (-pi, pi]), phi' = j . V -
 * s'(t), phi'' = j . A + gamma - s''(t) joins the cut joints' rows after them: the same Schur
 * complement, drift projection and multiplier (the drive's effort is -lam, as in tmt, whose
 * drive rows are the same equations). The time of the rows is k->t (sk_set_time; the
 * integrators set it at each stage).
 *
 * Couplers (sk_set_couplers): the row q_a(x) - ratio q_b(x) - offset of two joint coordinates
 * (a URDF mimic joint; the residual of revolute ones wrapped into (-pi, pi]), after the
 * drives' rows; a second pair of bodies (the master joint's) in the Row.
 *
 * Persistent contacts (sk_set_contacts, sk_set_active): the gap of an active contact is one
 * more row, gap = 0 (fmu_mb.mechanics.spatial.contacts' gaps: a point on a plane, the
 * distance of two points, a revolute or prismatic joint's coordinate against a bound, times
 * the contact's side); its multiplier is the contact's (the force is -lam). Event location
 * and the impacts: the event loop of native/event_loop.h with this kernel's operations
 * (native/spatial_events.c, included at the end).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { K_WELD = 0, K_REV = 1, K_PRI = 2, K_SPH = 3, K_FREE = 4 };
enum { OK = 0, ERR_NONFINITE = 1, ERR_SINGULAR = 2, ERR_STEP = 3, ERR_ARGS = 5, ERR_DRIFT = 6,
       ERR_WORK = 12 /* the work budget (sk_set_budget) used up */,
       ERR_PAINLEVE = 13 /* a frictional contact without a consistent state */ };
#include "work.h"                              /* the work budget of one call */
enum { E_TSDA = 0, E_RSDA = 1, E_FORCE = 2, E_TORQUE = 3, E_BUSH = 4 };
enum { C_SPH = 0, C_REV = 1, C_UNI = 2, C_CYL = 3, C_PRI = 4, C_WELD = 5, C_DST = 6 };

#define RI 6          /* ints per tree row: kind, X (nb = ground), Y, q offset, ν offset, reversed */
#define RD 24         /* doubles per tree row: s_X(3), s_Y(3), F_X(9), F_Y(9) (row-major) */
#define EI 5          /* ints per element: type, body a, body b, input index (-1: none), body axes */
#define ED 108        /* doubles per element: s_a(3), s_b(3), F_a(9), F_b(9), k or value, c, e0,
                         direction(3), K(36), C(36), e0(6); a TSDA's input gain in K's first
                         slot (1; -1 for a hydraulic cylinder, whose force F = h = -s) */
#define CI 3          /* ints per cut joint: kind, parent, child */
#define CD 25         /* doubles per cut joint: s_p(3), s_c(3), F_p(9), F_c(9), length */
#define MAXS 16

#include "dense.h"                             /* Cholesky / eigen solve of S, shared */
#include "laws.h"
#include "friction.h"                          /* the friction law, shared */
#include "pairs.h"                             /* shape-pair contacts (kind 6), shared */

typedef struct {               /* a scalar of two bodies p, c: value, twist Jacobian, gamma */
    double val, j[12], gam;
    int p, c;
    double rt;                 /* the rate the row must have: s'(t) of a drive, 0 otherwise */
    int p2, c2;                /* a coupler's second pair (its master joint's bodies; p2 = -1:
                                  none) with its twist Jacobian j2 */
    double j2[12];
} Row;

#define DRI 6         /* ints per drive: kind (1 revolute, 2 prismatic), parent, child, law
                         (1 polynomial, 2 harmonic), offset in dp, number of values */
#define DRD 24        /* doubles per drive: s_p(3), s_c(3), F_p(9), F_c(9) (row-major) */
#define CPI 6         /* ints per coupler: kind (1 revolute, 2 prismatic), parent, child of its
                         joint, then of its master joint */
#define CPD 50        /* doubles per coupler: its joint's s_p, s_c, F_p, F_c (DRD), its master's,
                         ratio, offset */
#define KI 3          /* ints per contact: kind (1 point-plane, 2 point-point, 3 revolute
                         limit, 4 prismatic limit, 5 rim on a plane, 6 shape pair: p the
                         body of shape a, c that of shape b), body p, body c */
#define KD 36         /* doubles per contact: s_p(3), s_c(3), F_p(9), F_c(9), normal(3) (in
                         p's axes), offset, side, tangent basis t1(3), t2(3) (p's axes) and
                         Coulomb's mu of a point-plane contact (fmu_mb.mechanics.friction);
                         a shape pair: s_p, s_c, F_p, F_c the poses of shapes a and b in
                         their bodies' axes, size a (3), offset 0, side 1, size b (3), kind a,
                         kind b, feature id (native/pairs.h), mu */

typedef struct {
    int nb, n, nv;
    int *ri;
    double *rd, *mass, *J;            /* J: (nb, 9) body axes, row-major */
    double g[3];
    int *entry;                       /* body -> its tree row */
    double *rq;                       /* per tree row: f_X(4), f_Y(4), sign (pose outputs) */
    double *arm;                      /* NULL, or per tree row the armature added to D of a
                                         one-coordinate joint (sk_set_armature) */
    /* elements */
    int ne, nu;
    int *ei;
    double *ed, *u;
    double *eout;                     /* NULL, or 8 outputs per element (sk_element_outputs) */
    /* drives (sk_set_drives): their rows follow the mc rows of the cut joints */
    int nd, mc;
    int *di;
    double *dd, *dp;
    /* couplers (sk_set_couplers): q_a - ratio q_b - offset = 0, rows after the drives' */
    int ncp;
    int *cpi;
    double *cpd;
    /* contacts (sk_set_contacts) and the active ones (sk_set_active): rows after the drives */
    int nk, na;
    int *ki, *act;
    double *kd;
    /* friction (sk_set_friction, native/friction.h): per contact stick / slide flags (used for
     * the active ones), the recorded slip directions s0 (nk, 2); a sticking active contact adds
     * its two tangential rows after the active contacts' gap rows (nst of them), a sliding one
     * the force mu f_n s along its slip direction (nsl of them) */
    unsigned char *stick, *slide;
    double *s0;
    int nst, nsl;
    /* joint Coulomb friction (sk_set_joint_friction): njr sticking joints, each a row on its
     * coordinate's rate after the sticking contacts' rows (jri (njr, 3): kind 1 revolute or
     * 2 prismatic, parent, child; jrd (njr, DRD) its points and frames), and generalised
     * forces on the velocity coordinates (jtau (nv): the slipping joints' -F_c s0; NULL:
     * none) added to the applied forces of every solve */
    int njr;
    int *jri;
    double *jrd, *jtau;
    /* cut joints and their rows */
    int nc, m, mcap;                  /* mcap: rows the buffers hold */
    int *ci;
    double *cd;
    Row *rows;
    double *Dv, *Wt, *Sm, *Vm, *ev, *lam, *rr, *work;
    int mode;                         /* 0 none, 1 projection, 2 Baumgarte */
    double alpha, beta, proj_tol, t;
    /* workspace per body (ground = nb) */
    double *r, *A, *w, *v, *S, *c, *IA, *Ia, *pA, *U, *Dinv, *uu, *acc, *fw, *Jg;
    int *dof, *live, *moving;
    double *nud, *nud0, *nuv, *qtmp;
    double *K, *ytmp, *ynew, *fy, *scale, *err;
    Work work_budget;      /* of one call (sk_set_budget; native/work.h) */
} SK;

static int charge(SK *k) { return work_charge(&k->work_budget); }

/* The work budget of the calls that follow (0: none), the spent work reset; each right-hand
 * side and each projection iteration costs `unit` (native/work.h) */
void sk_set_budget(SK *k, double budget, double unit)
{
    work_set(&k->work_budget, budget, unit);
}

double sk_spent(const SK *k) { return k->work_budget.spent; }

void sk_free(SK *k)
{
    if (!k)
        return;
    void *p[] = {k->ri, k->rd, k->rq, k->mass, k->J, k->entry, k->ei, k->ed, k->u, k->ci, k->cd,
                 k->rows, k->Dv, k->Wt, k->Sm, k->Vm, k->ev, k->lam, k->rr, k->work, k->r,
                 k->A, k->w, k->v, k->S, k->c, k->IA, k->Ia, k->pA, k->U, k->Dinv, k->uu,
                 k->acc, k->fw, k->Jg, k->dof, k->live, k->moving, k->nud, k->nud0, k->nuv, k->qtmp, k->K, k->ytmp,
                 k->ynew, k->fy, k->scale, k->err, k->di, k->dd, k->dp, k->ki, k->kd,
                 k->act, k->arm, k->stick, k->slide, k->s0, k->cpi, k->cpd,
                 k->jri, k->jrd, k->jtau};
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

static int cut_rows_of(int kind)
{
    static const int R[] = {3, 5, 4, 4, 5, 6, 1};
    return kind >= 0 && kind <= C_DST ? R[kind] : -1;
}

/* nb bodies, n coordinates q, nv velocity coordinates; tree rows (ri, rd); ne elements
 * (ei, ed) reading nu inputs; nc cut joints (ci, cd) */
SK *sk_create(int nb, int n, int nv, const int *ri, const double *rd, const double *mass,
              const double *J, double gx, double gy, double gz, int ne, int nu, const int *ei,
              const double *ed, int nc, const int *ci, const double *cd)
{
    SK *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->nb = nb;
    k->n = n;
    k->nv = nv;
    k->g[0] = gx;
    k->g[1] = gy;
    k->g[2] = gz;
    k->ne = ne;
    k->nu = nu;
    k->nc = nc;
    k->mode = 1;
    k->proj_tol = 1e-13;
    int m = 0;
    for (int i = 0; i < nc; i++) {
        int r = cut_rows_of(ci[CI * i]);
        if (r < 0) {
            free(k);
            return NULL;
        }
        m += r;
    }
    k->m = k->mc = k->mcap = m;
    size_t e = (size_t)(nb + 1), my = (size_t)(2 * n + 1), mm = (size_t)(m > 0 ? m : 1);
    size_t vv = (size_t)(nv > 0 ? nv : 1);
    k->ri = dup(ri, sizeof(int) * RI * nb);
    k->rd = dup(rd, sizeof(double) * RD * nb);
    k->mass = dup(mass, sizeof(double) * nb);
    k->J = dup(J, sizeof(double) * 9 * nb);
    k->entry = calloc(e, sizeof(int));
    k->ei = dup(ei, sizeof(int) * EI * ne);
    k->ed = dup(ed, sizeof(double) * ED * ne);
    k->u = calloc((size_t)(nu > 0 ? nu : 1), sizeof(double));
    k->ci = dup(ci, sizeof(int) * CI * nc);
    k->cd = dup(cd, sizeof(double) * CD * nc);
    k->rows = calloc(mm, sizeof(Row));
    k->Dv = calloc(mm * vv, sizeof(double));
    k->Wt = calloc(mm * vv, sizeof(double));
    k->Sm = calloc(mm * mm, sizeof(double));
    k->Vm = calloc(mm * mm, sizeof(double));
    k->ev = calloc(mm, sizeof(double));
    k->lam = calloc(mm, sizeof(double));
    k->rr = calloc(mm, sizeof(double));
    k->work = calloc(mm, sizeof(double));
    k->r = calloc(3 * e, sizeof(double));
    k->A = calloc(9 * e, sizeof(double));
    k->w = calloc(3 * e, sizeof(double));
    k->v = calloc(3 * e, sizeof(double));
    k->S = calloc(36 * e, sizeof(double));
    k->c = calloc(6 * e, sizeof(double));
    k->IA = calloc(36 * e, sizeof(double));
    k->Ia = calloc(36 * e, sizeof(double));
    k->pA = calloc(6 * e, sizeof(double));
    k->U = calloc(36 * e, sizeof(double));
    k->Dinv = calloc(36 * e, sizeof(double));
    k->uu = calloc(6 * e, sizeof(double));
    k->acc = calloc(6 * e, sizeof(double));
    k->fw = calloc(6 * e, sizeof(double));
    k->Jg = calloc(9 * e, sizeof(double));
    k->dof = calloc(e, sizeof(int));
    k->live = calloc(e, sizeof(int));
    k->moving = calloc(e, sizeof(int));
    k->nud = calloc(vv, sizeof(double));
    k->nud0 = calloc(vv, sizeof(double));
    k->nuv = calloc(vv, sizeof(double));
    k->qtmp = calloc(my, sizeof(double));
    k->K = calloc((MAXS + 2) * my, sizeof(double));
    k->ytmp = calloc(my, sizeof(double));
    k->ynew = calloc(my, sizeof(double));
    k->fy = calloc(my, sizeof(double));
    k->scale = calloc(my, sizeof(double));
    k->err = calloc(my, sizeof(double));
    if (!k->ri || !k->rd || !k->mass || !k->J || !k->entry || !k->ei || !k->ed || !k->u ||
        !k->ci || !k->cd || !k->rows || !k->Dv || !k->Wt || !k->Sm || !k->Vm || !k->ev ||
        !k->lam || !k->rr || !k->work || !k->r || !k->A || !k->w || !k->v || !k->S || !k->c ||
        !k->IA || !k->Ia || !k->pA || !k->U || !k->Dinv || !k->uu || !k->acc || !k->fw || !k->Jg ||
        !k->dof || !k->live || !k->moving || !k->nud || !k->nud0 || !k->nuv || !k->qtmp || !k->K || !k->ytmp ||
        !k->ynew || !k->fy || !k->scale || !k->err) {
        sk_free(k);
        return NULL;
    }
    for (int b = 0; b < nb; b++)
        k->entry[k->ri[RI * b + 2]] = b;
    for (int i = 0; i < 9; i += 4)
        k->A[9 * nb + i] = 1.0;                  /* the ground: A = I at the origin */
    return k;
}

/* the joint frames' Euler parameters and signs of the tree rows (fmu_mb.mechanics.spatial.tree
 * rows: f_X, f_Y, sign), for sk_kinematics; 9 doubles per row */
int sk_set_pose_data(SK *k, const double *rq)
{
    free(k->rq);
    k->rq = dup(rq, sizeof(double) * 9 * k->nb);
    return k->rq ? OK : ERR_ARGS;
}

/* the armature of the tree rows (nb doubles, >= 0; a row of a joint with one coordinate: the
 * reflected rotor inertia [kg.m2 or kg] added to the joint-space mass matrix's diagonal, D =
 * S' I^A S + armature in the articulated-body algorithm; other rows must hold 0); NULL: none */
int sk_set_armature(SK *k, const double *arm)
{
    free(k->arm);
    k->arm = NULL;
    if (!arm)
        return OK;
    for (int row = 0; row < k->nb; row++)
        if (!(arm[row] >= 0.0 && arm[row] < 1e300) ||
            (arm[row] > 0.0 && k->ri[RI * row] != 1 && k->ri[RI * row] != 2))
            return ERR_ARGS;                  /* revolute (1) and prismatic (2) rows only */
    k->arm = dup(arm, sizeof(double) * k->nb);
    return k->arm ? OK : ERR_ARGS;
}

void sk_set_inputs(SK *k, const double *u)
{
    if (k->nu > 0 && u)
        memcpy(k->u, u, sizeof(double) * k->nu);
}

void sk_set_stabilization(SK *k, int mode, double alpha, double beta, double proj_tol)
{
    k->mode = mode;
    k->alpha = alpha;
    k->beta = beta;
    k->proj_tol = proj_tol;
}

int sk_rows(SK *k) { return k->m; }

void sk_set_time(SK *k, double t) { k->t = t; }

/* the row buffers for m rows (cut joints and drives) */
static int alloc_rows(SK *k, int m)
{
    size_t mm = (size_t)(m > 0 ? m : 1), vv = (size_t)(k->nv > 0 ? k->nv : 1);
    void *p[] = {k->rows, k->Dv, k->Wt, k->Sm, k->Vm, k->ev, k->lam, k->rr, k->work};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
    k->rows = calloc(mm, sizeof(Row));
    k->Dv = calloc(mm * vv, sizeof(double));
    k->Wt = calloc(mm * vv, sizeof(double));
    k->Sm = calloc(mm * mm, sizeof(double));
    k->Vm = calloc(mm * mm, sizeof(double));
    k->ev = calloc(mm, sizeof(double));
    k->lam = calloc(mm, sizeof(double));
    k->rr = calloc(mm, sizeof(double));
    k->work = calloc(mm, sizeof(double));
    if (!k->rows || !k->Dv || !k->Wt || !k->Sm || !k->Vm || !k->ev || !k->lam || !k->rr ||
        !k->work)
        return ERR_ARGS;
    k->m = m;
    k->mcap = m;
    return OK;
}

/* nd drives: di (nd, DRI) = kind, parent, child (nb: ground), law, offset, count; dd (nd, DRD)
 * the joint points and frames; dp the laws' numbers (ndp). Replaces earlier drives. */
int sk_set_drives(SK *k, int nd, const int *di, const double *dd, int ndp, const double *dp)
{
    for (int d = 0; d < nd; d++) {
        const int *D = di + DRI * d;
        if ((D[0] != 1 && D[0] != 2) || D[1] < 0 || D[1] > k->nb || D[2] < 0 ||
            D[2] > k->nb || (D[3] != 1 && D[3] != 2) || D[4] < 0 || D[5] < 1 ||
            D[4] > ndp - D[5] || (D[3] == 2 && D[5] != 4))   /* (no overflow) */
            return ERR_ARGS;
    }
    free(k->di);
    free(k->dd);
    free(k->dp);
    k->nd = 0;
    k->di = dup(di, sizeof(int) * DRI * nd);
    k->dd = dup(dd, sizeof(double) * DRD * nd);
    k->dp = dup(dp, sizeof(double) * (ndp > 0 ? ndp : 1));
    if (!k->di || !k->dd || !k->dp)
        return ERR_ARGS;
    if (alloc_rows(k, k->mc + nd + k->ncp + k->na) != OK)
        return ERR_ARGS;
    k->nd = nd;
    return OK;
}

/* ncp couplers: ci (ncp, CPI) = kind, parent, child of the coupled joint and of its master
 * (nb: ground); cd (ncp, CPD) their points and frames, ratio, offset. Replaces earlier ones;
 * their rows follow the drives'. */
int sk_set_couplers(SK *k, int ncp, const int *ci, const double *cd)
{
    for (int i = 0; i < ncp; i++) {
        const int *C = ci + CPI * i;
        for (int h = 0; h < 2; h++)
            if ((C[3 * h] != 1 && C[3 * h] != 2) || C[3 * h + 1] < 0 || C[3 * h + 1] > k->nb ||
                C[3 * h + 2] < 0 || C[3 * h + 2] > k->nb)
                return ERR_ARGS;
    }
    free(k->cpi);
    free(k->cpd);
    k->ncp = 0;
    k->cpi = dup(ci, sizeof(int) * CPI * ncp);
    k->cpd = dup(cd, sizeof(double) * CPD * ncp);
    if (!k->cpi || !k->cpd || alloc_rows(k, k->mc + k->nd + ncp + k->na) != OK)
        return ERR_ARGS;
    k->ncp = ncp;
    return OK;
}

/* nk contacts: ki (nk, KI), kd (nk, KD) as fmu_mb.mechanics.spatial.contacts' gaps;
 * none active */
int sk_set_contacts(SK *k, int nk, const int *ki, const double *kd)
{
    for (int i = 0; i < nk; i++) {
        const int *K = ki + KI * i;
        if (K[0] < 1 || K[0] > 6 || K[1] < 0 || K[1] > k->nb || K[2] < 0 || K[2] > k->nb)
            return ERR_ARGS;
    }
    free(k->ki);
    free(k->kd);
    free(k->act);
    free(k->stick);
    free(k->slide);
    free(k->s0);
    k->nk = k->na = k->nst = k->nsl = 0;
    size_t nk1 = (size_t)(nk > 0 ? nk : 1);
    k->ki = dup(ki, sizeof(int) * KI * nk);
    k->kd = dup(kd, sizeof(double) * KD * nk);
    k->act = calloc(nk1, sizeof(int));
    k->stick = calloc(nk1, 1);
    k->slide = calloc(nk1, 1);
    k->s0 = calloc(2 * nk1, sizeof(double));
    if (!k->ki || !k->kd || !k->act || !k->stick || !k->slide || !k->s0 ||
        alloc_rows(k, k->mc + k->nd + k->ncp) != OK)
        return ERR_ARGS;
    k->nk = nk;
    return OK;
}

/* the contacts idx (na of them) become rows gap = 0 (persistent contacts); their
 * multipliers follow the drives' in sk_multipliers */
int sk_set_active(SK *k, int na, const int *idx)
{
    for (int i = 0; i < na; i++)
        if (idx[i] < 0 || idx[i] >= k->nk)
            return ERR_ARGS;
    if (na > k->nk)
        return ERR_ARGS;
    int nst = 0, nsl = 0;
    for (int i = 0; i < na; i++) {
        nst += k->stick[idx[i]] != 0;
        nsl += k->slide[idx[i]] != 0 && !k->stick[idx[i]];
    }
    int need = k->mc + k->nd + k->ncp + na + 2 * nst + k->njr;   /* (buffers kept when they
                                                                     hold the rows) */
    if (need > k->mcap) {
        if (alloc_rows(k, need) != OK)
            return ERR_ARGS;
    } else {
        k->m = need;
    }
    memcpy(k->act, idx, sizeof(int) * na);
    k->na = na;
    k->nst = nst;
    k->nsl = nsl;
    return OK;
}

static int has_point(const SK *k, int i);

/* the friction phase: stick[i] (the active contact i sticks: two tangential rows), slide[i]
 * (it slips with friction along its slip direction, recorded s0 (nk, 2)); NULL: none. Takes
 * effect at the next sk_set_active. */
int sk_set_friction(SK *k, const unsigned char *stick, const unsigned char *slide,
                    const double *s0)
{
    for (int i = 0; i < k->nk; i++) {
        k->stick[i] = stick ? stick[i] != 0 : 0;
        k->slide[i] = slide ? slide[i] != 0 : 0;
        if ((k->stick[i] || k->slide[i]) && (!has_point(k, i) || !(k->kd[KD * i + 35] > 0.0)))
            return ERR_ARGS;           /* friction only at plane and rim contacts with mu > 0 */
        k->s0[2 * i] = s0 ? s0[2 * i] : 0.0;
        k->s0[2 * i + 1] = s0 ? s0[2 * i + 1] : 0.0;
    }
    return OK;
}

/* The joints' Coulomb friction phase (fmu_mb.dynamics.friction): ns sticking joints, ji (ns,
 * 3) kind (1 revolute, 2 prismatic), parent, child (nb: ground) and jd (ns, DRD) their points
 * and frames: each adds the row of its coordinate's rate (after the sticking contacts'
 * rows; its multiplier lam_j gives the friction torque -lam_j); tau (nv) generalised forces
 * on the velocity coordinates (the slipping joints' -F_c s0) or NULL: none. ERR_ARGS (bad
 * kinds or bodies, a non-finite force, out of memory): the previous phase kept. */
int sk_set_joint_friction(SK *k, int ns, const int *ji, const double *jd, const double *tau)
{
    if (ns < 0 || (ns > 0 && (!ji || !jd)))
        return ERR_ARGS;
    for (int i = 0; i < ns; i++) {
        const int *J = ji + 3 * i;
        if ((J[0] != 1 && J[0] != 2) || J[1] < 0 || J[1] > k->nb || J[2] < 0 || J[2] > k->nb)
            return ERR_ARGS;
        for (int j = 0; j < DRD; j++)
            if (!isfinite(jd[DRD * i + j]))
                return ERR_ARGS;
    }
    if (tau)
        for (int i = 0; i < k->nv; i++)
            if (!isfinite(tau[i]))
                return ERR_ARGS;
    size_t n1 = (size_t)(ns > 0 ? ns : 1);
    int *nji = dup(ns > 0 ? ji : (const int[3]){0, 0, 0}, sizeof(int) * 3 * n1);
    double *njd = calloc(DRD * n1, sizeof(double));
    double *nt = tau ? dup(tau, sizeof(double) * (size_t)(k->nv > 0 ? k->nv : 1)) : NULL;
    int need = k->mc + k->nd + k->ncp + k->na + 2 * k->nst + ns;
    if (!nji || !njd || (tau && !nt) || (need > k->mcap && alloc_rows(k, need) != OK)) {
        free(nji);
        free(njd);
        free(nt);
        return ERR_ARGS;
    }
    if (ns > 0)
        memcpy(njd, jd, sizeof(double) * DRD * (size_t)ns);
    free(k->jri);
    free(k->jrd);
    free(k->jtau);
    k->jri = nji;
    k->jrd = njd;
    k->jtau = nt;
    k->njr = ns;
    k->m = need;
    return OK;
}

/* s(t), s'(t), s''(t) of drive d */
static void drive_law(const SK *k, int d, double t, double *v)
{
    const int *D = k->di + DRI * d;
    drive_law_eval(D[3] == 2, k->dp + D[4], D[5], t, v);
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


static void G_times(const double *p, const double *pd, double *o)  /* o = G(p) pd */
{
    o[0] = -p[1] * pd[0] + p[0] * pd[1] + p[3] * pd[2] - p[2] * pd[3];
    o[1] = -p[2] * pd[0] - p[3] * pd[1] + p[0] * pd[2] + p[1] * pd[3];
    o[2] = -p[3] * pd[0] + p[2] * pd[1] - p[1] * pd[2] + p[0] * pd[3];
}

static void Gt_times(const double *p, const double *w, double *o)  /* o = G(p)' w */
{
    o[0] = -p[1] * w[0] - p[2] * w[1] - p[3] * w[2];
    o[1] = p[0] * w[0] - p[3] * w[1] + p[2] * w[2];
    o[2] = p[3] * w[0] + p[0] * w[1] - p[1] * w[2];
    o[3] = -p[2] * w[0] + p[1] * w[1] + p[0] * w[2];
}

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* ------------------------------------------------------------------ coordinates and ν */
/* the Euler-parameter set of tree row b (NULL when it has none) and whether it uses G */
static int quat_offset(const SK *k, int b, int *useG)
{
    const int *ri = k->ri + RI * b;
    *useG = ri[0] == K_SPH && ri[5];
    if (ri[0] == K_SPH)
        return ri[3];
    if (ri[0] == K_FREE)
        return ri[3] + 3;
    return -1;
}

/* ν of (q, qd) */
static void qd_to_nu(const SK *k, const double *q, const double *qd, double *nu)
{
    for (int b = 0; b < k->nb; b++) {
        const int *ri = k->ri + RI * b;
        int kind = ri[0], o = ri[3], vo = ri[4], useG;
        if (kind == K_REV || kind == K_PRI) {
            nu[vo] = qd[o];
            continue;
        }
        int oq = quat_offset(k, b, &useG);
        if (oq < 0)
            continue;
        int wo = vo;
        if (kind == K_FREE)
            for (int i = 0; i < 3; i++)
                nu[vo + 3 + i] = qd[o + i];
        (useG ? G_times : E_times)(q + oq, qd + oq, nu + wo);
        for (int i = 0; i < 3; i++)
            nu[wo + i] *= 2.0;
    }
}

/* qd of ν at q (inverse of qd_to_nu for unit Euler parameters; p . p' = 0) */
static void nu_to_qd(const SK *k, const double *q, const double *nu, double *qd)
{
    for (int b = 0; b < k->nb; b++) {
        const int *ri = k->ri + RI * b;
        int kind = ri[0], o = ri[3], vo = ri[4], useG;
        if (kind == K_REV || kind == K_PRI) {
            qd[o] = nu[vo];
            continue;
        }
        int oq = quat_offset(k, b, &useG);
        if (oq < 0)
            continue;
        if (kind == K_FREE)
            for (int i = 0; i < 3; i++)
                qd[o + i] = nu[vo + 3 + i];
        (useG ? Gt_times : Et_times)(q + oq, nu + vo, qd + oq);
        for (int i = 0; i < 4; i++)
            qd[oq + i] *= 0.5;
    }
}

/* qdd of ν' at (q, qd): p'' = 1/2 E(p')' w + 1/2 E(p)' w' (G for reversed spherical rows) */
static void nud_to_qdd(const SK *k, const double *q, const double *qd, const double *nud,
                       double *qdd)
{
    for (int b = 0; b < k->nb; b++) {
        const int *ri = k->ri + RI * b;
        int kind = ri[0], o = ri[3], vo = ri[4], useG;
        if (kind == K_REV || kind == K_PRI) {
            qdd[o] = nud[vo];
            continue;
        }
        int oq = quat_offset(k, b, &useG);
        if (oq < 0)
            continue;
        if (kind == K_FREE)
            for (int i = 0; i < 3; i++)
                qdd[o + i] = nud[vo + 3 + i];
        double w[3], t1[4], t2[4];
        (useG ? G_times : E_times)(q + oq, qd + oq, w);
        for (int i = 0; i < 3; i++)
            w[i] *= 2.0;
        (useG ? Gt_times : Et_times)(qd + oq, w, t1);
        (useG ? Gt_times : Et_times)(q + oq, nud + vo, t2);
        for (int i = 0; i < 4; i++)
            qdd[oq + i] = 0.5 * (t1[i] + t2[i]);
    }
}

/* q += the position change of a small ν step dnu (Euler parameters: 1/2 E(p)' dw) */
static void add_dnu(const SK *k, double *q, const double *dnu)
{
    for (int b = 0; b < k->nb; b++) {
        const int *ri = k->ri + RI * b;
        int kind = ri[0], o = ri[3], vo = ri[4], useG;
        if (kind == K_REV || kind == K_PRI) {
            q[o] += dnu[vo];
            continue;
        }
        int oq = quat_offset(k, b, &useG);
        if (oq < 0)
            continue;
        if (kind == K_FREE)
            for (int i = 0; i < 3; i++)
                q[o + i] += dnu[vo + 3 + i];
        double dp[4];
        (useG ? Gt_times : Et_times)(q + oq, dnu + vo, dp);
        for (int i = 0; i < 4; i++)
            q[oq + i] += 0.5 * dp[i];
    }
}

/* ------------------------------------------------------------------ kinematics */
/* Poses, twists, motion subspaces S (6 x dof, column-major: column j at S + 6 j) and the
 * velocity-product accelerations c of every body, in placement order; without sc, S and c are
 * left as they are (the poses and twists alone: the same numbers). */
static void kinematics_sc(SK *k, const double *q, const double *qd, int sc)
{
    int nb = k->nb;
    for (int b = 0; b < nb; b++) {
        const int *ri = k->ri + RI * b;
        const double *rd = k->rd + RD * b;
        int kind = ri[0], p = ri[1], o = ri[3], rev = ri[5];
        int y = ri[2];
        double sg = rev ? -1.0 : 1.0;
        double *rY = k->r + 3 * y, *AY = k->A + 9 * y, *wY = k->w + 3 * y, *vY = k->v + 3 * y;
        double *S = k->S + 36 * y, *c = k->c + 6 * y;
        if (sc) {
            memset(S, 0, sizeof(double) * 36);
            memset(c, 0, sizeof(double) * 6);
        }
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
                if (sc) {
                    S[6 * i + i] = 1.0;
                    S[6 * (3 + i) + 3 + i] = 1.0;
                }
            }
            k->dof[y] = 6;
            continue;
        }
        const double *rP = k->r + 3 * p, *AP = k->A + 9 * p, *wP = k->w + 3 * p,
                     *vP = k->v + 3 * p;
        const double *sp = rd, *sc = rd + 3, *Fp = rd + 6, *Fc = rd + 15;
        double R[9], Rrel[9], u[3], arm[3], Pc[3], h[3], wrel[3] = {0, 0, 0}, sd = 0.0;
        mul33(AP, Fp, R);                           /* X's joint frame, global */
        for (int i = 0; i < 3; i++)
            u[i] = R[3 * i + 2];                    /* its z axis */
        for (int i = 0; i < 9; i++)
            Rrel[i] = (i % 4 == 0);
        if (kind == K_REV) {
            double cs = cos(q[o]), sn = sg * sin(q[o]);
            Rrel[0] = cs;
            Rrel[1] = -sn;
            Rrel[3] = sn;
            Rrel[4] = cs;
            for (int i = 0; i < 3; i++)
                wrel[i] = sg * u[i] * qd[o];
        } else if (kind == K_SPH) {
            double wl[3], Rq[9];
            quat_matrix(q + o, Rq);
            if (rev) {
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++)
                        Rrel[3 * i + j] = Rq[3 * j + i];
                G_times(q + o, qd + o, wl);
            } else {
                memcpy(Rrel, Rq, sizeof Rq);
                E_times(q + o, qd + o, wl);
            }
            for (int i = 0; i < 3; i++)
                wl[i] *= 2.0 * sg;
            mat3(R, wl, wrel);
        }
        /* A_Y = R Rrel F_Y' */
        double T[9];
        mul33(R, Rrel, T);
        mul33t(T, Fc, AY);
        mat3(AP, sp, arm);                          /* P_X - r_X */
        if (kind == K_PRI) {
            sd = sg * qd[o];
            for (int i = 0; i < 3; i++)
                arm[i] += sg * u[i] * q[o];         /* P_Y - r_X */
        }
        double Asc[3];
        mat3(AY, sc, Asc);
        for (int i = 0; i < 3; i++) {
            Pc[i] = rP[i] + arm[i];
            rY[i] = Pc[i] - Asc[i];
            h[i] = -Asc[i];
            wY[i] = wP[i] + wrel[i];
        }
        /* v_Y = v_X + ω_X x (P_c - r_X) + u s' + ω_Y x h */
        double t1[3], t2[3];
        cross(wP, arm, t1);
        cross(wY, h, t2);
        for (int i = 0; i < 3; i++)
            vY[i] = vP[i] + t1[i] + u[i] * sd + t2[i];
        if (!sc)
            continue;
        /* S and c */
        int dof = 0;
        if (kind == K_REV) {
            cross(u, h, t1);
            for (int i = 0; i < 3; i++) {
                S[i] = sg * u[i];
                S[3 + i] = sg * t1[i];
            }
            dof = 1;
        } else if (kind == K_PRI) {
            for (int i = 0; i < 3; i++)
                S[3 + i] = sg * u[i];
            dof = 1;
        } else if (kind == K_SPH) {
            for (int j = 0; j < 3; j++) {
                double e[3] = {sg * R[j], sg * R[3 + j], sg * R[6 + j]};   /* column j of R */
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
        cross(wP, t1, a1);                           /* ω_X x (ω_X x (P_c - r_X)) */
        cross(wP, u, a2);                            /* ω_X x u */
        cross(cw, h, a3);
        cross(wY, h, t2);
        cross(wY, t2, a4);
        for (int i = 0; i < 3; i++) {
            c[i] = cw[i];
            c[3 + i] = a1[i] + 2.0 * sd * a2[i] + a3[i] + a4[i];
        }
    }
}

static void kinematics(SK *k, const double *q, const double *qd)
{
    kinematics_sc(k, q, qd, 1);
}

static void qprod(const double *a, const double *b, double *o)   /* o = a (x) b */
{
    double r0 = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    double r1 = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    double r2 = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    double r3 = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    o[0] = r0;
    o[1] = r1;
    o[2] = r2;
    o[3] = r3;
}

/* x = (r, p) and xd = (r', p') of the bodies (7 nb each), as the spatial tmt's T(q) and
 * Tq qd: p_Y = p_X (x) f_X (x) s p_rel (x) f_Y* (p_rel* for a reversed row), p' = 1/2 E(p)' ω;
 * needs sk_set_pose_data */
static int kinematics_x(SK *k, const double *q, const double *qd, double *x, double *xd,
                        int sc)
{
    int nb = k->nb;
    if (!k->rq)
        return ERR_ARGS;
    kinematics_sc(k, q, qd, sc);
    double ground[4] = {1.0, 0.0, 0.0, 0.0};
    for (int b = 0; b < nb; b++) {
        const int *ri = k->ri + RI * b;
        const double *rq = k->rq + 9 * b;
        int kind = ri[0], X = ri[1], Y = ri[2], o = ri[3];
        double prel[4] = {1.0, 0.0, 0.0, 0.0}, *pY = x + 7 * Y + 3;
        if (kind == K_REV) {
            prel[0] = cos(0.5 * q[o]);
            prel[3] = sin(0.5 * q[o]);
        } else if (kind == K_SPH) {
            memcpy(prel, q + o, sizeof prel);
        } else if (kind == K_FREE) {
            memcpy(prel, q + o + 3, sizeof prel);
        }
        for (int i = 0; i < 4; i++)
            prel[i] *= rq[8];
        if (kind == K_FREE) {
            memcpy(pY, prel, sizeof prel);
        } else {
            if (ri[5])
                for (int i = 1; i < 4; i++)
                    prel[i] = -prel[i];
            const double *pX = X == nb ? ground : x + 7 * X + 3;
            double fYc[4] = {rq[4], -rq[5], -rq[6], -rq[7]}, t[4];
            qprod(pX, rq, t);
            qprod(t, prel, t);
            qprod(t, fYc, pY);
        }
        double pd[4];
        Et_times(pY, k->w + 3 * Y, pd);
        for (int i = 0; i < 3; i++) {
            x[7 * Y + i] = k->r[3 * Y + i];
            xd[7 * Y + i] = k->v[3 * Y + i];
        }
        for (int i = 0; i < 4; i++)
            xd[7 * Y + 3 + i] = 0.5 * pd[i];
    }
    return OK;
}

int sk_kinematics(SK *k, const double *q, const double *qd, double *x, double *xd)
{
    return kinematics_x(k, q, qd, x, xd, 1);
}

/* sk_kinematics's x and xd alone (the motion subspaces and velocity products not computed:
 * what a pass over the loops' rows needs) */
int sk_poses(SK *k, const double *q, const double *qd, double *x, double *xd)
{
    return kinematics_x(k, q, qd, x, xd, 0);
}

/* positions and velocities (6 per point: r, r') of np body points (body b, point s in body
 * axes; b = nb the ground) at (q, qd) */
void sk_points(SK *k, const double *q, const double *qd, int np, const int *body,
               const double *pts, double *out)
{
    kinematics(k, q, qd);
    for (int i = 0; i < np; i++) {
        int b = body[i];
        double arm[3], wa[3], *o = out + 6 * i;
        mat3(k->A + 9 * b, pts + 3 * i, arm);
        cross(k->w + 3 * b, arm, wa);
        for (int j = 0; j < 3; j++) {
            o[j] = k->r[3 * b + j] + arm[j];
            o[3 + j] = k->v[3 * b + j] + wa[j];
        }
    }
}

/* ------------------------------------------------------------------ ABA */
/* articulated inertias, U, D^-1 (positions only) */
static int articulate(SK *k)
{
    int nb = k->nb;
    for (int b = 0; b <= nb; b++)
        memset(k->IA + 36 * b, 0, sizeof(double) * 36);
    for (int b = 0; b < nb; b++) {              /* rigid-body inertia */
        double *IA = k->IA + 36 * b, *Jg = k->Jg + 9 * b, T[9];
        const double *A = k->A + 9 * b;
        mul33(A, k->J + 9 * b, T);
        mul33t(T, A, Jg);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                IA[6 * i + j] = Jg[3 * i + j];
        for (int i = 0; i < 3; i++)
            IA[6 * (3 + i) + 3 + i] = k->mass[b];
    }
    for (int row = nb - 1; row >= 0; row--) {
        const int *ri = k->ri + RI * row;
        int y = ri[2], p = ri[1], dof = k->dof[y];
        double *IA = k->IA + 36 * y, *S = k->S + 36 * y, *U = k->U + 36 * y;
        double *Dinv = k->Dinv + 36 * y, *Ia = k->Ia + 36 * y;
        double D[36];
        for (int j = 0; j < dof; j++)
            for (int i = 0; i < 6; i++) {
                double s = 0.0;
                for (int l = 0; l < 6; l++)
                    s += IA[6 * i + l] * S[6 * j + l];
                U[6 * j + i] = s;
            }
        for (int a = 0; a < dof; a++)
            for (int b2 = 0; b2 < dof; b2++) {
                double s = 0.0;
                for (int i = 0; i < 6; i++)
                    s += S[6 * a + i] * U[6 * b2 + i];
                D[6 * a + b2] = s;
            }
        if (dof == 1 && k->arm)
            D[0] += k->arm[row];
        if (dof == 1) {
            if (!(D[0] > 0.0))
                return ERR_SINGULAR;
            Dinv[0] = 1.0 / D[0];
        } else if (dof && invert(D, dof, Dinv) != OK) {
            return ERR_SINGULAR;
        }
        double UD[36];                          /* U D^-1 (column b2 at UD + 6 b2) */
        for (int b2 = 0; b2 < dof; b2++)
            for (int i = 0; i < 6; i++) {
                double s = 0.0;
                for (int a = 0; a < dof; a++)
                    s += U[6 * a + i] * Dinv[6 * a + b2];
                UD[6 * b2 + i] = s;
            }
        for (int i = 0; i < 6; i++)
            for (int j = i; j < 6; j++) {
                double s = IA[6 * i + j];
                for (int b2 = 0; b2 < dof; b2++)
                    s -= UD[6 * b2 + i] * U[6 * b2 + j];
                Ia[6 * i + j] = Ia[6 * j + i] = s;
            }
        if (p == nb)
            continue;                           /* the ground takes no articulated inertia */
        /* IA_X += X' Ia X with X = [[I, 0], [Dm, I]], Dm = -d~ (d = r_Y - r_X), by 3 x 3
         * blocks of Ia = [[A, B], [B', C]]:
         * [[A + B Dm + (B Dm)' + Dm' C Dm, B + (C Dm)'], [B' + C Dm, C]] */
        double d[3], Dm[9], A3[9], B3[9], C3[9], BD[9], CDm[9], DCD[9];
        for (int i = 0; i < 3; i++)
            d[i] = k->r[3 * y + i] - k->r[3 * p + i];
        Dm[0] = 0.0;   Dm[1] = d[2];  Dm[2] = -d[1];
        Dm[3] = -d[2]; Dm[4] = 0.0;   Dm[5] = d[0];
        Dm[6] = d[1];  Dm[7] = -d[0]; Dm[8] = 0.0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                A3[3 * i + j] = Ia[6 * i + j];
                B3[3 * i + j] = Ia[6 * i + 3 + j];
                C3[3 * i + j] = Ia[6 * (3 + i) + 3 + j];
            }
        mul33(B3, Dm, BD);
        mul33(C3, Dm, CDm);
        for (int i = 0; i < 3; i++)             /* DCD = Dm' CDm */
            for (int j = 0; j < 3; j++)
                DCD[3 * i + j] = Dm[i] * CDm[j] + Dm[3 + i] * CDm[3 + j] + Dm[6 + i] * CDm[6 + j];
        double *IAp = k->IA + 36 * p;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                IAp[6 * i + j] += A3[3 * i + j] + BD[3 * i + j] + BD[3 * j + i]
                                  + DCD[3 * i + j];
                IAp[6 * i + 3 + j] += B3[3 * i + j] + CDm[3 * j + i];
                IAp[6 * (3 + i) + j] += B3[3 * j + i] + CDm[3 * i + j];
                IAp[6 * (3 + i) + 3 + j] += C3[3 * i + j];
            }
    }
    return OK;
}

/* ν' of the generalised force tau (nv, NULL: zero) with (bias = 1) or without (0) gravity,
 * velocity products and applied wrenches k->fw; the body accelerations in k->acc. Without
 * the bias, the bodies whose subtree takes no force and whose path from the ground has no
 * acceleration are skipped (their terms are exact zeros): a loop row's pass touches only its
 * two bodies' paths and what hangs from them. */
static void solve(SK *k, const double *tau, int bias, double *nud)
{
    int nb = k->nb, *live = k->live, *moving = k->moving;
    for (int b = 0; b <= nb; b++) {
        memset(k->pA + 6 * b, 0, sizeof(double) * 6);
        live[b] = bias;
        moving[b] = 0;
    }
    if (bias)
        for (int b = 0; b < nb; b++) {
            double *pA = k->pA + 6 * b, Jw[3], gyro[3];
            const double *w = k->w + 3 * b, *fw = k->fw + 6 * b;
            mat3(k->Jg + 9 * b, w, Jw);            /* J global, from articulate() */
            cross(w, Jw, gyro);
            for (int i = 0; i < 3; i++) {
                pA[i] = gyro[i] - fw[i];
                pA[3 + i] = -k->mass[b] * k->g[i] - fw[3 + i];
            }
        }
    for (int row = nb - 1; row >= 0; row--) {
        const int *ri = k->ri + RI * row;
        int y = ri[2], p = ri[1], vo = ri[4], dof = k->dof[y];
        double *pA = k->pA + 6 * y, *S = k->S + 36 * y, *U = k->U + 36 * y;
        double *Dinv = k->Dinv + 36 * y, *uu = k->uu + 6 * y, *c = k->c + 6 * y;
        double *Ia = k->Ia + 36 * y, pa[6], Duu[6];
        int forced = live[y];
        for (int a = 0; a < dof && !forced; a++)
            forced = tau && tau[vo + a] != 0.0;
        if (!forced) {                          /* uu = 0, pa = 0 */
            for (int a = 0; a < dof; a++)
                uu[a] = 0.0;
            continue;
        }
        moving[y] = 1;
        for (int a = 0; a < dof; a++) {
            double s = tau ? tau[vo + a] : 0.0;
            for (int i = 0; i < 6; i++)
                s -= S[6 * a + i] * pA[i];
            uu[a] = s;
        }
        if (p == nb)
            continue;
        live[p] = 1;
        for (int a = 0; a < dof; a++) {
            double s = 0.0;
            for (int b2 = 0; b2 < dof; b2++)
                s += Dinv[6 * a + b2] * uu[b2];
            Duu[a] = s;
        }
        for (int i = 0; i < 6; i++) {
            double s = pA[i];
            if (bias)
                for (int j = 0; j < 6; j++)
                    s += Ia[6 * i + j] * c[j];
            for (int a = 0; a < dof; a++)
                s += U[6 * a + i] * Duu[a];
            pa[i] = s;
        }
        /* pA_X += X' pa: f part unchanged, n part += d x f */
        double d[3], t[3], *pAp = k->pA + 6 * p;
        for (int i = 0; i < 3; i++)
            d[i] = k->r[3 * y + i] - k->r[3 * p + i];
        cross(d, pa + 3, t);
        for (int i = 0; i < 3; i++) {
            pAp[i] += pa[i] + t[i];
            pAp[3 + i] += pa[3 + i];
        }
    }
    memset(k->acc + 6 * nb, 0, sizeof(double) * 6);
    for (int row = 0; row < nb; row++) {
        const int *ri = k->ri + RI * row;
        int y = ri[2], p = ri[1], vo = ri[4], dof = k->dof[y];
        double *acc = k->acc + 6 * y, *S = k->S + 36 * y, *U = k->U + 36 * y;
        double *Dinv = k->Dinv + 36 * y, *uu = k->uu + 6 * y, *c = k->c + 6 * y, nu[6];
        const double *ap = k->acc + 6 * p;
        if (!bias && !moving[y] && (p == nb || !moving[p])) {   /* at rest: zeros */
            memset(acc, 0, sizeof(double) * 6);
            for (int a = 0; a < dof; a++)
                nud[vo + a] = 0.0;
            continue;
        }
        moving[y] = 1;
        double d[3], t[3];
        for (int i = 0; i < 3; i++)
            d[i] = k->r[3 * y + i] - k->r[3 * p + i];
        cross(ap, d, t);                        /* α_X x d */
        for (int i = 0; i < 3; i++) {
            acc[i] = ap[i] + (bias ? c[i] : 0.0);
            acc[3 + i] = ap[3 + i] + t[i] + (bias ? c[3 + i] : 0.0);
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
            nud[vo + a] = s;
        }
        for (int a = 0; a < dof; a++)
            for (int i = 0; i < 6; i++)
                acc[i] += S[6 * a + i] * nu[a];
    }
}

/* ------------------------------------------------------------------ scalars of two bodies */
typedef struct {
    int p, c;
    double rp[3], rc[3];              /* arms A s of the two points */
    double d[3], dd[3], dg[3];        /* d = P_c - P_p, d', velocity-product part of d'' */
} Pair;

static void pair_init(const SK *k, int p, int c, const double *sp, const double *sc, Pair *P)
{
    const double *wp = k->w + 3 * p, *wc = k->w + 3 * c;
    double t1[3], t2[3], t3[3], t4[3];
    P->p = p;
    P->c = c;
    mat3(k->A + 9 * p, sp, P->rp);
    mat3(k->A + 9 * c, sc, P->rc);
    cross(wc, P->rc, t1);
    cross(wp, P->rp, t2);
    cross(wc, t1, t3);
    cross(wp, t2, t4);
    for (int i = 0; i < 3; i++) {
        P->d[i] = k->r[3 * c + i] + P->rc[i] - k->r[3 * p + i] - P->rp[i];
        P->dd[i] = k->v[3 * c + i] + t1[i] - k->v[3 * p + i] - t2[i];
        P->dg[i] = t3[i] - t4[i];
    }
}

static void frame_axis(const SK *k, int b, const double *F, int i, double *a)  /* A_b F e_i */
{
    double col[3] = {F[i], F[3 + i], F[6 + i]};
    mat3(k->A + 9 * b, col, a);
}

/* a . d, a a direction of body p (on_p) or a constant global direction */
static void dot_d(const SK *k, const Pair *P, const double *a, int on_p, Row *R)
{
    const double *wp = k->w + 3 * P->p;
    double t[3];
    R->p = P->p;
    R->c = P->c;
    R->p2 = -1;
    R->val = dot3(a, P->d);
    cross(a, P->rp, t);
    for (int i = 0; i < 3; i++) {
        R->j[i] = t[i];
        R->j[3 + i] = -a[i];
        R->j[9 + i] = a[i];
    }
    cross(P->rc, a, R->j + 6);
    R->gam = dot3(a, P->dg);
    if (on_p) {
        double ad[3], wa[3], wwa[3];
        cross(a, P->d, ad);
        for (int i = 0; i < 3; i++)
            R->j[i] += ad[i];
        cross(wp, a, wa);
        cross(wp, wa, wwa);
        R->gam += dot3(wwa, P->d) + 2.0 * dot3(wa, P->dd);
    }
}

/* a . b, a a direction of body p, b one of body c */
static void dot_aa(const SK *k, const Pair *P, const double *a, const double *b, Row *R)
{
    const double *wp = k->w + 3 * P->p, *wc = k->w + 3 * P->c;
    double wa[3], wb[3], wwa[3], wwb[3];
    R->p = P->p;
    R->c = P->c;
    R->p2 = -1;
    R->val = dot3(a, b);
    cross(a, b, R->j);
    cross(b, a, R->j + 6);
    for (int i = 0; i < 3; i++)
        R->j[3 + i] = R->j[9 + i] = 0.0;
    cross(wp, a, wa);
    cross(wc, b, wb);
    cross(wp, wa, wwa);
    cross(wc, wb, wwb);
    R->gam = dot3(wwa, b) + 2.0 * dot3(wa, wb) + dot3(a, wwb);
}

/* |d|; ERR_SINGULAR at |d| = 0 */
static int norm_d(const SK *k, const Pair *P, Row *R)
{
    double l = sqrt(dot3(P->d, P->d));
    if (!(l > 0.0))
        return ERR_SINGULAR;
    double e[3] = {P->d[0] / l, P->d[1] / l, P->d[2] / l}, ed = dot3(e, P->dd);
    dot_d(k, P, e, 0, R);
    R->val = l;
    R->gam += (dot3(P->dd, P->dd) - ed * ed) / l;
    return OK;
}

static double rate(const SK *k, const Row *R)       /* j . (V_p, V_c) (+ j2 . (V_p2, V_c2)) */
{
    double r = dot3(R->j, k->w + 3 * R->p) + dot3(R->j + 3, k->v + 3 * R->p)
               + dot3(R->j + 6, k->w + 3 * R->c) + dot3(R->j + 9, k->v + 3 * R->c);
    if (R->p2 >= 0)
        r += dot3(R->j2, k->w + 3 * R->p2) + dot3(R->j2 + 3, k->v + 3 * R->p2)
             + dot3(R->j2 + 6, k->w + 3 * R->c2) + dot3(R->j2 + 9, k->v + 3 * R->c2);
    return r;
}

static double accel_of(const SK *k, const Row *R)   /* j . (A_p, A_c) + gamma */
{
    const double *ap = k->acc + 6 * R->p, *ac = k->acc + 6 * R->c;
    double a = dot3(R->j, ap) + dot3(R->j + 3, ap + 3) + dot3(R->j + 6, ac)
               + dot3(R->j + 9, ac + 3) + R->gam;
    if (R->p2 >= 0) {
        ap = k->acc + 6 * R->p2;
        ac = k->acc + 6 * R->c2;
        a += dot3(R->j2, ap) + dot3(R->j2 + 3, ap + 3) + dot3(R->j2 + 6, ac)
             + dot3(R->j2 + 9, ac + 3);
    }
    return a;
}

/* the wrenches -s j of an elongation with force s */
static void apply(SK *k, const Row *R, double s)
{
    int nb = k->nb;
    if (R->p != nb)
        for (int i = 0; i < 6; i++)
            k->fw[6 * R->p + i] -= s * R->j[i];
    if (R->c != nb)
        for (int i = 0; i < 6; i++)
            k->fw[6 * R->c + i] -= s * R->j[6 + i];
}

#define SK_PI 3.14159265358979323846       /* (M_PI is POSIX, not C99: MSVC lacks it) */

static double wrap(double a)                        /* into (-pi, pi] */
{
    double r = fmod(SK_PI - a, 2.0 * SK_PI);
    if (r < 0.0)
        r += 2.0 * SK_PI;
    return SK_PI - r;
}

/* theta = atan2(y_a . x_b, x_a . x_b): the angle of a revolute joint */
static void joint_angle(const SK *k, const Pair *P, const double *Fa, const double *Fb, Row *R)
{
    double xa[3], ya[3], xb[3];
    Row rc, rs;
    frame_axis(k, P->p, Fa, 0, xa);
    frame_axis(k, P->p, Fa, 1, ya);
    frame_axis(k, P->c, Fb, 0, xb);
    dot_aa(k, P, xa, xb, &rc);
    dot_aa(k, P, ya, xb, &rs);
    double r2 = rc.val * rc.val + rs.val * rs.val;
    *R = rc;
    R->val = atan2(rs.val, rc.val);
    for (int i = 0; i < 12; i++)
        R->j[i] = (rc.val * rs.j[i] - rs.val * rc.j[i]) / r2;
    R->gam = 0.0;
}

/* the revolute angle with its velocity product: theta'' = j . A + gamma, from
 * theta = atan2(s, c): theta'' = (c s'' - s c'') / r2 - 2 theta' (c c' + s s') / r2 */
static void joint_angle_full(const SK *k, const Pair *P, const double *Fa, const double *Fb,
                             Row *R)
{
    double xa[3], ya[3], xb[3];
    Row rc, rs;
    frame_axis(k, P->p, Fa, 0, xa);
    frame_axis(k, P->p, Fa, 1, ya);
    frame_axis(k, P->c, Fb, 0, xb);
    dot_aa(k, P, xa, xb, &rc);
    dot_aa(k, P, ya, xb, &rs);
    double r2 = rc.val * rc.val + rs.val * rs.val;
    double cd = rate(k, &rc), sd = rate(k, &rs);
    double th_d = (rc.val * sd - rs.val * cd) / r2;
    *R = rc;
    R->val = atan2(rs.val, rc.val);
    for (int i = 0; i < 12; i++)
        R->j[i] = (rc.val * rs.j[i] - rs.val * rc.j[i]) / r2;
    R->gam = (rc.val * rs.gam - rs.val * rc.gam) / r2
             - 2.0 * th_d * (rc.val * cd + rs.val * sd) / r2;
}

/* the coordinate of a revolute (D[0] = 1: its angle) or prismatic (2: z_p . d) joint between
 * bodies D[1], D[2] with points and frames dd (DRD), with its velocity product */
static void coordinate_row(const SK *k, const int *D, const double *dd, Row *R)
{
    Pair P;
    pair_init(k, D[1], D[2], dd, dd + 3, &P);
    if (D[0] == 1) {
        joint_angle_full(k, &P, dd + 6, dd + 15, R);
    } else {
        double zp[3];
        frame_axis(k, D[1], dd + 6, 2, zp);
        dot_d(k, &P, zp, 1, R);
    }
}

/* ------------------------------------------------------------------ applied forces */
static int forces(SK *k)
{
    int nb = k->nb;
    memset(k->fw, 0, sizeof(double) * 6 * (nb + 1));
    for (int i = 0; i < k->ne; i++) {
        const int *ei = k->ei + EI * i;
        const double *ed = k->ed + ED * i;
        int type = ei[0], a = ei[1], b = ei[2], ui = ei[3];
        double h = ui >= 0 ? k->u[ui] : 0.0;
        Pair P;
        Row R;
        double *eo = k->eout ? k->eout + 8 * i : NULL;
        if (type == E_TSDA) {
            pair_init(k, a, b, ed, ed + 3, &P);
            if (norm_d(k, &P, &R) != OK)
                return ERR_SINGULAR;
            double sf = ed[24] * (R.val - ed[26]) + ed[25] * rate(k, &R) + ed[30] * h;
            apply(k, &R, sf);
            if (eo) {
                eo[0] = sf;
                eo[1] = R.val;
            }
        } else if (type == E_RSDA) {
            pair_init(k, a, b, ed, ed + 3, &P);
            joint_angle(k, &P, ed + 6, ed + 15, &R);
            double sf = ed[24] * wrap(R.val - ed[26]) + ed[25] * rate(k, &R) + h;
            apply(k, &R, sf);
            if (eo) {
                eo[0] = sf;
                eo[1] = R.val;
            }
        } else if (type == E_FORCE || type == E_TORQUE) {
            double dir[3], mag = ed[24] + h, arm[3], t[3];
            if (eo)
                eo[0] = mag;
            if (ei[4])
                mat3(k->A + 9 * b, ed + 27, dir);
            else
                memcpy(dir, ed + 27, sizeof dir);
            for (int j = 0; j < 3; j++)
                dir[j] *= mag;
            if (type == E_FORCE) {
                mat3(k->A + 9 * b, ed + 3, arm);
                cross(arm, dir, t);
                for (int j = 0; j < 3; j++) {
                    k->fw[6 * b + j] += t[j];
                    k->fw[6 * b + 3 + j] += dir[j];
                }
            } else {
                for (int j = 0; j < 3; j++) {
                    k->fw[6 * b + j] += dir[j];
                    if (a != nb)
                        k->fw[6 * a + j] -= dir[j];
                }
            }
        } else if (type == E_BUSH) {
            Row E[6];
            double ax[3][3], bx[3][3], e[6], ed6[6];
            pair_init(k, a, b, ed, ed + 3, &P);
            for (int j = 0; j < 3; j++) {
                frame_axis(k, a, ed + 6, j, ax[j]);
                frame_axis(k, b, ed + 15, j, bx[j]);
                dot_d(k, &P, ax[j], 1, &E[j]);
            }
            for (int j = 0; j < 3; j++) {
                int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
                Row r1, r2;
                dot_aa(k, &P, ax[j2], bx[j1], &r1);
                dot_aa(k, &P, ax[j1], bx[j2], &r2);
                E[3 + j] = r1;
                E[3 + j].val = 0.5 * (r1.val - r2.val);
                for (int l = 0; l < 12; l++)
                    E[3 + j].j[l] = 0.5 * (r1.j[l] - r2.j[l]);
            }
            for (int j = 0; j < 6; j++) {
                e[j] = E[j].val - ed[102 + j];
                ed6[j] = rate(k, &E[j]);
            }
            for (int j = 0; j < 6; j++) {
                double s = 0.0;
                for (int l = 0; l < 6; l++)
                    s += ed[30 + 6 * j + l] * e[l] + ed[66 + 6 * j + l] * ed6[l];
                apply(k, &E[j], s);
                if (eo)
                    eo[j] = s;
            }
        } else {
            return ERR_ARGS;
        }
    }
    return OK;
}

/* the outputs of the elements (8 per element, kernel order: TSDA s, l; RSDA s, theta;
 * bushing s (6); force and torque value + h) at (q, qd) with inputs u */
int sk_element_outputs(SK *k, const double *q, const double *qd, const double *u, double *out)
{
    sk_set_inputs(k, u);
    kinematics(k, q, qd);
    k->eout = out;
    int rc = forces(k);
    k->eout = NULL;
    return rc;
}

/* ------------------------------------------------------------------ closed loops */
/* Dr += the rate of (jw, jv) . V_b per unit ν along the path of body b to the ground */
static void add_path(const SK *k, int b, const double *jw, const double *jv, double *Dr)
{
    int nb = k->nb;
    const double *rb = k->r + 3 * b;
    int y = b;
    while (y != nb) {
        const int *ri = k->ri + RI * k->entry[y];
        const double *S = k->S + 36 * y, *ry = k->r + 3 * y;
        double dl[3] = {rb[0] - ry[0], rb[1] - ry[1], rb[2] - ry[2]}, t[3], jt[3];
        cross(dl, jv, t);
        for (int i = 0; i < 3; i++)
            jt[i] = jw[i] + t[i];
        for (int a = 0; a < k->dof[y]; a++)
            Dr[ri[4] + a] += dot3(jt, S + 6 * a) + dot3(jv, S + 6 * a + 3);
        y = ri[1];
    }
}

/* the gap row of contact i (fmu_mb.mechanics.spatial.contacts' gaps: a point on a plane, the
 * distance of two points, a revolute or prismatic joint's coordinate against a bound, times
 * the contact's side) at the kinematics; ERR_SINGULAR: two points at zero distance */
/* the rim contact i (kind 5, fmu_mb.mechanics.spatial.rim): the circle of radius kd[18],
 * centre kd + 3 and unit axis kd + 15 (body c's axes) against the plane of body p with
 * normal kd + 24 (p's axes): sc its rim point nearest the plane (c's axes) and e = R (w x u -
 * u') with u the unit direction from the centre away from that point, the part of the
 * point's velocity on the body that its convective terms add: gap'' gains n . (w x e) */
static void rim_point(const SK *k, int i, double *sc, double *e)
{
    const int *K = k->ki + KI * i;
    const double *kd = k->kd + KD * i, *Ac = k->A + 9 * K[2], *w = k->w + 3 * K[2];
    double n[3], a[3], d[3], u[3], ad[3], dd[3], ud[3], wu[3];
    mat3(k->A + 9 * K[1], kd + 24, n);
    mat3(Ac, kd + 15, a);
    double na = dot3(n, a), R = kd[18];
    for (int j = 0; j < 3; j++)
        d[j] = n[j] - na * a[j];
    double ld = sqrt(dot3(d, d));
    for (int j = 0; j < 3; j++)
        u[j] = d[j] / ld;
    cross(w, a, ad);
    double nad = dot3(n, ad);
    for (int j = 0; j < 3; j++)
        dd[j] = -nad * a[j] - na * ad[j];
    double udd = dot3(u, dd);
    for (int j = 0; j < 3; j++)
        ud[j] = (dd[j] - u[j] * udd) / ld;
    cross(w, u, wu);
    for (int j = 0; j < 3; j++) {
        e[j] = R * (wu[j] - ud[j]);
        sc[j] = kd[3 + j] - R * (Ac[j] * u[0] + Ac[3 + j] * u[1] + Ac[6 + j] * u[2]);
    }
}

/* contact i has a contact point (a plane, rim or shape-pair contact: friction may act there) */
static int has_point(const SK *k, int i)
{
    return k->ki[KI * i] == 1 || k->ki[KI * i] == 5 || k->ki[KI * i] == 6;
}

/* the gap and rows of shape-pair contact i (kind 6, native/pairs.h) at the kinematics */
static void shape_pair(const SK *k, int i, mbp_rows_t *o)
{
    const int *K = k->ki + KI * i;
    const double *kd = k->kd + KD * i;
    mbp_body Ba = {k->r + 3 * K[1], k->A + 9 * K[1], k->v + 3 * K[1], k->w + 3 * K[1]};
    mbp_body Bb = {k->r + 3 * K[2], k->A + 9 * K[2], k->v + 3 * K[2], k->w + 3 * K[2]};
    mbp_rows((int)kd[32], kd + 24, kd + 6, kd, (int)kd[33], kd + 29, kd + 15, kd + 3,
             (int)kd[34], &Ba, &Bb, o);
}

static void row_of(const SK *k, int i, const double *j, double gam, double val, Row *R)
{
    const int *K = k->ki + KI * i;
    R->p = K[1];
    R->c = K[2];
    R->p2 = -1;                         /* no coupler's second pair */
    memcpy(R->j, j, sizeof R->j);
    R->gam = gam;
    R->val = val;
    R->rt = 0.0;
}

/* the contact point pair of a plane or rim contact i (a rim's point on the body: rim_point;
 * e its extra velocity on the body, zero for a plane contact) */
static void point_pair(const SK *k, int i, Pair *P, double *e)
{
    const int *K = k->ki + KI * i;
    const double *kd = k->kd + KD * i;
    double sc[3];
    if (K[0] == 5) {
        rim_point(k, i, sc, e);
        pair_init(k, K[1], K[2], kd, sc, P);
    } else {
        e[0] = e[1] = e[2] = 0.0;
        pair_init(k, K[1], K[2], kd, kd + 3, P);
    }
}

static int contact_row(const SK *k, int i, Row *R)
{
    const int *K = k->ki + KI * i;
    const double *kd = k->kd + KD * i;
    Pair P;
    double side = kd[28];
    if (K[0] == 6) {                        /* a shape pair's feature: pairs.h */
        mbp_rows_t o;
        shape_pair(k, i, &o);
        row_of(k, i, o.jn, o.gn, o.gap, R);
        return OK;
    }
    pair_init(k, K[1], K[2], kd, kd + 3, &P);
    if (K[0] == 1 || K[0] == 5) {           /* n . (P_c - P_p) - radius (rim: radius 0) */
        double n[3], e[3], we[3];
        point_pair(k, i, &P, e);
        mat3(k->A + 9 * K[1], kd + 24, n);
        dot_d(k, &P, n, 1, R);
        cross(k->w + 3 * K[2], e, we);
        R->gam += dot3(n, we);
    } else if (K[0] == 2) {                 /* |P_c - P_p| */
        if (norm_d(k, &P, R) != OK)
            return ERR_SINGULAR;
    } else if (K[0] == 3) {                 /* revolute angle */
        joint_angle_full(k, &P, kd + 6, kd + 15, R);
    } else {                                /* prismatic position z_p . d */
        double zp[3];
        frame_axis(k, K[1], kd + 6, 2, zp);
        dot_d(k, &P, zp, 1, R);
    }
    R->val = side * (R->val - kd[27]);
    for (int j = 0; j < 12; j++)
        R->j[j] *= side;
    R->gam *= side;
    R->rt = 0.0;
    return OK;
}

/* the slip velocity row along tangent kk (0: t1, 1: t2) of point-plane contact i
 * (fmu_mb.mechanics.friction): v_t = d/dt[t . (C - A)] - r (w_c - w_p) . (n x t), n x t1 = t2,
 * n x t2 = -t1; a velocity row (val 0: no position part) */
static void contact_tangent(const SK *k, int i, int kk, Row *R)
{
    const int *K = k->ki + KI * i;
    const double *kd = k->kd + KD * i;
    Pair P;
    double t[3], u[3], wu[3], dw[3], e[3], we[3];
    if (K[0] == 6) {
        mbp_rows_t o;
        shape_pair(k, i, &o);
        row_of(k, i, o.jt[kk], o.gt[kk], 0.0, R);
        return;
    }
    point_pair(k, i, &P, e);
    mat3(k->A + 9 * K[1], kd + 29 + 3 * kk, t);
    mat3(k->A + 9 * K[1], kd + 29 + 3 * (1 - kk), u);
    dot_d(k, &P, t, 1, R);
    double c = -kd[27] * (kk == 0 ? 1.0 : -1.0);     /* v_t += c (w_c - w_p) . u */
    const double *wp = k->w + 3 * K[1], *wc = k->w + 3 * K[2];
    for (int j = 0; j < 3; j++) {
        R->j[6 + j] += c * u[j];
        R->j[j] -= c * u[j];
        dw[j] = wc[j] - wp[j];
    }
    cross(wp, u, wu);                                  /* u' = w_p x u */
    R->gam += c * dot3(wu, dw);
    cross(k->w + 3 * K[2], e, we);                     /* a rim point's motion on the body */
    R->gam += dot3(t, we);
    R->val = 0.0;
    R->rt = 0.0;
}

/* the rows of the cut joints (values, twist Jacobians, gamma) and Dv at the kinematics */
static int cut_rows(SK *k)
{
    int r = 0;
    static const double EYE[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int i = 0; i < k->nc; i++) {
        const int *ci = k->ci + CI * i;
        const double *cd = k->cd + CD * i;
        int kind = ci[0], p = ci[1], c = ci[2];
        const double *Fp = cd + 6, *Fc = cd + 15;
        Pair P;
        pair_init(k, p, c, cd, cd + 3, &P);
        double xp[3], yp[3], zp[3], yc[3], zc[3];
        frame_axis(k, p, Fp, 0, xp);
        frame_axis(k, p, Fp, 1, yp);
        frame_axis(k, p, Fp, 2, zp);
        frame_axis(k, c, Fc, 1, yc);
        frame_axis(k, c, Fc, 2, zc);
        if (kind == C_SPH || kind == C_REV || kind == C_UNI || kind == C_WELD)
            for (int j = 0; j < 3; j++)
                dot_d(k, &P, EYE[j], 0, &k->rows[r++]);
        if (kind == C_CYL || kind == C_PRI) {
            dot_d(k, &P, xp, 1, &k->rows[r++]);
            dot_d(k, &P, yp, 1, &k->rows[r++]);
        }
        if (kind == C_REV || kind == C_CYL || kind == C_PRI || kind == C_WELD) {
            dot_aa(k, &P, xp, zc, &k->rows[r++]);
            dot_aa(k, &P, yp, zc, &k->rows[r++]);
        }
        if (kind == C_PRI || kind == C_WELD)
            dot_aa(k, &P, xp, yc, &k->rows[r++]);
        if (kind == C_UNI)
            dot_aa(k, &P, zp, zc, &k->rows[r++]);
        if (kind == C_DST) {
            if (norm_d(k, &P, &k->rows[r]) != OK)
                return ERR_SINGULAR;
            k->rows[r++].val -= cd[24];
        }
    }
    for (int i = 0; i < r; i++)
        k->rows[i].rt = 0.0;
    for (int d = 0; d < k->nd; d++) {         /* drives: q(x) - s(t) */
        const int *D = k->di + DRI * d;
        Row *R = &k->rows[r++];
        double v[3];
        coordinate_row(k, D, k->dd + DRD * d, R);
        drive_law(k, d, k->t, v);
        R->val = D[0] == 1 ? wrap(R->val - v[0]) : R->val - v[0];
        R->gam -= v[2];
        R->rt = v[1];
    }
    for (int i = 0; i < k->ncp; i++) {        /* couplers: q_a(x) - ratio q_b(x) - offset */
        const int *C = k->cpi + CPI * i;
        const double *cd = k->cpd + CPD * i, ratio = cd[48];
        Row *R = &k->rows[r++], Rb;
        coordinate_row(k, C, cd, R);
        coordinate_row(k, C + 3, cd + DRD, &Rb);
        R->val -= ratio * Rb.val + cd[49];
        if (C[0] == 1)
            R->val = wrap(R->val);
        R->gam -= ratio * Rb.gam;
        R->p2 = Rb.p;
        R->c2 = Rb.c;
        for (int j = 0; j < 12; j++)
            R->j2[j] = -ratio * Rb.j[j];
        R->rt = 0.0;
    }
    for (int a = 0; a < k->na; a++)             /* persistent contacts: gap = 0 */
        if (contact_row(k, k->act[a], &k->rows[r++]) != OK)
            return ERR_SINGULAR;
    for (int a = 0; k->nst && a < k->na; a++)   /* sticking contacts: v_t' = 0 */
        if (k->stick[k->act[a]]) {
            contact_tangent(k, k->act[a], 0, &k->rows[r++]);
            contact_tangent(k, k->act[a], 1, &k->rows[r++]);
        }
    for (int j = 0; j < k->njr; j++) {          /* sticking joints: their rates' rows */
        Row *R = &k->rows[r++];
        coordinate_row(k, k->jri + 3 * j, k->jrd + DRD * j, R);
        R->val = 0.0;
        R->rt = 0.0;
    }
    int nv = k->nv;
    for (r = 0; r < k->m; r++) {
        double *Dr = k->Dv + (size_t)r * nv;
        const Row *R = &k->rows[r];
        memset(Dr, 0, sizeof(double) * nv);
        add_path(k, R->p, R->j, R->j + 3, Dr);
        add_path(k, R->c, R->j + 6, R->j + 9, Dr);
        if (R->p2 >= 0) {
            add_path(k, R->p2, R->j2, R->j2 + 3, Dr);
            add_path(k, R->c2, R->j2 + 6, R->j2 + 9, Dr);
        }
    }
    return OK;
}

/* W = Mbar^-1 Dv' (rows of Wt) and S = Dv W, after articulate(): one bias-free articulated
 * pass per row; with friction and more rows than velocities (a box resting on four sticking
 * corners: 12 rows, 6 velocities) the columns of Mbar^-1 by one pass per velocity (in Vm,
 * free until the dense solve; the unit force in work, m > nv long) and W from them */
static void schur(SK *k)
{
    int m = k->m, nv = k->nv;
    if (m > nv && (k->nst > 0 || k->nsl > 0)) {
        double *Mi = k->Vm, *e = k->work;
        memset(e, 0, sizeof(double) * (size_t)nv);
        for (int c = 0; c < nv; c++) {       /* row c of the symmetric Mbar^-1 */
            e[c] = 1.0;
            solve(k, e, 0, Mi + (size_t)c * nv);
            e[c] = 0.0;
        }
        for (int r = 0; r < m; r++) {
            const double *Dr = k->Dv + (size_t)r * nv;
            double *Wr = k->Wt + (size_t)r * nv;
            for (int i = 0; i < nv; i++) {
                const double *Mr = Mi + (size_t)i * nv;
                double acc = 0.0;
                for (int j = 0; j < nv; j++)
                    acc += Mr[j] * Dr[j];
                Wr[i] = acc;
            }
        }
    } else {
        for (int r = 0; r < m; r++)
            solve(k, k->Dv + (size_t)r * nv, 0, k->Wt + (size_t)r * nv);
    }
    for (int r = 0; r < m; r++)
        for (int l = 0; l <= r; l++) {
            const double *Dr = k->Dv + (size_t)r * nv, *Wl = k->Wt + (size_t)l * nv;
            double acc = 0.0;
            for (int i = 0; i < nv; i++)
                acc += Dr[i] * Wl[i];
            k->Sm[r * m + l] = k->Sm[l * m + r] = acc;
        }
}
/* y = S^+ rhs for the symmetric positive semi-definite S in k->Sm: Cholesky, or the
 * truncated eigen-decomposition near singularity (fmu_mb.linalg.schur_solve); with friction
 * (sticking rows or sliding forces), redundant rows first by the pivoted Cholesky
 * factorisation's minimum-norm solution when the rank gap is clean (the same solution to
 * ~1e-11; frictionless models keep the eigen-decomposition, bit for bit) */
static int psd_solve(SK *k, const double *rhs, double *y)
{
    if (k->nst > 0 || k->nsl > 0)
        return dense_psd_solve_pc(k->Sm, k->Vm, k->ev, k->m, RANK_RTOL, 1, rhs, y);
    return dense_psd_solve(k->Sm, k->Vm, k->ev, k->m, NULL, NULL, 0, rhs, y);
}

/* the multipliers y (nrhs columns of m) of a solve with contacts re-split: the contacts' part
 * of minimum norm, the loops' cut joints, drives and couplers taking up the rest
 * (dense_contact_split; as the Python loop's fmu_mb.linalg.contact_split, where every joint
 * is a row) */
static int split_contacts(SK *k, int nrhs, double *y)
{
    return dense_contact_split(k->Dv, k->m, k->mc + k->nd + k->ncp, k->nv, RANK_RTOL, nrhs, y,
                               NULL);
}

/* the sliding friction (native/friction.h), after schur(): the sliding contacts' forces
 * k_j lam_n,j (k_j = mu Dt_j' s_j, s_j their slip direction, or with `fixed` their s0) with
 * their responses y_j = Mbar^-1 k_j, lam0 = S^+ rr, l_j = S^+ Dv y_j, c = (I - E L)^-1 E lam0,
 * lam = lam0 + L c, out = base0 - W lam + Y c (accelerations: base0 = ν'0 = Mbar^-1 f; an
 * impact: base0 = ν-, rr = Dv ν- - b). ERR_PAINLEVE: I - E L singular. */
static int slide_solve(SK *k, const double *base0, int fixed, double *nud)
{
    int m = k->m, nv = k->nv, p = 0, base = k->mc + k->nd + k->ncp, rc = OK;
    size_t vv = (size_t)nv, mm = (size_t)(m > 0 ? m : 1), np = (size_t)k->nsl;
    double *buf = malloc(sizeof(double) * (np * vv + 3 * vv + 2 * (np + 1) * mm
                                           + 2 * np * np + 2 * np));
    int *pos = malloc(sizeof(int) * np);
    if (!buf || !pos) {
        free(buf);
        free(pos);
        return ERR_ARGS;
    }
    double *Y = buf, *D1 = Y + np * vv, *D2 = D1 + vv, *kj = D2 + vv, *rhs = kj + vv;
    double *sol = rhs + (np + 1) * mm, *S = sol + (np + 1) * mm, *Sw = S + np * np;
    double *e0 = Sw + np * np, *c = e0 + np;
    for (int a = 0; a < k->na && p < k->nsl; a++) {
        int i = k->act[a];
        if (!k->slide[i] || k->stick[i])
            continue;
        Row R1, R2;
        contact_tangent(k, i, 0, &R1);
        contact_tangent(k, i, 1, &R2);
        memset(D1, 0, sizeof(double) * 2 * vv);
        add_path(k, R1.p, R1.j, R1.j + 3, D1);
        add_path(k, R1.c, R1.j + 6, R1.j + 9, D1);
        add_path(k, R2.p, R2.j, R2.j + 3, D2);
        add_path(k, R2.c, R2.j + 6, R2.j + 9, D2);
        double vt[2] = {fixed ? 0.0 : rate(k, &R1), fixed ? 0.0 : rate(k, &R2)}, s[2];
        fr_slip_direction(2, vt, k->s0 + 2 * i, s);
        double mu = k->kd[KD * i + 35];
        for (int j = 0; j < nv; j++)
            kj[j] = mu * (s[0] * D1[j] + s[1] * D2[j]);
        solve(k, kj, 0, Y + (size_t)p * vv);
        pos[p++] = base + a;
    }
    /* one solve with S for every right-hand side: lam0 (k->rr) and Dv y_j (the columns l_j
     * of L) */
    memcpy(rhs, k->rr, sizeof(double) * (size_t)m);
    for (int j = 0; j < p; j++) {
        const double *yj = Y + (size_t)j * vv;
        double *rj = rhs + (size_t)(j + 1) * (size_t)m;
        for (int r = 0; r < m; r++) {
            const double *Dr = k->Dv + (size_t)r * vv;
            double acc = 0.0;
            for (int i = 0; i < nv; i++)
                acc += Dr[i] * yj[i];
            rj[r] = acc;
        }
    }
    rc = dense_psd_solve_pc(k->Sm, k->Vm, k->ev, m, RANK_RTOL, p + 1, rhs, sol);
    if (rc == OK)
        rc = split_contacts(k, p + 1, sol);
    if (rc == OK) {
        for (int j = 0; j < p; j++) {                 /* S = I - E L */
            const double *lj = sol + (size_t)(j + 1) * (size_t)m;
            for (int a = 0; a < p; a++)
                S[a * p + j] = (a == j ? 1.0 : 0.0) - lj[pos[a]];
        }
        for (int a = 0; a < p; a++)
            e0[a] = sol[pos[a]];
        if (fr_solve(p, S, Sw, e0, c) != 0)
            rc = ERR_PAINLEVE;
    }
    if (rc == OK) {
        for (int r = 0; r < m; r++) {
            double acc = sol[r];
            for (int j = 0; j < p; j++)
                acc += sol[(size_t)(j + 1) * (size_t)m + r] * c[j];
            k->lam[r] = acc;
        }
        for (int i = 0; i < nv; i++) {
            double acc = base0[i];
            for (int r = 0; r < m; r++)
                acc -= k->Wt[(size_t)r * nv + i] * k->lam[r];
            for (int j = 0; j < p; j++)
                acc += Y[(size_t)j * vv + i] * c[j];
            nud[i] = acc;
        }
    }
    free(buf);
    free(pos);
    return rc;
}

/* after kinematics and forces: the unconstrained ν' (k->nud0), the loop rows and their
 * right-hand sides k->rr (with Baumgarte terms in mode 2) */
static int loop_rhs(SK *k)
{
    int rc;
    if ((rc = articulate(k)) != OK)
        return rc;
    solve(k, k->jtau, 1, k->nud0);
    if ((rc = cut_rows(k)) != OK)
        return rc;
    for (int r = 0; r < k->m; r++) {
        double b = accel_of(k, &k->rows[r]);
        if (k->mode == 2)
            b += 2.0 * k->alpha * (rate(k, &k->rows[r]) - k->rows[r].rt)
                 + k->beta * k->beta * k->rows[r].val;
        k->rr[r] = b;
    }
    return OK;
}

/* ν' with the loop rows (nud), after kinematics and forces; lam in k->lam */
static int loop_accel(SK *k, double *nud)
{
    int m = k->m, nv = k->nv, rc;
    if ((rc = loop_rhs(k)) != OK)
        return rc;
    schur(k);
    if (k->nsl > 0)
        return slide_solve(k, k->nud0, 0, nud);
    if ((rc = psd_solve(k, k->rr, k->lam)) != OK || (rc = split_contacts(k, 1, k->lam)) != OK)
        return rc;
    for (int i = 0; i < nv; i++) {
        double acc = k->nud0[i];
        for (int r = 0; r < m; r++)
            acc -= k->Wt[(size_t)r * nv + i] * k->lam[r];
        nud[i] = acc;
    }
    return OK;
}

static int accel(SK *k, const double *q, const double *qd, double *qdd)
{
    int rc;
    kinematics(k, q, qd);
    if ((rc = forces(k)) != OK)
        return rc;
    if (k->m > 0) {
        if ((rc = loop_accel(k, k->nud)) != OK)
            return rc;
    } else {
        if ((rc = articulate(k)) != OK)
            return rc;
        solve(k, k->jtau, 1, k->nud);
    }
    nud_to_qdd(k, q, qd, k->nud, qdd);
    return OK;
}

int sk_accelerations(SK *k, const double *q, const double *qd, const double *u, double *qdd)
{
    sk_set_inputs(k, u);
    if (k->n)
        memset(qdd, 0, sizeof(double) * k->n);
    return accel(k, q, qd, qdd);
}

#include "dense_qr.h"                          /* the loops' QR solve (model exchange) */

/* qdd (n) with the loop rows solved by dense_qr_accelerations (Mbar^-1 from nv bias-free
 * articulated passes, the rows' condition not squared): model exchange near a dead point
 * (engine_me.h), as kernel.c's mbk_accelerations_qr. *rank: the rows kept. Sliding or
 * sticking friction rows: the kernel's own solve (loop_accel). */
int sk_accelerations_qr(SK *k, const double *q, const double *qd, const double *u,
                        double *qdd, int *rank)
{
    int m = k->m, nv = k->nv, rc;
    *rank = m;
    if (m == 0 || k->nsl > 0 || k->nst > 0)
        return sk_accelerations(k, q, qd, u, qdd);
    sk_set_inputs(k, u);
    if (k->n)
        memset(qdd, 0, sizeof(double) * k->n);
    kinematics(k, q, qd);
    if ((rc = forces(k)) != OK || (rc = loop_rhs(k)) != OK)
        return rc;
    size_t vv = (size_t)nv;
    double *Minv = malloc(sizeof(double) * (vv * vv + vv + 1)), *e = Minv + vv * vv;
    if (!Minv)
        return ERR_ARGS;
    memset(e, 0, sizeof(double) * vv);
    for (int j = 0; j < nv; j++) {              /* row j of the symmetric Mbar^-1 */
        e[j] = 1.0;
        solve(k, e, 0, Minv + (size_t)j * vv);
        e[j] = 0.0;
    }
    rc = dense_qr_accelerations(nv, m, Minv, k->Dv, k->rr, k->nud0, QR_RANK_RTOL, k->nud,
                                rank);
    free(Minv);
    if (rc == OK)
        nud_to_qdd(k, q, qd, k->nud, qdd);
    return rc;
}

/* qdd (n) and, with sk_set_pose_data, x, xd, xdd (7 nb each: r, p and their rates) of the
 * bodies: the accelerations of the bodies from one forward pass with the final ν' */
/* the bodies' accelerations k->acc (6 each, ground zero) along the tree from the last
 * solve's k->nud and the kinematics' bias terms */
static void body_accelerations(SK *k)
{
    int nb = k->nb;
    memset(k->acc + 6 * nb, 0, sizeof(double) * 6);
    for (int row = 0; row < nb; row++) {
        const int *ri = k->ri + RI * row;
        int y = ri[2], p = ri[1], vo = ri[4];
        double *acc = k->acc + 6 * y, *S = k->S + 36 * y, *c = k->c + 6 * y, d[3], t[3];
        const double *ap = k->acc + 6 * p;
        for (int i = 0; i < 3; i++)
            d[i] = k->r[3 * y + i] - k->r[3 * p + i];
        cross(ap, d, t);
        for (int i = 0; i < 3; i++) {
            acc[i] = ap[i] + c[i];
            acc[3 + i] = ap[3 + i] + t[i] + c[3 + i];
        }
        for (int a = 0; a < k->dof[y]; a++)
            for (int i = 0; i < 6; i++)
                acc[i] += S[6 * a + i] * k->nud[vo + a];
    }
}

int sk_accelerations_full(SK *k, const double *q, const double *qd, const double *u,
                          double *qdd, double *x, double *xd, double *xdd)
{
    int rc = sk_accelerations(k, q, qd, u, qdd);
    if (rc != OK)
        return rc;
    if ((rc = sk_kinematics(k, q, qd, x, xd)) != OK)    /* the same kinematics again */
        return rc;
    int nb = k->nb;
    body_accelerations(k);
    for (int b = 0; b < nb; b++) {
        double t1[4], t2[4];
        Et_times(xd + 7 * b + 3, k->w + 3 * b, t1);
        Et_times(x + 7 * b + 3, k->acc + 6 * b, t2);
        for (int i = 0; i < 3; i++)
            xdd[7 * b + i] = k->acc[6 * b + 3 + i];
        for (int i = 0; i < 4; i++)
            xdd[7 * b + 3 + i] = 0.5 * (t1[i] + t2[i]);
    }
    return OK;
}

/* multipliers of the cut rows from the last evaluation (the kernel's own rows and signs) */
void sk_multipliers(SK *k, double *lam)
{
    memcpy(lam, k->lam, sizeof(double) * k->m);
}

static int normalise(SK *k, double *y, int rates)   /* 1 when the model has Euler parameters */
{
    int n = k->n, any = 0;
    for (int row = 0; row < k->nb; row++) {
        int useG, o = quat_offset(k, row, &useG);
        if (o < 0)
            continue;
        any = 1;
        double *p = y + o, *pd = y + n + o;
        double nn = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3]);
        for (int i = 0; i < 4; i++)
            p[i] /= nn;
        if (!rates)
            continue;
        double dp = p[0] * pd[0] + p[1] * pd[1] + p[2] * pd[2] + p[3] * pd[3];
        for (int i = 0; i < 4; i++)
            pd[i] -= dp * p[i];
    }
    return any;
}

/* Project y = (q, qd) onto the cut rows (Newton with least kinetic-energy steps
 * dν = -W S^+ phi, then ν onto Dv ν = 0), as fmu_mb.dynamics.formulations._minimal.project */
static int project(SK *k, double *y)
{
    int m = k->m, n = k->n, nv = k->nv, rc;
    double *q = y, *qd = y + n, *zero = k->qtmp, *dnu = k->nuv;
    memset(zero, 0, sizeof(double) * n);
    double prev = INFINITY;
    for (int it = 0; it < 12; it++) {
        if ((rc = charge(k)) != OK)
            return rc;
        kinematics(k, q, zero);
        if ((rc = cut_rows(k)) != OK)
            return rc;
        double err = 0.0, scale = 0.0;
        for (int r = 0; r < m; r++) {
            err = fmax(err, fabs(k->rows[r].val));
            k->rr[r] = k->rows[r].val;
        }
        for (int i = 0; i < 3 * k->nb; i++)
            scale = fmax(scale, fabs(k->r[i]));
        scale += 1.0;
        int done = dense_projection_done(it, err, prev, k->proj_tol, scale, 11);
        if (done < 0)
            return ERR_DRIFT;
        if (done > 0)
            break;
        prev = err;
        if ((rc = articulate(k)) != OK)
            return rc;
        schur(k);
        if ((rc = psd_solve(k, k->rr, k->lam)) != OK)
            return rc;
        for (int i = 0; i < nv; i++) {
            double acc = 0.0;
            for (int r = 0; r < m; r++)
                acc -= k->Wt[(size_t)r * nv + i] * k->lam[r];
            dnu[i] = acc;
        }
        add_dnu(k, q, dnu);
        normalise(k, y, 0);
    }
    kinematics(k, q, qd);
    if ((rc = cut_rows(k)) != OK || (rc = articulate(k)) != OK)
        return rc;
    schur(k);
    for (int r = 0; r < m; r++)
        k->rr[r] = rate(k, &k->rows[r]) - k->rows[r].rt;
    if ((rc = psd_solve(k, k->rr, k->lam)) != OK)
        return rc;
    qd_to_nu(k, q, qd, dnu);
    for (int i = 0; i < nv; i++)
        for (int r = 0; r < m; r++)
            dnu[i] -= k->Wt[(size_t)r * nv + i] * k->lam[r];
    nu_to_qd(k, q, dnu, qd);
    return OK;
}

/* y = (q, qd) projected in place (and normalised); tol as Settings.projection_tol */
int sk_project(SK *k, double *y)
{
    normalise(k, y, 1);
    if (k->m == 0)
        return OK;
    return project(k, y);
}

/* after an accepted step: the Euler parameters normalised and, with projection, the loop
 * rows closed; 1 when y may have moved */
static int post_step(SK *k, double *y, int *rc)
{
    int moved = normalise(k, y, 1);
    *rc = OK;
    if (k->m > 0 && k->mode == 1) {
        *rc = project(k, y);
        moved = 1;
    }
    return moved;
}
/* ------------------------------------------------------------------ integrators
 * rk4, dopri5 and dop853 with scipy's step-size control: native/integrators.h, shared with
 * the planar kernel; after each accepted step the Euler-parameter sets are normalised
 * (|p| = 1, p . p' = 0) and, with projection, the loop rows closed (post_step). */
#include "integrators.h"

int sk_set_tableau(int which, int s, int order, const double *A, const double *B,
                   const double *C, const double *E, const double *E3, const double *E5)
{
    return integ_set_tableau(which, s, order, A, B, C, E, E3, E5);
}

static int rhs(void *ctx, double t, const double *y, double *dy)
{
    SK *k = ctx;              /* the inputs are held over the call; t moves the drives */
    if (charge(k) != OK)
        return ERR_WORK;
    k->t = t;
    int n = k->n;
    memcpy(dy, y + n, sizeof(double) * n);
    int rc = accel(k, y, y + n, dy + n);
    if (rc != OK)
        return rc;
    for (int i = 0; i < 2 * n; i++)
        if (!isfinite(dy[i]))
            return ERR_NONFINITE;
    return OK;
}

static int post(void *ctx, double t, double *y, int *moved)
{
    int rc;
    ((SK *)ctx)->t = t;
    *moved = post_step(ctx, y, &rc);
    return rc;
}

/* par = [t, t_end, h (in/out), rtol, atol, max_step, step, t_fail (out), max_steps (0: no
 * limit), fsal (in/out, as the planar mbk_advance: 1 or 2 when y holds (q, qd, f))]; u the
 * inputs */
int sk_advance(SK *k, int method, double *par, double *y, const double *u, int *nfev)
{
    sk_set_inputs(k, u);
    if (par[1] <= par[0]) {
        *nfev = 0;
        par[7] = par[0];
        return OK;
    }
    int fs = par[9] == 2.0 ? 2 : 1;
    Integ I = {2 * k->n, k->K, k->ytmp, k->ynew, k->fy, k->scale, k->err, rhs, post, k,
               (long)par[8], par[9] != 0.0 ? y + 2 * k->n : NULL, &fs};
    int rc = integ_advance(&I, method, par[0], par[1], y, &par[2], par[3], par[4], par[5],
                           par[6], nfev, &par[7]);
    if (par[9] != 0.0)
        par[9] = fs;
    return rc;
}

/* One accepted dopri5 (method 0) or dop853 (1) step for an event loop that keeps the dense
 * output and the drift control itself (integ_one_step; as the planar mbk_step): par = [t
 * (in/out), t_end, h (in: hint or 0, out: next step size), rtol, atol, max_step, h_taken
 * (out)]; y (2 n): in the state at t, out the new state (not normalised); Kout (s + 1 rows of
 * 2 n): in f(t, y) in its first row when have_f, out the stages, K[s] = f(t_new, y). */
int sk_step(SK *k, int method, double *par, double *y, const double *u, int have_f,
            double *Kout, int *nfev)
{
    Integ I = {2 * k->n, k->K, k->ytmp, k->ynew, k->fy, k->scale, k->err, rhs, NULL, k, 0, NULL, NULL};
    sk_set_inputs(k, u);
    return integ_one_step(&I, method, par, y, have_f, Kout, nfev);
}

/* ------------------------------------------------------------------ contact events
 * The contact event loop in C (native/event_loop.h, shared with the planar kernel) over this
 * kernel: native/spatial_events.c, API in its header comment. */
#include "spatial_events.c"
