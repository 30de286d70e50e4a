/*
 * fmu_mb engine (engine.h) over the two kernels: kernel.c (planar trees by the articulated-body
 * algorithm, loop rows, drives, input gains, force elements) and spatial_kernel.c, through their
 * exported mbk_* and sk_* functions, on the model data made by fmu_mb/engine/data.py (layout:
 * engine_data.h).
 *
 * What the Python side computes per state lives here too, so that the in-process host
 * (fmu_mb/engine/engine.py) and the native FMU give the same numbers:
 *   - the initial state (fmu_mb.mechanics.assembly.assemble then
 *     fmu_mb.dynamics.formulations._minimal.initial_state): tree placement from the declared
 *     poses and the initial values or guesses, Newton with least M-norm steps on the model's
 *     rows and the given coordinates, angles to the turn nearest the placement, least M-norm
 *     velocities with the given rates, then q, qd of the tree;
 *   - contacts: the event loop of events.c (planar, included by kernel.c) or spatial_events.c
 *     (spatial, included by spatial_kernel.c; both native/event_loop.h) steps a model with
 *     contacts; its records (impacts, last time, last impulse, energy lost, active per
 *     contact) are part of the state; the contacts' outputs come from mbk_events_outputs, the
 *     reactions during a persistent contact from the Newton-Euler multipliers with the
 *     contact's gap row among the rows;
 *   - the outputs (fmu_mb.dynamics.outputs, formulation 'recursive'): bodies, joint
 *     coordinates, reactions and drive efforts from the Newton-Euler multipliers
 *     (D D' lam = D (f - M xdd), minimum norm), element values, markers, energies and the
 *     constraint residuals.
 *
 * No global mutable state: each MbEngine owns its copy of the data, its kernel and its work
 * arrays; the kernels' integrator tableaus are compiled-in constants and the kernels' optional
 * LAPACK eigen-solver is never set here (the Jacobi eigen-decomposition of dense.h serves the
 * rank-deficient solves, in process and in the native FMU alike).
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "laws.h"
#include "engine_data.h"
#ifdef MBE_HAVE_PARAMS
#include "params.h"
#endif

enum { OK = 0, ERR_NONFINITE = 1, ERR_NOMEM = 2 /* a workspace (reserve) */ };
#include "dense.h"
#include "planar_pairs.h"             /* planar shape pairs (A_DPAIR), shared with kernel.c */
#define PAIRD 19                      /* doubles per shape-pair record (kernel.c) */

/* the kernels' exported functions (kernel.c, spatial_kernel.c) */
void *mbk_create(int nb, int n, const int *ji, const double *jd, int ne, const int *ei,
                 const double *ed, const double *mass, const double *inertia, double gx,
                 double gy);
void mbk_free(void *k);
int mbk_set_rows(void *k, int m, const int *ri, const double *rd);
int mbk_set_drives(void *k, int nd, const int *di, int ndp, const double *dp);
int mbk_set_gains(void *k, int ng, int ni, const double *G);
int mbk_set_pairs(void *k, int np, const double *pd);
void mbk_set_stabilization(void *k, int mode, double alpha, double beta, double proj_tol);
int mbk_advance(void *k, int method, double *par, double *y, const double *u, int *nfev);
int mbk_accelerations(void *k, double t, const double *q, const double *qd, const double *u,
                      double *qdd, double *x, double *xd, double *xdd);
int mbk_accelerations_qr(void *k, double t, const double *q, const double *qd,
                         const double *u, double *qdd, int *rank);
void mbk_kinematics(void *k, const double *q, const double *qd, double *x, double *xd);
int mbk_loop_rows(void *k, const double *q, double *phi, double *Dq);
int mbk_applied_forces(void *k, const double *q, const double *qd, const double *u, double *f);
int mbk_last_error_index(void *k);
/* the contact event loop (events.c, included in kernel.c) */
void *mbk_events_create(void *base, int nc, const int *ci, const double *cd, const double *e,
                        int ni);
void mbk_events_free(void *ev);
int mbk_advance_events(void *ev, int method, double *par, double *y, const double *u,
                       double *rec);
int mbk_advance_events_to_impact(void *ev, int method, double *par, double *y,
                                 const double *u, double *rec, int *impact);
int mbk_events_outputs(void *ev, double t, const double *y, const double *u,
                       const double *rec, double *gap, double *force);
int mbk_events_accelerations(void *ev, double t, const double *q, const double *qd,
                             const double *u, const double *rec, double *qdd, double *x,
                             double *xd, double *xdd);
int mbk_events_set_friction(void *ev, const double *mu);
int mbk_events_set_points(void *ev, const int *pt);
int mbk_events_error_contact(void *ev);
int mbk_events_initial(void *ev, double t, const double *y, const double *u, double *rec,
                       double contact_tol, double contact_velocity);
int mbk_events_initial_impact(void *ev, double t, double *y, const double *u, double *rec,
                              double ctol, double cvel, int stab, double alpha, double beta,
                              double ptol, int *impacts);
int sk_events_initial_impact(void *ev, double t, double *y, const double *u, double *rec,
                             double ctol, double cvel, int stab, double alpha, double beta,
                             double ptol, int *impacts);
int mbk_events_outputs_fr(void *ev, double t, const double *y, const double *u,
                          const double *rec, double *gap, double *force, double *ft,
                          double *vt);
int mbk_events_set_joint_friction(void *ev, int nj, const int *ji, const double *bound,
                                  const int *jlim);
int mbk_events_joint_outputs(void *ev, double t, const double *y, const double *u,
                             const double *rec, double *gap, double *force, double *ft,
                             double *vt, double *jout);
#define EV_REC 5                      /* per contact: impacts, last time, last impulse,
                                         energy loss, active (events.c) */
#define EV_REC_FR 9                   /* with friction also stick, slip direction (2),
                                         sliding loss (event_loop.h) */
#define SKD 36                        /* doubles per spatial contact (engine_spatial.h) */
#define EV_NPAR 19

#define MBE_HARD_MAX_STEPS 200000L    /* most integrator steps of one do_step, whatever the
                                         settings say (settings.max_steps may lower it): the
                                         Python FMU's cap for the compiled integrators */
/* The work budget of one do_step, counted, not timed, so that results stay deterministic: a
 * right-hand side and a Newton iteration of the projection cost rhs_unit(e) each (an estimate
 * of their cost from the model's sizes, about 1 us of a 2020s x86-64 core per unit), the
 * planar kernel's loop solves their operation count on top (native/work.h); a contact
 * model's event loop gets as many steps as the budget pays for at work_unit(e) * (stages + 16)
 * a step. MBE_WORK_BUDGET units are about 1 s of such a core, so that no call takes more than
 * a few seconds on a busy machine, whatever the settings and inputs. */
#define MBE_WORK_BUDGET 1.0e6
#define MBE_WORK_CODE 12                /* the kernels' ERR_WORK */
#define PI 3.141592653589793            /* numpy.pi */
#define MBE_STATE_LIMIT 1e12          /* |q|, |qd| beyond: a diverged state */
#define JI 5
#define JD 8
#define EI 5
#define ED 10
#define RI 3
#define RD 8
#define DI 4

/* method auto (3): dop853 for an interval when dopri5's last step-size proposal is below the
 * interval / AUTO_SPLIT (dopri5 would take 2 or more steps of 6 right-hand sides where dop853
 * takes one of 12, at a smaller error), its first step the smaller of the interval and 10
 * times the proposal; the proposal then grows by AUTO_GROW per interval, so dopri5 is tried
 * again after a few; the contact event loop runs dopri5. The same rule in Python:
 * fmu_mb.dynamics.integrate.auto_method. */
#define AUTO_SPLIT 1.5
#define AUTO_GROW 1.1
/* the method of the contact event loop (auto: dopri5) */
#define EV_METHOD(e) ((e)->set.method == 3 ? 0 : (e)->set.method)

/* a spatial constraint row by body blocks (engine_spatial.h): the bodies it touches, in
 * ascending order, and the row's 7 entries of each (the row is zero elsewhere) */
#define SPROW_BLOCKS 4
typedef struct {
    int n, b[SPROW_BLOCKS];
    double v[SPROW_BLOCKS][7];
} SpRow;

/* a planar constraint row by body blocks (the reactions of mbe_outputs_groups): the bodies
 * it touches (at most two, ascending) and its 3 entries of each, the numbers of the dense
 * row of model_rows */
typedef struct {
    int n, b[2];
    double v[2][3];
} PlRow;

/* the rows of a k x nc matrix by their nonzero entries (the initialisation's minimum-norm
 * corrections): row a's columns col[start[a] .. start[a + 1]) ascending, their values val */
typedef struct {
    int k, nc;
    const int *start, *col;
    const double *val;
} NzRows;
/* the nonzero entries a row can have: a spatial row's blocks, a planar row's two bodies */
#define NZ_PER_ROW(e) ((e)->kind ? 7 * SPROW_BLOCKS : 6)

struct MbEngine {
    /* the data (copied): ints, the doubles as given (base) and as patched by the parameters */
    int nints, ndoubles, ncode, nconst, nchars;
    int *ints, *code;
    double *base, *d, *consts;
    char *chars;
    const char **pname, **jname;
    int off[MBE_N_ARRAYS], cnt[MBE_N_ARRAYS];
    int kind, nb, n, nj, nrows, ncj, ne, m, nd, nel, nmark, ni, nout, np, nplace, nv, nc, ncon;
    int ncp;                          /* spatial couplers */
    double *params;            /* the current parameter values */
    void *kern;                /* the kernel of the current parameters */
    MbeSettings set;
    int initialized;
    double t, h, *y;           /* the state: t, y = (q, qd), the integrator's next step */
    /* first same as last: f(fsal_t, fsal_y) with inputs fsal_u, the last dopri5/dop853
     * step's final stage, reused by the next step when t, y and the inputs are still those
     * (bit for bit) and no parameter or setting changed since (fsal = 1: valid) */
    int fsal;
    double fsal_t, *fsal_f, *fsal_y, *fsal_u;
    /* workspace */
    double *ytmp, *qdd, *q2, *qd2, *x, *xd, *xdd, *xa, *xda, *f, *phi, *phit, *w, *rhs, *lam,
        *r, *xe, *xde, *u0, *eout;
    /* the workspaces whose size grows faster than the model (dense rows x columns, the Gram
     * matrix's envelope or dense square and its factor), allocated on first use and grown
     * by reserve(): D, the dense rows' Jacobian (linearization, model exchange, the spatial
     * initial rates); A, the fine cut's dense rows (the assembly's retries); S and V, the
     * Gram matrix and its factor or eigenvectors; ncap_*: their capacities in doubles */
    double *D, *A, *S, *V;
    size_t ncap_D, ncap_A, ncap_S, ncap_V;
    double *rot;               /* spatial: (nb + 1) rotations of the tree placement */
    int *ogroup;               /* per output its group (MBE_GROUP_*) */
    /* contacts: the event loop of the current kernel, the records (ncon x EV_REC: part of
     * the state) and their copy during a step, the gaps and forces of the outputs */
    void *ev;
    double *rec, *rectmp, *gap, *cforce;
    char warning[512];         /* the last mbe_initialize's warning ("" when none) */
    void *me;                  /* model exchange (engine_me.h): the closure's workspace */
    /* friction (spatial models, event_loop.h): records of nrec = 9 doubles per contact (else
     * EV_REC), the friction forces and slip velocities of the outputs (2 per contact) */
    int nrec;
    double *cft, *cvt;
    /* spatial models: the rows by body blocks (engine_spatial.h), two sets of nr rows and
     * the workspace of their Gram matrix's envelope (ints) */
    SpRow *sr, *sr2;
    int *srw;
    double *srd;
    ptrdiff_t *sro;            /* the rows of their Gram matrix's packed envelope (ENV_ROW) */
    /* planar models: the outputs' rows by body blocks, at the dynamics' motion (pr) and at
     * the state's (pr + nr); srw and sro are their Gram matrix's envelope too */
    PlRow *pr;
    /* the rows of a minimum-norm correction by their nonzero entries (NzRows): the rows'
     * starts and columns (nr + 1 + nr NZ_PER_ROW ints), their values (nr NZ_PER_ROW) */
    int *nzi;
    double *nzv;
    /* joints' Coulomb friction (planar, the event loop's joints): njf frictional joints,
     * jfi (njf, 3) their tree coordinates and parent and child bodies, jfb their bounds, jfk
     * their model joints, jflim (ncon) the frictional joint each contact limits (-1), jfo
     * (njf, 3) their outputs (friction, state, loss); their records (3 each) follow the
     * contacts'; spatial (A_ISJF): jfi (njf, 3) their kind (1 revolute, 2 prismatic), parent
     * and child, jfq and jfnu their tree coordinates in q and in the velocity coordinates
     * (the joint's coordinate, also along a tree row that runs from the child to the
     * parent), jfd (njf, 24) their points and frames (of the current parameters) */
    int njf;
    int *jfi, *jfk, *jflim, *jfq, *jfnu;
    double *jfb, *jfo, *jfd;
    int cfr;                   /* spatial: some contact has Coulomb friction */
};

/* the records' doubles: nrec per contact, 3 per frictional joint */
static size_t rec_size(const MbEngine *e)
{
    return (size_t)e->nrec * e->ncon + 3 * (size_t)e->njf;
}

static void me_free(MbEngine *e);

/* the spatial part (engine_spatial.h, included at the end) */
static int check_spatial_data(MbEngine *e, char *err, size_t errlen);
static void *make_spatial_kernel(MbEngine *e);
static MbeStatus spatial_initialize(MbEngine *e, double t0, char *err, size_t errlen);
static const char *kernel_error(int rc);
static double absmax(const double *v, int n);
static double max_abs_nan(double m, double v);
static void me_zeno_restart(MbEngine *e);
static int all_finite(const double *v, int n);
static MbeStatus spatial_outputs(MbEngine *e, const double *u, int groups, double *y,
                                 char *err, size_t errlen);
/* contacts in 3-D (engine_spatial.h's contacts block): the event loop of spatial_events.c */
static void *spatial_make_events(MbEngine *e, void *k);
static int check_spatial_contacts(MbEngine *e, char *err, size_t errlen);
int sk_set_contacts(void *k, int nk, const int *ki, const double *kd);
void sk_events_free(void *ev);
int sk_advance_events(void *ev, int method, double *par, double *y, const double *u,
                      double *rec);
int sk_advance_events_to_impact(void *ev, int method, double *par, double *y, const double *u,
                                double *rec, int *impact);
void sk_free(void *k);
void sk_set_stabilization(void *k, int mode, double alpha, double beta, double proj_tol);
int sk_advance(void *k, int method, double *par, double *y, const double *u, int *nfev);
void mbk_set_budget(void *k, double budget, double unit);
double mbk_spent(const void *k);
void sk_set_budget(void *k, double budget, double unit);
double sk_spent(const void *k);

/* ------------------------------------------------------------------ small helpers */
static void msg(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void clear_msg(char *err, size_t errlen)     /* (every call clears: no vsnprintf) */
{
    if (err && errlen > 0)
        err[0] = '\0';
}

static const int *IA(const MbEngine *e, int a) { return e->ints + e->off[a]; }
static double *DA(const MbEngine *e, int a) { return e->d + e->off[a]; }

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static double rdf64(const unsigned char *p)      /* a little-endian IEEE double, any host */
{
    uint64_t u = (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static int is_int_array(int a)
{
    static const char kinds[MBE_N_ARRAYS + 1] =
        "IDDDI" "IDIDDD" "IDIDD" "IDIDIIIDID" "IDIDDI" "IDDDIDIDD" "IDDDI" "IDDI" "D" "IDI" "D" "D" "D"
        "I" "I" "I";
    return kinds[a] == 'I';
}

/* Python's float % (numpy's remainder): the result takes the sign of b */
static double pymod(double a, double b)
{
    double m = fmod(a, b);
    if (m != 0.0) {
        if ((b < 0) != (m < 0))
            m += b;
    } else {
        m = copysign(0.0, b);
    }
    return m;
}

static void rot(double phi, const double *s, double *o)
{
    double c = cos(phi), sn = sin(phi);
    o[0] = c * s[0] - sn * s[1];
    o[1] = sn * s[0] + c * s[1];
}

/* ------------------------------------------------------------------ drive laws */
/* s(t), s'(t), s''(t) of drive dr (kernel.c's law(): polynomial by Horner or harmonic) */
static void law(const MbEngine *e, int dr, double t, double *v)
{
    const int *Dd = IA(e, A_IDI) + DI * dr;
    drive_law_eval(Dd[1] == 2, DA(e, A_DDP) + Dd[2], Dd[3], t, v);
}

/* ------------------------------------------------------------------ planar primitives
 * fmu_mb.mechanics.kinematics on the extended x (ground = body nb at rest at the origin):
 * value and Jacobian (6: x_p, y_p, phi_p, x_c, y_c, phi_c) of one row */
typedef struct {
    double Asp[2], Asc[2], d[2];
} Frames;

static void frames(const double *xe, int p, int c, const double *sp, const double *sc,
                   Frames *F)
{
    rot(xe[3 * p + 2], sp, F->Asp);
    rot(xe[3 * c + 2], sc, F->Asc);
    F->d[0] = xe[3 * c] + F->Asc[0] - xe[3 * p] - F->Asp[0];
    F->d[1] = xe[3 * c + 1] + F->Asc[1] - xe[3 * p + 1] - F->Asp[1];
}

/* kind: R_PX, R_PY (point difference), R_ANG (relative angle), R_PRJ (projection on A_p w0),
 * R_DST (distance); val without offsets; J (6) */
static int primitive(int kind, const double *xe, int p, int c, const double *sp,
                     const double *sc, const double *w0, double *val, double *J)
{
    Frames F;
    for (int i = 0; i < 6; i++)
        J[i] = 0.0;
    if (kind == R_ANG) {
        *val = xe[3 * c + 2] - xe[3 * p + 2];
        J[2] = -1.0;
        J[5] = 1.0;
        return OK;
    }
    frames(xe, p, c, sp, sc, &F);
    if (kind == R_PX) {
        *val = F.d[0];
        J[0] = -1.0;
        J[2] = F.Asp[1];
        J[3] = 1.0;
        J[5] = -F.Asc[1];
    } else if (kind == R_PY) {
        *val = F.d[1];
        J[1] = -1.0;
        J[2] = -F.Asp[0];
        J[4] = 1.0;
        J[5] = F.Asc[0];
    } else if (kind == R_PRJ) {
        double w[2], pw[2];
        rot(xe[3 * p + 2], w0, w);
        pw[0] = -w[1];
        pw[1] = w[0];
        *val = F.d[0] * w[0] + F.d[1] * w[1];
        J[0] = -w[0];
        J[1] = -w[1];
        J[2] = -(-F.Asp[1] * w[0] + F.Asp[0] * w[1]) + (F.d[0] * pw[0] + F.d[1] * pw[1]);
        J[3] = w[0];
        J[4] = w[1];
        J[5] = -F.Asc[1] * w[0] + F.Asc[0] * w[1];
    } else if (kind == R_DST) {
        double l = sqrt(F.d[0] * F.d[0] + F.d[1] * F.d[1]);
        if (!(l > 0.0))
            return 1;
        double ex = F.d[0] / l, ey = F.d[1] / l;
        *val = l;
        J[0] = -ex;
        J[1] = -ey;
        J[2] = -(ex * -F.Asp[1] + ey * F.Asp[0]);
        J[3] = ex;
        J[4] = ey;
        J[5] = ex * -F.Asc[1] + ey * F.Asc[0];
    } else {
        return 1;
    }
    return OK;
}

static double jrate(const double *J, const double *xde, int p, int c)
{
    return J[0] * xde[3 * p] + J[1] * xde[3 * p + 1] + J[2] * xde[3 * p + 2] +
           J[3] * xde[3 * c] + J[4] * xde[3 * c + 1] + J[5] * xde[3 * c + 2];
}

static void extend(const MbEngine *e, const double *x, double *xe)
{
    memcpy(xe, x, sizeof(double) * 3 * e->nb);
    xe[3 * e->nb] = xe[3 * e->nb + 1] = xe[3 * e->nb + 2] = 0.0;
}

/* the gap and rows of planar contact i, a shape pair (its A_DPAIR record: A_DCON's first
 * slot), at the absolute coordinates x (3 nb; the ground at rest at the origin), rates zero
 * (planar_pairs.h: o->jn, o->jt on the bodies' (vx, vy, w), a's then b's) */
static void pair_at(const MbEngine *e, int i, const double *x, mbpp_rows_t *o)
{
    const int *R = IA(e, A_ICON) + 3 * i;
    const double *D = DA(e, A_DPAIR) + (size_t)PAIRD * (size_t)DA(e, A_DCON)[8 * i];
    mbpp_body B[2];
    for (int j = 0; j < 2; j++) {
        int b = R[1 + j];
        memset(&B[j], 0, sizeof B[j]);
        B[j].c = 1.0;
        if (b < e->nb) {
            B[j].r[0] = x[3 * b];
            B[j].r[1] = x[3 * b + 1];
            B[j].c = cos(x[3 * b + 2]);
            B[j].s = sin(x[3 * b + 2]);
        }
    }
    mbpp_rows((int)D[0], D + 3, D + 7, D + 11, (int)D[1], D + 5, D + 13, D + 17, (int)D[2],
              &B[0], &B[1], o);
}

/* compiled row r at xe (extend): phi[r], phit[r], its Jacobian J (6: parent's, child's)
 * and bodies *p, *c (>= nb: the ground); OK or not OK (the row is undefined there) */
static int model_row(const MbEngine *e, int r, const double *xe, double t, double *phi,
                     double *phit, double *J, int *p, int *c)
{
    const int *R = IA(e, A_IROWS) + 4 * r;
    const double *P = DA(e, A_DROWS) + 7 * r;
    int kind = R[0];
    int prim = kind == R_DANG ? R_ANG : kind == R_DPRJ ? R_PRJ : kind;
    double val;
    *p = R[1];
    *c = R[2];
    if (primitive(prim, xe, R[1], R[2], P, P + 2, P + 4, &val, J) != OK)
        return !OK;
    double v = val - (kind == R_PX || kind == R_PY || kind == R_PRJ || kind == R_DPRJ
                      ? 0.0 : P[6]);
    phit[r] = 0.0;
    if (kind == R_DANG || kind == R_DPRJ) {
        double s[3];
        law(e, R[3], t, s);
        v -= s[0];
        phit[r] = -s[1];
    }
    phi[r] = v;
    return OK;
}

/* every compiled row at x (constraints.evaluate without conv): phi (nrows), phi_t (nrows)
 * and D (nrows x 3 nb) when D is not NULL */
static int model_rows(const MbEngine *e, const double *x, double t, double *phi, double *phit,
                      double *D)
{
    int nb = e->nb, nc = 3 * nb;
    double *xe = e->xe;
    extend(e, x, xe);
    if (D)
        memset(D, 0, sizeof(double) * (size_t)e->nrows * nc);
    for (int r = 0; r < e->nrows; r++) {
        double J[6];
        int p, c;
        if (model_row(e, r, xe, t, phi, phit, J, &p, &c) != OK)
            return r + 1;
        if (D) {
            double *Dr = D + (size_t)r * nc;
            for (int i = 0; i < 3; i++) {
                if (p < nb)
                    Dr[3 * p + i] += J[i];
                if (c < nb)
                    Dr[3 * c + i] += J[3 + i];
            }
        }
    }
    return OK;
}

/* R: the row of Jacobian s J (6: parent p's entries, child c's; bodies >= nb are the
 * ground) by body blocks, each entry 0.0 + s J[i] (+ s J[3 + i] when p = c), the numbers
 * of model_rows' dense row */
static void plrow_set(PlRow *R, int nb, int p, int c, const double *J, double s)
{
    int lo = p < c ? p : c, hi = p < c ? c : p;
    R->n = 0;
    for (int k = 0; k < 2; k++) {
        int b = k ? hi : lo;
        if (b >= nb || (k && hi == lo))
            continue;
        double *v = R->v[R->n];
        R->b[R->n++] = b;
        for (int i = 0; i < 3; i++) {
            v[i] = 0.0;
            if (b == p)
                v[i] += s * J[i];
            if (b == c)
                v[i] += s * J[3 + i];
        }
    }
}

/* model_rows with the rows by body blocks (R, nrows) */
static int model_rows_pl(const MbEngine *e, const double *x, double t, double *phi,
                         double *phit, PlRow *R)
{
    double *xe = e->xe;
    extend(e, x, xe);
    for (int r = 0; r < e->nrows; r++) {
        double J[6];
        int p, c;
        if (model_row(e, r, xe, t, phi, phit, J, &p, &c) != OK)
            return r + 1;
        plrow_set(R + r, e->nb, p, c, J, 1.0);
    }
    return OK;
}

/* the row R times v (3 nb), over its blocks in the order of the columns, from s */
static double plrow_dot(const PlRow *R, const double *v, double s)
{
    for (int k = 0; k < R->n; k++)
        for (int i = 0; i < 3; i++)
            s += R->v[k][i] * v[3 * R->b[k] + i];
    return s;
}

/* the product of rows P and Q over their shared columns, in the columns' order (the dense
 * sum's number: the other products are exact zeros) */
static double plrow_gram(const PlRow *P, const PlRow *Q)
{
    double s = 0.0;
    for (int i = 0, j = 0; i < P->n && j < Q->n;) {
        if (P->b[i] < Q->b[j]) {
            i++;
        } else if (P->b[i] > Q->b[j]) {
            j++;
        } else {
            for (int l = 0; l < 3; l++)
                s += P->v[i][l] * Q->v[j][l];
            i++;
            j++;
        }
    }
    return s;
}

/* joint coordinate i (coord_joints order) at x, xd: value and rate; J (6) when asked */
static int coordinate(const MbEngine *e, int i, const double *xe, const double *xde,
                      double *val, double *rate, double *J6, int *pp, int *cc)
{
    int k = IA(e, A_ICOORD)[2 * i];
    const int *Jn = IA(e, A_IJOINT) + 6 * k;
    const double *P = DA(e, A_DJOINT) + 7 * k;
    double J[6], v;
    int p = Jn[1], c = Jn[2];
    if (Jn[0] == JK_REV) {
        primitive(R_ANG, xe, p, c, P, P + 2, NULL, &v, J);
        v -= P[4];
    } else {
        primitive(R_PRJ, xe, p, c, P, P + 2, P + 5, &v, J);
    }
    *val = v;
    *rate = xde ? jrate(J, xde, p, c) : 0.0;
    if (J6)
        memcpy(J6, J, sizeof J);
    if (pp)
        *pp = p;
    if (cc)
        *cc = c;
    return OK;
}

/* *p holding at least n doubles: grown (realloc, its entries kept, the new ones zero) when
 * *cap < n; OK, or ERR_NOMEM (*p and *cap unchanged) */
static int reserve(double **p, size_t *cap, size_t n)
{
    if (n <= *cap)
        return OK;
    double *q = realloc(*p, sizeof(double) * n);
    if (!q)
        return ERR_NOMEM;
    memset(q + *cap, 0, sizeof(double) * (n - *cap));
    *p = q;
    *cap = n;
    return OK;
}

/* y = S^+ rhs (fmu_mb.linalg.schur_solve) for S (m x m, destroyed) */
static int psd(MbEngine *e, double *S, int m, const double *rhs, double *y)
{
    if (reserve(&e->V, &e->ncap_V, (size_t)m * m) != OK)
        return ERR_NOMEM;
    return dense_psd_solve(S, e->V, e->w, m, NULL, NULL, 0, rhs, y);
}

/* y = (R R')^+ rhs for the nt planar rows R, as psd on the dense R R', the rows taken in the
 * order of their first bodies (a stable counting sort: a loop's closing rows then sit next to
 * the rows of its bodies, so that the envelope is a band for a chain of loops). The lower
 * envelope comes from the rows' bodies (position p's first column is the first position that
 * shares a body with it; the entries before the dense envelope are exact zeros, and the
 * factor's entries there too), R R' and its factor are packed on it (ENV_ROW: O(nt b) work and
 * memory for a band of width b, not O(nt^3)); when the factor is not accepted (near a
 * singular pose) psd on the dense R R' in that order. The solution is put back in the rows'
 * order. Workspace: e->srw (3 nt + 2 nb + 2 ints), e->srd (2 nt), e->sro, e->S, e->V. */
static int plrows_psd_solve(MbEngine *e, const PlRow *R, int nt, const double *rhs, double *y)
{
    int nb = e->nb, *env = e->srw, *bfirst = env + 2 * nt, *perm = bfirst + nb,
        *key = perm + nt;
    ptrdiff_t *off = e->sro;
    double *S, *bp = e->srd, *yp = e->srd + nt;
    for (int b = 0; b <= nb + 1; b++)
        key[b] = 0;
    for (int a = 0; a < nt; a++)
        key[(R[a].n ? R[a].b[0] : nb) + 1]++;
    for (int b = 0; b <= nb; b++)
        key[b + 1] += key[b];
    for (int a = 0; a < nt; a++)                     /* perm: positions -> rows */
        perm[key[R[a].n ? R[a].b[0] : nb]++] = a;
#define PR(p) (R + perm[p])
    for (int b = 0; b < nb; b++)
        bfirst[b] = nt;
    for (int p = 0; p < nt; p++) {
        int f = p;
        for (int k = 0; k < PR(p)->n; k++) {
            int b = PR(p)->b[k];
            if (bfirst[b] == nt)
                bfirst[b] = p;
            f = bfirst[b] < f ? bfirst[b] : f;
        }
        env[p] = f;
        bp[p] = rhs[perm[p]];
    }
    size_t size = dense_env_offsets(env, nt, off);
    if (reserve(&e->S, &e->ncap_S, size) != OK || reserve(&e->V, &e->ncap_V, size) != OK)
        return ERR_NOMEM;
    S = e->S;
    for (int p = 0; p < nt; p++)
        for (int l = env[p]; l <= p; l++)
            S[off[p] + l] = plrow_gram(PR(p), PR(l));
    dense_envelope_last(env, nt);
    int rc = OK;
    if (!dense_env_chol_solve(S, off, env, e->V, nt, RANK_RTOL, 1, bp, yp, 0.0, NULL)) {
        if (reserve(&e->S, &e->ncap_S, (size_t)nt * nt) != OK)
            return ERR_NOMEM;
        S = e->S;
        for (int p = 0; p < nt; p++)
            for (int l = 0; l <= p; l++)
                S[(size_t)p * nt + l] = S[(size_t)l * nt + p] = plrow_gram(PR(p), PR(l));
        rc = psd(e, S, nt, bp, yp);
    }
#undef PR
    for (int p = 0; p < nt; p++)
        y[perm[p]] = yp[p];
    return rc;
}

/* the fine cut's solve S^+ r -> e->lam (S destroyed): eigenvalues below FINE_RTOL x the
 * largest dropped (fmu_mb.mechanics.assembly._min_norm_fine) */
#define FINE_RTOL 1e-13
#define FINE_REFINE 3
static int fine_solve(MbEngine *e, double *S, int k, const double *r)
{
    for (int i = 0; i < k * k; i++)
        if (!isfinite(S[i]))
            return ERR_NONFINITE;
    if (reserve(&e->V, &e->ncap_V, (size_t)k * k) != OK)
        return ERR_NOMEM;
    dense_jacobi(S, e->V, e->w, k);      /* component i of eigenvector j: V[j + i k] */
    double wmax = 0.0;
    for (int i = 0; i < k; i++)
        wmax = fmax(wmax, e->w[i]);
    double cut = FINE_RTOL * fmax(wmax, 1e-300);
    for (int a = 0; a < k; a++)
        e->lam[a] = 0.0;
    for (int j = 0; j < k; j++) {
        if (!(e->w[j] > cut))
            continue;
        double t = 0.0;
        for (int i = 0; i < k; i++)
            t += e->V[j + i * k] * r[i];
        t /= e->w[j];
        for (int i = 0; i < k; i++)
            e->lam[i] += e->V[j + i * k] * t;
    }
    return OK;
}

/* S = A M^-1 A' (k x k, symmetric) for A (k x nc, dense: the fine cut) over its nonzeros: a
 * row's entries span one or two bodies, so S is banded for a chain; each entry sums its terms
 * in column order as the dense product would, less the exact zeros. One pass finds each row's
 * span (its first and last nonzero column); an entry then sums over the overlap of its two
 * rows' spans only (none when they do not overlap). Without memory for the spans, the dense
 * loops. */
static void gram(const double *A0, int k, int nc, const double *Minv, double *S)
{
#define A_ROW(a) (A0 + (size_t)(a) * nc)
    int *lo = malloc(sizeof(int) * (2 * (size_t)k + 1)), *hi = lo ? lo + k : NULL;
    if (lo) {
        for (int a = 0; a < k; a++) {
            const double *Aa = A_ROW(a);
            int l = 0, h = nc - 1;
            while (l < nc && Aa[l] == 0.0)
                l++;
            while (h >= l && Aa[h] == 0.0)
                h--;
            lo[a] = l;
            hi[a] = h;                     /* h < l: a zero row */
        }
        for (int a = 0; a < k; a++) {
            const double *Aa = A_ROW(a);
            double *Sa = S + (size_t)a * k;
            for (int b = 0; b <= a; b++) {
                int l = lo[a] > lo[b] ? lo[a] : lo[b], h = hi[a] < hi[b] ? hi[a] : hi[b];
                const double *Ab = A_ROW(b);
                double s = 0.0;
                for (int i = l; i <= h; i++)
                    if (Aa[i] != 0.0 && Ab[i] != 0.0)
                        s += Aa[i] * Minv[i] * Ab[i];
                Sa[b] = s;
            }
        }
        for (int a = 0; a < k; a++)
            for (int b = 0; b < a; b++)
                S[(size_t)b * k + a] = S[(size_t)a * k + b];
    } else {
        for (int a = 0; a < k; a++)
            for (int b = 0; b <= a; b++) {
                double s = 0.0;
                for (int i = 0; i < nc; i++)
                    s += A_ROW(a)[i] * Minv[i] * A_ROW(b)[i];
                S[a * k + b] = S[b * k + a] = s;
            }
    }
    free(lo);
#undef A_ROW
}

/* the layout of a row type by body blocks (PlRow, SpRow: the count of blocks first, then the
 * blocks' bodies b and their w entries each v) for nzrows and blocks_dense */
#define ROW_BLOCKS(T, w) sizeof(T), offsetof(T, b), offsetof(T, v), (w)

/* k rows by body blocks (size bytes each, the blocks' bodies at byte boff, their w entries
 * each at voff: ROW_BLOCKS) by their nonzero entries, in e's workspace: an exact zero of a
 * block is not one (the nonzeros of the dense rows) */
static NzRows nzrows(MbEngine *e, const void *rows, size_t size, size_t boff, size_t voff,
                     int w, int k)
{
    int *start = e->nzi, *col = start + k + 1, m = 0;
    double *val = e->nzv;
    for (int a = 0; a < k; a++) {
        const char *row = (const char *)rows + (size_t)a * size;
        const int *b = (const int *)(row + boff);
        const double *v = (const double *)(row + voff);
        start[a] = m;
        for (int j = 0; j < *(const int *)row; j++)
            for (int i = 0; i < w; i++)
                if (v[j * w + i] != 0.0) {
                    col[m] = w * b[j] + i;
                    val[m++] = v[j * w + i];
                }
    }
    start[k] = m;
    return (NzRows){k, w * e->nb, start, col, val};
}

/* the k rows by body blocks (ROW_BLOCKS) as the dense k x w nb matrix A */
static void blocks_dense(const void *rows, size_t size, size_t boff, size_t voff, int w,
                         int k, int nb, double *A)
{
    size_t nc = (size_t)w * nb;
    memset(A, 0, sizeof(double) * (size_t)k * nc);
    for (int a = 0; a < k; a++) {
        const char *row = (const char *)rows + (size_t)a * size;
        const int *b = (const int *)(row + boff);
        const double *v = (const double *)(row + voff);
        for (int j = 0; j < *(const int *)row; j++)
            memcpy(A + (size_t)a * nc + (size_t)w * b[j], v + j * w, sizeof(double) * w);
    }
}

static NzRows nzrows_pl(MbEngine *e, const PlRow *R, int k)
{
    return nzrows(e, R, ROW_BLOCKS(PlRow, 3), k);
}

/* the sum over the columns rows a and b of Z share of Z[a] M^-1 Z[b], in column order (gram's
 * number: the other terms are exact zeros) */
static double nz_gram(const NzRows *Z, int a, int b, const double *Minv)
{
    double v = 0.0;
    for (int u = Z->start[a], w = Z->start[b]; u < Z->start[a + 1] && w < Z->start[b + 1];) {
        int i = Z->col[u], j = Z->col[w];
        if (i < j) {
            u++;
        } else if (i > j) {
            w++;
        } else {
            v += Z->val[u] * Minv[i] * Z->val[w];
            u++;
            w++;
        }
    }
    return v;
}

/* dx = M^-1 A' S^+ r with S = A M^-1 A' (fmu_mb.linalg.min_norm_correction) for the rows A
 * given by their nonzeros (Z: k x nc). S's rows are taken in the order of their first nonzero
 * columns (a stable counting sort: a loop's closing rows then sit next to the rows of its
 * bodies, so that S's envelope is a band for a chain of loops), its lower envelope from the
 * rows' nonzero columns (position p's first column is the first position that shares a column
 * with it) and S packed on it (ENV_ROW), each entry summed over the two rows' shared nonzero
 * columns in column order (gram's numbers); dx sums over each column's nonzeros in the rows'
 * order (the dense product's numbers). O(nnz + k b^2) for a band of width b; when the envelope
 * Cholesky is not accepted, psd on the dense S in that order (O(k^3), near a singular pose).
 * lam is put back in the rows' order. */
static int min_norm(MbEngine *e, const NzRows *Z, const double *Minv, const double *r,
                    double *dx)
{
    int k = Z->k, nc = Z->nc;
    const int *st = Z->start, *col = Z->col;
    for (int i = 0; i < nc; i++)
        dx[i] = 0.0;
    if (k == 0)
        return OK;
    double *S, *rp = e->srd, *lp = e->srd + k;
    int *perm = e->srw, *key = perm + k, *env = key + nc + 2, *cfirst = env + 2 * k;
    for (int i = 0; i <= nc + 1; i++)
        key[i] = 0;
    for (int a = 0; a < k; a++) {                 /* perm: positions -> rows */
        int l = st[a] < st[a + 1] ? col[st[a]] : nc;
        perm[a] = l;                              /* (the first column, until the sort) */
        key[l + 1]++;
    }
    for (int i = 0; i <= nc; i++)
        key[i + 1] += key[i];
    for (int a = 0; a < k; a++)
        env[key[perm[a]]++] = a;
    for (int i = 0; i < nc; i++)
        cfirst[i] = k;
    for (int p = 0; p < k; p++) {
        perm[p] = env[p];
        rp[p] = r[perm[p]];
    }
    for (int p = 0; p < k; p++) {
        int a = perm[p], f = p;
        for (int u = st[a]; u < st[a + 1]; u++) {
            int i = col[u];
            if (cfirst[i] == k)
                cfirst[i] = p;
            f = cfirst[i] < f ? cfirst[i] : f;
        }
        env[p] = f;
    }
    ptrdiff_t *off = e->sro;
    size_t size = dense_env_offsets(env, k, off);
    if (reserve(&e->S, &e->ncap_S, size) != OK || reserve(&e->V, &e->ncap_V, size) != OK)
        return ERR_NOMEM;
    S = e->S;
    for (int p = 0; p < k; p++)
        for (int l = env[p]; l <= p; l++)
            S[off[p] + l] = nz_gram(Z, perm[p], perm[l], Minv);
    dense_envelope_last(env, k);
    int rc = OK;
    if (!dense_env_chol_solve(S, off, env, e->V, k, RANK_RTOL, 1, rp, lp, 0.0, NULL)) {
        if (reserve(&e->S, &e->ncap_S, (size_t)k * k) != OK)
            return ERR_NOMEM;
        S = e->S;
        for (int p = 0; p < k; p++)
            for (int l = 0; l <= p; l++)
                S[(size_t)p * k + l] = S[(size_t)l * k + p] = nz_gram(Z, perm[p], perm[l], Minv);
        rc = psd(e, S, k, rp, lp);
    }
    if (rc != OK)
        return rc;
    for (int p = 0; p < k; p++)
        e->lam[perm[p]] = lp[p];
    for (int a = 0; a < k; a++)
        for (int u = st[a]; u < st[a + 1]; u++)
            dx[col[u]] += Z->val[u] * Minv[col[u]] * e->lam[a];
    return OK;
}

/* min_norm with the fine cut for the dense A (k x nc): S^+ with the rank cut FINE_RTOL, the
 * assembly's retry when the metric's massless coordinates (weight 1e-6 x the largest mass)
 * spread S beyond RANK_RTOL and the plain solve drops a row that is not redundant. Dense: it
 * runs only when the plain solves failed. */
static int min_norm_fine(MbEngine *e, const double *A, int k, const double *Minv,
                         const double *r, double *dx)
{
    int nc = (e->kind ? 7 : 3) * e->nb;
    for (int i = 0; i < nc; i++)
        dx[i] = 0.0;
    if (k == 0)
        return OK;
    if (reserve(&e->S, &e->ncap_S, (size_t)k * k) != OK)
        return ERR_NOMEM;
    gram(A, k, nc, Minv, e->S);
    int rc = fine_solve(e, e->S, k, r);
    if (rc != OK)
        return rc;
    for (int a = 0; a < k; a++)
        for (int i = 0; i < nc; i++)
            dx[i] += A[(size_t)a * nc + i] * Minv[i] * e->lam[a];
    return OK;
}

/* ------------------------------------------------------------------ creation */
static void output_groups(MbEngine *e);
static int check_planar_data(MbEngine *e, char *err, size_t errlen);
static int parameter_names(MbEngine *e, char *err, size_t errlen);

/* A_DJFRIC: none, or one finite bound >= 0 per joint, > 0 only at revolute and prismatic
 * joints; A_IJLIM with it: per contact the frictional joint it limits, else -1. A planar
 * model's frictional joints (tree joints: a cut joint of a loop is refused naming it) run in
 * the event loop (e->njf, jfi, jfb, jfk, jflim); a spatial model's (A_ISJF: tree joints;
 * a cut joint is refused naming it) in spatial_events.c's loop on their tree rows'
 * coordinates, which are the joints' (also jfq, jfnu, jfd). */
static int joint_friction_values(MbEngine *e, char *err, size_t errlen)
{
    int c = e->cnt[A_DJFRIC];
    if (c == 0)
        return 1;
    if (c != e->nj || e->cnt[A_IJOINT] != 6 * e->nj || e->cnt[A_IJLIM] != e->ncon) {
        msg(err, errlen, "the model data are inconsistent: the joints' friction (expected "
            "none or one bound per joint, %d, and one limit index per contact, %d)", e->nj,
            e->ncon);
        return 0;
    }
    for (int k = 0; k < c; k++) {
        double f = DA(e, A_DJFRIC)[k];
        int kind = IA(e, A_IJOINT)[6 * k];
        int rp = e->kind == 1 ? (kind == SJ_REV || kind == SJ_PRI)
                              : (kind == JK_REV || kind == JK_PRI);
        if (!(f >= 0.0 && isfinite(f)) || (f > 0.0 && !rp)) {
            msg(err, errlen, "the model data are inconsistent: the friction of joint '%s' "
                "(expected a finite bound >= 0, > 0 only at revolute and prismatic joints)",
                e->jname[k]);
            return 0;
        }
    }
    for (int i = 0; i < e->ncon; i++) {
        int j = IA(e, A_IJLIM)[i];
        if (j < -1 || j >= e->nj || (j >= 0 && !(DA(e, A_DJFRIC)[j] > 0.0))) {
            msg(err, errlen, "the model data are inconsistent: contact %d's limited joint "
                "(expected -1 or a joint with friction)", i);
            return 0;
        }
    }
    return 1;
}

/* the frictional joints of the event loop (after joint_friction_values and the checks of
 * the joints and coordinates) */
static int check_joint_friction(MbEngine *e, char *err, size_t errlen)
{
    int c = e->cnt[A_DJFRIC];
    if (c == 0)
        return 1;
    int njf = 0;
    for (int k = 0; k < c; k++) {
        if (!(DA(e, A_DJFRIC)[k] > 0.0))
            continue;
        const int *J = IA(e, A_IJOINT) + 6 * k;
        if (e->kind == 1) {
            int row = e->cnt[A_ISJF] == e->nj ? IA(e, A_ISJF)[k] : -2;
            if (row == -2 || row < -1 || row >= e->nb) {
                msg(err, errlen, "the model data are inconsistent: the tree rows of the "
                    "frictional joints (expected one per joint, -1 or a row < %d)", e->nb);
                return 0;
            }
            const int *R = row >= 0 ? IA(e, A_ISRI) + 6 * row : NULL;
            if (!R || (R[5] != 0 && R[5] != 1) || R[1] != J[1 + R[5]] || R[2] != J[2 - R[5]] ||
                R[0] != (J[0] == SJ_REV ? 1 : 2)) {
                msg(err, errlen, "joint '%s' has Coulomb friction but %s, which the compiled "
                    "engine cannot run (the Python FMU does)", e->jname[k], !R ? "no tree "
                    "coordinate (a cut joint of a closed loop)" : "no tree row of its kind and "
                    "bodies");
                return 0;
            }
            njf++;
            continue;
        }
        int tree = J[3] >= 0 && J[3] < e->ncj ? IA(e, A_ICOORD)[2 * J[3] + 1] : -1;
        if (tree < 0 || tree >= e->n) {
            msg(err, errlen, "joint '%s' has Coulomb friction but no tree coordinate (a cut "
                "joint of a closed loop), which the compiled engine cannot run (the Python "
                "FMU does)", e->jname[k]);
            return 0;
        }
        njf++;
    }
    free(e->jfi); free(e->jfk); free(e->jflim); free(e->jfb); free(e->jfo);
    free(e->jfq); free(e->jfnu); free(e->jfd);
    e->jfi = calloc(3 * (size_t)njf + 1, sizeof(int));
    e->jfk = calloc((size_t)njf + 1, sizeof(int));
    e->jflim = calloc((size_t)e->ncon + 1, sizeof(int));
    e->jfb = calloc((size_t)njf + 1, sizeof(double));
    e->jfo = calloc(3 * (size_t)njf + 1, sizeof(double));
    e->jfq = calloc((size_t)njf + 1, sizeof(int));
    e->jfnu = calloc((size_t)njf + 1, sizeof(int));
    e->jfd = calloc(24 * (size_t)njf + 1, sizeof(double));
    if (!e->jfi || !e->jfk || !e->jflim || !e->jfb || !e->jfo || !e->jfq || !e->jfnu ||
        !e->jfd) {
        msg(err, errlen, "out of memory");
        return 0;
    }
    for (int k = 0, j = 0; k < c; k++) {
        if (!(DA(e, A_DJFRIC)[k] > 0.0))
            continue;
        const int *J = IA(e, A_IJOINT) + 6 * k;
        if (e->kind == 1) {         /* spatial: kind, bodies, the tree row's coordinates */
            const int *R = IA(e, A_ISRI) + 6 * IA(e, A_ISJF)[k];
            e->jfi[3 * j] = R[0];
            e->jfq[j] = R[3];
            e->jfnu[j] = R[4];
        } else {
            e->jfi[3 * j] = IA(e, A_ICOORD)[2 * J[3] + 1];
        }
        e->jfi[3 * j + 1] = J[1];
        e->jfi[3 * j + 2] = J[2];
        e->jfb[j] = DA(e, A_DJFRIC)[k];
        e->jfk[j++] = k;
    }
    for (int i = 0; i < e->ncon; i++) {
        int k = IA(e, A_IJLIM)[i], jf = -1;
        for (int j = 0; k >= 0 && j < njf; j++)
            if (e->jfk[j] == k)
                jf = j;
        e->jflim[i] = jf;
    }
    e->njf = njf;
    return 1;
}

static int check_data(MbEngine *e, char *err, size_t errlen)
{
    const int *H;
    if (e->nints < 1 + 2 * MBE_N_ARRAYS || e->ints[0] != MBE_N_ARRAYS) {
        msg(err, errlen, "the model data have %d arrays, expected %d (rebuild the model data "
            "with this version of fmu_mb)", e->nints > 0 ? e->ints[0] : 0, MBE_N_ARRAYS);
        return 0;
    }
    for (int a = 0; a < MBE_N_ARRAYS; a++) {
        int o = e->ints[1 + 2 * a], c = e->ints[2 + 2 * a];
        int lim = is_int_array(a) ? e->nints : e->ndoubles;
        if (o < 0 || c < 0 || o > lim || c > lim - o) {
            msg(err, errlen, "the model data's array %d lies outside the data", a);
            return 0;
        }
        e->off[a] = o;
        e->cnt[a] = c;
    }
    if (e->cnt[A_IHEAD] < H_SIZE) {
        msg(err, errlen, "the model data's header is too short");
        return 0;
    }
    H = IA(e, A_IHEAD);
    e->kind = H[H_KIND];
    e->nb = H[H_NB];
    e->n = H[H_N];
    e->nj = H[H_NJ];
    e->nrows = H[H_NROWS];
    e->ncj = H[H_NCJ];
    e->ne = H[H_NE];
    e->m = H[H_M];
    e->nd = H[H_ND];
    e->nel = H[H_NEL];
    e->nmark = H[H_NMARK];
    e->ni = H[H_NI];
    e->nout = H[H_NOUT];
    e->np = H[H_NP];
    e->nplace = H[H_NPLACE];
    e->nv = H[H_NV];
    e->nc = H[H_NC];
    e->ncon = H[H_NCON];
    e->ncp = H[H_NCP];
    if (e->kind != 0 && e->kind != 1) {
        msg(err, errlen, "the model data are of kind %d; expected 0 (planar) or 1 (spatial)",
            e->kind);
        return 0;
    }
    int nb = e->nb, n = e->n;
    const int cap = 1000000;          /* (sizes below stay in int: cap x 108 < 2^31) */
    if (nb < 1 || n < 0 || e->nj < 0 || e->nrows < 0 || e->ncj < 0 || e->ne < 0 || e->m < 0 ||
        e->nd < 0 || e->nel < 0 || e->nmark < 0 || e->ni < 0 || e->np < 0 || e->nplace < 0 ||
        e->nv < 0 || e->nc < 0 || e->nout < 0 || e->ncon < 0 || e->ncon > cap ||
        e->ncp < 0 || e->ncp > cap ||
        nb > 100000 || n > 700000 || e->nrows > 300000 || e->ni > 100000 || e->nj > cap ||
        e->ncj > cap || e->ne > cap || e->m > cap || e->nd > cap || e->nel > cap ||
        e->nmark > cap || e->np > cap || e->nplace > cap || e->nv > cap || e->nc > cap ||
        e->nout > 20 * cap) {
        msg(err, errlen, "the model data's counts are out of range");
        return 0;
    }
    if (e->cnt[A_DT0] != 1 || e->cnt[A_DPARAM] != 3 * e->np || e->cnt[A_IPARAM] != e->np) {
        msg(err, errlen, "the model data's parameter table does not fit its count");
        return 0;
    }
    /* the names, then the joints' friction bounds (which the output count depends on) */
    if (!parameter_names(e, err, errlen) || !joint_friction_values(e, err, errlen))
        return 0;
    if (e->kind == 1) {
        if (!check_spatial_data(e, err, errlen))
            return 0;
    } else if (!check_planar_data(e, err, errlen)) {
        return 0;
    }
    return check_joint_friction(e, err, errlen);
}

/* the joints with a Coulomb friction bound > 0 (A_DJFRIC; 3 outputs each) */
static int frictional_joints(const MbEngine *e)
{
    int c = 0;
    for (int k = 0; k < e->cnt[A_DJFRIC]; k++)
        c += DA(e, A_DJFRIC)[k] > 0.0;
    return c;
}

/* contact_tol, contact_velocity, event_tol: finite numbers > 0 */
/* a planar model with Coulomb friction at some contact (A_DCMU) */
static int planar_friction(const MbEngine *e)
{
    if (e->kind == 1 || e->ncon == 0 || e->cnt[A_DCMU] != e->ncon)
        return 0;
    for (int i = 0; i < e->ncon; i++)
        if (DA(e, A_DCMU)[i] > 0.0)
            return 1;
    return 0;
}

static int event_settings_ok(const double *S)
{
    for (int i = 0; i < 3; i++)
        if (!(S[i] > 0.0 && isfinite(S[i])))
            return 0;
    return 1;
}

/* The contact settings of s that are 0 replaced by the model data's (A_DCSET; a model
 * without contacts keeps 0: nothing reads them). */
static void contact_defaults(const MbEngine *e, MbeSettings *s)
{
    const double *S = e->ncon || frictional_joints(e) ? DA(e, A_DCSET) : NULL;
    double *v[3] = {&s->contact_tol, &s->contact_velocity, &s->event_tol};
    for (int i = 0; i < 3; i++)
        if (*v[i] == 0.0)
            *v[i] = S ? S[i] : 0.0;
}

/* 1 when a tree's nb rows place each body once and after its parent, the ground (nb) or a
 * body placed before (a walk to the ground ends), 0 when not, -1 out of memory: row i's body
 * is rows[i stride + ib], its parent rows[i stride + ip] (both checked to be in [0, nb]) */
static int tree_order(const int *rows, int stride, int ib, int ip, int nb)
{
    char *placed = calloc((size_t)nb + 1, 1);
    if (!placed)
        return -1;
    int ok = 1;
    placed[nb] = 1;
    for (int i = 0; i < nb && ok; i++) {
        const int *R = rows + (size_t)i * stride;
        ok = !placed[R[ib]] && placed[R[ip]];
        placed[R[ib]] = 1;
    }
    free(placed);
    return ok;
}

static int check_planar_data(MbEngine *e, char *err, size_t errlen)
{
    int nb = e->nb, n = e->n;
    struct { int a, want; } sizes[] = {
        {A_DGRAV, 2}, {A_DT0, 1}, {A_DPARAM, 3 * e->np}, {A_IPARAM, e->np},
        {A_IJI, JI * nb}, {A_DJD, JD * nb}, {A_IEI, EI * e->ne}, {A_DED, ED * e->ne},
        {A_DMASS, nb}, {A_DINERTIA, nb}, {A_IRI, RI * e->m}, {A_DRD, RD * e->m},
        {A_IDI, DI * e->nd}, {A_IROWS, 4 * e->nrows}, {A_DROWS, 7 * e->nrows},
        {A_IJOINT, 6 * e->nj}, {A_DJOINT, 7 * e->nj}, {A_ICOORD, 2 * e->ncj},
        {A_IDROW, e->nd}, {A_IELEM, 2 * e->nel}, {A_DELEM, e->nel}, {A_IMARK, e->nmark},
        {A_DMARK, 2 * e->nmark}, {A_IPLACE, 2 * e->nplace}, {A_DBODY0, 6 * nb},
        {A_IINIT, 3 * e->ncj}, {A_DINIT, 3 * e->ncj}, {A_DMINV, 3 * nb}, {A_IQSRC, 2 * n},
        {A_ICON, 3 * e->ncon}, {A_DCON, 8 * e->ncon}, {A_DREST, e->ncon}, {A_DCSET, 3},
        {A_IEND, 2 * e->nel}, {A_ISDI, 0}, {A_DSDD, 0}, {A_DSDP, 0}, {A_ISDJ, 0}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (e->cnt[sizes[i].a] != sizes[i].want) {
            msg(err, errlen, "the model data's array %d has %d entries, expected %d",
                sizes[i].a, e->cnt[sizes[i].a], sizes[i].want);
            return 0;
        }
    if (e->cnt[A_DGAIN] != 0 && e->cnt[A_DGAIN] % (e->ni > 0 ? e->ni : 1) != 0) {
        msg(err, errlen, "the model data's input gains do not fit the inputs");
        return 0;
    }
    int ng = e->ni > 0 ? e->cnt[A_DGAIN] / e->ni : 0;
#define BAD(cond, what)                                                                  \
    do {                                                                                 \
        if (cond) {                                                                      \
            msg(err, errlen, "the model data are inconsistent: %s", what);               \
            return 0;                                                                    \
        }                                                                                \
    } while (0)
    for (int i = 0; i < nb; i++) {
        const int *J = IA(e, A_IJI) + JI * i;
        BAD(J[0] < 0 || J[0] >= nb || J[1] < 0 || J[1] > 3 || J[2] < 0 || J[2] > nb ||
            J[3] < 0 || J[3] > nb || J[4] < -1 || J[4] >= n ||
            (J[1] == 3 && (J[4] < 0 || J[4] + 3 > n)),        /* a free body: 3 coordinates */
            "a tree joint's indices");
    }
    int order = tree_order(IA(e, A_IJI), JI, 0, 2, nb);
    if (order < 0) {
        msg(err, errlen, "out of memory");
        return 0;
    }
    BAD(!order, "the tree's order (each body once, after its parent)");
    for (int i = 0; i < e->ne; i++) {
        const int *E = IA(e, A_IEI) + EI * i;
        BAD(E[0] < 1 || E[0] > 4 || E[1] < 0 || E[1] > nb || E[2] < 0 || E[2] > nb ||
            E[3] < -1 || E[3] >= e->ni || (E[0] == 1 && ng && (E[4] < 0 || E[4] >= ng)),
            "an element's indices");
    }
    for (int i = 0; i < e->m; i++) {
        const int *R = IA(e, A_IRI) + RI * i;
        BAD(R[0] < 0 || R[0] > 4 || R[1] < 0 || R[1] > nb || R[2] < 0 || R[2] > nb,
            "a loop row's indices");
    }
    for (int i = 0; i < e->nd; i++) {
        const int *Dd = IA(e, A_IDI) + DI * i;
        BAD(Dd[0] < 0 || Dd[0] >= n || (Dd[1] != 1 && Dd[1] != 2) || Dd[2] < 0 || Dd[3] < 0 ||
            Dd[2] > e->cnt[A_DDP] - Dd[3] || (Dd[1] == 2 && Dd[3] != 4),
            "a drive's law");
        BAD(IA(e, A_IDROW)[i] < 0 || IA(e, A_IDROW)[i] >= e->nrows, "a drive's row");
    }
    for (int r = 0; r < e->nrows; r++) {
        const int *R = IA(e, A_IROWS) + 4 * r;
        BAD(R[0] < 0 || R[0] > 6 || R[1] < 0 || R[1] > nb || R[2] < 0 || R[2] > nb ||
            ((R[0] == R_DANG || R[0] == R_DPRJ) && (R[3] < 0 || R[3] >= e->nd)),
            "a constraint row");
    }
    for (int k = 0; k < e->nj; k++) {
        const int *J = IA(e, A_IJOINT) + 6 * k;
        BAD(J[0] < 0 || J[0] > 3 || J[1] < 0 || J[1] > nb || J[2] < 0 || J[2] > nb ||
            J[1] == J[2] || J[3] < -1 || J[3] >= e->ncj || J[4] < 0 || J[5] < 0 || J[5] > 3 ||
            J[4] > e->nrows - J[5], "a joint");
        /* its coordinate (the outputs write it by kind): none, or its own in ICOORD */
        BAD(J[0] == JK_REV || J[0] == JK_PRI
                ? J[3] < 0 || IA(e, A_ICOORD)[2 * J[3]] != k : J[3] != -1,
            "a joint's coordinate index");
    }
    for (int i = 0; i < e->ncj; i++) {
        const int *Cc = IA(e, A_ICOORD) + 2 * i;
        BAD(Cc[0] < 0 || Cc[0] >= e->nj || Cc[1] < -1 || Cc[1] >= n, "a joint coordinate");
        int kk = IA(e, A_IJOINT)[6 * Cc[0]];
        BAD(kk != JK_REV && kk != JK_PRI, "a joint coordinate's joint");
    }
    for (int i = 0; i < e->nel; i++) {
        const int *E = IA(e, A_IELEM) + 2 * i;
        BAD(E[0] < 0 || E[0] > 4 || E[1] < 0 || E[1] >= e->ne, "an element");
    }
    for (int i = 0; i < e->nmark; i++)
        BAD(IA(e, A_IMARK)[i] < 0 || IA(e, A_IMARK)[i] > nb, "a marker");
    for (int i = 0; i < e->nplace; i++) {
        const int *P = IA(e, A_IPLACE) + 2 * i;
        BAD(P[0] < 0 || P[0] >= e->nj, "the tree placement");
    }
    for (int i = 0; i < n; i++) {
        const int *Q = IA(e, A_IQSRC) + 2 * i;
        BAD(!((Q[0] == 0 && Q[1] >= 0 && Q[1] < e->ncj) ||
              (Q[0] == 1 && Q[1] >= 0 && Q[1] < 3 * nb)), "the coordinates' sources");
    }
    int npair = e->cnt[A_DPAIR] / PAIRD;
    BAD(e->cnt[A_DPAIR] % PAIRD != 0, "the shape pairs (expected 19 numbers per pair)");
    for (int i = 0; i < npair; i++) {
        const double *D = DA(e, A_DPAIR) + (size_t)PAIRD * i;
        int finite = 1;
        for (int j = 0; j < PAIRD; j++)
            finite &= isfinite(D[j]) != 0;
        BAD(!finite || D[0] != floor(D[0]) || D[1] != floor(D[1]) || D[2] != floor(D[2]) ||
            fabs(D[0]) > 100.0 || fabs(D[1]) > 100.0 || D[2] < 0.0 ||
            D[2] >= mbpp_count((int)D[0], (int)D[1]),
            "a shape pair (expected finite numbers, two shape kinds of a planar pair and one "
            "of its feature ids)");
    }
    for (int i = 0; i < e->ncon; i++) {
        const int *R = IA(e, A_ICON) + 3 * i;
        const double *P = DA(e, A_DCON) + 8 * i;
        double r = DA(e, A_DREST)[i];
        BAD(((R[0] < R_ANG || R[0] > R_DST) && R[0] != R_PAIR) || R[1] < 0 || R[1] > nb ||
            R[2] < 0 || R[2] > nb || R[1] == R[2], "a contact's gap row");
        BAD(R[0] == R_PAIR && !(P[0] >= 0.0 && P[0] < npair && P[0] == floor(P[0])),
            "a shape-pair contact's record (expected the index of a shape pair)");
        BAD(!(P[7] == 1.0 || P[7] == -1.0), "a contact's side (expected +1 or -1)");
        BAD(!(r >= 0.0 && r <= 1.0), "a contact's restitution (expected 0 <= e <= 1)");
    }
    BAD(e->cnt[A_DCMU] != 0 && e->cnt[A_DCMU] != e->ncon, "the contacts' friction (expected "
        "none or one mu per contact)");
    for (int i = 0; i < e->cnt[A_DCMU]; i++) {
        double mu = DA(e, A_DCMU)[i];
        int kind = IA(e, A_ICON)[3 * i];
        BAD(!(mu >= 0.0 && isfinite(mu)) || (mu > 0.0 && kind != R_PRJ && kind != R_PAIR),
            "a contact's friction (expected a finite mu >= 0, > 0 only at point-line "
            "contacts and shape pairs)");
    }
    BAD(e->cnt[A_ICPT] != 0 && (e->cnt[A_ICPT] != e->ncon || e->cnt[A_DCMU] != e->ncon),
        "the contacts' point flags (expected none, or one per contact with the contacts' "
        "friction)");
    for (int i = 0; i < e->cnt[A_ICPT]; i++) {
        int pt = IA(e, A_ICPT)[i];
        BAD((pt != 0 && pt != 1) || (pt && IA(e, A_ICON)[3 * i] != R_PRJ),
            "a contact's point flag (expected 0 or 1, 1 only at point-line contacts)");
    }
    BAD(!event_settings_ok(DA(e, A_DCSET)), "the event settings (expected finite numbers > 0)");
    for (int i = 0; i < 2 * e->nel; i++)
        BAD(IA(e, A_IEND)[i] < -1 || IA(e, A_IEND)[i] >= e->ncon, "a cylinder's end stops");
    /* the outputs: output_spec's count */
    int nout = 6 * nb + 4 * e->nmark + 5 + e->nd + (planar_friction(e) ? 11 : 7) * e->ncon +
               3 * frictional_joints(e);
    for (int k = 0; k < e->nj; k++) {
        int kk = IA(e, A_IJOINT)[6 * k];
        nout += (kk == JK_REV || kk == JK_PRI ? 2 : 0) + (kk == JK_DST ? 1 : 2) +
                (kk == JK_WELD || kk == JK_PRI ? 1 : 0);
    }
    for (int i = 0; i < e->nel; i++) {
        static const int width[] = {2, 2, 7, 1, 1};
        nout += width[IA(e, A_IELEM)[2 * i]];
    }
    BAD(nout != e->nout, "the number of outputs");
#undef BAD
    return 1;
}

static int parameter_names(MbEngine *e, char *err, size_t errlen)
{
    e->pname = calloc(e->np + e->nj > 0 ? e->np + e->nj : 1, sizeof(char *));
    if (!e->pname)
        return 0;
    e->jname = e->pname + e->np;
    int at = 0;
    for (int i = 0; i < e->np + e->nj; i++) {
        if (at >= e->nchars) {
            msg(err, errlen, "the model data's parameter or joint names are missing");
            return 0;
        }
        e->pname[i] = e->chars + at;
        const char *z = memchr(e->chars + at, 0, (size_t)(e->nchars - at));
        if (!z) {
            msg(err, errlen, "the model data's parameter names are not NUL-terminated");
            return 0;
        }
        at = (int)(z - e->chars) + 1;
    }
    return 1;
}

static void *make_kernel(MbEngine *e)
{
    if (e->kind == 1)
        return make_spatial_kernel(e);
    const double *g = DA(e, A_DGRAV);
    void *k = mbk_create(e->nb, e->n, IA(e, A_IJI), DA(e, A_DJD), e->ne, IA(e, A_IEI),
                         DA(e, A_DED), DA(e, A_DMASS), DA(e, A_DINERTIA), g[0], g[1]);
    if (!k)
        return NULL;
    if ((e->m && mbk_set_rows(k, e->m, IA(e, A_IRI), DA(e, A_DRD))) ||
        (e->cnt[A_DGAIN] && e->ni &&
         mbk_set_gains(k, e->cnt[A_DGAIN] / e->ni, e->ni, DA(e, A_DGAIN))) ||
        (e->nd && mbk_set_drives(k, e->nd, IA(e, A_IDI), e->cnt[A_DDP], DA(e, A_DDP))) ||
        (e->cnt[A_DPAIR] &&
         mbk_set_pairs(k, e->cnt[A_DPAIR] / PAIRD, DA(e, A_DPAIR)) != OK)) {
        mbk_free(k);
        return NULL;
    }
    mbk_set_stabilization(k, e->set.stabilization, e->set.alpha, e->set.beta,
                          e->set.proj_tol);
    return k;
}

/* the contact event loop over the kernel k (it copies what it needs) */
static void *make_events(MbEngine *e, void *k)
{
    if (e->kind == 1)
        return spatial_make_events(e, k);
    void *ev = mbk_events_create(k, e->ncon, IA(e, A_ICON), DA(e, A_DCON), DA(e, A_DREST),
                                 e->ni);
    if (ev && planar_friction(e) && (mbk_events_set_friction(ev, DA(e, A_DCMU)) != OK ||
                                     (e->cnt[A_ICPT] &&
                                      mbk_events_set_points(ev, IA(e, A_ICPT)) != OK))) {
        mbk_events_free(ev);
        return NULL;
    }
    for (int j = 0; j < e->njf; j++)     /* the bounds of the current parameters */
        e->jfb[j] = DA(e, A_DJFRIC)[e->jfk[j]];
    if (ev && e->njf && mbk_events_set_joint_friction(ev, e->njf, e->jfi, e->jfb,
                                                      e->jflim) != OK) {
        mbk_events_free(ev);
        return NULL;
    }
    return ev;
}

static void free_events(const MbEngine *e, void *ev)
{
    if (e->kind == 1)
        sk_events_free(ev);
    else
        mbk_events_free(ev);
}

static void free_kernel(const MbEngine *e, void *k)
{
    if (e->kind == 1)
        sk_free(k);
    else
        mbk_free(k);
}

void mbe_free(MbEngine *e)
{
    if (!e)
        return;
    me_free(e);
    if (e->ev)
        free_events(e, e->ev);
    if (e->kern)
        free_kernel(e, e->kern);
    void *p[] = {e->fsal_f, e->fsal_y, e->fsal_u, e->rec, e->rectmp, e->gap, e->cforce, e->cft, e->cvt, e->jfi, e->jfk, e->jflim, e->jfb, e->jfo, e->jfq, e->jfnu, e->jfd, e->ints, e->code, e->base, e->d, e->consts, e->chars, (void *)e->pname,
                 e->params, e->y, e->ytmp, e->qdd, e->q2, e->qd2, e->x, e->xd, e->xdd, e->xa,
                 e->xda, e->f, e->phi, e->phit, e->D, e->A, e->S, e->V, e->rot, e->w, e->rhs,
                 e->lam, e->r, e->xe, e->xde, e->u0, e->eout, e->ogroup, e->sr, e->sr2,
                 e->srw, e->srd, e->sro, e->pr, e->nzi, e->nzv};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
    free(e);
}

static void *zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

MbEngine *mbe_create(const unsigned char *data, size_t size, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!data || size < 32) {
        msg(err, errlen, "the model data are missing or shorter than their 32-byte header");
        return NULL;
    }
    if (rd32(data) == (MBE_DATA_MAGIC >> 24 | (MBE_DATA_MAGIC >> 8 & 0xff00u) |
                       (MBE_DATA_MAGIC << 8 & 0xff0000u) | MBE_DATA_MAGIC << 24)) {
        msg(err, errlen, "the model data are big-endian (their magic number is byte-swapped); "
            "the engine reads little-endian data, as fmu_mb.engine.data writes them");
        return NULL;
    }
    if (rd32(data) != MBE_DATA_MAGIC) {
        msg(err, errlen, "the model data do not start with the fmu_mb engine's magic number");
        return NULL;
    }
    if (rd32(data + 4) != MBE_DATA_VERSION) {
        msg(err, errlen, "the model data are of version %u, expected %d (rebuild the model)",
            rd32(data + 4), MBE_DATA_VERSION);
        return NULL;
    }
    uint64_t ni = rd32(data + 8), nd = rd32(data + 12), nc = rd32(data + 16),
             nk = rd32(data + 20), nch = rd32(data + 24);
    uint64_t o_i = 32, o_d = o_i + ((4 * ni + 7) / 8) * 8, o_c = o_d + 8 * nd,
             o_k = o_c + ((4 * nc + 7) / 8) * 8, o_ch = o_k + 8 * nk, end = o_ch + nch;
    if (ni > (1u << 28) || nd > (1u << 28) || nc > (1u << 28) || nk > (1u << 28) ||
        end != size) {
        msg(err, errlen, "the model data's size (%zu bytes) does not match its header "
            "(%llu bytes)", size, (unsigned long long)end);
        return NULL;
    }
    MbEngine *e = calloc(1, sizeof *e);
    if (!e) {
        msg(err, errlen, "out of memory");
        return NULL;
    }
    e->nints = (int)ni;
    e->ndoubles = (int)nd;
    e->ncode = (int)nc;
    e->nconst = (int)nk;
    e->nchars = (int)nch;
    e->ints = zalloc(ni, sizeof(int));
    e->base = zalloc(nd, sizeof(double));
    e->d = zalloc(nd, sizeof(double));
    e->code = zalloc(nc, sizeof(int));
    e->consts = zalloc(nk, sizeof(double));
    e->chars = zalloc(nch + 1, 1);
    if (!e->ints || !e->base || !e->d || !e->code || !e->consts || !e->chars) {
        mbe_free(e);
        msg(err, errlen, "out of memory");
        return NULL;
    }
    for (uint64_t i = 0; i < ni; i++)
        e->ints[i] = (int32_t)rd32(data + o_i + 4 * i);
    for (uint64_t i = 0; i < nd; i++)           /* little-endian data on any host */
        e->base[i] = rdf64(data + o_d + 8 * i);
    for (uint64_t i = 0; i < nc; i++)
        e->code[i] = (int32_t)rd32(data + o_c + 4 * i);
    for (uint64_t i = 0; i < nk; i++)
        e->consts[i] = rdf64(data + o_k + 8 * i);
    memcpy(e->chars, data + o_ch, nch);
    memcpy(e->d, e->base, 8 * nd);
    if (!check_data(e, err, errlen)) {
        mbe_free(e);
        return NULL;
    }
    e->set.method = 3;
    e->set.rtol = 1e-9;
    e->set.atol = 1e-11;
    e->set.step = 1e-3;
    e->set.max_step = INFINITY;
    e->set.max_steps = 0;
    e->set.stabilization = 1;
    e->set.alpha = e->set.beta = 10.0;
    e->set.proj_tol = 1e-13;
    contact_defaults(e, &e->set);
    int nb = e->nb, n = e->n, nc3 = (e->kind ? 7 : 3) * nb;
    int nr = e->nrows + e->ncj + e->ncon + 1 > nc3 + 7 ? e->nrows + e->ncj + e->ncon + 1
                                                       : nc3 + 7;
    e->params = zalloc(e->np, sizeof(double));
    for (int i = 0; i < e->np; i++)
        e->params[i] = DA(e, A_DPARAM)[3 * i];
    e->y = zalloc(2 * n, sizeof(double));
    e->ytmp = zalloc(4 * n, sizeof(double));          /* (q, qd) and f for the kernels */
    e->fsal_f = zalloc(2 * n, sizeof(double));
    e->fsal_y = zalloc(2 * n, sizeof(double));
    e->fsal_u = zalloc(e->ni, sizeof(double));
    e->qdd = zalloc(n, sizeof(double));
    e->q2 = zalloc(n, sizeof(double));
    e->qd2 = zalloc(n, sizeof(double));
    e->x = zalloc(nc3, sizeof(double));
    e->xd = zalloc(nc3, sizeof(double));
    e->xdd = zalloc(nc3, sizeof(double));
    e->xa = zalloc(nc3, sizeof(double));
    e->xda = zalloc(nc3, sizeof(double));
    e->f = zalloc(nc3, sizeof(double));
    e->phi = zalloc(nr, sizeof(double));
    e->phit = zalloc(nr, sizeof(double));
    e->rot = zalloc(e->kind ? 9 * ((size_t)nb + 1) : 0, sizeof(double));
    e->w = zalloc(nr, sizeof(double));
    e->rhs = zalloc(nr, sizeof(double));
    e->lam = zalloc(nr, sizeof(double));
    e->r = zalloc(nr > nc3 + 7 ? nr : nc3 + 7, sizeof(double));
    e->xe = zalloc(nc3 + 7, sizeof(double));
    e->xde = zalloc(nc3 + 7, sizeof(double));
    e->u0 = zalloc(e->ni, sizeof(double));
    e->eout = zalloc(8 * (size_t)(e->ne + 1) + 6 * (size_t)e->nmark + 8, sizeof(double));
    e->ogroup = zalloc(e->nout, sizeof(int));
    if (!e->params || !e->y || !e->ytmp || !e->qdd || !e->q2 || !e->qd2 || !e->x || !e->xd ||
        !e->xdd || !e->xa || !e->xda || !e->f || !e->phi || !e->phit || !e->rot ||
        !e->w || !e->rhs || !e->lam || !e->r || !e->xe ||
        !e->xde || !e->u0 || !e->eout || !e->ogroup || !e->fsal_f || !e->fsal_y ||
        !e->fsal_u) {
        mbe_free(e);
        msg(err, errlen, "out of memory");
        return NULL;
    }
    e->srw = zalloc((4 + SPROW_BLOCKS) * (size_t)nr + 2 * (size_t)nb + 4, sizeof(int));
    e->srd = zalloc(2 * (size_t)nr, sizeof(double));
    e->sro = zalloc(nr, sizeof(ptrdiff_t));
    /* (written before they are read: not cleared) */
    e->nzi = malloc(sizeof(int) * ((1 + NZ_PER_ROW(e)) * (size_t)nr + 1));
    e->nzv = malloc(sizeof(double) * (NZ_PER_ROW(e) * (size_t)nr + 1));
    if (e->kind == 1) {
        e->sr = zalloc(nr, sizeof(SpRow));
        e->sr2 = zalloc(nr, sizeof(SpRow));
    } else {
        e->pr = zalloc(2 * (size_t)nr, sizeof(PlRow));
    }
    if (!e->srw || !e->srd || !e->sro || !e->nzi || !e->nzv || (e->kind == 1 ? !e->sr || !e->sr2 : !e->pr)) {
        mbe_free(e);
        msg(err, errlen, "out of memory");
        return NULL;
    }
    if (e->kind != 1)           /* (spatial: check_spatial_data set it from the contacts) */
        e->nrec = planar_friction(e) || e->njf ? EV_REC_FR : EV_REC;
    else if (e->njf)            /* (the joints' friction: the loop's friction records) */
        e->nrec = EV_REC_FR;
    e->cft = zalloc(2 * (size_t)e->ncon + 1, sizeof(double));
    e->cvt = zalloc(2 * (size_t)e->ncon + 1, sizeof(double));
    e->rec = zalloc(rec_size(e) + 1, sizeof(double));
    e->rectmp = zalloc(rec_size(e) + 1, sizeof(double));
    e->gap = zalloc(e->ncon, sizeof(double));
    e->cforce = zalloc(e->ncon, sizeof(double));
    if (!e->rec || !e->rectmp || !e->gap || !e->cforce || !e->cft || !e->cvt) {
        mbe_free(e);
        msg(err, errlen, "out of memory");
        return NULL;
    }
    output_groups(e);
    e->kern = make_kernel(e);
    if (!e->kern || ((e->ncon || e->njf) && !(e->ev = make_events(e, e->kern)))) {
        mbe_free(e);
        msg(err, errlen, "the kernel refused the model data (or memory ran out)");
        return NULL;
    }
    e->t = DA(e, A_DT0)[0];
    return e;
}

int mbe_n_parameters(const MbEngine *e) { return e ? e->np : 0; }
int mbe_n_inputs(const MbEngine *e) { return e ? e->ni : 0; }
int mbe_n_outputs(const MbEngine *e) { return e ? e->nout : 0; }
int mbe_n_q(const MbEngine *e) { return e ? e->n : 0; }
int mbe_n_contacts(const MbEngine *e) { return e ? e->ncon : 0; }
double mbe_time(const MbEngine *e) { return e ? e->t : NAN; }
const double *mbe_model_doubles(const MbEngine *e, int *n)
{
    if (n)
        *n = e ? e->ndoubles : 0;
    return e ? e->d : NULL;
}

/* ------------------------------------------------------------------ parameters, settings */
static void spatial_metric(const MbEngine *e, double *d);

/* A_DMINV of the data d (the projection metric's inverse weights) derived from its masses
 * and inertias by the builder's rule (fmu_mb.engine.data.derive_metric is the Python twin:
 * the same operations, so the same bits): the weights are the masses (planar: m, m, I per
 * body; spatial: engine_spatial.h spatial_metric), a zero one replaced by 1e-6 x the
 * largest. The parameter program does not compute these slots; it runs before this. */
static void derive_metric(const MbEngine *e, double *d)
{
    if (e->nb <= 0)
        return;
    if (e->kind == 1) {
        spatial_metric(e, d);
        return;
    }
    const double *m = d + e->off[A_DMASS], *in = d + e->off[A_DINERTIA];
    double *w = d + e->off[A_DMINV];
    double mx = m[0];
    for (int b = 0; b < e->nb; b++) {
        if (m[b] > mx)
            mx = m[b];
        if (in[b] > mx)
            mx = in[b];
    }
    double small = 1e-6 * (mx >= 1e-300 ? mx : 1e-300);
    for (int b = 0; b < e->nb; b++) {
        w[3 * b] = w[3 * b + 1] = 1.0 / (m[b] > 0 ? m[b] : small);
        w[3 * b + 2] = 1.0 / (in[b] > 0 ? in[b] : small);
    }
}

MbeStatus mbe_set_parameters(MbEngine *e, const double *p, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || (!p && e->np)) {
        msg(err, errlen, "mbe_set_parameters: no engine or no parameter values");
        return MBE_ERROR;
    }
    const double *tab = DA(e, A_DPARAM);
    for (int i = 0; i < e->np; i++) {
        if (!isfinite(p[i]) || p[i] < tab[3 * i + 1] || p[i] > tab[3 * i + 2]) {
            msg(err, errlen, "parameter '%s' = %.17g is outside its range [%.17g, %.17g] or "
                "not finite; expected a finite value in the range", e->pname[i], p[i],
                tab[3 * i + 1], tab[3 * i + 2]);
            return MBE_ERROR;
        }
        if (IA(e, A_IPARAM)[i] && p[i] != tab[3 * i]) {
            msg(err, errlen, "parameter '%s' is structural (it changes the model's shape): "
                "it keeps its built value %.17g; rebuild with fmu-mb build MODEL.py --set "
                "%s=VALUE", e->pname[i], tab[3 * i], e->pname[i]);
            return MBE_ERROR;
        }
    }
    double *nd = malloc(sizeof(double) * (e->ndoubles ? e->ndoubles : 1));
    if (!nd) {
        msg(err, errlen, "out of memory");
        return MBE_ERROR;
    }
    memcpy(nd, e->base, sizeof(double) * e->ndoubles);
    if (e->ncode > 0) {
#ifdef MBE_HAVE_PARAMS
        MbpProgram prog = {e->ncode, e->code, e->nconst, e->consts};
        int rc = mbp_run(&prog, p, e->np, nd, e->ndoubles, err, errlen);
        if (rc != 0) {
            free(nd);
            if (rc < 0)
                msg(err, errlen, "the model data's parameter program is malformed");
            return MBE_ERROR;
        }
        derive_metric(e, nd);
#else
        free(nd);
        msg(err, errlen, "this engine library was built without the parameter program");
        return MBE_ERROR;
#endif
    } else {
        for (int i = 0; i < e->np; i++)
            if (p[i] != tab[3 * i]) {
                free(nd);
                msg(err, errlen, "parameter '%s' cannot change from its built value %.17g: "
                    "the model data carry no parameter program; rebuild with fmu-mb build "
                    "MODEL.py --set %s=VALUE", e->pname[i], tab[3 * i], e->pname[i]);
                return MBE_ERROR;
            }
    }
    for (int i = 0; i < e->ndoubles; i++)
        if (!isfinite(nd[i]) && isfinite(e->base[i])) {
            free(nd);
            msg(err, errlen, "the parameters make a number of the model non-finite");
            return MBE_ERROR;
        }
    double *old = e->d;
    e->d = nd;
    void *k = make_kernel(e), *ev = NULL;
    if (k && (e->ncon || e->njf) && !(ev = make_events(e, k))) {
        free_kernel(e, k);
        k = NULL;
    }
    if (!k) {
        e->d = old;
        free(nd);
        msg(err, errlen, "the kernel refused the model data of these parameters");
        return MBE_ERROR;
    }
    free(old);
    free_kernel(e, e->kern);
    e->kern = k;
    e->fsal = 0;
    if (e->ev)
        free_events(e, e->ev);
    e->ev = ev;
    memcpy(e->params, p, sizeof(double) * e->np);
    return MBE_OK;
}

MbeStatus mbe_set_settings(MbEngine *e, const MbeSettings *s, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !s) {
        msg(err, errlen, "mbe_set_settings: no engine or no settings");
        return MBE_ERROR;
    }
    const char *bad = NULL;
    if (s->method < 0 || s->method > 3)
        bad = "method must be 0 (dopri5), 1 (dop853), 2 (rk4) or 3 (auto)";
    else if (!(s->rtol > 0 && isfinite(s->rtol)))
        bad = "rtol must be a finite number > 0";
    else if (!(s->atol > 0 && isfinite(s->atol)))
        bad = "atol must be a finite number > 0";
    else if (!(s->step > 0 && isfinite(s->step)))
        bad = "step must be a finite number > 0";
    else if (!(s->max_step > 0))
        bad = "max_step must be > 0 (inf: none)";
    else if (!(s->max_steps >= 0 && isfinite(s->max_steps)))
        bad = "max_steps must be a finite number >= 0 (0: the engine's own cap)";
    else if (s->stabilization < 0 || s->stabilization > 2)
        bad = "stabilization must be 0 (none), 1 (projection) or 2 (baumgarte)";
    else if (!(isfinite(s->alpha) && isfinite(s->beta)))
        bad = "the Baumgarte alpha and beta must be finite";
    else if (!(s->proj_tol > 0 && isfinite(s->proj_tol)))
        bad = "proj_tol must be a finite number > 0";
    else if (!(s->contact_tol >= 0 && isfinite(s->contact_tol)))
        bad = "contact_tol must be a finite number > 0 [m or rad] (0: the model's default)";
    else if (!(s->contact_velocity >= 0 && isfinite(s->contact_velocity)))
        bad = "contact_velocity must be a finite number > 0 [m/s or rad/s] (0: the model's "
              "default)";
    else if (!(s->event_tol >= 0 && isfinite(s->event_tol)))
        bad = "event_tol must be a finite number > 0 [s] (0: the model's default)";
    if (bad) {
        msg(err, errlen, "solver settings: %s", bad);
        return MBE_ERROR;
    }
    e->set = *s;
    e->fsal = 0;
    contact_defaults(e, &e->set);
    if (e->kind == 1)
        sk_set_stabilization(e->kern, s->stabilization, s->alpha, s->beta, s->proj_tol);
    else
        mbk_set_stabilization(e->kern, s->stabilization, s->alpha, s->beta, s->proj_tol);
    return MBE_OK;
}

/* ------------------------------------------------------------------ initial state */
/* IINIT's guess column of a tree joint placed from the declared pose of the body it moves
 * (assembly.placement_seeds): revolute from the body's angle (or its position), prismatic
 * from its position */
#define SEED_ANGLE 2
#define SEED_POSITION 3
#define SEED_AIM 4                    /* DINIT's guess column: the revolute cut joint's index */
#define FAR_ANGLE (PI / 4)            /* assembly.FAR_ANGLE, FAR_LENGTH */
#define FAR_LENGTH 0.5

static double wrap_pi(double a) { return pymod(a + PI, 2 * PI) - PI; }

/* the coordinate that puts the moving body at its declared pose (assembly._seeded_q):
 * P the joint's data (sp, sc, angle0, axis), rp and rc the parent's and child's poses (the
 * placed side's and the moving side's declared one) */
static double seeded_q(int kind, int seed, int child_moves, const double *P, const double *rp,
                       const double *rc, const double *aim)
{
    double ap = rp[2], ac = rc[2], a[2], b[2];
    if (kind == JK_REV) {
        if (seed == SEED_AIM) {
            /* aim = (the moving body's cut-joint point in its axes, the target in world) */
            double d[2], s[2];
            if (child_moves) {
                rot(ap, P, a);
                d[0] = aim[2] - (rp[0] + a[0]);
                d[1] = aim[3] - (rp[1] + a[1]);
                s[0] = aim[0] - P[2];
                s[1] = aim[1] - P[3];
            } else {
                rot(ac, P + 2, b);
                d[0] = aim[2] - (rc[0] + b[0]);
                d[1] = aim[3] - (rc[1] + b[1]);
                s[0] = aim[0] - P[0];
                s[1] = aim[1] - P[1];
            }
            if (!((d[0] != 0.0 || d[1] != 0.0) && (s[0] != 0.0 || s[1] != 0.0)))
                return 0.0;
            double an = atan2(d[1], d[0]) - atan2(s[1], s[0]);
            return child_moves ? wrap_pi(an - ap - P[4]) : wrap_pi(ac - P[4] - an);
        }
        if (seed == SEED_POSITION) {
            double d[2], s[2];
            if (child_moves) {
                rot(ap, P, a);
                d[0] = rc[0] - (rp[0] + a[0]);
                d[1] = rc[1] - (rp[1] + a[1]);
                s[0] = -P[2];
                s[1] = -P[3];
            } else {
                rot(ac, P + 2, b);
                d[0] = rp[0] - (rc[0] + b[0]);
                d[1] = rp[1] - (rc[1] + b[1]);
                s[0] = -P[0];
                s[1] = -P[1];
            }
            if (!((d[0] != 0.0 || d[1] != 0.0) && (s[0] != 0.0 || s[1] != 0.0)))
                return 0.0;
            double an = atan2(d[1], d[0]) - atan2(s[1], s[0]);
            return child_moves ? wrap_pi(an - ap - P[4]) : wrap_pi(ac - P[4] - an);
        }
        return wrap_pi(ac - ap - P[4]);
    }
    double apn = child_moves ? ap : ac - P[4], acn = child_moves ? ap + P[4] : ac, ax[2];
    rot(acn, P + 2, b);
    rot(apn, P, a);
    rot(apn, P + 5, ax);
    double s0 = rc[0] + b[0] - (rp[0] + a[0]), s1 = rc[1] + b[1] - (rp[1] + a[1]);
    return ax[0] * s0 + ax[1] * s1;
}

/* e->warning: the first body placed at its declared pose that the assembly moved far from
 * it (assembly.declared_pose_far), x the assembled and pl the placed coordinates */
static void declared_far(MbEngine *e, const double *x, const double *pl, double size)
{
    e->warning[0] = '\0';
    for (int i = 0; i < e->nplace; i++) {
        int k = IA(e, A_IPLACE)[2 * i], parent_placed = IA(e, A_IPLACE)[2 * i + 1];
        const int *J = IA(e, A_IJOINT) + 6 * k;
        int ic = J[3], b = parent_placed ? J[2] : J[1];
        if (ic < 0 || b >= e->nb)
            continue;
        int seed = IA(e, A_IINIT)[3 * ic + 2];
        if (IA(e, A_IINIT)[3 * ic] || (seed != SEED_ANGLE && seed != SEED_POSITION))
            continue;
        const double *g = x + 3 * b, *w = pl + 3 * b;
        if (fabs(g[2] - w[2]) > FAR_ANGLE
            || hypot(g[0] - w[0], g[1] - w[1]) > FAR_LENGTH * size) {
            snprintf(e->warning, sizeof e->warning,
                     "the body moved by joint '%s' assembled at (%.4g, %.4g) m, %.4g deg, "
                     "far from its declared pose (%.4g, %.4g) m, %.4g deg: the loops closed "
                     "on another assembly branch; declare a pose nearer the intended one or "
                     "give the joint a guess", e->jname[k], g[0], g[1], g[2] * 180.0 / PI,
                     w[0], w[1], w[2] * 180.0 / PI);
            return;
        }
    }
}

/* whether joint kc is a revolute joint of body mv (a SEED_AIM's cut joint) */
static int aims_from(const MbEngine *e, int kc, int mv)
{
    const int *K = IA(e, A_IJOINT) + 6 * kc;
    return K[0] == JK_REV && (K[1] == mv || K[2] == mv) && K[1] != K[2];
}

/* absolute coordinates of the tree placement (assembly._tree_placement) into x */
static void tree_placement(MbEngine *e, double *x)
{
    int nb = e->nb;
    double *pose = e->xe;              /* (nb + 1) x 3, the ground at nb */
    for (int b = 0; b < nb; b++)
        memcpy(pose + 3 * b, DA(e, A_DBODY0) + 6 * b, sizeof(double) * 3);
    pose[3 * nb] = pose[3 * nb + 1] = pose[3 * nb + 2] = 0.0;
    for (int i = 0; i < e->nplace; i++) {
        int k = IA(e, A_IPLACE)[2 * i], parent_placed = IA(e, A_IPLACE)[2 * i + 1];
        const int *J = IA(e, A_IJOINT) + 6 * k;
        const double *P = DA(e, A_DJOINT) + 7 * k;
        int kind = J[0], p = J[1], c = J[2], ic = J[3];
        double q = 0.0;
        double *rp = pose + 3 * p, *rc = pose + 3 * c, a[2], b[2], sl[2] = {0.0, 0.0};
        if (ic >= 0) {
            const int *g = IA(e, A_IINIT) + 3 * ic;
            const double *v = DA(e, A_DINIT) + 3 * ic;
            if (g[0]) {
                q = v[0];
            } else if (g[2] == SEED_ANGLE || g[2] == SEED_POSITION) {
                q = seeded_q(kind, g[2], parent_placed, P, rp, rc, NULL);
            } else if (g[2] == SEED_AIM && kind == JK_REV && v[2] >= 0.0 && v[2] < e->nj
                       && aims_from(e, (int)v[2], parent_placed ? c : p)) {
                /* the cut joint's index: a revolute joint of the moving body (else q = 0) */
                int kc = (int)v[2], mv = parent_placed ? c : p;
                const int *K = IA(e, A_IJOINT) + 6 * kc;
                const double *KP = DA(e, A_DJOINT) + 7 * kc;
                int mine_parent = K[1] == mv, other = mine_parent ? K[2] : K[1];
                double aim[4], t[2];
                aim[0] = mine_parent ? KP[0] : KP[2];
                aim[1] = mine_parent ? KP[1] : KP[3];
                rot(pose[3 * other + 2], mine_parent ? KP + 2 : KP, t);
                aim[2] = pose[3 * other] + t[0];
                aim[3] = pose[3 * other + 1] + t[1];
                q = seeded_q(kind, SEED_AIM, parent_placed, P, rp, rc, aim);
            } else if (g[2] == 1) {
                q = v[2];
            }
        }
        if (parent_placed) {
            double ac = rp[2] + P[4] + (kind == JK_REV ? q : 0.0);
            if (kind == JK_PRI) {
                rot(rp[2], P + 5, sl);
                sl[0] *= q;
                sl[1] *= q;
            }
            rot(rp[2], P, a);
            rot(ac, P + 2, b);
            rc[0] = rp[0] + a[0] + sl[0] - b[0];
            rc[1] = rp[1] + a[1] + sl[1] - b[1];
            rc[2] = ac;
        } else {
            double ap = rc[2] - P[4] - (kind == JK_REV ? q : 0.0);
            if (kind == JK_PRI) {
                rot(ap, P + 5, sl);
                sl[0] *= q;
                sl[1] *= q;
            }
            rot(rc[2], P + 2, b);
            rot(ap, P, a);
            rp[0] = rc[0] + b[0] - sl[0] - a[0];
            rp[1] = rc[1] + b[1] - sl[1] - a[1];
            rp[2] = ap;
        }
    }
    memcpy(x, pose, sizeof(double) * 3 * nb);
}

/* the rows of the assembly by body blocks into R, their right-hand sides into rhs: rates 0,
 * its Newton's (assembly._position_rows): phi and the given joint coordinates' residuals;
 * rates 1, its velocity solve's: -phi_t and the given joint rates (phi into e->phi). Returns
 * the number of rows, -1 when a row is undefined at x. */
static int given_rows(MbEngine *e, const double *x, double t, int rates, double *rhs,
                      PlRow *R)
{
    int k = e->nrows;
    if (model_rows_pl(e, x, t, rates ? e->phi : rhs, e->phit, R) != OK)
        return -1;
    for (int i = 0; rates && i < e->nrows; i++)
        rhs[i] = -e->phit[i];
    extend(e, x, e->xde);              /* (xe is model_rows_pl's work array) */
    for (int i = 0; i < e->ncj; i++) {
        if (!IA(e, A_IINIT)[3 * i + rates])
            continue;
        double v, rate, J[6];
        int p, c;
        coordinate(e, i, e->xde, NULL, &v, &rate, J, &p, &c);
        rhs[k] = rates ? DA(e, A_DINIT)[3 * i + 1] : v - DA(e, A_DINIT)[3 * i];
        plrow_set(R + k++, e->nb, p, c, J, 1.0);
    }
    return k;
}

/* the k planar rows R as the dense k x 3 nb matrix A (model_rows' numbers) */
static void plrows_dense(const PlRow *R, int k, int nb, double *A)
{
    blocks_dense(R, ROW_BLOCKS(PlRow, 3), k, nb, A);
}

/* the largest |v_i|, INFINITY when an entry is not finite (no call per entry: it runs in the
 * model-exchange closure's passes) */
static double absmax(const double *v, int n)
{
    double m = 0.0;
    for (int i = 0; i < n; i++) {
        double a = fabs(v[i]);
        if (!(a < INFINITY))
            return INFINITY;
        if (a > m)
            m = a;
    }
    return m;
}

/* max(m, |v|) that keeps a NaN (fmax drops it): a residual that is not a number reads as
 * NaN, never as the largest finite one (numpy's max of |phi| in the Python reference) */
static double max_abs_nan(double m, double v)
{
    double a = fabs(v);
    return (a > m || a != a) ? a : m;
}

/* the assembly's failure message: the largest residual r (k rows) and the joint it is at */
static void open_rows_error(MbEngine *e, const double *r, int k, double t0, char *err,
                            size_t errlen)
{
    int worst = -1;
    double wv = -1.0;
    for (int j = 0; k > 0 && j < e->nj; j++) {
        const int *J = IA(e, A_IJOINT) + 6 * j;
        for (int i = J[4]; i < J[4] + J[5]; i++)
            if (!(fabs(r[i]) <= wv)) {
                wv = fabs(r[i]);
                worst = j;
            }
    }
    msg(err, errlen, "the initial conditions cannot be assembled at t = %.9g s: the "
        "constraint rows stay open (largest residual %.3g, at joint '%s'); give guesses "
        "near the intended pose or initial values that let the loops close", t0,
        k > 0 ? absmax(r, k) : NAN, worst >= 0 ? e->jname[worst] : "?");
}

static int all_finite(const double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* max |A xd - b| over k rows; r (if given) = b - A xd */
static double velocity_residual(const double *A, int k, int nc, const double *xd,
                                const double *b, double *r)
{
    double res = 0.0;
    for (int i = 0; i < k; i++) {
        double s = 0.0;
        for (int j = 0; j < nc; j++)
            s += A[(size_t)i * nc + j] * xd[j];
        res = max_abs_nan(res, s - b[i]);
        if (r)
            r[i] = b[i] - s;
    }
    return res;
}

/* velocity_residual over the rows' nonzeros (the same numbers for a finite xd) */
static double nz_velocity_residual(const NzRows *Z, const double *xd, const double *b,
                                   double *r)
{
    double res = 0.0;
    for (int i = 0; i < Z->k; i++) {
        double s = 0.0;
        for (int u = Z->start[i]; u < Z->start[i + 1]; u++)
            s += Z->val[u] * xd[Z->col[u]];
        res = max_abs_nan(res, s - b[i]);
        if (r)
            r[i] = b[i] - s;
    }
    return res;
}

/* 0 when the velocity guess meets the rows exactly (r = b - A xd all zero, A finite: at rest
 * without rheonomic rows), so that the least M-norm correction is zero and is skipped, as
 * assembly.assemble does; 1 otherwise */
static int velocity_correction_needed(const NzRows *Z, const double *r)
{
    for (int i = 0; i < Z->k; i++)
        if (r[i] != 0.0)
            return 1;
    return !all_finite(Z->val, Z->start[Z->k]);
}

/* The retry of the velocity solve with the fine cut and residual corrections
 * (assembly.assemble; massless coordinates spread S beyond the rank cut): refines xs (the
 * velocity guess, nc) in place; returns its residual, or INFINITY when a solve failed. r (k)
 * and dx (nc) are scratch. */
static double fine_velocities(MbEngine *e, const double *A, int k, int nc, const double *Minv,
                              const double *b, double *xs, double *r, double *dx)
{
    for (int pass = 0; pass <= FINE_REFINE; pass++) {
        velocity_residual(A, k, nc, xs, b, r);
        if (min_norm_fine(e, A, k, Minv, r, dx) != OK)
            return INFINITY;
        for (int j = 0; j < nc; j++)
            xs[j] += dx[j];
    }
    return velocity_residual(A, k, nc, xs, b, NULL);
}

/* ------------------------------------------------------------------ assembly: the retry
 * from the loops' least-squares closure (assembly._closure_retry, the same steps and starts:
 * Python and C pick the same loop branch and polish it by the same Newton) */

/* Newton-Raphson with minimum M-norm steps (fine: the fine cut) from x, in place
 * (assembly._newton); returns the number of rows of r (given_rows; -1: undefined) and
 * sets *closed when max |r| <= 1e-9 scale */
static int assembly_newton(MbEngine *e, double *x, double ta, const double *Minv,
                           double scale, int fine, int *closed)
{
    int nc = 3 * e->nb, k = 0;
    double *dx = e->f, *r = e->r;
    PlRow *R = e->pr;
    for (int it = 0; it < 50; it++) {
        k = given_rows(e, x, ta, 0, r, R);
        if (k < 0 || !all_finite(r, k))
            break;
        if (absmax(r, k) < 1e-12 * scale)
            break;
        int rc;
        if (fine) {             /* (dense: the fine cut is the retry of a failed assembly) */
            rc = reserve(&e->A, &e->ncap_A, (size_t)k * nc);
            if (rc != OK)
                break;
            plrows_dense(R, k, e->nb, e->A);
            rc = min_norm_fine(e, e->A, k, Minv, r, dx);
        } else {
            NzRows Z = nzrows_pl(e, R, k);
            rc = min_norm(e, &Z, Minv, r, dx);
        }
        if (rc != OK)
            break;
        for (int i = 0; i < nc; i++)
            x[i] -= dx[i];
    }
    k = given_rows(e, x, ta, 0, r, R);
    *closed = k >= 0 && all_finite(r, k) && absmax(r, k) <= 1e-9 * scale;
    return k;
}

/* splitmix64 (assembly._splitmix64): the next output; u = (z >> 11) 2^-53 in [0, 1) */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

#define CLOSURE_STARTS 12     /* assembly.STARTS */
#define LM_MU0 1e-3           /* assembly.LM_MU0, LM_DOWN, LM_UP, LM_MAXIT */
#define LM_DOWN 5.0
#define LM_UP 4.0
#define LM_MAXIT 200

typedef struct {
    int n, nf, mc, nc;
    int *free_, *rows;        /* free tree coordinates, loop rows (not a tree joint's) */
    double *q, *qn, *qd, *f, *fn, *J, *Jn, *H, *L, *g, *dq, *D, *phi, *phit, *xs, *xds;
} Closure;

/* the loop rows f (mc) at tree coordinates q and, when J is not NULL, J = D_cut Tq (mc x nf,
 * Tq column by column: the kernel's velocity map at unit rates); returns OK or 1 */
static int closure_rows(MbEngine *e, Closure *C, const double *q, double ta, double *f,
                        double *J)
{
    for (int i = 0; i < C->n; i++)
        C->qd[i] = 0.0;
    mbk_kinematics(e->kern, q, C->qd, C->xs, C->xds);
    if (model_rows(e, C->xs, ta, C->phi, C->phit, J ? C->D : NULL) != OK)
        return 1;
    for (int a = 0; a < C->mc; a++)
        f[a] = C->phi[C->rows[a]];
    if (!all_finite(f, C->mc))
        return 1;
    if (!J)
        return OK;
    for (int j = 0; j < C->nf; j++) {
        C->qd[C->free_[j]] = 1.0;
        mbk_kinematics(e->kern, q, C->qd, C->xs, C->xds);
        C->qd[C->free_[j]] = 0.0;
        for (int a = 0; a < C->mc; a++) {
            const double *Dr = C->D + (size_t)C->rows[a] * C->nc;
            double s = 0.0;
            for (int i = 0; i < C->nc; i++)
                s += Dr[i] * C->xds[i];
            J[(size_t)a * C->nf + j] = s;
        }
    }
    return OK;
}

/* (H + mu I) dq = -g by Cholesky (H: nf x nf); returns 0 when not positive definite */
static int closure_solve(Closure *C, double mu)
{
    int m = C->nf;
    double *L = C->L;
    for (int i = 0; i < m; i++)
        for (int j = 0; j <= i; j++) {
            double s = C->H[i * m + j] + (i == j ? mu : 0.0);
            for (int p = 0; p < j; p++)
                s -= L[i * m + p] * L[j * m + p];
            if (i == j) {
                if (!(s > 0.0))
                    return 0;
                L[i * m + i] = sqrt(s);
            } else {
                L[i * m + j] = s / L[j * m + j];
            }
        }
    for (int i = 0; i < m; i++) {           /* L y = -g */
        double s = -C->g[i];
        for (int p = 0; p < i; p++)
            s -= L[i * m + p] * C->dq[p];
        C->dq[i] = s / L[i * m + i];
    }
    for (int i = m - 1; i >= 0; i--) {      /* L' dq = y */
        double s = C->dq[i];
        for (int p = i + 1; p < m; p++)
            s -= L[p * m + i] * C->dq[p];
        C->dq[i] = s / L[i * m + i];
    }
    return all_finite(C->dq, m);
}

static double sumsq(const double *v, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += v[i] * v[i];
    return s;
}

/* Levenberg-Marquardt on the loop rows from C->q (assembly._closure_lm), in place; returns
 * max |f| at the end (INFINITY: undefined rows); f holds the rows there */
static double closure_lm(MbEngine *e, Closure *C, double ta, double scale)
{
    int nf = C->nf, mc = C->mc;
    if (closure_rows(e, C, C->q, ta, C->f, C->J) != OK)
        return INFINITY;
    double cost = sumsq(C->f, mc), mu = 0.0;
    for (int it = 0; it < LM_MAXIT; it++) {
        if (absmax(C->f, mc) <= 1e-12 * scale)
            break;
        double dmax = 0.0;
        for (int i = 0; i < nf; i++) {
            for (int j = 0; j < nf; j++) {
                double s = 0.0;
                for (int a = 0; a < mc; a++)
                    s += C->J[(size_t)a * nf + i] * C->J[(size_t)a * nf + j];
                C->H[i * nf + j] = s;
            }
            double s = 0.0;
            for (int a = 0; a < mc; a++)
                s += C->J[(size_t)a * nf + i] * C->f[a];
            C->g[i] = s;
            dmax = fmax(dmax, C->H[i * nf + i]);
        }
        if (it == 0)
            mu = LM_MU0 * (1.0 + dmax);
        double big = 1e20 * (1.0 + dmax), floor_ = 1e-15 * (1.0 + dmax);
        int done = 0;
        for (;;) {
            double costn = INFINITY;
            if (closure_solve(C, mu)) {
                memcpy(C->qn, C->q, sizeof(double) * C->n);
                for (int j = 0; j < nf; j++)
                    C->qn[C->free_[j]] += C->dq[j];
                if (closure_rows(e, C, C->qn, ta, C->fn, C->Jn) == OK)
                    costn = sumsq(C->fn, mc);
            }
            if (costn < cost) {
                int small = absmax(C->dq, nf) <= 1e-15 * (1.0 + absmax(C->q, C->n)) ||
                            cost - costn <= 1e-15 * cost;
                double *t;
                t = C->q; C->q = C->qn; C->qn = t;
                t = C->f; C->f = C->fn; C->fn = t;
                t = C->J; C->J = C->Jn; C->Jn = t;
                cost = costn;
                mu = fmax(mu / LM_DOWN, floor_);
                done = small;
                break;
            }
            mu *= LM_UP;
            if (mu > big) {
                done = 1;
                break;
            }
        }
        if (done)
            break;
    }
    return absmax(C->f, mc);
}

/* The retry of a failed assembly (assembly._closure_retry): from each start in turn (the tree
 * placement, then CLOSURE_STARTS splitmix64 starts), Levenberg-Marquardt on the loop rows with
 * the given joint coordinates kept; the first closure (loop rows within 1e-7 scale) from which
 * Newton assembles wins: x holds it and 1 is returned. Otherwise 0, with *open_joint the loop
 * (its cut joint) that stays most open at the best closure found and *open_res its residual
 * (the norm of its rows), -1 and NAN when none was found (-1 and 0: no loop). */
static int closure_retry(MbEngine *e, double *x, double ta, const double *Minv, double scale,
                         double size, int *open_joint, double *open_res)
{
    int nb = e->nb, nc = 3 * nb, n = e->n, nr = e->nrows, ok = 0, ncut = 0;
    size_t nn = n ? (size_t)n : 1, mr = nr ? (size_t)nr : 1, nf2 = nn * nn;
    Closure C = {0};
    C.n = n;
    C.nc = nc;
    char *tree = calloc(e->nj ? (size_t)e->nj : 1, 1), *tree_row = calloc(mr, 1);
    char *angle = calloc(nn, 1), *fixed = calloc(nn, 1);
    double *q0 = calloc(nn, sizeof(double)), *best_f = calloc(mr, sizeof(double));
    double *blk = calloc(4 * nn + 2 * mr + 2 * mr * nn + 2 * nf2 + 2 * nn + mr * nc + 2 * mr
                         + 2 * (size_t)nc + 1, sizeof(double));
    C.free_ = malloc(sizeof(int) * nn);
    C.rows = malloc(sizeof(int) * mr);
    *open_joint = -1;
    *open_res = NAN;
    do {                     /* (break: out) */
        if (!tree || !tree_row || !angle || !fixed || !q0 || !best_f || !blk || !C.free_ ||
            !C.rows)
            break;
        for (int i = 0; i < e->nplace; i++)
            tree[IA(e, A_IPLACE)[2 * i]] = 1;
        for (int j = 0; j < e->nj; j++) {
            const int *J = IA(e, A_IJOINT) + 6 * j;
            if (tree[j])
                for (int i = J[4]; i < J[4] + J[5]; i++)
                    tree_row[i] = 1;
            else
                ncut++;
        }
        if (!ncut) {
            *open_res = 0.0;
            break;
        }
        for (int i = 0; i < nr; i++)
            if (!tree_row[i])
                C.rows[C.mc++] = i;
        double *p = blk;
        C.q = p; p += nn; C.qn = p; p += nn; C.qd = p; p += nn; C.dq = p; p += nn;
        C.f = p; p += mr; C.fn = p; p += mr;
        C.J = p; p += mr * nn; C.Jn = p; p += mr * nn;
        C.H = p; p += nf2; C.L = p; p += nf2;
        C.g = p; p += 2 * nn;
        C.D = p; p += mr * nc;
        C.phi = p; p += mr; C.phit = p; p += mr;
        C.xs = p; p += nc; C.xds = p;
        /* tree coordinates at the tree placement, which are given (kept), which are angles */
        tree_placement(e, x);
        extend(e, x, e->xe);
        for (int i = 0; i < n; i++) {
            const int *Q = IA(e, A_IQSRC) + 2 * i;
            if (Q[0] == 0) {
                double rate;
                coordinate(e, Q[1], e->xe, NULL, q0 + i, &rate, NULL, NULL, NULL);
                angle[i] = IA(e, A_IJOINT)[6 * IA(e, A_ICOORD)[2 * Q[1]]] == JK_REV;
                fixed[i] = IA(e, A_IINIT)[3 * Q[1]] != 0;
            } else {
                q0[i] = x[Q[1]];
                angle[i] = Q[1] % 3 == 2;
            }
            if (!fixed[i])
                C.free_[C.nf++] = i;
        }
        uint64_t state = 0;
        double best = INFINITY;
        int starts = C.nf ? CLOSURE_STARTS : 0;
        for (int s = 0; s <= starts && !ok; s++) {
            double *qs = C.q;
            for (int i = 0; i < n; i++) {
                qs[i] = q0[i];
                if (s > 0) {             /* (a draw per coordinate; the given ones kept) */
                    double u = (double)(splitmix64(&state) >> 11) * 0x1.0p-53;
                    if (!fixed[i])
                        qs[i] += (angle[i] ? PI : size) * (2.0 * u - 1.0);
                }
            }
            double res = closure_lm(e, &C, ta, scale);
            if (!isfinite(res))
                continue;
            if (res < best) {
                best = res;
                memcpy(best_f, C.f, sizeof(double) * C.mc);
            }
            if (!(res <= 1e-7 * scale))
                continue;
            for (int j = 0; j < C.nf; j++) {     /* a coordinate the rows do not depend on */
                int zero = 1;                    /* goes back to its placement */
                for (int a = 0; a < C.mc && zero; a++)
                    zero = C.J[(size_t)a * C.nf + j] == 0.0;
                if (zero)
                    C.q[C.free_[j]] = q0[C.free_[j]];
            }
            mbk_kinematics(e->kern, C.q, C.qd, x, C.xds);     /* (qd is zero here) */
            int closed;
            assembly_newton(e, x, ta, Minv, scale, 0, &closed);
            ok = closed;
        }
        if (!ok && isfinite(best)) {
            /* the cut joint most open at the best closure (the norm of its rows) */
            int a = 0;
            double wv = -1.0;
            for (int j = 0; j < e->nj; j++) {
                const int *J = IA(e, A_IJOINT) + 6 * j;
                if (tree[j])
                    continue;
                double s = 0.0;
                for (int i = J[4]; i < J[4] + J[5]; i++) {
                    while (a < C.mc && C.rows[a] < i)
                        a++;
                    if (a < C.mc && C.rows[a] == i)
                        s += best_f[a] * best_f[a];
                }
                if (sqrt(s) > wv) {
                    wv = sqrt(s);
                    *open_joint = j;
                }
            }
            *open_res = wv;
        }
    } while (0);
    free(tree);
    free(tree_row);
    free(angle);
    free(fixed);
    free(q0);
    free(best_f);
    free(blk);
    free(C.free_);
    free(C.rows);
    return ok;
}

/* Masses and moments of inertia the engine can integrate: their products and squares (the
 * projection metric, kinetic energy) must stay finite, so |value| <= MBE_MASS_BOUND. 0 when
 * they are, else -1 with the body and the value in err. */
#define MBE_MASS_BOUND 1e100
static int check_masses(const MbEngine *e, char *err, size_t errlen)
{
    int spatial = e->kind == 1, per = spatial ? 9 : 1;
    const double *m = DA(e, spatial ? A_DSMASS : A_DMASS);
    const double *J = DA(e, spatial ? A_DSJ : A_DINERTIA);
    for (int b = 0; b < e->nb; b++) {
        double worst = fabs(m[b]);
        const char *what = "mass";
        for (int i = 0; i < per; i++)
            if (!(fabs(J[per * b + i]) <= worst) || isnan(J[per * b + i])) {
                worst = fabs(J[per * b + i]);
                what = "moment of inertia";
            }
        if (!(worst <= MBE_MASS_BOUND)) {
            msg(err, errlen, "body %d of the model has a %s of %g (kg or kg.m2), beyond %g: "
                "the engine's products of masses (kinetic energy, the projection's metric) "
                "would overflow; check the mass and inertia parameters", b, what, worst,
                MBE_MASS_BOUND);
            return -1;
        }
    }
    return 0;
}

typedef int (*InitialImpactFn)(void *ev, double t, double *y, const double *u, double *rec,
                               double ctol, double cvel, int stab, double alpha, double beta,
                               double ptol, int *impacts);

/* The last step of the initialisation (integrate._initial_impact): a contact closed
 * (gap <= contact_tol) and approaching at t0 has its impact at t0 (the event loop's fn) */
static MbeStatus initial_impact(MbEngine *e, double t0, InitialImpactFn fn, char *err,
                                size_t errlen)
{
    int impacts = 0;
    if (!e->ev || !e->ncon)
        return MBE_OK;
    int rc = fn(e->ev, t0, e->y, e->u0, e->rec, e->set.contact_tol, e->set.contact_velocity,
                e->set.stabilization, e->set.alpha, e->set.beta, e->set.proj_tol, &impacts);
    if (rc != OK) {
        msg(err, errlen, "the impact of the contacts closed and approaching at t = %.9g s "
            "cannot be handled: %s", t0, kernel_error(rc));
        return MBE_ERROR;
    }
    return MBE_OK;
}

MbeStatus mbe_initialize(MbEngine *e, double t0, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !isfinite(t0)) {
        msg(err, errlen, "mbe_initialize: no engine or a non-finite start time");
        return MBE_ERROR;
    }
    e->warning[0] = '\0';
    if (check_masses(e, err, errlen) != 0)
        return MBE_ERROR;
    if (e->kind == 1)
        return spatial_initialize(e, t0, err, errlen);
    /* the assembly at the model's own t0 (the drives' rows s(t0)), as initial_state does
     * it; the state then starts at the time asked (the Python FMU's start time) */
    double ta = DA(e, A_DT0)[0];
    int nb = e->nb, nc = 3 * nb, n = e->n;
    const double *Minv = DA(e, A_DMINV);
    double *x = e->xa, *xd = e->xda, *dx = e->f, *r = e->r;
    tree_placement(e, x);
    double size = 0.0;
    int any = 0;
    for (int k = 0; k < e->nj; k++)
        for (int i = 0; i < 4; i++) {
            size = fmax(size, fabs(DA(e, A_DJOINT)[7 * k + i]));
            any = 1;
        }
    if (!any)
        size = 1.0;
    double scale = 1.0 + fmax(absmax(x, nc), size);
    int k = 0, closed = 0;
    for (int fine = 0; fine < 2 && !closed; fine++) {   /* assembly._newton; fine: its retry */
        if (fine)
            tree_placement(e, x);
        k = assembly_newton(e, x, ta, Minv, scale, fine, &closed);
    }
    int open_joint = -1;
    double open_res = NAN;
    if (!closed) {
        /* the retry from the loops' least-squares closure (assembly._closure_retry) */
        double *xs = e->xda;              /* (scratch until the velocities) */
        if (closure_retry(e, xs, ta, Minv, scale, size, &open_joint, &open_res)) {
            memcpy(x, xs, sizeof(double) * nc);
            k = given_rows(e, x, ta, 0, r, e->pr);
            closed = 1;
        }
    }
    if (!closed && open_joint >= 0) {
        int kind = IA(e, A_IJOINT)[6 * open_joint];
        msg(err, errlen, "the initial conditions cannot be assembled at t = %.9g s: the loop "
            "closed by joint '%s' stays open by %.3g %s even at its best least-squares "
            "closure from %d starts; check the lengths and attachment points, or give "
            "initial values that let the loops close", t0, e->jname[open_joint], open_res,
            kind == JK_REV || kind == JK_DST ? "m" : "(m and rad)", 1 + CLOSURE_STARTS);
        return MBE_ERROR;
    }
    if (!closed) {
        open_rows_error(e, r, k, t0, err, errlen);
        return MBE_ERROR;
    }
    /* body angles to the turn nearest their placement */
    tree_placement(e, xd);
    for (int b = 0; b < nb; b++) {
        double pl = xd[3 * b + 2];
        x[3 * b + 2] = (pl + pymod(x[3 * b + 2] - pl + PI, 2 * PI)) - PI;
    }
    declared_far(e, x, xd, size);
    /* velocities: least M-norm xd with D xd = -phi_t and the given rates (the rows R by
     * body blocks, Z by their nonzeros) */
    PlRow *R = e->pr;
    double *b = e->rhs;
    k = given_rows(e, x, ta, 1, b, R);
    if (k < 0) {
        msg(err, errlen, "the assembled pose makes a constraint row undefined");
        return MBE_ERROR;
    }
    NzRows Z = nzrows_pl(e, R, k);
    for (int bb = 0; bb < nb; bb++) {
        const double *B0 = DA(e, A_DBODY0) + 6 * bb;
        xd[3 * bb] = B0[3];
        xd[3 * bb + 1] = B0[4];
        xd[3 * bb + 2] = B0[5];
    }
    nz_velocity_residual(&Z, xd, b, r);
    double res = 0.0;                 /* the guess meets the rows exactly: residual 0 */
    if (velocity_correction_needed(&Z, r)) {
        int rc = min_norm(e, &Z, Minv, r, dx);
        if (rc != OK) {
            msg(err, errlen, "the initial velocities cannot be computed (%s)",
                rc == ERR_NOMEM ? "out of memory" : "non-finite rows");
            return MBE_ERROR;
        }
        for (int j = 0; j < nc; j++)
            xd[j] += dx[j];
        res = nz_velocity_residual(&Z, xd, b, NULL);
    }
    if (!(res <= 1e-8 * (1.0 + absmax(b, k)))) {
        /* the retry with the fine cut and residual corrections (assembly.assemble; dense:
         * it runs only when the plain solve failed) */
        if (reserve(&e->A, &e->ncap_A, (size_t)k * nc) != OK) {
            msg(err, errlen, "the initial velocities' retry: out of memory for its dense rows "
                "(%d x %d)", k, nc);
            return MBE_ERROR;
        }
        double *A = e->A;
        plrows_dense(R, k, nb, A);
        double *xd2 = e->xde;          /* (scratch until extend() below) */
        for (int bb = 0; bb < nb; bb++)
            for (int j = 0; j < 3; j++)
                xd2[3 * bb + j] = DA(e, A_DBODY0)[6 * bb + 3 + j];
        double res2 = fine_velocities(e, A, k, nc, Minv, b, xd2, r, dx);
        if (res2 <= 1e-8 * (1.0 + absmax(b, k))) {
            memcpy(xd, xd2, sizeof(double) * nc);
            res = res2;
        }
    }
    if (!(res <= 1e-8 * (1.0 + absmax(b, k)))) {
        msg(err, errlen, "the initial rates are inconsistent with the constraints (velocity "
            "residual %.3g); give fewer rates or consistent ones", res);
        return MBE_ERROR;
    }
    /* q, qd of the tree (_minimal.initial_state) */
    double *q = e->ytmp, *qd = e->ytmp + n;
    extend(e, x, e->xe);
    extend(e, xd, e->xde);
    for (int i = 0; i < n; i++) {
        const int *Q = IA(e, A_IQSRC) + 2 * i;
        if (Q[0] == 0) {
            coordinate(e, Q[1], e->xe, e->xde, q + i, qd + i, NULL, NULL, NULL);
        } else {
            q[i] = x[Q[1]];
            qd[i] = xd[Q[1]];
        }
    }
    mbk_kinematics(e->kern, q, qd, e->x, e->xd);
    double dev = 0.0;
    for (int i = 0; i < nc; i++)
        dev = max_abs_nan(dev, e->x[i] - x[i]);
    if (!(dev <= 1e-8 * (1.0 + absmax(x, nc)))) {
        msg(err, errlen, "T(q0) does not reproduce the assembled pose (error %.3g)", dev);
        return MBE_ERROR;
    }
    memcpy(e->y, e->ytmp, sizeof(double) * 2 * n);
    memset(e->rec, 0, sizeof(double) * rec_size(e));   /* no impacts yet, none active */
    if (e->nrec > EV_REC) {     /* frictional contacts closed at the start start persistent */
        int rc = e->ev ? mbk_events_initial(e->ev, t0, e->y, e->u0, e->rec,
                                            e->set.contact_tol, e->set.contact_velocity) : 5;
        int ic = rc == 14 ? mbk_events_error_contact(e->ev) : -1;
        if (rc != OK && ic >= 0) {
            msg(err, errlen, "the frictional contacts' initial state cannot be found: contact "
                "%d: %s", ic, kernel_error(rc));
            return MBE_ERROR;
        }
        if (rc != OK) {
            msg(err, errlen, "the frictional contacts' and joints' initial state cannot be "
                "found: %s", kernel_error(rc));
            return MBE_ERROR;
        }
    }
    if (initial_impact(e, t0, mbk_events_initial_impact, err, errlen) != MBE_OK)
        return MBE_ERROR;
    e->t = t0;
    e->h = 0.0;
    e->initialized = 1;
    return MBE_OK;
}

const char *mbe_warning(const MbEngine *e)
{
    return e ? e->warning : "";
}

size_t mbe_workspace_bytes(const MbEngine *e, int which)
{
    if (!e)
        return 0;
    size_t cap[4] = {e->ncap_D, e->ncap_A, e->ncap_S, e->ncap_V};
    if (which == -1)
        return sizeof(double) * (cap[0] + cap[1] + cap[2] + cap[3]);
    return which >= 0 && which < 4 ? sizeof(double) * cap[which] : 0;
}

/* ------------------------------------------------------------------ stepping */
static const char *kernel_error(int rc)
{
    switch (rc) {
    case 1: return "the state became non-finite (NaN or infinity)";
    case 2: return "the articulated inertia is singular (a massless subtree)";
    case 3: return "the step size became too small";
    case 4: return "a spring-damper has zero length (its direction is undefined)";
    case 5: return "invalid kernel arguments";
    case 6: return "cannot restore the constraints of the closed loops (the mechanism may "
                   "have locked up or left its assembly branch)";
    case 7: return "the step budget (settings.max_steps integrator steps, or the engine's "
                   "own cap) was used up before the end of the interval; take shorter "
                   "communication steps or check the inputs";
    case 8: return "a contact's sign change could not be bracketed on the dense output";
    case 9: return "a contact switches state endlessly (Zeno behaviour; a larger "
                   "contact_velocity would make it persistent)";
    case 10: return "no admissible impact solution (the contacts closed together may be "
                    "redundant or the impact ill-posed)";
    case 11: return "a point-to-point contact's gap is undefined (zero distance)";
    case MBE_WORK_CODE: return "the work budget of one call was used up";
    case 14: return "a frictional contact has no consistent state (Painleve's paradox: "
                    "slipping, its normal force would pull and, released, its gap would "
                    "accelerate into the surface; a smaller friction coefficient is needed)";
    case 13: return "a frictional contact has no consistent state (Painleve's paradox: "
                    "slipping, its normal force would pull and, released, its gap would "
                    "accelerate into the surface), or the sliding friction leaves no unique "
                    "contact force";
    default: return "kernel error";
    }
}

static int check_inputs(const MbEngine *e, const double *u, char *err, size_t errlen)
{
    if (e->ni && !u) {
        msg(err, errlen, "no input values given; expected %d", e->ni);
        return 0;
    }
    for (int i = 0; i < e->ni; i++)
        if (!isfinite(u[i])) {
            msg(err, errlen, "input %d is %g; expected a finite value", i, u[i]);
            return 0;
        }
    return 1;
}

/* The cost of one right-hand side (or projection iteration) in work units (about 1 us of a
 * 2020s x86-64 core), estimated from the model's sizes: fitted to the models of models/ with
 * an O(m^3) term for the loop solves (an overestimate is safe: a smaller budget in steps).
 * The event loop's steps are paid at this rate. */
static double work_unit(const MbEngine *e)
{
    double rows = e->kind == 1 ? 6.0 * e->nc + e->nd : (double)e->m;
    return 0.1 + 0.05 * e->n + (e->kind == 1 ? 0.16 : 0.03) * e->nrows + 0.3 * e->nc +
           0.1 * e->m + 0.12 * e->ncon + 2e-3 * rows * rows * rows;
}

/* The unit a right-hand side (or projection iteration) charges in the kernel's budget of one
 * do_step: work_unit's for the spatial kernel; for the planar kernel without the O(m^3) term,
 * because it charges each loop solve by the operations of the route the solve took
 * (native/work.h work_ops; the envelope Cholesky's O(m b^2) on a band of width b, the
 * eigen-decomposition's O(m^3) only at singular poses). */
static double rhs_unit(const MbEngine *e)
{
    if (e->kind == 1)
        return work_unit(e);
    return 0.1 + 0.05 * e->n + 0.03 * e->nrows + 0.3 * e->nc + 0.1 * e->m + 0.12 * e->ncon;
}

/* Why a step used up its budget, in words a user can act on: the tolerances, rk4's step, a
 * large input, or a fast or stiff motion (the average step it got). */
static void budget_cause(const MbEngine *e, const double *u, double t0, double t_end,
                         double t_fail, double evals, char *out, size_t cap)
{
    int stages = e->set.method == 1 ? 13 : e->set.method == 2 ? 4 : 7;
    double steps = fmax(1.0, evals / stages), avg = (t_fail - t0) / steps;
    int big = -1;
    double umax = 0.0;
    for (int i = 0; i < e->ni; i++)
        if (fabs(u[i]) > umax) {
            umax = fabs(u[i]);
            big = i;
        }
    char inputs[120] = "";
    if (big >= 0)
        snprintf(inputs, sizeof inputs, " (the largest is input %d = %.6g)", big, u[big]);
    if (e->set.method == 2)
        snprintf(out, cap, "rk4 with solver.step = %.6g s needs %.6g steps for the interval: "
                 "solver.step too small or the interval too long", e->set.step,
                 ceil((t_end - t0) / e->set.step));
    else if (e->set.rtol < 1e-12 || e->set.atol < 1e-14)
        snprintf(out, cap, "the tolerances solver.rtol = %.3g and solver.atol = %.3g are too "
                 "small (steps of about %.3g s); raise them", e->set.rtol, e->set.atol, avg);
    else
        snprintf(out, cap, "the motion needs steps of about %.3g s: an input too large%s, a "
                 "stiffness or damping too high or a mass too small for an explicit method; "
                 "check them, or take shorter communication steps", avg, inputs);
}

static MbeStatus events_step(MbEngine *e, double t_end, const double *uu, double budget,
                             int stop, int *impact, char *err, size_t errlen);
static MbeStatus do_step(MbEngine *e, double h, const double *u, int stop, int *impact,
                         char *err, size_t errlen);

MbeStatus mbe_do_step(MbEngine *e, double h, const double *u, char *err, size_t errlen)
{
    return do_step(e, h, u, 0, NULL, err, errlen);
}

MbeStatus mbe_do_step_to_event(MbEngine *e, double h, const double *u, int *impact, char *err,
                               size_t errlen)
{
    if (impact)
        *impact = 0;
    return do_step(e, h, u, 1, impact, err, errlen);
}

static MbeStatus do_step(MbEngine *e, double h, const double *u, int stop, int *impact,
                         char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !e->initialized) {
        msg(err, errlen, "mbe_do_step: the engine is not initialized (call mbe_initialize)");
        return MBE_ERROR;
    }
    if (!(h > 0.0 && isfinite(h)) || !isfinite(e->t + h) || !(e->t + h > e->t)) {
        msg(err, errlen, "mbe_do_step: the step %.17g s must be a finite number > 0 that "
            "advances the time %.17g s", h, e->t);
        return MBE_ERROR;
    }
    if (!check_inputs(e, u, err, errlen))
        return MBE_ERROR;
    const double *uu = e->ni ? u : e->u0;
    int n = e->n, nfev = 0;
    double t_end = e->t + h;
    double budget = e->set.max_steps > 0 && e->set.max_steps < MBE_HARD_MAX_STEPS
                    ? e->set.max_steps : (double)MBE_HARD_MAX_STEPS;
    if (e->ncon || e->njf) {
        /* the event loop's steps that the work budget pays for */
        int stages = EV_METHOD(e) == 1 ? 12 : EV_METHOD(e) == 0 ? 6 : 4;
        double paid = floor(MBE_WORK_BUDGET / (work_unit(e) * (stages + 16)));
        return events_step(e, t_end, uu, fmax(1.0, fmin(floor(budget), paid)), stop, impact,
                           err, errlen);
    }
    /* f(t, y) from the last step when nothing it depends on changed since (bit for bit) */
    int reuse = e->fsal && e->fsal_t == e->t &&
                !memcmp(e->fsal_y, e->y, sizeof(double) * 2 * n) &&
                (!e->ni || !memcmp(e->fsal_u, uu, sizeof(double) * e->ni));
    /* auto (3): dopri5, or dop853 for this interval when dopri5's last step-size proposal
     * is below the interval / AUTO_SPLIT (fmu_mb.dynamics.integrate.auto_method) */
    int method = e->set.method;
    double h0 = e->h, h_after = -1.0;
    if (method == 3) {
        method = 0;
        if (h0 > 0.0 && h0 < h / AUTO_SPLIT) {
            method = 1;
            h_after = h0 * AUTO_GROW;
            h0 = fmin(h, 10.0 * h0);
        }
    }
    double par[10] = {e->t, t_end, h0, fmax(e->set.rtol, 100 * 2.220446049250313e-16),
                      e->set.atol, isfinite(e->set.max_step) ? e->set.max_step : 1e300,
                      e->set.step, e->t, floor(budget), reuse ? 2.0 : 1.0};
    memcpy(e->ytmp, e->y, sizeof(double) * 2 * n);
    if (reuse)
        memcpy(e->ytmp + 2 * n, e->fsal_f, sizeof(double) * 2 * n);
    double unit = rhs_unit(e);
    (e->kind == 1 ? sk_set_budget : mbk_set_budget)(e->kern, MBE_WORK_BUDGET, unit);
    int rc = (e->kind == 1 ? sk_advance : mbk_advance)(e->kern, method, par, e->ytmp, uu,
                                                         &nfev);
    double spent = (e->kind == 1 ? sk_spent : mbk_spent)(e->kern);
    (e->kind == 1 ? sk_set_budget : mbk_set_budget)(e->kern, 0.0, 0.0);
    if (rc == MBE_WORK_CODE || rc == 7) {
        char why[400];
        budget_cause(e, uu, e->t, t_end, par[7], spent / unit, why, sizeof why);
        msg(err, errlen, "the step from t = %.9g s to %.9g s failed at t = %.9g s: %s; %s; "
            "the state is kept", e->t, t_end, par[7],
            rc == 7 ? "the step budget (settings.max_steps integrator steps, at most the "
                      "engine's own cap of 200000) was used up"
                    : "the work budget of one call (about 1 s of computing) was used up",
            why);
        return MBE_DISCARD;
    }
    if (rc != OK) {
        msg(err, errlen, "the step from t = %.9g s to %.9g s failed at t = %.9g s: %s; the "
            "state is kept", e->t, t_end, par[7], kernel_error(rc));
        return MBE_DISCARD;
    }
    for (int i = 0; i < 2 * n; i++)
        if (!(fabs(e->ytmp[i]) <= MBE_STATE_LIMIT)) {
            msg(err, errlen, "the step from t = %.9g s to %.9g s diverged (|q| or |qd| "
                "beyond 1e12); the state is kept", e->t, t_end);
            return MBE_DISCARD;
        }
    memcpy(e->y, e->ytmp, sizeof(double) * 2 * n);
    e->t = t_end;
    e->h = h_after >= 0.0 ? h_after : par[2];
    e->fsal = par[9] == 2.0;
    if (e->fsal) {
        e->fsal_t = t_end;
        memcpy(e->fsal_f, e->ytmp + 2 * n, sizeof(double) * 2 * n);
        memcpy(e->fsal_y, e->y, sizeof(double) * 2 * n);
        if (e->ni)
            memcpy(e->fsal_u, uu, sizeof(double) * e->ni);
    }
    return MBE_OK;
}

/* a step of a contact model: the event loop of events.c (impacts, persistent contacts and
 * their release) from t to t_end, or to the first impact when `stop` */
static MbeStatus events_step(MbEngine *e, double t_end, const double *uu, double budget,
                             int stop, int *impact, char *err, size_t errlen)
{
    int n = e->n, hit = 0;
    double par[EV_NPAR] = {0};
    par[0] = e->t;
    par[1] = t_end;
    par[2] = e->h;
    par[3] = fmax(e->set.rtol, 100 * 2.220446049250313e-16);
    par[4] = e->set.atol;
    par[5] = e->set.max_step;
    par[6] = e->set.stabilization;
    par[7] = e->set.alpha;
    par[8] = e->set.beta;
    par[9] = e->set.proj_tol;
    par[10] = e->set.contact_tol;         /* the settings' (default: the data's A_DCSET) */
    par[11] = e->set.contact_velocity;
    par[12] = e->set.event_tol;
    par[13] = budget;
    par[18] = e->set.step;
    memcpy(e->ytmp, e->y, sizeof(double) * 2 * n);
    memcpy(e->rectmp, e->rec, sizeof(double) * rec_size(e));
    int rc;
    if (e->kind == 1)                            /* spatial: spatial_events.c's loop */
        rc = stop ? sk_advance_events_to_impact(e->ev, EV_METHOD(e), par, e->ytmp, uu,
                                                e->rectmp, &hit)
                  : sk_advance_events(e->ev, EV_METHOD(e), par, e->ytmp, uu, e->rectmp);
    else
        rc = stop ? mbk_advance_events_to_impact(e->ev, EV_METHOD(e), par, e->ytmp, uu,
                                                 e->rectmp, &hit)
                  : mbk_advance_events(e->ev, EV_METHOD(e), par, e->ytmp, uu, e->rectmp);
    if (rc == 7) {                               /* the steps the budget pays for */
        char why[400];
        int stages = EV_METHOD(e) == 1 ? 12 : EV_METHOD(e) == 0 ? 6 : 4;
        budget_cause(e, uu, e->t, t_end, par[14], par[15] * (stages + 1), why, sizeof why);
        msg(err, errlen, "the step from t = %.9g s to %.9g s was stopped after %.0f integrator "
            "steps of the contact event loop: %s was used up; %s; the state is kept", e->t,
            t_end, par[15], budget == e->set.max_steps ? "the step budget (settings.max_steps)"
            : "the work budget of one call (about 1 s of computing)", why);
        return MBE_DISCARD;
    }
    if (rc != OK) {
        int i = (int)par[17];
        char who[48] = "";
        if (i >= 0 && i < e->ncon)
            snprintf(who, sizeof who, " (contact %d of the model's contacts)", i);
        else if (i <= -2 && -2 - i < e->njf)
            snprintf(who, sizeof who, " (joint '%.30s')", e->jname[e->jfk[-2 - i]]);
        msg(err, errlen, "the step from t = %.9g s to %.9g s failed at t = %.9g s%s: %s; the "
            "state is kept", e->t, t_end, par[14], who, kernel_error(rc));
        return MBE_DISCARD;
    }
    for (int i = 0; i < 2 * n; i++)
        if (!(fabs(e->ytmp[i]) <= MBE_STATE_LIMIT)) {
            msg(err, errlen, "the step from t = %.9g s to %.9g s diverged (|q| or |qd| "
                "beyond 1e12); the state is kept", e->t, t_end);
            return MBE_DISCARD;
        }
    memcpy(e->y, e->ytmp, sizeof(double) * 2 * n);
    memcpy(e->rec, e->rectmp, sizeof(double) * rec_size(e));
    e->t = hit ? par[0] : t_end;
    e->h = par[2];
    if (impact)
        *impact = hit;
    return MBE_OK;
}

/* ------------------------------------------------------------------ state */
size_t mbe_state_size(const MbEngine *e)
{
    return e ? (size_t)(2 * e->n + 2) + rec_size(e) : 0;
}

void mbe_get_state(const MbEngine *e, double *s)
{
    if (!e || !s)
        return;
    s[0] = e->t;
    memcpy(s + 1, e->y, sizeof(double) * 2 * e->n);
    s[2 * e->n + 1] = e->h;
    memcpy(s + 2 * e->n + 2, e->rec, sizeof(double) * rec_size(e));
}

MbeStatus mbe_set_state(MbEngine *e, const double *s, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !s) {
        msg(err, errlen, "mbe_set_state: no engine or no state");
        return MBE_ERROR;
    }
    int n = e->n;
    if (!isfinite(s[0])) {
        msg(err, errlen, "the state's time is %g; expected a finite number", s[0]);
        return MBE_ERROR;
    }
    for (int i = 0; i < 2 * n; i++)
        if (!(fabs(s[1 + i]) <= MBE_STATE_LIMIT)) {
            msg(err, errlen, "the state's %s %d is %g; expected a finite value of magnitude "
                "at most 1e12", i < n ? "coordinate" : "rate", i < n ? i : i - n, s[1 + i]);
            return MBE_ERROR;
        }
    double h = s[2 * n + 1];
    if (!(h >= 0.0 && isfinite(h))) {
        msg(err, errlen, "the state's step size is %g; expected a finite number >= 0", h);
        return MBE_ERROR;
    }
    for (int i = 0; i < e->ncon; i++) {
        /* the contact records: impacts (a whole number >= 0), time of the last impact,
         * impulse and energy loss (>= 0), active (0 or 1) */
        const double *R = s + 2 * n + 2 + e->nrec * i;
        const char *bad = NULL;
        if (!(R[0] >= 0.0 && R[0] <= 9e15 && R[0] == floor(R[0])))
            bad = "impact count (expected a whole number >= 0)";
        else if (!isfinite(R[1]))
            bad = "time of the last impact (expected a finite number)";
        else if (!(R[2] >= 0.0 && isfinite(R[2])))
            bad = "last impulse (expected a finite number >= 0)";
        else if (!(R[3] >= 0.0 && isfinite(R[3])))
            bad = "energy loss (expected a finite number >= 0)";
        else if (!(R[4] == 0.0 || R[4] == 1.0))
            bad = "active flag (expected 0 or 1)";
        else if (e->nrec > EV_REC && !(R[5] == 0.0 || R[5] == 1.0))
            bad = "stick flag (expected 0 or 1)";
        else if (e->nrec > EV_REC && !(isfinite(R[6]) && isfinite(R[7]) &&
                                        fabs(R[6]) <= 1.0 && fabs(R[7]) <= 1.0))
            bad = "slip direction (expected finite numbers in [-1, 1])";
        else if (e->nrec > EV_REC && !(R[8] >= 0.0 && isfinite(R[8])))
            bad = "sliding loss (expected a finite number >= 0)";
        if (bad) {
            msg(err, errlen, "the state's record of contact %d has an invalid %s", i, bad);
            return MBE_ERROR;
        }
    }
    for (int j = 0; j < e->njf; j++) {
        /* the frictional joints' records: stick (0 or 1), slip direction (+-1), loss >= 0 */
        const double *R = s + 2 * n + 2 + (size_t)e->nrec * e->ncon + 3 * j;
        const char *bad = !(R[0] == 0.0 || R[0] == 1.0) ? "stick flag (expected 0 or 1)"
                          : !(R[1] == 1.0 || R[1] == -1.0) ? "slip direction (expected 1 or -1)"
                          : !(R[2] >= 0.0 && isfinite(R[2]))
                              ? "friction loss (expected a finite number >= 0)" : NULL;
        if (bad) {
            msg(err, errlen, "the state's record of joint '%s' has an invalid %s",
                e->jname[e->jfk[j]], bad);
            return MBE_ERROR;
        }
    }
    for (int row = 0; e->kind == 1 && row < e->nb; row++) {
        /* spatial: the Euler parameters of spherical joints and floating bodies are unit
         * quaternions (the drift control keeps them so; 1e-2 leaves room for 'none') */
        const int *R = IA(e, A_ISRI) + 6 * row;
        if (R[0] != 3 && R[0] != 4)
            continue;
        const double *p = s + 1 + R[3] + (R[0] == 4 ? 3 : 0);
        double norm = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3]);
        if (!(fabs(norm - 1.0) <= 1e-2)) {
            msg(err, errlen, "the state's Euler parameters at coordinates %d..%d have length "
                "%g; expected a unit quaternion (length 1)", (int)(p - s - 1),
                (int)(p - s - 1) + 3, norm);
            return MBE_ERROR;
        }
    }
    e->t = s[0];
    memcpy(e->y, s + 1, sizeof(double) * 2 * n);
    e->h = h;
    memcpy(e->rec, s + 2 * n + 2, sizeof(double) * rec_size(e));
    e->initialized = 1;
    me_zeno_restart(e);               /* a set state inherits no event counts */
    return MBE_OK;
}

/* ------------------------------------------------------------------ outputs */
static double element_force(const MbEngine *e, int row, const double *xe, const double *xde,
                            const double *u, double *elong, double *rate)
{
    const int *E = IA(e, A_IEI) + EI * row;
    const double *P = DA(e, A_DED) + ED * row;
    int kind = E[0], a = E[1], b = E[2], iu = E[3];
    double h = iu >= 0 ? u[iu] : 0.0, J[6], v = 0.0, vd = 0.0;
    *elong = *rate = NAN;
    if (kind == 1) {                                   /* TSDA */
        if (primitive(R_DST, xe, a, b, P + 4, P + 6, NULL, &v, J) != OK)
            return NAN;
        vd = jrate(J, xde, a, b);
        double s = P[0] * (v - P[2]) + P[1] * vd + h;
        if (e->cnt[A_DGAIN] && e->ni) {
            const double *G = DA(e, A_DGAIN) + (size_t)E[4] * e->ni;
            double gu = 0.0;
            for (int i = 0; i < e->ni; i++)
                gu += G[i] * u[i];
            s -= gu;
        }
        *elong = v;
        *rate = vd;
        return s;
    }
    if (kind == 2) {                                   /* RSDA */
        primitive(R_ANG, xe, a, b, NULL, NULL, NULL, &v, J);
        vd = jrate(J, xde, a, b);
        *elong = v;
        *rate = vd;
        return P[0] * (v - P[2]) + P[1] * vd + h;
    }
    *elong = 0.0;
    *rate = 0.0;
    return P[3] + h;                                   /* force, torque */
}

MbeStatus mbe_outputs(MbEngine *e, const double *u, double *y, char *err, size_t errlen)
{
    return mbe_outputs_groups(e, u, MBE_GROUP_ALL, y, err, errlen);
}

int mbe_output_group(const MbEngine *e, int i)
{
    return e && i >= 0 && i < e->nout ? e->ogroup[i] : 0;
}

/* the contacts' outputs have the friction ones (a contact has friction) */
static int contact_fr(const MbEngine *e)
{
    return e->kind == 1 ? e->cfr : planar_friction(e);
}

/* the group of every output (engine.h MBE_GROUP_*), in output_spec order */
static void output_groups(MbEngine *e)
{
    int k = 0, *g = e->ogroup, sp = e->kind == 1, no = e->nout;
#define GSET(grp, count)                                                                 \
    for (int c_ = 0; c_ < (count) && k < no; c_++)                                        \
        g[k++] = (grp);
    GSET(MBE_GROUP_BODIES, (sp ? 16 : 6) * e->nb);
    for (int j = 0; j < e->nj; j++) {
        int kind = IA(e, A_IJOINT)[6 * j], nco, nre;
        if (sp) {
            nco = kind == SJ_REV || kind == SJ_PRI ? 2 : kind == SJ_CYL || kind == SJ_UNI ? 4 : 0;
            nre = kind == SJ_DST ? 1 : 6;
        } else {
            nco = kind == JK_REV || kind == JK_PRI ? 2 : 0;
            nre = kind == JK_DST ? 1 : 2 + (kind == JK_WELD || kind == JK_PRI);
        }
        GSET(MBE_GROUP_COORDS, nco);
        GSET(MBE_GROUP_REACTIONS, nre);
    }
    GSET(MBE_GROUP_REACTIONS, e->nd);
    for (int i = 0; i < e->nel; i++) {
        static const int pw[] = {2, 2, 7, 1, 1}, sw[] = {2, 2, 8, 1, 1, 6};
        int kind = IA(e, A_IELEM)[2 * i];
        GSET(MBE_GROUP_ELEMENTS, sp ? sw[kind] : pw[kind]);
    }
    GSET(MBE_GROUP_MARKERS, (sp ? 6 : 4) * e->nmark);
    for (int i = 0; i < e->ncon; i++) {     /* gap and records, then the contact's force */
        GSET(MBE_GROUP_CONTACTS, contact_fr(e) ? (sp ? 10 : 9) : 6);
        GSET(MBE_GROUP_REACTIONS, contact_fr(e) ? (sp ? 3 : 2) : 1);
    }
    GSET(MBE_GROUP_REACTIONS, 3 * e->njf);  /* the joints' friction, state and loss */
    GSET(MBE_GROUP_ENERGY, 3);
    GSET(MBE_GROUP_RESIDUALS, 2);
#undef GSET
}

/* the contacts' outputs from entry k of y (planar and spatial): per contact gap, impacts,
 * last_time, last_impulse, active, energy_loss (group GK), force (group G2); returns the next
 * entry */
static int contact_outputs(const MbEngine *e, int GK, int G2, double *y, int k)
{
    for (int i = 0; i < e->ncon; i++) {
        const double *R = e->rec + e->nrec * i;
        if (contact_fr(e)) {        /* friction: + state, slip (2), sliding loss; ft (2) */
            int kind = IA(e, A_ICON)[3 * i];   /* a plane, rim or shape-pair contact */
            int fr = e->kind == 1 ? (kind == 1 || kind == 5 || kind == 6)
                                        && DA(e, A_DCON)[SKD * i + 35] > 0.0
                                  : DA(e, A_DCMU)[i] > 0.0;
            double st = R[4] == 0.0 ? 0.0 : (R[5] != 0.0 && fr ? 1.0 : 2.0);
            if (e->kind != 1) {     /* planar: one tangent (slip, ft) */
                double v[11] = {e->gap[i], R[0], R[1], R[2], R[4], R[3], st, e->cvt[2 * i],
                                R[8], e->cforce[i], e->cft[2 * i]};
                for (int j = 0; j < 11; j++, k++)
                    if (j < 9 ? GK : G2)
                        y[k] = v[j];
                continue;
            }
            double v[13] = {e->gap[i], R[0], R[1], R[2], R[4], R[3], st, e->cvt[2 * i],
                            e->cvt[2 * i + 1], R[8], e->cforce[i], e->cft[2 * i],
                            e->cft[2 * i + 1]};
            for (int j = 0; j < 13; j++, k++)
                if (j < 10 ? GK : G2)
                    y[k] = v[j];
            continue;
        }
        double v[7] = {e->gap[i], R[0], R[1], R[2], R[4], R[3], e->cforce[i]};
        for (int j = 0; j < 7; j++, k++)
            if (j < 6 ? GK : G2)
                y[k] = v[j];
    }
    return k;
}

/* f (3 nb) += the persistent planar contacts' friction forces e->cft (mbk_events_outputs_fr):
 * ft t (t = e_z x n, n the line's normal turned with p) on c's material point at the contact
 * point P = C - r n and its opposite on p's; a shape pair's: ft times its tangential row (the
 * same force at its surface points) */
static void planar_friction_forces(const MbEngine *e, const double *x, double *f)
{
    int nb = e->nb;
    for (int i = 0; i < e->ncon; i++) {
        if (e->rec[e->nrec * i + 4] == 0.0 || !(DA(e, A_DCMU)[i] > 0.0))
            continue;
        const int *R = IA(e, A_ICON) + 3 * i;
        const double *P = DA(e, A_DCON) + 8 * i;
        int p = R[1], c = R[2];
        if (R[0] == R_PAIR) {
            mbpp_rows_t o;
            pair_at(e, i, x, &o);
            for (int j = 0; j < 3; j++) {
                if (p < nb)
                    f[3 * p + j] += e->cft[2 * i] * o.jt[j];
                if (c < nb)
                    f[3 * c + j] += e->cft[2 * i] * o.jt[3 + j];
            }
            continue;
        }
        double thp = p < nb ? x[3 * p + 2] : 0.0, thc = c < nb ? x[3 * c + 2] : 0.0;
        double cp = cos(thp), sp = sin(thp), cc = cos(thc), sc = sin(thc);
        double n[2] = {cp * P[4] - sp * P[5], sp * P[4] + cp * P[5]};
        double F[2] = {-n[1] * e->cft[2 * i], n[0] * e->cft[2 * i]};
        double C[2] = {(c < nb ? x[3 * c] : 0.0) + cc * P[2] - sc * P[3],
                       (c < nb ? x[3 * c + 1] : 0.0) + sc * P[2] + cc * P[3]};
        double Pw[2] = {C[0] - P[6] * n[0], C[1] - P[6] * n[1]};
        int bodies[2] = {c, p};
        double sg[2] = {1.0, -1.0};
        for (int q = 0; q < 2; q++) {
            int b = bodies[q];
            if (b >= nb)
                continue;
            double fx = sg[q] * F[0], fy = sg[q] * F[1];
            f[3 * b] += fx;
            f[3 * b + 1] += fy;
            f[3 * b + 2] += (Pw[0] - x[3 * b]) * fy - (Pw[1] - x[3 * b + 1]) * fx;
        }
    }
}

MbeStatus mbe_outputs_groups(MbEngine *e, const double *u, int groups, double *y, char *err,
                             size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !y || !e->initialized) {
        msg(err, errlen, "mbe_outputs: no engine, no output array, or not initialized");
        return MBE_ERROR;
    }
    if (!check_inputs(e, u, err, errlen))
        return MBE_ERROR;
    const double *uu = e->ni ? u : e->u0;
    if (e->kind == 1)
        return spatial_outputs(e, uu, groups, y, err, errlen);
    int nb = e->nb, n = e->n, nr = e->nrows;
    double t = e->t, *q = e->y, *qd = e->y + n;
    double *x = e->xa, *xd = e->xda;
    const double *mass = DA(e, A_DMASS), *inertia = DA(e, A_DINERTIA);
    /* the absolute motion of the state (Outputs' "absolute": forward kinematics of q, qd) */
    mbk_kinematics(e->kern, q, qd, x, xd);
    int want_lam = (groups & MBE_GROUP_REACTIONS) && nr;
    int want_rows = (groups & (MBE_GROUP_REACTIONS | MBE_GROUP_RESIDUALS)) && nr;
    /* the motion of the dynamics (prescribed coordinates at s(t), s'(t)), its accelerations
     * and applied forces */
    memcpy(e->q2, q, sizeof(double) * n);
    memcpy(e->qd2, qd, sizeof(double) * n);
    for (int dr = 0; dr < e->nd; dr++) {
        double s[3];
        law(e, dr, t, s);
        int j = IA(e, A_IDI)[DI * dr];
        e->q2[j] = s[0];
        e->qd2[j] = s[1];
    }
    int rc = OK;
    int nact = 0;                  /* persistent contacts: their rows join the reactions' */
    for (int i = 0; i < e->ncon; i++)
        nact += e->rec[e->nrec * i + 4] != 0.0;
    if (want_lam && (nact || e->njf))
        rc = mbk_events_accelerations(e->ev, t, e->q2, e->qd2, uu, e->rec, e->qdd, e->x,
                                      e->xd, e->xdd);
    else if (want_lam)
        rc = mbk_accelerations(e->kern, t, e->q2, e->qd2, uu, e->qdd, e->x, e->xd, e->xdd);
    if (want_lam && rc == OK) {
        rc = mbk_applied_forces(e->kern, e->q2, e->qd2, uu, e->f);
    }
    int want_con = (e->ncon || e->njf) && (groups & (MBE_GROUP_CONTACTS | MBE_GROUP_REACTIONS));
    if (rc == OK && want_con && e->njf)
        rc = mbk_events_joint_outputs(e->ev, t, e->y, uu, e->rec, e->gap, e->cforce, e->cft,
                                      e->cvt, e->jfo);
    else if (rc == OK && want_con)
        rc = e->nrec > EV_REC
                 ? mbk_events_outputs_fr(e->ev, t, e->y, uu, e->rec, e->gap, e->cforce, e->cft,
                                         e->cvt)
                 : mbk_events_outputs(e->ev, t, e->y, uu, e->rec, e->gap, e->cforce);
    if (rc != OK) {
        msg(err, errlen, "the outputs at t = %.9g s cannot be computed: %s", t,
            kernel_error(rc));
        return MBE_ERROR;
    }
    /* Newton-Euler multipliers: D D' lam = D (f - M xdd) at the dynamics' motion, the rows
     * by body blocks (PlRow) */
    double *lam = e->lam;
    PlRow *R2 = e->pr, *R1 = e->pr + e->nrows + e->ncon;
    if (want_lam) {
        if (model_rows_pl(e, e->x, t, e->phi, e->phit, R2) != OK) {
            msg(err, errlen, "a constraint row is undefined at t = %.9g s (a distance joint "
                "of zero length)", t);
            return MBE_ERROR;
        }
        /* the persistent contacts' forces (the event loop's, whose split of redundant
         * contacts' forces is the kernel's) act as known forces, their normal force times
         * their gap row (side x the row's Jacobian); the reactions are the joints' rows */
        int nt = nr;
        for (int i = 0; i < e->ncon; i++) {
            if (e->rec[e->nrec * i + 4] == 0.0)
                continue;
            const int *R = IA(e, A_ICON) + 3 * i;
            const double *P = DA(e, A_DCON) + 8 * i;
            double val, J[6];
            extend(e, e->x, e->xe);
            if (R[0] == R_PAIR) {
                mbpp_rows_t o;
                pair_at(e, i, e->x, &o);
                memcpy(J, o.jn, sizeof J);
            } else if (primitive(R[0], e->xe, R[1], R[2], P, P + 2, P + 4, &val, J) != OK) {
                msg(err, errlen, "contact %d's gap row is undefined at t = %.9g s (zero "
                    "distance)", i, t);
                return MBE_ERROR;
            }
            double fn = e->cforce[i] * P[7];
            for (int j = 0; j < 3; j++) {
                if (R[1] < nb)
                    e->f[3 * R[1] + j] += fn * J[j];
                if (R[2] < nb)
                    e->f[3 * R[2] + j] += fn * J[3 + j];
            }
        }
        if (planar_friction(e))   /* the friction forces join the applied forces */
            planar_friction_forces(e, e->x, e->f);
        for (int j = 0; j < e->njf; j++) {   /* and the joints' friction torques */
            const int *J = IA(e, A_IJOINT) + 6 * e->jfk[j];
            double val, rate, J6[6];
            int p, c;
            extend(e, e->x, e->xe);
            coordinate(e, J[3], e->xe, NULL, &val, &rate, J6, &p, &c);
            for (int a = 0; a < 3; a++) {
                if (p < nb)
                    e->f[3 * p + a] += e->jfo[3 * j] * J6[a];
                if (c < nb)
                    e->f[3 * c + a] += e->jfo[3 * j] * J6[3 + a];
            }
        }
        for (int b = 0; b < nb; b++) {
            e->r[3 * b] = e->f[3 * b] - mass[b] * e->xdd[3 * b];
            e->r[3 * b + 1] = e->f[3 * b + 1] - mass[b] * e->xdd[3 * b + 1];
            e->r[3 * b + 2] = e->f[3 * b + 2] - inertia[b] * e->xdd[3 * b + 2];
        }
        for (int a = 0; a < nt; a++)
            e->rhs[a] = plrow_dot(R2 + a, e->r, 0.0);
        int rc = plrows_psd_solve(e, R2, nt, e->rhs, lam);
        if (rc != OK) {
            msg(err, errlen, "the reactions at t = %.9g s cannot be computed (%s)", t,
                rc == ERR_NOMEM ? "out of memory" : "non-finite constraint rows");
            return MBE_ERROR;
        }
    }
    /* the rows at the state's own motion (residuals and the reactions' Jacobian) */
    if (want_rows && model_rows_pl(e, x, t, e->phi, e->phit, R1) != OK) {
        msg(err, errlen, "a constraint row is undefined at t = %.9g s", t);
        return MBE_ERROR;
    }
    const int GB = groups & MBE_GROUP_BODIES, GC = groups & MBE_GROUP_COORDS,
              GE = groups & MBE_GROUP_ELEMENTS, GM = groups & MBE_GROUP_MARKERS,
              GN = groups & MBE_GROUP_ENERGY, G2 = groups & MBE_GROUP_REACTIONS,
              G4 = groups & MBE_GROUP_RESIDUALS, GK = groups & MBE_GROUP_CONTACTS;
#define PUT(g, v) do { if (g) y[k] = (v); k++; } while (0)
    double *xe = e->xe, *xde = e->xde;
    int k = 0;
    for (int b = 0; b < nb; b++) {
        for (int i = 0; i < 3; i++)
            PUT(GB, x[3 * b + i]);
        for (int i = 0; i < 3; i++)
            PUT(GB, xd[3 * b + i]);
    }
    extend(e, x, xe);
    extend(e, xd, xde);
    for (int j = 0; j < e->nj; j++) {
        const int *J = IA(e, A_IJOINT) + 6 * j;
        const double *P = DA(e, A_DJOINT) + 7 * j;
        int kind = J[0], p = J[1], c = J[2], ic = J[3], r0 = J[4], nrj = J[5];
        if (ic >= 0) {
            int tq = IA(e, A_ICOORD)[2 * ic + 1];
            if (tq >= 0) {
                PUT(GC, q[tq]);
                PUT(GC, qd[tq]);
            } else {
                double v = 0.0, rate = 0.0;
                if (GC)
                    coordinate(e, ic, xe, xde, &v, &rate, NULL, NULL, NULL);
                PUT(GC, v);
                PUT(GC, rate);
            }
        }
        if (kind == JK_DST) {
            PUT(G2, lam[r0]);
            continue;
        }
        if (!G2) {
            k += 2 + (kind == JK_WELD || kind == JK_PRI);
            continue;
        }
        /* constraints.reactions: the force of the parent on the child at the child's point */
        double F[3] = {0.0, 0.0, 0.0}, arm[2];
        int body = c < nb ? c : p;
        double sgn = c < nb ? -1.0 : 1.0;
        for (int r = r0; r < r0 + nrj; r++)
            for (int k = 0; k < R1[r].n; k++)
                for (int i = 0; i < 3 && R1[r].b[k] == body; i++)
                    F[i] += R1[r].v[k][i] * lam[r];
        for (int i = 0; i < 3; i++)
            F[i] *= sgn;
        rot(x[3 * body + 2], c < nb ? P + 2 : P, arm);
        double torque = F[2] - (arm[0] * F[1] - arm[1] * F[0]);
        y[k++] = F[0];
        y[k++] = F[1];
        if (kind == JK_WELD || kind == JK_PRI)
            y[k++] = torque;
    }
    for (int dr = 0; dr < e->nd; dr++)
        PUT(G2, -lam[IA(e, A_IDROW)[dr]]);
    extend(e, x, xe);
    for (int i = 0; i < e->nel && !GE; i++) {
        static const int width[] = {2, 2, 7, 1, 1};
        k += width[IA(e, A_IELEM)[2 * i]];
    }
    for (int i = 0; i < e->nel && GE; i++) {
        int kind = IA(e, A_IELEM)[2 * i], row = IA(e, A_IELEM)[2 * i + 1];
        double el, rate, s = element_force(e, row, xe, xde, uu, &el, &rate);
        if (kind == EK_TSDA || kind == EK_RSDA) {
            y[k++] = s;
            y[k++] = el;
        } else if (kind == EK_CYL) {
            const int *E = IA(e, A_IEI) + EI * row;
            const double *P = DA(e, A_DED) + ED * row;
            Frames Fr;
            frames(xe, E[1], E[2], P + 4, P + 6, &Fr);
            double F = -s;
            y[k++] = F;
            y[k++] = el;
            y[k++] = el - DA(e, A_DELEM)[i];
            y[k++] = rate;
            y[k++] = F * (Fr.d[0] / el);
            y[k++] = F * (Fr.d[1] / el);
            double hits = 0.0;             /* impacts of its end-stop contacts */
            for (int j = 0; j < 2; j++) {
                int c = IA(e, A_IEND)[2 * i + j];
                if (c >= 0)
                    hits += e->rec[e->nrec * c];
            }
            y[k++] = hits;
        } else {
            y[k++] = s;
        }
    }
    for (int i = 0; i < e->nmark && !GM; i++)
        k += 4;
    for (int i = 0; i < e->nmark && GM; i++) {
        int b = IA(e, A_IMARK)[i];
        double As[2];
        rot(xe[3 * b + 2], DA(e, A_DMARK) + 2 * i, As);
        y[k++] = xe[3 * b] + As[0];
        y[k++] = xe[3 * b + 1] + As[1];
        y[k++] = xde[3 * b] - As[1] * xde[3 * b + 2];
        y[k++] = xde[3 * b + 1] + As[0] * xde[3 * b + 2];
    }
    k = contact_outputs(e, GK, G2, y, k);
    for (int j = 0; j < 3 * e->njf; j++, k++)  /* the joints' friction, state, loss */
        if (G2)
            y[k] = e->jfo[j];
    /* energies (elements.kinetic_energy, potential_energy) and residuals */
    const double *g = DA(e, A_DGRAV);
    double T = 0.0, Vg = 0.0;
    for (int b = 0; b < nb; b++) {
        T += mass[b] * xd[3 * b] * xd[3 * b] + mass[b] * xd[3 * b + 1] * xd[3 * b + 1] +
             inertia[b] * xd[3 * b + 2] * xd[3 * b + 2];
        Vg += mass[b] * (g[0] * x[3 * b] + g[1] * x[3 * b + 1]);
    }
    T *= 0.5;
    double V = -Vg;
    for (int i = 0; i < e->ne; i++) {
        const int *E = IA(e, A_IEI) + EI * i;
        const double *P = DA(e, A_DED) + ED * i;
        double v, J[6];
        if (E[0] == 1) {
            if (primitive(R_DST, xe, E[1], E[2], P + 4, P + 6, NULL, &v, J) != OK)
                v = NAN;
            V += 0.5 * P[0] * (v - P[2]) * (v - P[2]);
        } else if (E[0] == 2) {
            primitive(R_ANG, xe, E[1], E[2], NULL, NULL, NULL, &v, J);
            V += 0.5 * P[0] * (v - P[2]) * (v - P[2]);
        }
    }
    double res = 0.0, vres = 0.0;
    for (int r = 0; r < nr && G4; r++) {
        res = max_abs_nan(res, e->phi[r]);
        vres = max_abs_nan(vres, plrow_dot(R1 + r, xd, e->phit[r]));
    }
    PUT(GN, T);
    PUT(GN, V);
    PUT(GN, T + V);
    PUT(G4, res);
    PUT(G4, vres);
    if (k != e->nout) {
        msg(err, errlen, "internal error: %d outputs computed, %d expected", k, e->nout);
        return MBE_ERROR;
    }
    return MBE_OK;
}

#include "engine_spatial.h"

/* ------------------------------------------------------------------ linearization
 * The state derivatives and directional derivatives of the native FMU (engine.h), from the
 * engine's own equations as fmu_mb.dynamics.linearize does them: the state is x = (q_i, qd_i)
 * of the independent tree coordinates `ind`; the dependent ones follow from the closure (Newton
 * on every model row Phi(q, t) = 0 with q_i held, least-squares steps of the dependent
 * coordinates), qd_d from Dq qd + Phi_t = 0; the accelerations are the kernel's. Planar and
 * spatial models: a spatial model's rows are every absolute row of engine_spatial.h at
 * x = T(q) (the tree joints' rows vanish there, the cut joints' and drives' do not) times
 * Tq, plus the tree's own Euler-parameter normalisations p . p - 1 of its spherical joints
 * and floating bodies in q (spatial_tree_norms), as fmu_mb.dynamics.formulations.minimal's
 * rows for spatial models; its accelerations are the spatial kernel's. */
typedef struct {
    MbEngine *e;
    const int *ind;
    int f, ndep, *dep, nr;     /* nr: rows of Dq (spatial: + the tree's normalisations)     */
    double *phi, *phit;        /* the rows' phi and phi_t at the last lin_rows              */
    double t, *q0;             /* the pose the closure starts from (the engine's state)     */
    double *q, *qd, *qdd;      /* the closed state and its accelerations                    */
    double *Jx, *Dq, *N, *V, *w, *g, *dd, *zero, *x, *xd, *yo, *ysave;
} Lin;

static void lin_free(Lin *L)
{
    double **p[] = {&L->q0, &L->q, &L->qd, &L->qdd, &L->Jx, &L->Dq, &L->N, &L->V, &L->w, &L->g,
                    &L->dd, &L->zero, &L->x, &L->xd, &L->yo, &L->ysave, &L->phi, &L->phit};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        free(*p[i]);
        *p[i] = NULL;
    }
    free(L->dep);
    L->dep = NULL;
}

static int lin_init(Lin *L, MbEngine *e, int f, const int *ind, char *err, size_t errlen)
{
    int n = e->n, nc = (e->kind ? 7 : 3) * e->nb;
    int nr = e->nrows + (e->kind ? spatial_tree_norms(e, NULL) : 0);
    memset(L, 0, sizeof *L);
    L->e = e;
    L->ind = ind;
    L->f = f;
    L->t = e->t;
    L->nr = nr;
    if (f < 0 || f > n || (f > 0 && !ind)) {
        msg(err, errlen, "directional derivatives: %d independent coordinates given; expected "
            "0 to %d", f, n);
        return 0;
    }
    L->dep = malloc(sizeof(int) * (size_t)(n + 1));
    char *used = calloc((size_t)n + 1, 1);
    if (!L->dep || !used) {
        free(used);
        msg(err, errlen, "directional derivatives: out of memory");
        return 0;
    }
    for (int k = 0; k < f; k++) {
        if (ind[k] < 0 || ind[k] >= n || used[ind[k]]) {
            msg(err, errlen, "directional derivatives: independent coordinate %d is %s; "
                "expected distinct coordinates 0 to %d", k,
                ind[k] < 0 || ind[k] >= n ? "out of range" : "repeated", n - 1);
            free(used);
            return 0;
        }
        used[ind[k]] = 1;
    }
    for (int j = 0; j < n; j++)
        if (!used[j])
            L->dep[L->ndep++] = j;
    free(used);
    int nd = L->ndep > 0 ? L->ndep : 1;
    L->q0 = malloc(sizeof(double) * (size_t)(n + 1));
    L->q = malloc(sizeof(double) * (size_t)(n + 1));
    L->qd = malloc(sizeof(double) * (size_t)(n + 1));
    L->qdd = malloc(sizeof(double) * (size_t)(n + 1));
    L->zero = calloc((size_t)n + 1, sizeof(double));
    L->Jx = malloc(sizeof(double) * (size_t)(nc * (n + 1)));
    L->Dq = malloc(sizeof(double) * (size_t)((nr + 1) * (n + 1)));
    L->N = malloc(sizeof(double) * (size_t)(nd * nd));
    L->V = malloc(sizeof(double) * (size_t)(nd * nd));
    L->w = malloc(sizeof(double) * (size_t)nd);
    L->g = malloc(sizeof(double) * (size_t)nd);
    L->dd = malloc(sizeof(double) * (size_t)nd);
    L->x = malloc(sizeof(double) * (size_t)nc);
    L->xd = malloc(sizeof(double) * (size_t)nc);
    L->yo = malloc(sizeof(double) * (size_t)(e->nout + 1));
    L->ysave = malloc(sizeof(double) * (size_t)(2 * n + 1));
    L->phi = malloc(sizeof(double) * (size_t)(nr + 1));
    L->phit = malloc(sizeof(double) * (size_t)(nr + 1));
    if (!L->q0 || !L->q || !L->qd || !L->qdd || !L->zero || !L->Jx || !L->Dq || !L->N ||
        !L->V || !L->w || !L->g || !L->dd || !L->x || !L->xd || !L->yo || !L->ysave ||
        !L->phi || !L->phit || reserve(&e->D, &e->ncap_D, (size_t)(nr + 1) * nc) != OK) {
        msg(err, errlen, "directional derivatives: out of memory");
        return 0;
    }
    memcpy(L->q0, e->y, sizeof(double) * (size_t)n);
    return 1;
}

/* the kernel's kinematics x, xd of (q, qd) (planar or spatial) */
static int lin_kinematics(MbEngine *e, const double *q, const double *qd, double *x,
                          double *xd)
{
    if (e->kind)
        return sk_kinematics(e->kern, q, qd, x, xd);
    mbk_kinematics(e->kern, q, qd, x, xd);
    return OK;
}

/* the kernel's accelerations qdd at (t, q, qd) with inputs u (planar or spatial); with
 * persistent contacts (the records' active flags) their rows closed, as the event loop's
 * phase (mbk_events_accelerations, sk_events_accelerations) */
static int lin_accelerations(MbEngine *e, double t, const double *q, const double *qd,
                             const double *u, double *qdd)
{
    for (int i = 0; e->ev && i < e->ncon; i++)
        if (e->rec[e->nrec * i + 4] != 0.0)
            return e->kind ? sk_events_accelerations(e->ev, t, q, qd, u, e->rec, NULL, qdd,
                                                     NULL, NULL, NULL)
                           : mbk_events_accelerations(e->ev, t, q, qd, u, e->rec, qdd, NULL,
                                                      NULL, NULL);
    if (e->kind) {
        sk_set_time(e->kern, t);
        return sk_accelerations(e->kern, q, qd, u, qdd);
    }
    return mbk_accelerations(e->kern, t, q, qd, u, qdd, NULL, NULL, NULL);
}

/* phi, phit (L->phi, L->phit) and Dq = D dx/dq (L->nr x n) at q; 0 on success */
static int lin_rows(Lin *L, const double *q)
{
    MbEngine *e = L->e;
    int n = e->n, nr = e->nrows, nc = (e->kind ? 7 : 3) * e->nb;
    for (int j = 0; j < n; j++) {           /* column j of dx/dq: the velocity of qd = e_j */
        L->zero[j] = 1.0;
        int rc = lin_kinematics(e, q, L->zero, L->x, L->xd);
        L->zero[j] = 0.0;
        if (rc != OK)
            return 1;
        for (int i = 0; i < nc; i++)
            L->Jx[(size_t)i * n + j] = L->xd[i];
    }
    if (lin_kinematics(e, q, L->zero, L->x, L->xd) != OK)
        return 1;
    if ((e->kind ? spatial_rows_at(e, L->x, L->t, e->phi, e->D)
                 : model_rows(e, L->x, L->t, e->phi, e->phit, e->D)) != OK)
        return 1;
    memcpy(L->phi, e->phi, sizeof(double) * (size_t)nr);
    memcpy(L->phit, e->phit, sizeof(double) * (size_t)nr);
    if (e->kind)                            /* the tree's normalisations, rows nr.. */
        spatial_tree_norms_rows(e, q, L->phi + nr, L->phit + nr, L->Dq + (size_t)nr * n);
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int i = 0; i < nc; i++)
                s += e->D[(size_t)r * nc + i] * L->Jx[(size_t)i * n + j];
            L->Dq[(size_t)r * n + j] = s;
        }
    return all_finite(L->phi, L->nr) && all_finite(L->Dq, L->nr * n) ? 0 : 1;
}

/* The normal equations of the dependent coordinates' step for rows b: L->N = Dd' Dd and
 * L->g = -Dd' b (Dd the columns of Dq at the dependent coordinates) */
static void lin_dep_normal(Lin *L, const double *b)
{
    int n = L->e->n, nr = L->nr, m = L->ndep;
    for (int a = 0; a < m; a++) {
        double s = 0.0;
        for (int r = 0; r < nr; r++)
            s += L->Dq[(size_t)r * n + L->dep[a]] * b[r];
        L->g[a] = -s;
        for (int c = 0; c <= a; c++) {
            double v = 0.0;
            for (int r = 0; r < nr; r++)
                v += L->Dq[(size_t)r * n + L->dep[a]] * L->Dq[(size_t)r * n + L->dep[c]];
            L->N[a * m + c] = L->N[c * m + a] = v;
        }
    }
}

/* dd = -(Dd' Dd)^+ Dd' b: the least-squares step of the dependent coordinates for rows b */
static int lin_dep_solve(Lin *L, const double *b)
{
    int m = L->ndep;
    lin_dep_normal(L, b);
    return dense_psd_solve(L->N, L->V, L->w, m, NULL, NULL, 0, L->g, L->dd) == OK &&
           all_finite(L->dd, m) ? 0 : 1;
}

/* The closed state (L->q, L->qd) of the independent (qi, qdi): 0 on success, 1 when the
 * closure does not converge (Newton from L->q0). L->Dq is then the rows' Jacobian there. */
static int lin_close(Lin *L, const double *qi, const double *qdi)
{
    MbEngine *e = L->e;
    int n = e->n, nr = L->nr, f = L->f;
    memcpy(L->q, L->q0, sizeof(double) * (size_t)n);
    for (int k = 0; k < n; k++)
        L->qd[k] = 0.0;
    for (int k = 0; k < f; k++) {
        L->q[L->ind[k]] = qi[k];
        L->qd[L->ind[k]] = qdi[k];
    }
    if (L->ndep > 0 && nr > 0) {
        double scale = 1.0 + absmax(L->q, n), prev = INFINITY, res = INFINITY;
        for (int it = 0; it < 40; it++) {
            if (lin_rows(L, L->q))
                return 1;
            res = absmax(L->phi, nr);
            if (res <= 1e-15 * scale || (it > 2 && res >= 0.5 * prev))
                break;
            prev = res;
            if (lin_dep_solve(L, L->phi))
                return 1;
            for (int a = 0; a < L->ndep; a++)
                L->q[L->dep[a]] += L->dd[a];
        }
        if (!(res <= 1e-9 * scale))
            return 1;
        /* qd_d: Dd qd_d = -(Di qd_i + phi_t) */
        for (int r = 0; r < nr; r++) {
            double s = L->phit[r];
            for (int k = 0; k < f; k++)
                s += L->Dq[(size_t)r * n + L->ind[k]] * qdi[k];
            L->phi[r] = s;                 /* (the rows' phi are not needed any more) */
        }
        if (lin_dep_solve(L, L->phi))
            return 1;
        for (int a = 0; a < L->ndep; a++)
            L->qd[L->dep[a]] = L->dd[a];
    }
    return 0;
}

/* The closed state of (qi, qdi) (lin_close) and its accelerations L->qdd with inputs u. */
static int lin_full(Lin *L, const double *qi, const double *qdi, const double *u)
{
    MbEngine *e = L->e;
    int n = e->n;
    if (lin_close(L, qi, qdi))
        return 1;
    const double *uu = e->ni ? u : e->u0;
    if (lin_accelerations(e, L->t, L->q, L->qd, uu, L->qdd) != OK || !all_finite(L->qdd, n))
        return 1;
    return 0;
}

/* F (nunk) at the state x = (qi, qdi) and inputs u: the unknowns (xdot entries, then outputs) */
static int lin_eval(Lin *L, const double *z, int nunk, const int *unk, int want_y, double *F)
{
    MbEngine *e = L->e;
    int n = e->n, f = L->f;
    if (lin_full(L, z, z + f, z + 2 * f))
        return 1;
    if (want_y) {
        memcpy(L->ysave, e->y, sizeof(double) * (size_t)(2 * n));
        memcpy(e->y, L->q, sizeof(double) * (size_t)n);
        memcpy(e->y + n, L->qd, sizeof(double) * (size_t)n);
        MbeStatus st = mbe_outputs_groups(e, z + 2 * f, MBE_GROUP_ALL, L->yo, NULL, 0);
        memcpy(e->y, L->ysave, sizeof(double) * (size_t)(2 * n));
        if (st != MBE_OK)
            return 1;
    }
    for (int k = 0; k < nunk; k++) {
        int i = unk[k];
        if (i < f)
            F[k] = z[f + i];
        else if (i < 2 * f)
            F[k] = L->qdd[L->ind[i - f]];
        else
            F[k] = L->yo[i - 2 * f];
    }
    return 0;
}

MbeStatus mbe_state_derivatives(MbEngine *e, const double *u, int f, const int *ind,
                                double *xdot, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !e->initialized || (f > 0 && !xdot)) {
        msg(err, errlen, "mbe_state_derivatives: no engine, no output array, or not "
            "initialized");
        return MBE_ERROR;
    }
    if (!check_inputs(e, u, err, errlen))
        return MBE_ERROR;
    Lin L;
    if (!lin_init(&L, e, f, ind, err, errlen)) {
        lin_free(&L);
        return MBE_ERROR;
    }
    int n = e->n;
    const double *uu = e->ni ? u : e->u0;
    int rc = lin_accelerations(e, e->t, e->y, e->y + n, uu, L.qdd);
    if (rc != OK || !all_finite(L.qdd, n)) {
        msg(err, errlen, "the accelerations at t = %.9g s cannot be computed: %s", e->t,
            rc != OK ? kernel_error(rc) : "not finite");
        lin_free(&L);
        return MBE_ERROR;
    }
    for (int k = 0; k < f; k++) {
        xdot[k] = e->y[n + ind[k]];
        xdot[f + k] = L.qdd[ind[k]];
    }
    lin_free(&L);
    return MBE_OK;
}

/* lin_eval as lin_ridders's function */
static int lin_eval_cb(void *ctx, const double *z, int nunk, const int *unk, int want_y,
                       double *F)
{
    return lin_eval((Lin *)ctx, z, nunk, unk, want_y, F);
}

/* dv (nunk) = dF/dz . dir of F = eval(ctx, z, ...) at z0 (nz: f coordinates, f rates, then
 * inputs) by Ridders's extrapolation of central differences; MBE_ERROR with a message when
 * no difference can be evaluated */
static MbeStatus lin_ridders(int (*eval)(void *, const double *, int, const int *, int,
                                         double *),
                             void *ctx, int f, int nz, const double *z0, const double *dir,
                             int nunk, const int *unknown, int want_y, double *dv, double t,
                             char *err, size_t errlen)
{
    for (int k = 0; k < nunk; k++)
        dv[k] = 0.0;
    double dmax = absmax(dir, nz);
    if (nunk == 0 || dmax == 0.0)
        return MBE_OK;
    double *z = malloc(sizeof(double) * (size_t)(nz + 1));
    int nt = 10, m = nunk > 0 ? nunk : 1;
    double *Fp = malloc(sizeof(double) * (size_t)m), *Fm = malloc(sizeof(double) * (size_t)m);
    double *tab = malloc(sizeof(double) * (size_t)(2 * nt * m)), *best = dv;
    MbeStatus status = MBE_OK;
    if (!z || !Fp || !Fm || !tab) {
        msg(err, errlen, "mbe_directional_derivative: out of memory");
        status = MBE_ERROR;
        goto done;
    }
    /* Ridders: central differences along dir at steps h, h/c, ... extrapolated in h^2
     * (fmu_mb.dynamics.linearize._ridders, the entry of smallest estimated error) */
    const double con = 1.6, con2 = con * con;
    /* the first step: linearize's per-known steps (1e-2 max(1, |q_i|) for a coordinate,
     * 1e-1 max(1, |qd_i|) for a rate, max(1, |u|) for an input), the smallest along dir;
     * one scale for all knowns would step an Euler parameter by the size of the rates */
    double h = INFINITY, errbest = INFINITY;
    for (int j = 0; j < nz; j++)
        if (dir[j] != 0.0) {
            double sj = (j < f ? 1e-2 : j < 2 * f ? 1e-1 : 1.0) * fmax(1.0, fabs(z0[j]));
            h = fmin(h, sj / fabs(dir[j]));
        }
    double *prev = tab, *row = tab + nt * m;       /* the previous and the current row */
    int have = 0;
    for (int i = 0; i < nt; i++) {
        int ok = 0;
        for (int tries = 0; tries < (i == 0 ? 8 : 1); tries++) {
            for (int j = 0; j < nz; j++)
                z[j] = z0[j] + h * dir[j];
            int bad = eval(ctx, z, nunk, unknown, want_y, Fp);
            for (int j = 0; j < nz && !bad; j++)
                z[j] = z0[j] - h * dir[j];
            bad = bad || eval(ctx, z, nunk, unknown, want_y, Fm);
            if (!bad) {
                ok = 1;
                break;
            }
            if (i == 0)
                h /= 8.0;                  /* a first step too large for the closure */
        }
        if (!ok)
            break;
        for (int k = 0; k < nunk; k++)
            row[k] = (Fp[k] - Fm[k]) / (2.0 * h);
        if (i == 0) {
            memcpy(dv, row, sizeof(double) * (size_t)nunk);
            have = 1;
        }
        double fac = con2;
        for (int c = 1; c <= i; c++) {
            double eb = 0.0;
            for (int k = 0; k < nunk; k++) {
                row[c * m + k] = (row[(c - 1) * m + k] * fac - prev[(c - 1) * m + k]) /
                                 (fac - 1.0);
                eb = fmax(eb, fmax(fabs(row[c * m + k] - row[(c - 1) * m + k]),
                                   fabs(row[c * m + k] - prev[(c - 1) * m + k])));
            }
            fac *= con2;
            if (eb <= errbest) {
                errbest = eb;
                memcpy(best, row + c * m, sizeof(double) * (size_t)nunk);
            }
        }
        if (i > 0) {
            double jump = 0.0;
            for (int k = 0; k < nunk; k++)
                jump = fmax(jump, fabs(row[i * m + k] - prev[(i - 1) * m + k]));
            if (jump >= 2.0 * errbest)
                break;
        }
        double *tmp = prev;                 /* this row becomes the previous one */
        prev = row;
        row = tmp;
        h /= con;
    }
    if (!have || !all_finite(dv, nunk)) {
        msg(err, errlen, "the directional derivative at t = %.9g s cannot be computed: the "
            "loops cannot be closed near the state (a singular pose?)", t);
        status = MBE_ERROR;
    }
done:
    free(z);
    free(Fp);
    free(Fm);
    free(tab);
    return status;
}

MbeStatus mbe_directional_derivative(MbEngine *e, const double *u, int f, const int *ind,
                                     int nknown, const int *known, const double *seed,
                                     int nunk, const int *unknown, double *dv, char *err,
                                     size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !e->initialized) {
        msg(err, errlen, "mbe_directional_derivative: no engine, or not initialized");
        return MBE_ERROR;
    }
    if (nknown < 0 || nunk < 0 || (nknown > 0 && (!known || !seed)) ||
        (nunk > 0 && (!unknown || !dv))) {
        msg(err, errlen, "mbe_directional_derivative: NULL or negative-length arrays");
        return MBE_ERROR;
    }
    if (!check_inputs(e, u, err, errlen))
        return MBE_ERROR;
    Lin L;
    if (!lin_init(&L, e, f, ind, err, errlen)) {
        lin_free(&L);
        return MBE_ERROR;
    }
    int n = e->n, ni = e->ni, nz = 2 * f + ni, want_y = 0;
    const double *uu = ni ? u : e->u0;
    for (int k = 0; k < nknown; k++)
        if (known[k] < 0 || known[k] >= nz || !isfinite(seed[k])) {
            msg(err, errlen, "mbe_directional_derivative: known %d is %d (seed %g); expected a "
                "state 0 to %d or an input %d to %d with a finite seed", k, known[k], seed[k],
                2 * f - 1, 2 * f, nz - 1);
            lin_free(&L);
            return MBE_ERROR;
        }
    for (int k = 0; k < nunk; k++) {
        if (unknown[k] < 0 || unknown[k] >= 2 * f + e->nout) {
            msg(err, errlen, "mbe_directional_derivative: unknown %d is %d; expected a state "
                "derivative 0 to %d or an output %d to %d", k, unknown[k], 2 * f - 1, 2 * f,
                2 * f + e->nout - 1);
            lin_free(&L);
            return MBE_ERROR;
        }
        want_y |= unknown[k] >= 2 * f;
    }
    double *z0 = malloc(sizeof(double) * (size_t)(nz + 1));
    double *dir = calloc((size_t)nz + 1, sizeof(double));
    MbeStatus status = MBE_OK;
    if (!z0 || !dir) {
        msg(err, errlen, "mbe_directional_derivative: out of memory");
        status = MBE_ERROR;
        goto done;
    }
    for (int k = 0; k < f; k++) {
        z0[k] = e->y[ind[k]];
        z0[f + k] = e->y[n + ind[k]];
    }
    for (int k = 0; k < ni; k++)
        z0[2 * f + k] = uu[k];
    for (int k = 0; k < nknown; k++)
        dir[known[k]] += seed[k];
    /* the operating point re-closed to round-off (a state from the integrator carries its
     * tolerance's residual); the perturbed closures start from it */
    if (lin_full(&L, z0, z0 + f, z0 + 2 * f)) {
        msg(err, errlen, "the loops cannot be closed at t = %.9g s with the state's "
            "independent coordinates (a singular pose?)", e->t);
        status = MBE_ERROR;
        goto done;
    }
    memcpy(L.q0, L.q, sizeof(double) * (size_t)n);
    status = lin_ridders(lin_eval_cb, &L, f, nz, z0, dir, nunk, unknown, want_y, dv, e->t,
                         err, errlen);
done:
    free(z0);
    free(dir);
    lin_free(&L);
    return status;
}

#include "engine_me.h"        /* model exchange */
