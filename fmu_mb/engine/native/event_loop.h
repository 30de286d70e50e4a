/*
 * fmu_mb's contact event loop, kernel-independent: the loop of
 * fmu_mb.dynamics.integrate._advance_contacts in C, shared by the planar kernel (events.c,
 * included by kernel.c) and the spatial kernel (spatial_events.c, included by
 * spatial_kernel.c). Each includer gets its own static copy (one library per kernel).
 *
 * Here: the state and records of a call, the phase/step loop (tension check and release,
 * the Zeno guard, the early return after an impact), dense output (scipy's RK45 and DOP853
 * interpolants from the stages, rk4's cubic Hermite), the event functions and their location
 * by Brent's method, the active-set logic of impact.solve_impact with Newton's restitution
 * law and the records. The kernel supplies, as static functions defined after the include:
 *
 *   evk_select(ev, mask)          the phase rows: the kernel's bilateral rows, then the gap
 *                                 rows of the contacts with mask[i] set (ev_select calls it
 *                                 when the mask changes);
 *   evk_configure(ev, stab, alpha, beta, ptol)   drift control of the phase kernel;
 *   evk_gaps(ev, q, g)            every contact's gap at q (ERR_GAP: undefined there);
 *   evk_gaps_lam(ev, g)           the same at the q of the last evk_lam, from what that
 *                                 solve computed (EV_NA: not available, evk_gaps is used);
 *   evk_lam(ev, t, y, lamc)       the selected contacts' multipliers lam_c (force -lam_c) at
 *                                 (t, y) without Baumgarte terms (lamc indexed by contact);
 *   evk_rhs(ev, t, y, dy)         the phase's right-hand side (qd, qdd) in its drift mode;
 *   evk_step(ev, method, par, y, have_f, K)     one accepted dopri5/dop853 step (mbk_step);
 *   evk_project(ev, t, y)         drift projection onto the phase rows;
 *   evk_project_steps(ev)         1 when the loop projects after each step (stab 1);
 *   evk_step_values(ev, v)        every contact's event value (gap, or -lam_c of a selected
 *                                 contact) at the new state of the last evk_step from its
 *                                 last stage's solve there: 1 when valid (the same numbers
 *                                 as ev_values at that state), else 0;
 *   evk_phase_lam(ev, lam)        the selected contacts' multipliers of the last right-hand
 *                                 side, at the state just projected: 1 when valid, else 0;
 *   evk_reuse_f(ev)               1 when f(t, y) of one call may start the next;
 *   evk_fric_last(ev, lamc, lamt, vt, g)   with friction: what evk_fric and evk_gaps would
 *                                 give at the state of the last right-hand side (its
 *                                 multipliers, the slip velocities of the sliding contacts
 *                                 (ev->slide; 0 for the others) and every gap), from
 *                                 that solve: 1 when valid (not in Baumgarte mode, the phase
 *                                 rows the active set), else 0;
 *   evk_joint_acc(ev, acc)        with joint friction (ev->nj > 0; the kernel's evk_select
 *                                 adds the joints' rows and forces while ev->jphase, its
 *                                 evk_fric sets ev->jlam): the frictional joints'
 *                                 accelerations of the last evk_fric (a kernel without joint
 *                                 friction: a stub, nj stays 0);
 *   evk_kinetic(ev, y)            kinetic energy [J];
 *   evk_contact_rates(ev, t, q, qd, gap, v)     every contact's gap and gap rate at (q, qd),
 *                                 keeping the rows for evk_rates (t: the impact's time);
 *   evk_rates(ev, qd, v)          every contact's gap rate for other velocities at that q;
 *   evk_impact_solve(ev, q, qd, trial, target, qdp, rcon)   seed 000 ch.3 eq. 15 with the
 *                                 kernel's bilateral rows and the contacts in trial (their
 *                                 rates = target): qdp = qd+, rcon the contacts' impulses
 *                                 (r, 0 for the others).
 * The includer defines before the include: <math.h>, <string.h>, <stdlib.h>, OK, ERR_ARGS,
 * ERR_NONFINITE, INTEG_ERR_BUDGET (integrators.h), MAXS and `struct EvKernel`'s name.
 */
#ifndef FMU_MB_EVENT_LOOP_H
#define FMU_MB_EVENT_LOOP_H

#define EV_REC 5           /* per contact: impacts, last time, last impulse, energy lost,
                              active; with friction (EV_REC_FR, ev->nrec) also stick, the slip
                              direction s0 (2) and the energy lost by sliding */
#define EV_REC_FR 9
#define EV_NPAR 19
enum { ERR_EVENT = 8, ERR_ZENO = 9, ERR_IMPACT = 10, ERR_GAP = 11, ERR_FRICTION = 14 };
enum { EV_IMPACT = 0, EV_RELEASE = 1, EV_SLIP = 2, EV_STICK = 3, EV_JSLIP = 4, EV_JSTICK = 5 };
/* the order of simultaneous events (the Python loop's: by the kind's name) */
static const int EV_RANK[6] = {0, 3, 4, 5, 1, 2};
#define EV_NA (-1)         /* an optional kernel operation that is not available */
#include "zeno.h"          /* the Zeno guard's rate: EV_ZENO_COUNT events within EV_ZENO_SPAN */

static const double EV_RK45_P[7][4] = {
    {1.0, -2.8535800653862835, 3.0717434641059005, -1.1270175653862835},
    {0.0, 0.0, 0.0, 0.0},
    {0.0, 4.023133379230305, -6.249321565289, 2.675424484351598},
    {0.0, -3.7324019615885042, 10.068970589843675, -5.685526961588504},
    {0.0, 2.5548038301849423, -6.399112377351017, 3.5219323679207912},
    {0.0, -1.3744241142186024, 3.272657752246729, -1.7672812570757455},
    {0.0, 1.3824689317781436, -3.764937863556287, 2.382468931778144},
};

static const double EV_DOP853_AX[3][16] = {
    {0.056167502283047954, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25350021021662483, -0.2462390374708025, -0.12419142326381637, 0.15329179827876568, 0.00820105229563469, 0.007567897660545699, -0.008298, 0.0, 0.0, 0.0},
    {0.03183464816350214, 0.0, 0.0, 0.0, 0.0, 0.028300909672366776, 0.053541988307438566, -0.05492374857139099, 0.0, 0.0, -0.00010834732869724932, 0.0003825710908356584, -0.00034046500868740456, 0.1413124436746325, 0.0, 0.0},
    {-0.42889630158379194, 0.0, 0.0, 0.0, 0.0, -4.697621415361164, 7.683421196062599, 4.06898981839711, 0.3567271874552811, 0.0, 0.0, 0.0, -0.0013990241651590145, 2.9475147891527724, -9.15095847217987, 0.0},
};

static const double EV_DOP853_CX[3] = {
    0.1, 0.2, 0.7777777777777778,
};

static const double EV_DOP853_D[4][16] = {
    {-8.428938276109013, 0.0, 0.0, 0.0, 0.0, 0.5667149535193777, -3.0689499459498917, 2.38466765651207, 2.117034582445028, -0.871391583777973, 2.2404374302607883, 0.6315787787694688, -0.08899033645133331, 18.148505520854727, -9.194632392478356, -4.436036387594894},
    {10.427508642579134, 0.0, 0.0, 0.0, 0.0, 242.28349177525817, 165.20045171727028, -374.5467547226902, -22.113666853125306, 7.733432668472264, -30.674084731089398, -9.332130526430229, 15.697238121770845, -31.139403219565178, -9.35292435884448, 35.81684148639408},
    {19.985053242002433, 0.0, 0.0, 0.0, 0.0, -387.0373087493518, -189.17813819516758, 527.8081592054236, -11.57390253995963, 6.8812326946963, -1.0006050966910838, 0.7777137798053443, -2.778205752353508, -60.19669523126412, 84.32040550667716, 11.99229113618279},
    {-25.69393346270375, 0.0, 0.0, 0.0, 0.0, -154.18974869023643, -231.5293791760455, 357.6391179106141, 93.40532418362432, -37.45832313645163, 104.0996495089623, 29.8402934266605, -43.53345659001114, 96.32455395918828, -39.17726167561544, -149.72683625798564},
};



typedef struct EvKernel EvKernel;     /* the includer's kernels and rows */

typedef struct {
    EvKernel *k;
    int n, nc;             /* state (q, qd) of 2 n; contacts */
    double *e;             /* (nc) restitution */
    unsigned char *sel;    /* (nc) contacts whose rows the phase kernel has now */
    /* the state and records of a call (copies: the caller's are written on success) */
    double *y, *rec;
    unsigned char *active; /* (nc) persistent contacts during the call */
    /* one step: y_old, y_new (unprojected), the stages (16 rows) and dense coefficients */
    double *yold, *ynew, *K, *F, *yd, *ys, *f;
    double t_old, t_new, h_dense;
    int method, dense_rows;
    /* event functions: values at the samples, candidate lists */
    double *v, *vprev, *lamc, *g;
    /* impacts: gaps and gap rates of all contacts, active set trials */
    double *gap, *vminus, *vplus, *target, *rcon, *qdp;
    unsigned char *closed, *trial, *seen;
    const double *u;
    double contact_tol;
    double slip_small;     /* 1e-3 contact_velocity: a slip speed that counts as stopped */
    int mode;
    double alpha, beta;
    /* reuse, bit for bit, of what the last step computed: the contact multipliers at its
     * end state (the next step's values at t0) and f(t, y) at the end of the last call (the
     * next call's first stage, when t, y, u, the active set and the drift control agree) */
    double *lam0, *lam1;
    int ni, fc_ok, lam_fc_ok;
    double t_fc, mode_fc, alpha_fc, beta_fc, *y_fc, *u_fc, *f_fc;
    double *lam_fc;        /* (nc) the selected contacts' multipliers at that end state */
    double *vT;            /* (nv) the event values at ynew from the step's last stage */
    int vT_ok;
    double *v0, *v1;       /* (nv) the event values at the state a step starts from / ends in */
    double *v_fc;          /* (nv) those at the end state of the last call (nv: nc, with
                              friction 2 nc) */
    int v_fc_ok;
    unsigned char *sel_fc;
    /* friction (fmu_mb.dynamics.friction; docs/contacts-friction.md): fr = 1 when a contact
     * has mu > 0 (then each contact has a second event value, index nc + i, and nothing of
     * the last step or call is reused); per contact mu, stick, the slip direction s0 (2),
     * the tangential multipliers of the sticking ones and the slip velocities (2 each) */
    int fr;
    double *mu, *s0, *lamt, *vt, *vt2, *dir, *rt, *ptv;
    unsigned char *stick, *slide, *stk;
    int fr_contact;        /* the contact an ERR_FRICTION refers to */
    int fr_dirty;          /* sliding losses added during the call (the records changed) */
    int nrec;              /* doubles per contact record: EV_REC, with friction EV_REC_FR */
    /* with friction: the normal (nc) and tangential (2 nc) multipliers of evk_fric at the
     * state a step ends in (from the right-hand side after its projection, fr1_ok), and at
     * the end state of the last call with its stick flags and slip directions (fr_fc_ok) */
    double *lamc1, *lamt1, *lamc_fc, *lamt_fc, *s0_fc;
    unsigned char *stick_fc;
    int fr_fc_ok;
    /* event mode with friction (ev_event_update_fr): per contact 1 when it was slipping with
     * v_t . s0 > 0 at the end of the last event iteration (NULL before the first: then every
     * slip counts as armed) */
    unsigned char *me_armed;
    /* joint Coulomb friction (ev_joints; fmu_mb.dynamics.friction, "Joint friction"): nj
     * frictional joints, each with its coordinate jc (an index of qd), its bound jb [N.m or
     * N], its state jstk (stick) and slip direction js0 (+-1); jheld: held by a persistent
     * joint limit (no friction row, no force); jlim (nc): the frictional joint a contact
     * limits, -1; jlam: the sticking joints' multipliers (friction torque -jlam) of the last
     * evk_fric. Their event values follow the contacts' (index 2 nc + j), their records
     * (stick, s0, loss) the contacts' (3 per joint). jphase: the phase rows include the
     * joints' (0 in the impact solves); jrest, jf: the joints at rest of the coupled
     * rest-state problem and the forces on them (ev_joint_rest) */
    int nj, jphase;
    int *jc, *jlim;
    double *jb, *js0, *jlam, *jf, *jwork;
    unsigned char *jstk, *jheld, *jrest, *jtmp;
    /* the Zeno guard's rate windows (zeno.h) per contact and frictional joint (z = nc + nj,
     * a joint after the contacts): the start of each window and its events, zt[0..z-1] and
     * zn[0..z-1] during a call, zt[z..] and zn[z..] those of the last call that succeeded,
     * which ended at time zt_end in the state zy (2 n; z_ok: there was one). A call that
     * starts from that very state (t and y bit for bit) goes on with those windows, so they
     * span communication steps; any other start (a state set or restored, a reset, time
     * going back, the state of a call that failed after the loop) restarts them: the windows
     * are not part of a saved state, and a restored state inherits no counts */
    double *zt, *zy, zt_end;
    int *zn, z_ok;
} EvLoop;

static void evk_select(EvLoop *ev, const unsigned char *mask);
static void evk_configure(EvLoop *ev, int stab, double alpha, double beta, double ptol);
static int evk_gaps(EvLoop *ev, const double *q, double *g);
static int evk_gaps_lam(EvLoop *ev, double *g);
static int evk_lam(EvLoop *ev, double t, const double *y, double *lamc);
static int evk_rhs(EvLoop *ev, double t, const double *y, double *dy);
static int evk_step(EvLoop *ev, int method, double *par, double *y, int have_f, double *K);
static int evk_project(EvLoop *ev, double t, double *y);
static int evk_project_steps(EvLoop *ev);
static int evk_phase_lam(EvLoop *ev, double *lam);
static int evk_step_values(EvLoop *ev, double *v);
static int evk_reuse_f(EvLoop *ev);
static double evk_kinetic(EvLoop *ev, const double *y);
static int evk_contact_rates(EvLoop *ev, double t, const double *q, const double *qd,
                             double *gap, double *v);
static void evk_rates(EvLoop *ev, const double *qd, double *v);
static int evk_impact_solve(EvLoop *ev, const double *q, const double *qd,
                            const unsigned char *trial, const double *target, double *qdp,
                            double *rcon);
static void evk_friction(EvLoop *ev, const unsigned char *stick, const unsigned char *slide,
                         const double *s0);
static int evk_fric(EvLoop *ev, double t, const double *y, double *lamc, double *lamt,
                    double *vt);
static void evk_slip_rates(EvLoop *ev, const double *qd, double *vt);
static int evk_impact_fr(EvLoop *ev, const double *q, const double *qd,
                         const unsigned char *trial, const unsigned char *stick,
                         const unsigned char *slide, const double *dir,
                         const double *target, double *qdp, double *rn, double *rt);
static int evk_gap_acc(EvLoop *ev, int i, double t, const double *y, double *acc);
static int evk_fric_last(EvLoop *ev, double *lamc, double *lamt, double *vt, double *g);
static void evk_joint_acc(EvLoop *ev, double *acc);

/* the generic buffers of ev for n coordinates, nc contacts (restitution e), ni inputs:
 * OK or ERR_ARGS (out of memory; ev_release frees what was allocated) */
static int ev_init(EvLoop *ev, int n, int nc, const double *e, int ni)
{
    size_t m2 = (size_t)(2 * n > 0 ? 2 * n : 1), c = (size_t)(nc > 0 ? nc : 1);
    ev->n = n;
    ev->nc = nc;
    ev->ni = ni;
    ev->nrec = EV_REC;
    void **p[] = {(void **)&ev->y, (void **)&ev->yold, (void **)&ev->ynew, (void **)&ev->yd,
                  (void **)&ev->f, (void **)&ev->qdp, (void **)&ev->y_fc, (void **)&ev->f_fc};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        if (!(*p[i] = calloc(m2, sizeof(double))))
            return ERR_ARGS;
    double **pc[] = {&ev->rec, &ev->v, &ev->vprev, &ev->lamc, &ev->g, &ev->gap, &ev->vminus,
                     &ev->vplus, &ev->target, &ev->rcon, &ev->lam0, &ev->lam1, &ev->e,
                     &ev->lam_fc, &ev->vT, &ev->v0, &ev->v1,
                     &ev->v_fc, &ev->mu, &ev->s0, &ev->lamt, &ev->vt, &ev->vt2, &ev->dir,
                     &ev->rt, &ev->ptv};
    for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++)   /* (v .. vprev, vT .. v_fc: 2 each) */
        if (!(*pc[i] = calloc(i == 0 ? EV_REC_FR * c
                              : (i <= 2 || (i >= 14 && i <= 17) || i >= 19 ? 2 * c : c),
                              sizeof(double))))
            return ERR_ARGS;
    memcpy(ev->e, e, sizeof(double) * (size_t)nc);
    ev->jphase = 1;
    unsigned char **pb[] = {&ev->sel, &ev->active, &ev->closed, &ev->trial, &ev->sel_fc,
                            &ev->stick, &ev->slide, &ev->stk};
    for (size_t i = 0; i < sizeof pb / sizeof pb[0]; i++)      /* (trial: 2 per contact) */
        if (!(*pb[i] = calloc(i == 3 ? 2 * c : c, 1)))
            return ERR_ARGS;
    ev->K = calloc((MAXS + 1) * m2, sizeof(double));
    ev->F = calloc(8 * m2, sizeof(double));
    ev->ys = calloc(4 * m2, sizeof(double));
    ev->seen = calloc((4 * c + 5) * 2 * c, 1);
    ev->u_fc = calloc((size_t)(ni > 0 ? ni : 1), sizeof(double));
    ev->lamc1 = calloc(c ? 8 * c : 1, sizeof(double));
    ev->stick_fc = calloc(c ? c : 1, 1);
    ev->zt = calloc(2 * c, sizeof(double));
    ev->zn = calloc(2 * c, sizeof(int));
    ev->zy = calloc(m2, sizeof(double));
    if (!ev->K || !ev->F || !ev->ys || !ev->seen || !ev->u_fc || !ev->lamc1 || !ev->stick_fc ||
        !ev->zt || !ev->zn || !ev->zy)
        return ERR_ARGS;
    ev->lamt1 = ev->lamc1 + c;             /* (one block: lamc1 c, lamt1 2 c, lamc_fc c,
                                              lamt_fc 2 c, s0_fc 2 c) */
    ev->lamc_fc = ev->lamt1 + 2 * c;
    ev->lamt_fc = ev->lamc_fc + c;
    ev->s0_fc = ev->lamt_fc + 2 * c;
    return OK;
}

static void ev_release(EvLoop *ev)
{
    void *p[] = {ev->e, ev->sel, ev->y, ev->rec, ev->active, ev->yold, ev->ynew, ev->K, ev->F,
                 ev->yd, ev->ys, ev->f, ev->v, ev->vprev, ev->lamc, ev->g, ev->gap,
                 ev->vminus, ev->vplus, ev->target, ev->rcon, ev->qdp, ev->closed, ev->trial,
                 ev->seen, ev->lam0, ev->lam1, ev->y_fc, ev->u_fc, ev->f_fc, ev->sel_fc, ev->lam_fc, ev->vT, ev->v0, ev->v1, ev->v_fc,
                 ev->mu, ev->s0, ev->lamt, ev->vt, ev->vt2, ev->dir, ev->rt, ev->ptv, ev->stick,
                 ev->slide, ev->stk, ev->lamc1, ev->stick_fc, ev->me_armed, ev->jc, ev->jlim,
                 ev->jb, ev->js0, ev->jlam, ev->jf, ev->jwork, ev->jstk, ev->jheld, ev->jrest,
                 ev->jtmp, ev->zt, ev->zn, ev->zy};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
}

/* replace *p by a zeroed block of cnt elements of size sz (cnt >= 1): OK or ERR_ARGS */
static int ev_regrow(void **p, size_t cnt, size_t sz)
{
    void *q = calloc(cnt, sz);
    if (!q)
        return ERR_ARGS;
    free(*p);
    *p = q;
    return OK;
}

/* nj frictional joints (once, after ev_init): jc (nj) their coordinates (indices of qd),
 * jb (nj) their bounds > 0, jlim (nc) the joint each contact limits (a joint limit of a
 * frictional joint: its index, else -1). The event values and records grow by the joints'
 * (nv = 2 nc + nj; records nrec nc + 3 nj: per joint stick, s0, loss). OK or ERR_ARGS. */
static int ev_joints(EvLoop *ev, int nj, const int *jc, const double *jb, const int *jlim)
{
    if (ev->nj || nj < 1 || !jc || !jb || (ev->nc && !jlim))
        return ERR_ARGS;
    for (int j = 0; j < nj; j++)
        if (jc[j] < 0 || jc[j] >= ev->n || !(jb[j] > 0.0) || !isfinite(jb[j]))
            return ERR_ARGS;
    for (int i = 0; i < ev->nc; i++)
        if (jlim[i] < -1 || jlim[i] >= nj)
            return ERR_ARGS;
    size_t c = (size_t)ev->nc, J = (size_t)nj, nv = 2 * c + J, p = J;
    void **pv[] = {(void **)&ev->v, (void **)&ev->vprev, (void **)&ev->vT, (void **)&ev->v0,
                   (void **)&ev->v1, (void **)&ev->v_fc, (void **)&ev->ptv};
    for (size_t i = 0; i < sizeof pv / sizeof pv[0]; i++)
        if (ev_regrow(pv[i], nv, sizeof(double)) != OK)
            return ERR_ARGS;
    if (ev_regrow((void **)&ev->trial, nv, 1) != OK ||
        ev_regrow((void **)&ev->rec, EV_REC_FR * c + 3 * J, sizeof(double)) != OK ||
        ev_regrow((void **)&ev->jc, J, sizeof(int)) != OK ||
        ev_regrow((void **)&ev->jlim, c ? c : 1, sizeof(int)) != OK ||
        ev_regrow((void **)&ev->jb, J, sizeof(double)) != OK ||
        ev_regrow((void **)&ev->js0, J, sizeof(double)) != OK ||
        ev_regrow((void **)&ev->jlam, J, sizeof(double)) != OK ||
        ev_regrow((void **)&ev->jf, J, sizeof(double)) != OK ||
        ev_regrow((void **)&ev->jwork, 3 * p * p + 10 * p, sizeof(double)) != OK ||
        ev_regrow((void **)&ev->jstk, J, 1) != OK || ev_regrow((void **)&ev->jheld, J, 1) != OK ||
        ev_regrow((void **)&ev->jrest, J, 1) != OK || ev_regrow((void **)&ev->jtmp, J, 1) != OK ||
        ev_regrow((void **)&ev->zt, 2 * (c + J), sizeof(double)) != OK ||
        ev_regrow((void **)&ev->zn, 2 * (c + J), sizeof(int)) != OK)
        return ERR_ARGS;
    memcpy(ev->jc, jc, sizeof(int) * J);
    memcpy(ev->jb, jb, sizeof(double) * J);
    for (size_t i = 0; i < c; i++)
        ev->jlim[i] = jlim[i];
    for (size_t j = 0; j < J; j++) {
        ev->jstk[j] = 1;
        ev->js0[j] = 1.0;
    }
    ev->nj = nj;
    ev->fr = 1;
    ev->nrec = EV_REC_FR;
    return OK;
}

/* joint j's record (stick, s0, loss) in the records rec */
static double *ev_jrec(const EvLoop *ev, double *rec, int j)
{
    return rec + (size_t)ev->nrec * ev->nc + 3 * (size_t)j;
}

/* the records' doubles: nrec per contact, 3 per frictional joint */
static size_t ev_nrec_all(const EvLoop *ev)
{
    return (size_t)ev->nrec * ev->nc + 3 * (size_t)ev->nj;
}

/* the phase rows: the bilateral rows, then the gap rows of the contacts with mask[i] set */
static void ev_select(EvLoop *ev, const unsigned char *mask)
{
    if (ev->fr) {              /* the friction phase of the selected contacts, then the rows */
        for (int i = 0; i < ev->nc; i++) {
            ev->stk[i] = mask[i] && ev->stick[i] && ev->mu[i] > 0.0;
            ev->slide[i] = mask[i] && !ev->stick[i] && ev->mu[i] > 0.0;
        }
        for (int j = 0; j < ev->nj; j++)     /* a joint at a persistent limit: held */
            ev->jheld[j] = 0;
        for (int i = 0; ev->nj && i < ev->nc; i++)
            if (mask[i] && ev->jlim[i] >= 0)
                ev->jheld[ev->jlim[i]] = 1;
        evk_friction(ev, ev->stk, ev->slide, ev->s0);
        evk_select(ev, mask);
        memcpy(ev->sel, mask, (size_t)ev->nc);
        return;
    }
    if (memcmp(mask, ev->sel, (size_t)ev->nc) == 0)
        return;
    evk_select(ev, mask);
    memcpy(ev->sel, mask, (size_t)ev->nc);
}

static int ev_any(const unsigned char *mask, int nc)
{
    for (int i = 0; i < nc; i++)
        if (mask[i])
            return 1;
    return 0;
}

/* the active contact of the largest multiplier lamc (the most tensile: a contact force
 * -lamc < 0 pulls) into *bv; its index (the first contact when none is active, *bv -inf) */
static int ev_most_tensile(const EvLoop *ev, double *bv)
{
    int best = -1;
    *bv = -INFINITY;
    for (int i = 0; i < ev->nc; i++) {
        double v = ev->active[i] ? ev->lamc[i] : -INFINITY;
        if (best < 0 || v > *bv) {
            best = i;
            *bv = v;
        }
    }
    return best;
}

/* ------------------------------------------------------------------ dense output */
/* the interpolant of the last step (t_old, t_new, yold, ynew unprojected, stages in K,
 * h_taken): RK45: Q = K' P, y(t) = yold + h sum_j Q_j x^(j+1); DOP853: F of scipy's
 * Dop853DenseOutput with its three extra stages */
static int ev_dense_setup(EvLoop *ev, double h_taken)
{
    int m = 2 * ev->n, rc;
    double *K = ev->K, *F = ev->F;
    ev->h_dense = ev->t_new - ev->t_old;
    if (ev->method == 0) {
        for (int i = 0; i < m; i++)
            for (int j = 0; j < 4; j++) {
                double acc = 0.0;
                for (int s = 0; s < 7; s++)
                    acc += K[s * m + i] * EV_RK45_P[s][j];
                F[j * m + i] = acc;
            }
        ev->dense_rows = 4;
        return OK;
    }
    double h = h_taken, *yt = ev->yd;
    for (int j = 13; j < 16; j++) {
        const double *a = EV_DOP853_AX[j - 13];
        for (int i = 0; i < m; i++) {
            double acc = 0.0;
            for (int l = 0; l < j; l++)
                acc += K[l * m + i] * a[l];
            yt[i] = ev->yold[i] + acc * h;
        }
        if ((rc = evk_rhs(ev, ev->t_old + EV_DOP853_CX[j - 13] * h, yt, K + j * m)) != OK)
            return rc;
    }
    for (int i = 0; i < m; i++) {
        double dy = ev->ynew[i] - ev->yold[i];
        F[i] = dy;
        F[m + i] = h * K[i] - dy;
        F[2 * m + i] = 2 * dy - h * (K[12 * m + i] + K[i]);
        for (int r = 0; r < 4; r++) {
            double acc = 0.0;
            for (int l = 0; l < 16; l++)
                acc += EV_DOP853_D[r][l] * K[l * m + i];
            F[(3 + r) * m + i] = h * acc;
        }
    }
    ev->dense_rows = 7;
    return OK;
}

static void ev_dense(const EvLoop *ev, double t, double *y)
{
    int m = 2 * ev->n;
    double x = (t - ev->t_old) / ev->h_dense;
    const double *F = ev->F;
    if (ev->method == 2) {          /* rk4: cubic Hermite between the step's ends */
        double s = x, dt = ev->h_dense, s2 = pow(s, 2.0), s3 = pow(s, 3.0);
        double h00 = 2 * s3 - 3 * s2 + 1, h10 = s3 - 2 * s2 + s;
        double h01 = -2 * s3 + 3 * s2, h11 = s3 - s2;
        double a = h10 * dt, b = h11 * dt;
        for (int i = 0; i < m; i++)
            y[i] = h00 * F[i] + a * F[m + i] + h01 * F[2 * m + i] + b * F[3 * m + i];
        return;
    }
    if (ev->method == 0) {
        double p[4];
        p[0] = x;
        for (int j = 1; j < 4; j++)
            p[j] = p[j - 1] * x;
        for (int i = 0; i < m; i++) {
            double acc = 0.0;
            for (int j = 0; j < 4; j++)
                acc += F[j * m + i] * p[j];
            y[i] = ev->h_dense * acc + ev->yold[i];
        }
        return;
    }
    for (int i = 0; i < m; i++) {
        double acc = 0.0;
        for (int r = 0; r < 7; r++) {
            acc += F[(6 - r) * m + i];
            acc *= (r % 2 == 0) ? x : (1.0 - x);
        }
        y[i] = acc + ev->yold[i];
    }
}

/* ------------------------------------------------------------------ event functions */
/* per contact: the gap of an inactive contact, the force -lam_c of an active one (lam0: the
 * active contacts' multipliers at (t, y) when already known, else NULL) */
static int ev_values_at(EvLoop *ev, double t, const double *y, double *out,
                        const double *lam0);

static int ev_values(EvLoop *ev, double t, const double *y, double *out)
{
    return ev_values_at(ev, t, y, out, NULL);
}

static double ev_norm2(const double *a) { return sqrt(a[0] * a[0] + a[1] * a[1]); }

/* with friction: per contact the gap or -lam_c (out[i]) and the friction value out[nc + i]:
 * mu f_n - |f_t| sticking, v_t . s0 slipping (fmu_mb.dynamics.integrate._find_event) */
static int ev_values_fr_x(EvLoop *ev, double t, const double *y, double *out, int last)
{
    int nc = ev->nc, rc, act = 0, watch = 0;
    for (int i = 0; i < nc; i++) {
        out[i] = out[nc + i] = INFINITY;
        if (ev->active[i])
            act = 1;
        else
            watch = 1;
    }
    if (last && (ev->nj || !evk_fric_last(ev, ev->lamc, ev->lamt, ev->vt, ev->g)))
        return EV_NA;
    if (watch) {
        if (!last && (rc = evk_gaps(ev, y, ev->g)) != OK)
            return rc;
        for (int i = 0; i < nc; i++)
            if (!ev->active[i])
                out[i] = ev->g[i];
    }
    if (!act && !ev->nj)
        return OK;
    if (!last && (rc = evk_fric(ev, t, y, ev->lamc, ev->lamt, ev->vt)) != OK)
        return rc;
    /* the joints: sticking F_c - |lam_j|, slipping qd_j s0; a joint held by a persistent
     * limit has no event of its own (its rate is the limit row's rounding of 0; it leaves the
     * limit at the limit's release event) */
    for (int j = 0; j < ev->nj; j++)
        out[2 * nc + j] = ev->jheld[j] ? INFINITY
                          : ev->jstk[j] ? ev->jb[j] - fabs(ev->jlam[j])
                          : y[ev->n + ev->jc[j]] * ev->js0[j];
    for (int i = 0; i < nc; i++) {
        if (!ev->active[i])
            continue;
        out[i] = -ev->lamc[i];
        if (!(ev->mu[i] > 0.0))
            continue;
        if (ev->stick[i])
            out[nc + i] = ev->mu[i] * -ev->lamc[i] - ev_norm2(ev->lamt + 2 * i);
        else
            out[nc + i] = ev->vt[2 * i] * ev->s0[2 * i] + ev->vt[2 * i + 1] * ev->s0[2 * i + 1];
    }
    return OK;
}

static int ev_values_fr(EvLoop *ev, double t, const double *y, double *out)
{
    return ev_values_fr_x(ev, t, y, out, 0);
}

/* the event values (ev_values) at the state of the last right-hand side from its solve: 1
 * when available (the same numbers), else 0 */
static int ev_values_last(EvLoop *ev, double *out)
{
    if (ev->fr)
        return ev_values_fr_x(ev, 0.0, NULL, out, 1) == OK;
    return evk_step_values(ev, out);
}

static int ev_values_at(EvLoop *ev, double t, const double *y, double *out,
                        const double *lam0)
{
    int nc = ev->nc, rc;
    if (ev->fr)
        return ev_values_fr(ev, t, y, out);
    int watch = 0, act = 0;
    for (int i = 0; i < nc; i++) {
        out[i] = INFINITY;
        if (ev->active[i])
            act = 1;
        else
            watch = 1;
    }
    /* both kinds: the multipliers' solve first, whose kinematics give the gaps too */
    int lam_here = act && !lam0;
    if (lam_here && (rc = evk_lam(ev, t, y, ev->lamc)) != OK) {
        int rg = watch ? evk_gaps(ev, y, ev->g) : OK;      /* the gaps' error comes first */
        return rg != OK ? rg : rc;
    }
    if (watch) {
        rc = lam_here ? evk_gaps_lam(ev, ev->g) : EV_NA;
        if (rc == EV_NA)
            rc = evk_gaps(ev, y, ev->g);
        if (rc != OK)
            return rc;
        for (int i = 0; i < nc; i++)
            if (!ev->active[i])
                out[i] = ev->g[i];
    }
    if (act)
        for (int i = 0; i < nc; i++)
            if (ev->active[i])
                out[i] = -(lam0 ? lam0[i] : ev->lamc[i]);
    return OK;
}

/* event function of contact i at t on the dense output, plus shift */
static int ev_fun(EvLoop *ev, int i, double t, double shift, double *val)
{
    double *y = ev->yd;
    int rc;
    ev_dense(ev, t, y);
    if (ev->fr) {
        if ((rc = ev_values_fr(ev, t, y, ev->ptv)) != OK)
            return rc;
        *val = ev->ptv[i] + shift;
        return OK;
    }
    if (ev->active[i]) {
        if ((rc = evk_lam(ev, t, y, ev->lamc)) != OK)
            return rc;
        *val = -ev->lamc[i] + shift;
    } else {
        if ((rc = evk_gaps(ev, y, ev->g)) != OK)
            return rc;
        *val = ev->g[i] + shift;
    }
    return OK;
}

/* Brent's method on [xa, xb] as scipy.optimize.brentq (xtol, rtol, 100 iterations) */
static int ev_brent(EvLoop *ev, int i, double shift, double xa, double xb, double xtol,
                    double rtol, double *root)
{
    double xpre = xa, xcur = xb, xblk = 0.0, fpre, fcur, fblk = 0.0, spre = 0.0, scur = 0.0;
    int rc;
    if ((rc = ev_fun(ev, i, xpre, shift, &fpre)) != OK ||
        (rc = ev_fun(ev, i, xcur, shift, &fcur)) != OK)
        return rc;
    if (fpre == 0.0) {
        *root = xpre;
        return OK;
    }
    if (fcur == 0.0) {
        *root = xcur;
        return OK;
    }
    if (signbit(fpre) == signbit(fcur))
        return ERR_EVENT;
    for (int it = 0; it < 100; it++) {
        if (fpre != 0.0 && fcur != 0.0 && signbit(fpre) != signbit(fcur)) {
            xblk = xpre;
            fblk = fpre;
            spre = scur = xcur - xpre;
        }
        if (fabs(fblk) < fabs(fcur)) {
            xpre = xcur;
            xcur = xblk;
            xblk = xpre;
            fpre = fcur;
            fcur = fblk;
            fblk = fpre;
        }
        double delta = (xtol + rtol * fabs(xcur)) / 2;
        double sbis = (xblk - xcur) / 2;
        if (fcur == 0.0 || fabs(sbis) < delta) {
            *root = xcur;
            return OK;
        }
        if (fabs(spre) > delta && fabs(fcur) < fabs(fpre)) {
            double stry;
            if (xpre == xblk) {
                stry = -fcur * (xcur - xpre) / (fcur - fpre);          /* secant */
            } else {                                                  /* inverse quadratic */
                double dpre = (fpre - fcur) / (xpre - xcur);
                double dblk = (fblk - fcur) / (xblk - xcur);
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre));
            }
            if (2 * fabs(stry) < fmin(fabs(spre), 3 * fabs(sbis) - delta)) {
                spre = scur;
                scur = stry;
            } else {
                spre = sbis;
                scur = sbis;
            }
        } else {
            spre = sbis;
            scur = sbis;
        }
        xpre = xcur;
        fpre = fcur;
        if (fabs(scur) > delta)
            xcur += scur;
        else
            xcur += (sbis > 0 ? delta : -delta);
        if ((rc = ev_fun(ev, i, xcur, shift, &fcur)) != OK)
            return rc;
    }
    return ERR_EVENT;
}

/* The earliest event in (t0, t1] of the last step (y0 the state at t0): *found = 1 with its
 * time, kind and contact, and y the state there on the dense output; *found = 0 when none
 * (y untouched). As integrate._find_event: four samples, the first sample with a sign
 * change decides, Brent's method per contact changing sign there, the earliest wins. */
static int ev_find(EvLoop *ev, double t0, const double *y0, const double *lam0,
                   const double *v0, double t1, double tol, double event_tol, double *y, double *te_out,
                   int *kind_out, int *idx_out, int *found)
{
    int nc = ev->nc, m = 2 * ev->n, rc, nv = ev->fr ? 2 * nc + ev->nj : nc;
    double samples[4];
    for (int k = 1; k < 4; k++)
        samples[k - 1] = t0 + (t1 - t0) * k / 4;
    samples[3] = t1;
    for (int k = 0; k < 4; k++)
        ev_dense(ev, samples[k], ev->ys + (size_t)k * m);
    if (v0)                         /* the values at t0, known from the last step */
        memcpy(ev->vprev, v0, sizeof(double) * nv);
    else if ((rc = ev_values_at(ev, t0, y0, ev->vprev, lam0)) != OK)
        return rc;
    /* a gap within thr of zero at the start is searched from its flight phase too: just
     * after an impact its sign is rounding, and a root of the dense output right there would
     * be an impact without impulse at the same instant, again and again (the Zeno guard's
     * error); from a clearly positive value Brent finds the gap's real zero */
    double prev_t = t0, best_t = 0.0, thr = 1e-3 * tol;
    int best_kind = 0, best_i = -1;
    unsigned char *hit = ev->trial;
    *found = 0;
    for (int k = 0; k < 4; k++) {
        double ts = samples[k];
        const double *v = ev->v, *pv = ev->vprev, *yk = ev->ys + (size_t)k * m;
        if (k == 3 && ev->vT_ok && memcmp(yk, ev->ynew, sizeof(double) * m) == 0)
            memcpy(ev->v, ev->vT, sizeof(double) * nv);  /* the step's last stage was here */
        else if ((rc = ev_values(ev, ts, yk, ev->v)) != OK)
            return rc;
        int any = 0;
        for (int i = 0; i < nv; i++) {
            int watch = i < nc && !ev->active[i];
            /* a slip starting from a stopped slip speed (v_t . s0 <= 0 at the start: a
             * contact whose slip the others hold, or just after a stick -> slip event)
             * counts as reversed beyond -slip_small only: above that the slip acceleration
             * is rounding of 0 */
            int slip = i >= nc && i < 2 * nc && !ev->stick[i - nc];
            /* a gap within thr of zero at both samples is rounding of a gap at rest on its
             * surface (a joint sticking at its stop), no crossing */
            hit[i] = watch ? (v[i] < 0.0 && (pv[i] > 0.0 || v[i] < -tol) &&
                              (pv[i] > thr || v[i] <= -thr))
                     : slip ? (v[i] < 0.0 && (pv[i] > FR_REST_ARM || v[i] < -ev->slip_small))
                     : (v[i] < 0.0);
            any |= hit[i];
        }
        if (!any) {
            prev_t = ts;
            memcpy(ev->vprev, ev->v, sizeof(double) * nv);
            continue;
        }
        for (int i = 0; i < nv; i++) {
            if (!hit[i])
                continue;
            int watch = i < nc && !ev->active[i];
            double a = prev_t, te, val;
            if (!(pv[i] > thr) && watch) {
                /* just after an impact the gap starts at ~0: look for the flight phase */
                for (int kk = 1; kk < 60; kk++) {
                    double tk = prev_t + (ts - prev_t) * ldexp(1.0, -kk);
                    if (tk <= prev_t)
                        break;
                    if ((rc = ev_fun(ev, i, tk, 0.0, &val)) != OK)
                        return rc;
                    if (val > 0.0) {
                        a = tk;
                        break;
                    }
                }
            }
            int slip = i >= nc && i < 2 * nc && !ev->stick[i - nc];
            if (a > prev_t || pv[i] > (slip ? FR_REST_ARM : 0.0)) {
                if ((rc = ev_brent(ev, i, 0.0, a, ts, event_tol, 4 * 2.220446049250313e-16,
                                   &te)) != OK)
                    return rc;
            } else if (watch && pv[i] + tol > 0.0) {
                if ((rc = ev_brent(ev, i, tol, a, ts, event_tol, 4 * 2.220446049250313e-16,
                                   &te)) != OK)
                    return rc;
            } else if (slip && pv[i] + ev->slip_small > 0.0) {
                if ((rc = ev_brent(ev, i, ev->slip_small, a, ts, event_tol,
                                   4 * 2.220446049250313e-16, &te)) != OK)
                    return rc;
            } else {
                te = prev_t;
            }
            int kind = watch ? EV_IMPACT : EV_RELEASE;
            if (i >= 2 * nc)
                kind = ev->jstk[i - 2 * nc] && !ev->jheld[i - 2 * nc] ? EV_JSLIP : EV_JSTICK;
            else if (i >= nc)
                kind = ev->stick[i - nc] ? EV_SLIP : EV_STICK;
            if (best_i < 0 || te < best_t ||
                (te == best_t && (EV_RANK[kind] < EV_RANK[best_kind] ||
                                  (kind == best_kind && i < best_i)))) {
                best_t = te;
                best_kind = kind;
                best_i = i;
            }
        }
        break;
    }
    if (best_i < 0)
        return OK;
    ev_dense(ev, best_t < t1 ? best_t : t1, y);
    *te_out = best_t;
    *kind_out = best_kind;
    *idx_out = best_i >= 2 * nc ? best_i - 2 * nc : best_i >= nc ? best_i - nc : best_i;
    *found = 1;
    return OK;
}

/* ------------------------------------------------------------------ friction */
/* impact.solve_impact's active set with the friction impulses of
 * fmu_mb.dynamics.friction._active_set (e, mu of one level of the law): every frictional
 * contact of the set sticks until its sticking impulse leaves the cone, then every one
 * outside slides along its last sticking impulse; ERR_IMPACT when no admissible set is found
 * or the rows contradict each other. Out: ev->qdp, ev->rcon (normal), ev->ptv (friction
 * impulses, 2 per contact), ev->vplus, ev->vt2 (slip velocities after), *scale_out. */
static int ev_fr_active_set(EvLoop *ev, const double *q, const double *qd, const double *e,
                            int use_mu, const double *vtm, double *scale_out)
{
    int nc = ev->nc, rc;
    unsigned char *trial = ev->trial, *stk = ev->stk, *sl = ev->slide;
    double vmax = 0.0;
    for (int i = 0; i < nc; i++) {
        ev->target[i] = -e[i] * fmin(ev->vminus[i], 0.0);
        vmax = fmax(vmax, fabs(ev->vminus[i]));
        vmax = fmax(vmax, fmax(fabs(vtm[2 * i]), fabs(vtm[2 * i + 1])));
    }
    double scale = 1e-10 * (1.0 + vmax);
    *scale_out = scale;
    /* the set starts with the contacts approaching beyond rounding (a persistent contact's
     * gap rate is 0 up to rounding: it joins only if it would penetrate) */
    for (int i = 0; i < nc; i++)
        trial[i] = ev->closed[i] && ev->vminus[i] < -scale;
    int nseen = 0;
    for (int it = 0; it < 4 * nc + 4; it++) {
        for (int i = 0; i < nc; i++)
            sl[i] = 0;
        for (int inner = 0; inner < nc + 1; inner++) {
            for (int i = 0; i < nc; i++)
                stk[i] = trial[i] && use_mu && ev->mu[i] > 0.0 && !sl[i];
            if ((rc = evk_impact_fr(ev, q, qd, trial, stk, sl, ev->dir, ev->target, ev->qdp,
                                    ev->rcon, ev->rt)) != OK)
                return rc;
            int moved = 0;            /* every sticking contact outside its cone slides */
            for (int j = 0; j < nc; j++) {
                if (!stk[j])
                    continue;
                double nr = ev_norm2(ev->rt + 2 * j);
                if (!(nr - ev->mu[j] * fmax(-ev->rcon[j], 0.0) > scale))
                    continue;
                sl[j] = 1;
                ev->dir[2 * j] = ev->rt[2 * j] / nr;
                ev->dir[2 * j + 1] = ev->rt[2 * j + 1] / nr;
                moved = 1;
            }
            if (!moved)
                break;
        }
        evk_rates(ev, ev->qdp, ev->vplus);
        evk_slip_rates(ev, ev->qdp, ev->vt2);
        double bad = 0.0;             /* the rows hold (else they contradict each other) */
        for (int i = 0; i < nc; i++) {
            if (trial[i])
                bad = fmax(bad, fabs(ev->vplus[i] - ev->target[i]));
            if (stk[i])
                bad = fmax(bad, fmax(fabs(ev->vt2[2 * i]), fabs(ev->vt2[2 * i + 1])));
        }
        if (bad > 1e3 * scale)
            return ERR_IMPACT;
        /* the most pulling (else penetrating) contact leaves (joins) the set; contacts within
         * scale of it count as tied, the first of them in contact order (symmetric corners:
         * not decided by rounding) */
        int pull = -1, pen = -1;
        for (int i = 0; i < nc; i++) {
            if (trial[i] && ev->rcon[i] > scale && (pull < 0 || ev->rcon[i] > ev->rcon[pull]))
                pull = i;
            if (ev->closed[i] && !trial[i] && ev->vplus[i] < ev->target[i] - scale &&
                (pen < 0 || ev->vplus[i] - ev->target[i] < ev->vplus[pen] - ev->target[pen]))
                pen = i;
        }
        for (int i = 0; i < nc; i++) {
            if (pull >= 0 && i < pull && trial[i] && ev->rcon[i] >= ev->rcon[pull] - scale &&
                ev->rcon[i] > scale) {
                pull = i;
                break;
            }
        }
        if (pull < 0 && pen >= 0)
            for (int i = 0; i < pen; i++)
                if (ev->closed[i] && !trial[i] && ev->vplus[i] < ev->target[i] - scale &&
                    ev->vplus[i] - ev->target[i] <= ev->vplus[pen] - ev->target[pen] + scale) {
                    pen = i;
                    break;
                }
        if (pull < 0 && pen < 0) {
            for (int i = 0; i < nc; i++) {
                double *pt = ev->ptv + 2 * i;
                if (sl[i]) {
                    pt[0] = ev->mu[i] * ev->rcon[i] * ev->dir[2 * i];
                    pt[1] = ev->mu[i] * ev->rcon[i] * ev->dir[2 * i + 1];
                } else {
                    pt[0] = -ev->rt[2 * i];
                    pt[1] = -ev->rt[2 * i + 1];
                }
            }
            return OK;
        }
        for (int s = 0; s < nseen; s++)
            if (memcmp(ev->seen + (size_t)s * nc, trial, (size_t)nc) == 0)
                return ERR_IMPACT;
        memcpy(ev->seen + (size_t)nseen++ * nc, trial, (size_t)nc);
        if (pull >= 0)
            trial[pull] = 0;
        else
            trial[pen] = 1;
    }
    return ERR_IMPACT;
}

/* the frictional impact law (fmu_mb.dynamics.friction.frictional_impact): level 0 the
 * restitution coefficients, 1 e = 0, 2 frictionless with e = 0, the first that finds an
 * admissible set without gaining kinetic energy; the records as integrate._handle_event */
static int ev_impact_fr(EvLoop *ev, double te, double *y, double contact_velocity)
{
    int n = ev->n, nc = ev->nc, rc = OK, level;
    double *q = y, *qd = y + n, *vtm = ev->lamt, *zero = ev->lamc, scale = 0.0;
    evk_slip_rates(ev, qd, vtm);
    double T0 = evk_kinetic(ev, y), *yp = ev->yd;
    for (int i = 0; i < nc; i++)
        zero[i] = 0.0;
    for (level = 0; level < 3; level++) {
        rc = ev_fr_active_set(ev, q, qd, level == 0 ? ev->e : zero, level < 2, vtm, &scale);
        if (rc == ERR_IMPACT && level < 2)
            continue;
        if (rc != OK)
            return rc;
        memcpy(yp, q, sizeof(double) * n);
        memcpy(yp + n, ev->qdp, sizeof(double) * n);
        if (evk_kinetic(ev, yp) <= T0 + 1e-12 * fabs(T0))
            break;
    }
    for (int i = 0; i < nc; i++) {
        if (!ev->closed[i])
            continue;
        double p = -ev->rcon[i], *R = ev->rec + ev->nrec * i, *pt = ev->ptv + 2 * i;
        double *vp = ev->vt2 + 2 * i, *vm = vtm + 2 * i;
        double loss = -(p * (ev->vminus[i] + ev->vplus[i])
                        + pt[0] * (vm[0] + vp[0]) + pt[1] * (vm[1] + vp[1])) / 2.0;
        if (p > scale && ev->vminus[i] < -scale) {
            R[0] += 1.0;
            R[1] = te;
            R[2] = p;
        }
        R[3] += fmax(loss, 0.0);
        ev->active[i] = ev->vplus[i] < contact_velocity;
        double nv = ev_norm2(vp);
        ev->stick[i] = ev->active[i] && ev->mu[i] > 0.0 && nv < contact_velocity;
        if (nv > 0.0 && !ev->stick[i]) {
            ev->s0[2 * i] = vp[0] / nv;
            ev->s0[2 * i + 1] = vp[1] / nv;
        }
    }
    memcpy(qd, ev->qdp, sizeof(double) * n);
    return OK;
}

/* The states of the frictional joints at rest (integrate._joint_rest_states): the free
 * joints sticking, or slipping with |qd_j| <= 1e-6, get the states of their coupled problem
 * (friction.h fr_rest_states; friction.rest_states): qdd = c + A f of the forces f on them
 * with the other joints' and the contacts' states fixed, A by one solve per joint. */
static int ev_joint_rest(EvLoop *ev, double t, const double *y)
{
    int nj = ev->nj, n = ev->n, p = 0, rc;
    for (int j = 0; j < nj; j++) {
        ev->jrest[j] = !ev->jheld[j] && (ev->jstk[j] || fabs(y[n + ev->jc[j]]) <= 1e-6);
        ev->jf[j] = 0.0;
        p += ev->jrest[j];
    }
    if (!p)
        return OK;
    double *A = ev->jwork, *c = A + p * p, *bnd = c + p, *s0 = bnd + p, *acc = s0 + p;
    double *W = acc + nj, scale = 1.0;
    for (int j = 0, k = 0; j < nj; j++)
        if (ev->jrest[j]) {
            bnd[k] = ev->jb[j];
            s0[k++] = ev->js0[j];
            scale = fmax(scale, fabs(ev->jb[j]));
        }
    for (int col = -1; col < p; col++) {     /* col -1: c; col k: A's column k */
        for (int j = 0, k = 0; j < nj; j++)
            if (ev->jrest[j])
                ev->jf[j] = k++ == col ? scale : 0.0;
        ev_select(ev, ev->active);
        if ((rc = evk_fric(ev, t, y, ev->lamc, ev->lamt, ev->vt)) != OK) {
            for (int j = 0; j < nj; j++) {
                ev->jrest[j] = 0;
                ev->jf[j] = 0.0;
            }
            return rc;
        }
        evk_joint_acc(ev, acc);
        for (int j = 0, k = 0; j < nj; j++)
            if (ev->jrest[j]) {
                if (col < 0)
                    c[k] = acc[j];
                else
                    A[k * p + col] = (acc[j] - c[k]) / scale;
                k++;
            }
    }
    for (int a = 0; a < p; a++)
        for (int b = a + 1; b < p; b++)
            A[a * p + b] = A[b * p + a] = 0.5 * (A[a * p + b] + A[b * p + a]);
    fr_rest_states(p, A, c, bnd, W, ev->jtmp, s0);
    for (int j = 0, k = 0; j < nj; j++) {
        if (ev->jrest[j]) {
            ev->jstk[j] = ev->jtmp[k];
            ev->js0[j] = s0[k++];
        }
        ev->jrest[j] = 0;
        ev->jf[j] = 0.0;
    }
    ev_select(ev, ev->active);
    return OK;
}

/* contact i leaves its persistent state: a frictional joint it limits sticks (at rest) */
static void ev_release_contact(EvLoop *ev, int i)
{
    ev->active[i] = 0;
    if (ev->nj && ev->jlim[i] >= 0)
        ev->jstk[ev->jlim[i]] = 1;
}

/* the phase start with friction (integrate._release_tensile): the most tensile persistent
 * contact is released (a slipping one whose gap would then accelerate into the surface:
 * ERR_FRICTION, Painleve); else every sticking contact outside its cone slips along
 * s0 = lam_t / |lam_t|, and when a sticking joint's multiplier exceeds its bound the joints
 * at rest get the states of their coupled problem (ev_joint_rest); until nothing changes */
static int ev_fr_consistent(EvLoop *ev, double t, const double *y, long *changes, int known)
{
    int nc = ev->nc, nj = ev->nj, rc;
    if (nj)
        known = 0;
    for (int it = 0; it < 8 * (nc + nj) + 8; it++) {
        if (!ev_any(ev->active, nc) && !nj)
            return OK;
        ev_select(ev, ev->active);
        if (it == 0 && known) {     /* evk_fric's multipliers here, from the last call's end */
            memcpy(ev->lamc, ev->lamc_fc, sizeof(double) * nc);
            memcpy(ev->lamt, ev->lamt_fc, sizeof(double) * 2 * nc);
        } else if ((rc = evk_fric(ev, t, y, ev->lamc, ev->lamt, ev->vt)) != OK) {
            return rc;
        }
        double bv;
        int best = ev_most_tensile(ev, &bv);
        if (bv > 0.0) {
            ev_release_contact(ev, best);
            if (ev->mu[best] > 0.0 && !ev->stick[best]) {     /* Painleve's check */
                double acc;
                ev_select(ev, ev->active);
                if ((rc = evk_gap_acc(ev, best, t, y, &acc)) != OK)
                    return rc;
                if (acc < 0.0) {
                    ev->fr_contact = best;
                    return ERR_FRICTION;
                }
            }
            ev->stick[best] = 0;
            (*changes)++;
            continue;
        }
        int moved = 0, jout = 0;      /* every sticking contact outside its cone slips */
        for (int j = 0; j < nc; j++) {
            ev->closed[j] = 0;
            if (!(ev->active[j] && ev->stick[j] && ev->mu[j] > 0.0))
                continue;
            double nl = ev_norm2(ev->lamt + 2 * j);
            if (!(nl - ev->mu[j] * -ev->lamc[j] > 0.0))
                continue;
            ev->closed[j] = 1;
            ev->dir[2 * j] = ev->lamt[2 * j] / nl;
            ev->dir[2 * j + 1] = ev->lamt[2 * j + 1] / nl;
            moved = 1;
        }
        for (int j = 0; j < nj; j++)
            jout |= ev->jstk[j] && !ev->jheld[j] && fabs(ev->jlam[j]) > ev->jb[j] * (1.0 + 1e-9);
        if (!moved && !jout)
            return OK;
        if (jout && (rc = ev_joint_rest(ev, t, y)) != OK)   /* (the contacts' old states) */
            return rc;
        for (int j = 0; j < nc; j++)
            if (ev->closed[j]) {
                ev->stick[j] = 0;
                ev->s0[2 * j] = ev->dir[2 * j];
                ev->s0[2 * j + 1] = ev->dir[2 * j + 1];
            }
        (*changes)++;
    }
    ev->fr_contact = -1;
    return ERR_FRICTION;
}

/* a stick/slip event of contact i (EV_SLIP, EV_STICK) or frictional joint i (EV_JSLIP,
 * EV_JSTICK) at te (integrate._friction_event, _joint_event) */
static int ev_fr_event(EvLoop *ev, int kind, int i, double te, const double *y,
                       double contact_velocity)
{
    int nc = ev->nc, rc;
    if (kind == EV_JSTICK) {      /* qd_j s0 = 0: it sticks when stopped, else slips on */
        double v = y[ev->n + ev->jc[i]];
        if (fabs(v) <= 1e-3 * contact_velocity)
            ev->jstk[i] = 1;
        else
            ev->js0[i] = v > 0.0 ? 1.0 : -1.0;
        return OK;
    }
    ev_select(ev, ev->active);
    if ((rc = evk_fric(ev, te, y, ev->lamc, ev->lamt, ev->vt)) != OK)
        return rc;
    if (kind == EV_JSLIP) {       /* |lam_j| = F_c: it slips along sign(lam_j) */
        ev->jstk[i] = 0;
        ev->js0[i] = ev->jlam[i] > 0.0 ? 1.0 : -1.0;
        return OK;
    }
    if (kind == EV_SLIP) {        /* i and every sticking contact tied with it at its cone */
        double cmax = 0.0;
        for (int k = 0; k < nc; k++)
            if (ev->active[k] && ev->stick[k] && ev->mu[k] > 0.0)
                cmax = fmax(cmax, ev->mu[k] * -ev->lamc[k]);
        for (int k = 0; k < nc; k++) {
            double nl = ev_norm2(ev->lamt + 2 * k);
            if (k != i && !(ev->active[k] && ev->stick[k] && ev->mu[k] > 0.0 &&
                            nl - ev->mu[k] * -ev->lamc[k] >= -FR_TIE_CONE * cmax))
                continue;
            ev->stick[k] = 0;
            if (nl > 0.0) {
                ev->s0[2 * k] = ev->lamt[2 * k] / nl;
                ev->s0[2 * k + 1] = ev->lamt[2 * k + 1] / nl;
            }
        }
        return OK;
    }
    double nv = ev_norm2(ev->vt + 2 * i), small = 1e-3 * contact_velocity;
    if (nv > small) {
        ev->s0[2 * i] = ev->vt[2 * i] / nv;
        ev->s0[2 * i + 1] = ev->vt[2 * i + 1] / nv;
        return OK;
    }
    for (int k = 0; k < nc; k++)
        if (k == i || (ev->active[k] && ev->mu[k] > 0.0 && !ev->stick[k] &&
                       ev_norm2(ev->vt + 2 * k) <= small))
            ev->stick[k] = 1;
    return OK;
}

/* the energy dissipated by sliding over [t0, t1] of the last step (integrate._slide_loss:
 * mu f_n s . v_t, 3-point Gauss-Legendre on the dense output) into the records */
static int ev_slide_loss(EvLoop *ev, double t0, double t1)
{
    int nc = ev->nc, rc, any = 0, jany = 0;
    if (ev->nj)
        ev_select(ev, ev->active);
    for (int i = 0; i < nc; i++)
        any |= ev->active[i] && !ev->stick[i] && ev->mu[i] > 0.0;
    for (int j = 0; j < ev->nj; j++)
        jany |= !ev->jstk[j] && !ev->jheld[j];
    if (!(any || jany) || !(t1 > t0))
        return OK;
    static const double X[3] = {-0.7745966692414834, 0.0, 0.7745966692414834};
    static const double W[3] = {5.0 / 9.0, 8.0 / 9.0, 5.0 / 9.0};
    double half = (t1 - t0) / 2.0, mid = (t1 + t0) / 2.0, *acc = ev->ptv;
    for (int i = 0; i < nc + ev->nj; i++)
        acc[i] = 0.0;
    ev_select(ev, ev->active);
    for (int g = 0; g < 3; g++) {
        double tt = mid + half * X[g], s[2];
        ev_dense(ev, tt, ev->yd);
        for (int j = 0; j < ev->nj; j++)    /* a slipping joint's power F_c s0 qd_j */
            if (!ev->jstk[j] && !ev->jheld[j])
                acc[nc + j] += W[g] * ev->jb[j] * ev->js0[j] * ev->yd[ev->n + ev->jc[j]];
        if (!any)
            continue;
        if ((rc = evk_fric(ev, tt, ev->yd, ev->lamc, ev->lamt, ev->vt)) != OK)
            return rc;
        for (int i = 0; i < nc; i++) {
            if (!(ev->active[i] && !ev->stick[i] && ev->mu[i] > 0.0))
                continue;
            fr_slip_direction(2, ev->vt + 2 * i, ev->s0 + 2 * i, s);
            acc[i] += W[g] * ev->mu[i] * -ev->lamc[i] *
                      (s[0] * ev->vt[2 * i] + s[1] * ev->vt[2 * i + 1]);
        }
    }
    for (int i = 0; i < nc; i++)
        if (ev->active[i] && !ev->stick[i] && ev->mu[i] > 0.0)
            ev->rec[ev->nrec * i + 8] += half * acc[i];
    for (int j = 0; j < ev->nj; j++)
        if (!ev->jstk[j] && !ev->jheld[j])
            ev_jrec(ev, ev->rec, j)[2] += half * acc[nc + j];
    ev->fr_dirty = 1;
    return OK;
}

/* ------------------------------------------------------------------ impacts */
/* The impact at y = (q, qd-) of contact i_event at te: every contact with gap <= contact_tol
 * (and i_event) is closed; qd+ from seed 000 ch.3 eq. 15 for the active set of
 * impact.solve_impact; the records updated as integrate._handle_event does. */
static int ev_impact_x(EvLoop *ev, double te, double *y, int i_event,
                       double contact_velocity);

/* the impact (ev_impact_x) without the joints' friction rows (impact.impact has none); then
 * every frictional joint sticks when its rate is below contact_velocity, else slips along
 * it (integrate._handle_event) */
static int ev_impact(EvLoop *ev, double te, double *y, int i_event, double contact_velocity)
{
    ev->jphase = 0;
    int rc = ev_impact_x(ev, te, y, i_event, contact_velocity);
    ev->jphase = 1;
    if (rc != OK)
        return rc;
    for (int j = 0; j < ev->nj; j++) {
        double v = y[ev->n + ev->jc[j]];
        ev->jstk[j] = fabs(v) < contact_velocity;
        if (!ev->jstk[j])
            ev->js0[j] = v > 0.0 ? 1.0 : -1.0;
    }
    return OK;
}

static int ev_impact_x(EvLoop *ev, double te, double *y, int i_event,
                       double contact_velocity)
{
    int n = ev->n, nc = ev->nc, rc;
    double *q = y, *qd = y + n;
    if ((rc = evk_contact_rates(ev, te, q, qd, ev->gap, ev->vminus)) != OK)
        return rc;
    if (ev->fr) {
        int any = 0;
        for (int i = 0; i < nc; i++) {
            ev->closed[i] = ev->gap[i] <= ev->contact_tol || i == i_event;
            any |= ev->closed[i] && ev->mu[i] > 0.0;
        }
        if (any)
            return ev_impact_fr(ev, te, y, contact_velocity);
    }
    double vmax = 0.0;
    for (int i = 0; i < nc; i++) {
        double acc = ev->vminus[i];
        ev->closed[i] = ev->gap[i] <= ev->contact_tol || i == i_event;
        ev->target[i] = -ev->e[i] * fmin(acc, 0.0);
        vmax = fmax(vmax, fabs(acc));
        ev->trial[i] = ev->closed[i] && acc < 0.0;
    }
    double scale = 1e-10 * (1.0 + vmax);
    int nseen = 0, ok = 0;
    for (int it = 0; it < 4 * nc + 4; it++) {
        if ((rc = evk_impact_solve(ev, q, qd, ev->trial, ev->target, ev->qdp, ev->rcon)) != OK)
            return rc;
        evk_rates(ev, ev->qdp, ev->vplus);
        int pull = -1, pen = -1;
        for (int i = 0; i < nc; i++) {
            if (ev->trial[i] && ev->rcon[i] > scale && (pull < 0 || ev->rcon[i] > ev->rcon[pull]))
                pull = i;
            if (ev->closed[i] && !ev->trial[i] && ev->vplus[i] < ev->target[i] - scale &&
                (pen < 0 || ev->vplus[i] - ev->target[i] < ev->vplus[pen] - ev->target[pen]))
                pen = i;
        }
        if (pull < 0 && pen < 0) {
            ok = 1;
            break;
        }
        for (int s = 0; s < nseen; s++)
            if (memcmp(ev->seen + (size_t)s * nc, ev->trial, (size_t)nc) == 0)
                return ERR_IMPACT;
        memcpy(ev->seen + (size_t)nseen++ * nc, ev->trial, (size_t)nc);
        if (pull >= 0)
            ev->trial[pull] = 0;
        else
            ev->trial[pen] = 1;
    }
    if (!ok)
        return ERR_IMPACT;
    for (int i = 0; i < nc; i++) {
        if (!ev->closed[i])
            continue;
        double p = -ev->rcon[i], *R = ev->rec + ev->nrec * i;
        double loss = -p * (ev->vminus[i] + ev->vplus[i]) / 2.0;
        if (p > scale && ev->vminus[i] < -scale) {
            R[0] += 1.0;
            R[1] = te;
            R[2] = p;
        }
        R[3] += fmax(loss, 0.0);
        ev->active[i] = ev->vplus[i] < contact_velocity;
    }
    memcpy(qd, ev->qdp, sizeof(double) * n);
    return OK;
}

/* one rk4 step of the Python loop's stepper (integrate._Stepper) from (tc, y) with f = f(tc,
 * y) in ev->f: step k of n over [t0, t_end] of size dt, the new f, the projection with the
 * phase's rows (f again when it moved y) and the Hermite interpolant; lam1 gets the contact
 * multipliers at the new state when the last solve was there without Baumgarte terms */
static int ev_rk4_step(EvLoop *ev, double *tc, double *y, long *k, long n, double t0,
                       double dt, double t_end, int stab, int *lam1_ok)
{
    int m = 2 * ev->n, nc = ev->nc, rc;
    double *K = ev->K, *k1 = ev->f, *k2 = K + m, *k3 = K + 2 * m, *k4 = K + 3 * m;
    double *yt = K + 4 * m, *yp = K + 5 * m, t = *tc, *F = ev->F;
    memcpy(ev->yold, y, sizeof(double) * m);
    memcpy(F, y, sizeof(double) * m);                    /* Hermite: y0, f0, y1, f1 */
    memcpy(F + m, k1, sizeof(double) * m);
    *k += 1;
    double t_new = *k == n ? t_end : t0 + *k * dt;
    for (int i = 0; i < m; i++)
        yt[i] = y[i] + dt / 2 * k1[i];
    if ((rc = evk_rhs(ev, t + dt / 2, yt, k2)) != OK)
        return rc;
    for (int i = 0; i < m; i++)
        yt[i] = y[i] + dt / 2 * k2[i];
    if ((rc = evk_rhs(ev, t + dt / 2, yt, k3)) != OK)
        return rc;
    for (int i = 0; i < m; i++)
        yt[i] = y[i] + dt * k3[i];
    if ((rc = evk_rhs(ev, t + dt, yt, k4)) != OK)
        return rc;
    for (int i = 0; i < m; i++)
        y[i] = y[i] + dt / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    *tc = t_new;
    if (!integ_all_finite(y, m))
        return ERR_NONFINITE;
    if ((rc = evk_rhs(ev, t_new, y, ev->f)) != OK)
        return rc;
    if (stab == 1) {
        memcpy(yp, y, sizeof(double) * m);
        if ((rc = evk_project(ev, t_new, y)) != OK)
            return rc;
        if (memcmp(yp, y, sizeof(double) * m) != 0 &&
            (rc = evk_rhs(ev, t_new, y, ev->f)) != OK)
            return rc;
    }
    memcpy(ev->ynew, y, sizeof(double) * m);
    memcpy(F + 2 * m, y, sizeof(double) * m);
    memcpy(F + 3 * m, ev->f, sizeof(double) * m);
    ev->t_old = t;
    ev->t_new = t_new;
    ev->h_dense = t_new - t;
    *lam1_ok = 0;
    if (stab == 1 && ev_any(ev->sel, nc))
        *lam1_ok = evk_phase_lam(ev, ev->lam1);
    return OK;
}

/* ------------------------------------------------------------------ the loop
 * Integrate y = (q, qd) from par[0] to par[1] with the events (the API of events.c's
 * mbk_advance_events; stop: return after the first impact, *stopped = 1) */
static int ev_advance(EvLoop *ev, int method, double *par, double *y_io, const double *u,
                      double *rec_io, int stop, int *stopped)
{
    if (!ev || method < 0 || method > 2 || !par || !y_io || !rec_io)
        return ERR_ARGS;
    int n = ev->n, m = 2 * n, nc = ev->nc, s = method == 1 ? 12 : 6, rc = OK;
    double t = par[0], t_end = par[1], h = par[2] > 0.0 ? par[2] : 0.0;
    double rtol = par[3], atol = par[4], max_step = par[5];
    int stab = (int)par[6];
    double ptol = par[9], ctol = par[10], cvel = par[11], etol = par[12];
    long max_steps = (long)par[13];
    double rk_step = par[18];
    if (!(t <= t_end) || m == 0 || stab < 0 || stab > 2 || (method == 2 && !(rk_step > 0.0)))
        return ERR_ARGS;
    ev->u = u;
    ev->method = method;
    ev->contact_tol = ctol;
    ev->slip_small = 1e-3 * cvel;
    ev->mode = stab;
    ev->alpha = par[7];
    ev->beta = par[8];
    evk_configure(ev, stab, par[7], par[8], ptol);
    double *y = ev->y;
    memcpy(y, y_io, sizeof(double) * m);
    memcpy(ev->rec, rec_io, sizeof(double) * ev_nrec_all(ev));
    ev->jphase = 1;
    for (int j = 0; j < ev->nj; j++) {
        const double *J = ev_jrec(ev, ev->rec, j);
        ev->jstk[j] = J[0] != 0.0;
        ev->js0[j] = J[1] < 0.0 ? -1.0 : 1.0;
    }
    for (int i = 0; i < nc; i++) {
        ev->active[i] = rec_io[ev->nrec * i + 4] != 0.0;
        if (ev->fr) {
            ev->stick[i] = rec_io[ev->nrec * i + 5] != 0.0;
            ev->s0[2 * i] = rec_io[ev->nrec * i + 6];
            ev->s0[2 * i + 1] = rec_io[ev->nrec * i + 7];
        }
    }
    par[14] = t;
    par[17] = -1.0;
    ev->fr_dirty = 0;
    long steps = 0, events = 0, changes = 0;
    int repeats = 0, have_last = 0, n_win = 0;
    double t_last = 0.0, t_start = t, t_win = 0.0;
    int zw = nc + ev->nj;           /* the rate windows: those of the last call from its end */
    if (ev->z_ok && ev->zt_end == t && memcmp(ev->zy, y, sizeof(double) * m) == 0) {
        memcpy(ev->zt, ev->zt + zw, sizeof(double) * zw);
        memcpy(ev->zn, ev->zn + zw, sizeof(int) * zw);
    } else {
        memset(ev->zn, 0, sizeof(int) * zw);
    }
    while (t < t_end) {
        int lam0_ok = 0, v0_ok = 0, v1_ok = 0;
        /* the end of the last call is this call's start (t, y, u and the drift control
         * agree): f and the contact multipliers there are known, bit for bit */
        int fc_match = ev->fc_ok && evk_reuse_f(ev) && ev->t_fc == t &&
                       ev->mode_fc == ev->mode && ev->alpha_fc == ev->alpha &&
                       ev->beta_fc == ev->beta && memcmp(ev->y_fc, y, sizeof(double) * m) == 0 &&
                       (ev->ni == 0 || memcmp(ev->u_fc, u, sizeof(double) * ev->ni) == 0);
        /* with friction also the same persistent contacts, stick flags and slip directions
         * (then the phase's rows and sliding forces are those of the last call's end) */
        int fr_same = ev->fr && fc_match && memcmp(ev->sel_fc, ev->active, (size_t)nc) == 0 &&
                      memcmp(ev->stick_fc, ev->stick, (size_t)nc) == 0 &&
                      memcmp(ev->s0_fc, ev->s0, sizeof(double) * 2 * nc) == 0;
        if (ev->fr && (rc = ev_fr_consistent(ev, t, y, &changes,
                                             fr_same && ev->fr_fc_ok)) != OK) {
            par[14] = t;
            par[17] = ev->fr_contact;
            return rc;
        }
        for (int first = 1; !ev->fr; first = 0) { /* release tensile persistent contacts, most tensile first */
            if (!ev_any(ev->active, nc))
                break;
            ev_select(ev, ev->active);
            if (first && fc_match && ev->lam_fc_ok &&
                memcmp(ev->sel_fc, ev->sel, (size_t)nc) == 0) {
                memcpy(ev->lamc, ev->lam_fc, sizeof(double) * nc);
            } else if ((rc = evk_lam(ev, t, y, ev->lamc)) != OK) {
                par[14] = t;
                return rc;
            }
            double bv;
            int best = ev_most_tensile(ev, &bv);
            if (bv <= 0.0) {        /* (also the first step's event values at t) */
                memcpy(ev->lam0, ev->lamc, sizeof(double) * nc);
                lam0_ok = 1;
                break;
            }
            ev->active[best] = 0;
            changes++;
        }
        ev_select(ev, ev->active);
        int project_steps = stab == 1 && evk_project_steps(ev), have_f = 0, found = 0, kind = 0, idx = -1;
        double tc = t, hs = h, te = t;
        if (fr_same)        /* (unchanged by the consistency check) */
            fr_same = memcmp(ev->sel_fc, ev->active, (size_t)nc) == 0 &&
                      memcmp(ev->stick_fc, ev->stick, (size_t)nc) == 0 &&
                      memcmp(ev->s0_fc, ev->s0, sizeof(double) * 2 * nc) == 0;
        if (fc_match && (!ev->fr || fr_same) && memcmp(ev->sel_fc, ev->sel, (size_t)nc) == 0) {
            if (ev->v_fc_ok) {                                /* its event values */
                memcpy(ev->v0, ev->v_fc, sizeof(double) * (ev->fr ? 2 * nc : nc));
                v0_ok = 1;
            }
            memcpy(ev->f, ev->f_fc, sizeof(double) * m);      /* f(t, y) of the last call */
            have_f = 1;
        }
        ev->fc_ok = 0;
        int fr1_ok = 0;
        long rk_n = 0, rk_k = 0;
        double rk_t0 = t, rk_dt = 0.0;
        if (method == 2) {          /* rk4: equal steps of at most `step` over [t, t_end] */
            double ns = ceil((t_end - t) / rk_step - 1e-9);
            rk_n = ns < 1.0 ? 1 : (long)ns;
            if (max_steps > 0 && rk_n > max_steps) {
                par[14] = t;
                par[2] = rk_step;
                return INTEG_ERR_BUDGET;
            }
            rk_dt = (t_end - t) / (double)rk_n;
            hs = rk_dt;
            if (!have_f && (rc = evk_rhs(ev, t, y, ev->f)) != OK) {
                par[14] = t;
                return rc;
            }
            have_f = 1;
        }
        while (!found && tc < t_end) {
            memcpy(ev->yold, y, sizeof(double) * m);
            if (++steps > max_steps && max_steps > 0) {
                par[14] = t_start;
                par[15] = (double)steps;
                return INTEG_ERR_BUDGET;
            }
            double sp[7] = {tc, t_end, hs, rtol, atol, max_step, 0.0};
            int lam1_ok = 0;
            if (method == 2) {
                ev->vT_ok = 0;
                v0_ok = 0;                  /* (the values at t0 of the dense steps only) */
                if ((rc = ev_rk4_step(ev, &tc, y, &rk_k, rk_n, rk_t0, rk_dt, t_end, stab,
                                      &lam1_ok)) != OK) {
                    par[14] = tc;
                    return rc;
                }
                hs = rk_dt;
                if (ev->fr)
                    lam1_ok = 0;
                if ((rc = ev_find(ev, ev->t_old, ev->yold, lam0_ok ? ev->lam0 : NULL, NULL, tc,
                                  ctol, etol, y, &te, &kind, &idx, &found)) != OK ||
                    (ev->fr && (rc = ev_slide_loss(ev, ev->t_old, found ? te : tc)) != OK)) {
                    par[14] = tc;
                    return rc;
                }
                lam0_ok = lam1_ok;
                if (lam1_ok)
                    memcpy(ev->lam0, ev->lam1, sizeof(double) * nc);
                continue;
            }
            if (have_f)
                memcpy(ev->K, ev->f, sizeof(double) * m);
            if ((rc = evk_step(ev, method, sp, y, have_f, ev->K)) != OK) {
                par[14] = sp[0];
                return rc;
            }
            ev->t_old = tc;
            ev->t_new = sp[0];
            memcpy(ev->ynew, y, sizeof(double) * m);
            ev->vT_ok = ev_values_last(ev, ev->vT);
            memcpy(ev->f, ev->K + (size_t)s * m, sizeof(double) * m);
            if (project_steps) {
                if ((rc = evk_project(ev, sp[0], y)) != OK ||
                    (rc = evk_rhs(ev, sp[0], y, ev->f)) != OK) {
                    par[14] = sp[0];
                    return rc;
                }
                /* its multipliers are the next step's event values at t0 (mode 1 solves
                 * as mode 0: no Baumgarte terms) */
                lam1_ok = ev->fr ? 0 : evk_phase_lam(ev, ev->lam1);
                v1_ok = ev_values_last(ev, ev->v1);           /* at the projected state */
                fr1_ok = ev->fr && v1_ok;
                if (fr1_ok) {               /* evk_fric's multipliers there */
                    memcpy(ev->lamc1, ev->lamc, sizeof(double) * nc);
                    memcpy(ev->lamt1, ev->lamt, sizeof(double) * 2 * nc);
                }
            } else {
                v1_ok = ev->vT_ok;                          /* y = ynew */
                if (v1_ok)
                    memcpy(ev->v1, ev->vT, sizeof(double) * (ev->fr ? 2 * nc : nc));
            }
            have_f = 1;
            tc = sp[0];
            hs = sp[2];
            if ((rc = ev_dense_setup(ev, sp[6])) != OK ||
                (rc = ev_find(ev, ev->t_old, ev->yold, lam0_ok ? ev->lam0 : NULL,
                              v0_ok ? ev->v0 : NULL, tc, ctol, etol, y, &te, &kind, &idx,
                              &found)) != OK ||
                (ev->fr && (rc = ev_slide_loss(ev, ev->t_old, found ? te : tc)) != OK)) {
                par[14] = tc;
                return rc;
            }
            double *sw = ev->v0;
            ev->v0 = ev->v1;
            ev->v1 = sw;
            v0_ok = v1_ok;
            lam0_ok = lam1_ok;
            if (lam1_ok)
                memcpy(ev->lam0, ev->lam1, sizeof(double) * nc);
        }
        h = hs;
        if (!found) {
            t = tc;
            /* f(t_end, y) for the next call's first stage: K[s] at the unprojected state
             * (= y without projection and drives) or the rhs after the projection */
            if (evk_reuse_f(ev) && !ev->nj &&
                (project_steps || memcmp(ev->ynew, y, sizeof(double) * m) == 0)) {
                ev->fc_ok = 1;
                ev->t_fc = t;
                ev->mode_fc = ev->mode;
                ev->alpha_fc = ev->alpha;
                ev->beta_fc = ev->beta;
                memcpy(ev->sel_fc, ev->sel, (size_t)nc);
                memcpy(ev->y_fc, y, sizeof(double) * m);
                memcpy(ev->f_fc, ev->f, sizeof(double) * m);
                if (ev->ni)
                    memcpy(ev->u_fc, u, sizeof(double) * ev->ni);
                /* lam0: the multipliers of the last rhs at y (mode 1 solves as mode 0) */
                ev->lam_fc_ok = lam0_ok;
                ev->v_fc_ok = v0_ok;
                if (v0_ok)
                    memcpy(ev->v_fc, ev->v0, sizeof(double) * (ev->fr ? 2 * nc : nc));
                ev->fr_fc_ok = ev->fr && fr1_ok && project_steps;
                if (ev->fr) {
                    memcpy(ev->stick_fc, ev->stick, (size_t)nc);
                    memcpy(ev->s0_fc, ev->s0, sizeof(double) * 2 * nc);
                    memcpy(ev->lamc_fc, ev->lamc1, sizeof(double) * nc);
                    memcpy(ev->lamt_fc, ev->lamt1, sizeof(double) * 2 * nc);
                }
                if (lam0_ok)
                    memcpy(ev->lam_fc, ev->lam0, sizeof(double) * nc);
            }
            break;
        }
        /* Zeno guard: more than 100 events per contact, each within 10 ns of the last, or
         * within 10 us (events crawling on through a chatter) */
        int close = have_last && te - t_last <= 1e-8 * fmax(1.0, fabs(te));
        repeats = close ? repeats + 1 : 0;
        if (!have_last || te - t_win > 1e-5 * fmax(1.0, fabs(te))) {
            t_win = te;
            n_win = 0;
        }
        n_win++;
        /* and more than EV_ZENO_COUNT events of one contact or joint within EV_ZENO_SPAN of
         * simulated time, across calls (a chatter whose events are too far apart for the
         * windows above) */
        int zi = kind >= EV_JSLIP ? nc + idx : idx;
        int rate = zeno_rate(ev->zt + zi, ev->zn + zi, te);
        if (repeats > 100 * (nc + ev->nj) || n_win > 100 * (nc + ev->nj) || rate) {
            par[14] = te;
            par[17] = kind >= EV_JSLIP ? -2.0 - idx : idx;
            return ERR_ZENO;
        }
        t_last = te;
        have_last = 1;
        if (stab == 1 && (rc = evk_project(ev, te, y)) != OK) {
            par[14] = te;
            return rc;
        }
        if (kind == EV_RELEASE) {
            ev_release_contact(ev, idx);
            ev->stick[idx] = 0;
        } else if (kind == EV_SLIP || kind == EV_STICK || kind == EV_JSLIP ||
                   kind == EV_JSTICK) {
            if ((rc = ev_fr_event(ev, kind, idx, te, y, cvel)) != OK) {
                par[14] = te;
                par[17] = kind >= EV_JSLIP ? -2.0 - idx : idx;
                return rc;
            }
        } else if ((rc = ev_impact(ev, te, y, idx, cvel)) != OK) {
            par[14] = te;
            par[17] = idx;
            return rc;
        }
        if (stab == 1) {
            double T0 = evk_kinetic(ev, y);
            ev_select(ev, ev->active);
            if ((rc = evk_project(ev, te, y)) != OK) {
                par[14] = te;
                return rc;
            }
            if (kind == EV_IMPACT)      /* a rebound below contact_velocity removed */
                ev->rec[ev->nrec * idx + 3] += fmax(T0 - evk_kinetic(ev, y), 0.0);
        }
        t = te;
        events++;
        if (stop && kind == EV_IMPACT) {
            if (stopped)
                *stopped = 1;
            break;
        }
    }
    for (int i = 0; i < nc; i++) {
        ev->rec[ev->nrec * i + 4] = ev->active[i] ? 1.0 : 0.0;
        if (ev->fr) {
            ev->rec[ev->nrec * i + 5] = ev->stick[i] ? 1.0 : 0.0;
            ev->rec[ev->nrec * i + 6] = ev->s0[2 * i];
            ev->rec[ev->nrec * i + 7] = ev->s0[2 * i + 1];
        }
    }
    for (int j = 0; j < ev->nj; j++) {
        double *J = ev_jrec(ev, ev->rec, j);
        J[0] = ev->jstk[j] ? 1.0 : 0.0;
        J[1] = ev->js0[j];
    }
    memcpy(y_io, y, sizeof(double) * m);
    memcpy(rec_io, ev->rec, sizeof(double) * ev_nrec_all(ev));
    par[0] = stopped && *stopped ? t : t_end;
    memcpy(ev->zt + zw, ev->zt, sizeof(double) * zw);     /* the windows at this end */
    memcpy(ev->zn + zw, ev->zn, sizeof(int) * zw);
    memcpy(ev->zy, y, sizeof(double) * m);
    ev->zt_end = par[0];
    ev->z_ok = 1;
    par[2] = h;
    par[15] = (double)steps;
    par[16] = (double)(events + changes + ev->fr_dirty);
    return OK;
}

/* The contact outputs at (t, y) with inputs u for the records rec (nc, EV_REC): gap (nc) [m
 * or rad] and force (nc), the force of each persistent contact, pushing positive (-lam_c of
 * the accelerations with the active contacts' rows closed), 0 for the others. */
static int ev_outputs(EvLoop *ev, double t, const double *y, const double *u,
                      const double *rec, double *gap, double *force)
{
    int nc = ev->nc, rc, any = 0;
    ev->u = u;
    if ((rc = evk_gaps(ev, y, gap)) != OK)
        return rc;
    for (int i = 0; i < nc; i++) {
        ev->trial[i] = rec[ev->nrec * i + 4] != 0.0;
        any |= ev->trial[i];
        force[i] = 0.0;
    }
    if (!any)
        return OK;
    ev_select(ev, ev->trial);
    /* at the end state of the last call (the same t, y, u and persistent contacts) its
     * multipliers are known, bit for bit (those of the next call's tension check) */
    if (ev->fc_ok && ev->lam_fc_ok && ev->t_fc == t &&
        memcmp(ev->sel_fc, ev->sel, (size_t)nc) == 0 &&
        memcmp(ev->y_fc, y, sizeof(double) * 2 * ev->n) == 0 &&
        (ev->ni == 0 || memcmp(ev->u_fc, u, sizeof(double) * ev->ni) == 0))
        memcpy(ev->lamc, ev->lam_fc, sizeof(double) * nc);
    else if ((rc = evk_lam(ev, t, y, ev->lamc)) != OK)
        return rc;
    for (int i = 0; i < nc; i++)
        if (ev->trial[i])
            force[i] = -ev->lamc[i];
    return OK;
}

/* ------------------------------------------------------------------ event mode
 * For a host that integrates the motion itself (FMI model exchange, engine.c's engine_me.h):
 * the event functions at a state and one event iteration there, with the loop's own impact
 * (ev_impact: the active set of impact.solve_impact, Newton's law, the records) and its
 * release of tensile persistent contacts (ev_release_tensile). A contact law with more
 * events (stick/slip) adds its transitions to ev_event_update. */

/* the phase of rec (nc, ev->nrec): the persistent contacts as ev->active, with friction also
 * the stick flags and slip directions */
static void ev_active_from(EvLoop *ev, const double *rec)
{
    for (int i = 0; i < ev->nc; i++) {
        const double *R = rec + ev->nrec * i;
        ev->active[i] = R[4] != 0.0;
        if (ev->fr) {
            ev->stick[i] = R[5] != 0.0;
            ev->s0[2 * i] = R[6];
            ev->s0[2 * i + 1] = R[7];
        }
    }
}

/* every contact's event value at (t, y) (ev_values: the gap of an inactive contact, the
 * force -lam_c of a persistent one) for the records rec and inputs u; with friction
 * (ev_values_fr) then per contact its friction value v[nc + i]: mu f_n - |f_t| sticking,
 * v_t . s0 slipping, 1 (no event: a constant of the friction values' sign before any
 * transition) for a contact that is not persistent or has no friction */
static int ev_event_values(EvLoop *ev, double t, const double *y, const double *u,
                           const double *rec, double *v)
{
    ev->u = u;
    ev_active_from(ev, rec);
    ev_select(ev, ev->active);
    int rc = ev_values(ev, t, y, v);
    for (int i = 0; rc == OK && ev->fr && i < ev->nc; i++)
        if (!isfinite(v[ev->nc + i]))
            v[ev->nc + i] = 1.0;
    return rc;
}

/* release the persistent contacts whose force would pull at (t, y), the most tensile first
 * (the loop's phase start); *released counts them */
static int ev_release_tensile(EvLoop *ev, double t, const double *y, int *released)
{
    int nc = ev->nc, rc;
    while (ev_any(ev->active, nc)) {
        ev_select(ev, ev->active);
        if ((rc = evk_lam(ev, t, y, ev->lamc)) != OK)
            return rc;
        int best = -1;
        for (int i = 0; i < nc; i++)
            if (ev->active[i] && (best < 0 || ev->lamc[i] > ev->lamc[best]))
                best = i;
        if (!(ev->lamc[best] > 0.0))
            break;
        ev->active[best] = 0;
        ++*released;
    }
    ev_select(ev, ev->active);
    return OK;
}

/* One event iteration at (t, y = (q, qd)) with the records rec (nc, EV_REC) and inputs u:
 * the impact of the closed (gap <= ctol), approaching, not persistent contact of smallest gap
 * (ev_impact closes every contact within ctol with it; a rebound below cvel becomes
 * persistent), then the release of tensile persistent contacts; with `project` (the drift
 * control 1) after a change, as the loop after an event: y projected onto the phase's rows
 * (a persistent contact's gap and its rate closed), the kinetic energy this removes added
 * to the impact's loss. y and rec are updated; *impacts and *released count what happened
 * (0 and 0: nothing to do). */
static int ev_event_update_fr(EvLoop *ev, double t, double *y, const double *u, double *rec,
                              double ctol, double cvel, int project, int *impacts,
                              int *changes);

static int ev_event_update(EvLoop *ev, double t, double *y, const double *u, double *rec,
                           double ctol, double cvel, int project, int *impacts,
                           int *released)
{
    if (ev->fr)
        return ev_event_update_fr(ev, t, y, u, rec, ctol, cvel, project, impacts, released);
    int n = ev->n, nc = ev->nc, rc;
    *impacts = 0;
    *released = 0;
    ev->u = u;
    ev->contact_tol = ctol;
    ev->slip_small = 1e-3 * cvel;
    memcpy(ev->rec, rec, sizeof(double) * EV_REC * nc);
    ev_active_from(ev, rec);
    if ((rc = evk_contact_rates(ev, t, y, y + n, ev->gap, ev->vminus)) != OK)
        return rc;
    int hit = -1;
    for (int i = 0; i < nc; i++)
        if (!ev->active[i] && ev->gap[i] <= ctol && ev->vminus[i] < 0.0 &&
            (hit < 0 || ev->gap[i] < ev->gap[hit]))
            hit = i;
    if (hit >= 0) {
        if ((rc = ev_impact(ev, t, y, hit, cvel)) != OK)
            return rc;
        *impacts = 1;
    }
    if ((rc = ev_release_tensile(ev, t, y, released)) != OK)
        return rc;
    if (project && (*impacts || *released)) {
        double T0 = evk_kinetic(ev, y);
        ev_select(ev, ev->active);
        if ((rc = evk_project(ev, t, y)) != OK)
            return rc;
        if (*impacts)
            ev->rec[EV_REC * hit + 3] += fmax(T0 - evk_kinetic(ev, y), 0.0);
    }
    for (int i = 0; i < nc; i++)
        ev->rec[EV_REC * i + 4] = ev->active[i] ? 1.0 : 0.0;
    memcpy(rec, ev->rec, sizeof(double) * EV_REC * nc);
    return OK;
}

/* One event iteration with friction (records rec (nc, EV_REC_FR): the phase set active /
 * stick / slip direction s0 per contact), the transitions of the loop (ev_advance) at an
 * event: the impact of ev_event_update (ev_impact: the frictional impact law, its rebound's
 * phase), then each slipping contact whose slip velocity along s0 has crossed zero gets the
 * loop's slip -> stick event (ev_fr_event EV_STICK: sticks when the slip speed is below
 * 1e-3 cvel, else slips along the slip velocity), then the
 * loop's phase start (ev_fr_consistent: tensile persistent contacts released with
 * Painleve's check, sticking contacts outside their cone slip along lam_t); with `project`
 * after a change y projected as ev_event_update. *impacts counts the impact, *changes the
 * other changes of the phase set (0 and 0: y and rec unchanged). The crossing is the loop's
 * (ev_find): v_t . s0 <= 0 (a host reports the state where the sign has changed) from a
 * value > 0 at the end of the last event iteration (ev->me_armed), or below -1e-3 cvel
 * (a slip that started from a stopped slip speed counts as reversed beyond that only). */
static int ev_fr_arm(EvLoop *ev, double t, const double *y)
{
    int n = ev->n, nc = ev->nc, rc;
    if ((rc = evk_contact_rates(ev, t, y, y + n, ev->gap, ev->vminus)) != OK)
        return rc;
    evk_slip_rates(ev, y + n, ev->vt2);
    for (int i = 0; i < nc; i++)
        ev->me_armed[i] = ev->active[i] && ev->mu[i] > 0.0 && !ev->stick[i] &&
                          ev->vt2[2 * i] * ev->s0[2 * i] +
                          ev->vt2[2 * i + 1] * ev->s0[2 * i + 1] > FR_REST_ARM;
    return OK;
}

static int ev_event_update_fr(EvLoop *ev, double t, double *y, const double *u, double *rec,
                              double ctol, double cvel, int project, int *impacts,
                              int *changes)
{
    int n = ev->n, nc = ev->nc, rc, nr = ev->nrec;
    long ch = 0;
    *impacts = 0;
    *changes = 0;
    ev->u = u;
    ev->contact_tol = ctol;
    ev->slip_small = 1e-3 * cvel;
    if (!ev->me_armed) {        /* before the first iteration: every slip counts as armed */
        if (!(ev->me_armed = malloc((size_t)nc + 1)))
            return ERR_ARGS;
        memset(ev->me_armed, 1, (size_t)nc + 1);
    }
    memcpy(ev->rec, rec, sizeof(double) * nr * nc);
    ev_active_from(ev, rec);
    if ((rc = evk_contact_rates(ev, t, y, y + n, ev->gap, ev->vminus)) != OK)
        return rc;
    int hit = -1;
    for (int i = 0; i < nc; i++)
        if (!ev->active[i] && ev->gap[i] <= ctol && ev->vminus[i] < 0.0 &&
            (hit < 0 || ev->gap[i] < ev->gap[hit]))
            hit = i;
    if (hit >= 0) {
        if ((rc = ev_impact(ev, t, y, hit, cvel)) != OK)
            return rc;
        *impacts = 1;
    }
    double *vt = ev->vt2;               /* the slip velocities at y (after the impact) */
    evk_slip_rates(ev, y + n, vt);
    for (int i = 0; i < nc; i++) {
        if (!(ev->active[i] && ev->mu[i] > 0.0 && !ev->stick[i]))
            continue;
        double v = vt[2 * i] * ev->s0[2 * i] + vt[2 * i + 1] * ev->s0[2 * i + 1];
        if (!(v <= 0.0 && (ev->me_armed[i] || v < -ev->slip_small)))
            continue;
        if ((rc = ev_fr_event(ev, EV_STICK, i, t, y, cvel)) != OK)
            return rc;
        evk_slip_rates(ev, y + n, vt);
    }
    if ((rc = ev_fr_consistent(ev, t, y, &ch, 0)) != OK)
        return rc;
    int changed = *impacts;             /* the phase set against the records' */
    for (int i = 0; i < nc; i++) {
        const double *R = rec + nr * i;
        changed |= (R[4] != 0.0) != ev->active[i] || (R[5] != 0.0) != ev->stick[i] ||
                   R[6] != ev->s0[2 * i] || R[7] != ev->s0[2 * i + 1];
    }
    if (!changed)
        return ev_fr_arm(ev, t, y);
    if (project) {
        double T0 = evk_kinetic(ev, y);
        ev_select(ev, ev->active);
        if ((rc = evk_project(ev, t, y)) != OK)
            return rc;
        if (*impacts)
            ev->rec[nr * hit + 3] += fmax(T0 - evk_kinetic(ev, y), 0.0);
    }
    for (int i = 0; i < nc; i++) {
        double *R = ev->rec + nr * i;
        R[4] = ev->active[i] ? 1.0 : 0.0;
        R[5] = ev->stick[i] ? 1.0 : 0.0;
        R[6] = ev->s0[2 * i];
        R[7] = ev->s0[2 * i + 1];
    }
    if ((rc = ev_fr_arm(ev, t, y)) != OK)
        return rc;
    memcpy(rec, ev->rec, sizeof(double) * nr * nc);
    *changes = *impacts ? (int)ch : (int)ch + 1;
    return OK;
}

/* ev_outputs with friction: also per contact the friction force ft (2: -lam_t sticking,
 * mu lam_c s slipping, 0 otherwise) and the slip velocities vt (2), the phase of the records
 * rec (nc, EV_REC_FR) (fmu_mb.dynamics.outputs) */
static int ev_outputs_fr(EvLoop *ev, double t, const double *y, const double *u,
                         const double *rec, double *gap, double *force, double *ft,
                         double *vt)
{
    int nc = ev->nc, rc;
    ev->u = u;
    ev->jphase = 1;
    for (int j = 0; j < ev->nj; j++) {
        const double *J = ev_jrec(ev, (double *)rec, j);
        ev->jstk[j] = J[0] != 0.0;
        ev->js0[j] = J[1] < 0.0 ? -1.0 : 1.0;
    }
    if ((rc = evk_gaps(ev, y, gap)) != OK)
        return rc;
    for (int i = 0; i < nc; i++) {
        const double *R = rec + ev->nrec * i;
        ev->trial[i] = R[4] != 0.0;
        ev->stick[i] = R[5] != 0.0;
        ev->s0[2 * i] = R[6];
        ev->s0[2 * i + 1] = R[7];
        force[i] = ft[2 * i] = ft[2 * i + 1] = 0.0;
    }
    ev_select(ev, ev->trial);
    if ((rc = evk_fric(ev, t, y, ev->lamc, ev->lamt, vt)) != OK)
        return rc;
    for (int i = 0; i < nc; i++) {
        if (!ev->trial[i])
            continue;
        force[i] = -ev->lamc[i];
        if (!(ev->mu[i] > 0.0))
            continue;
        if (ev->stick[i]) {
            ft[2 * i] = -ev->lamt[2 * i];
            ft[2 * i + 1] = -ev->lamt[2 * i + 1];
        } else {
            double sd[2];
            fr_slip_direction(2, vt + 2 * i, ev->s0 + 2 * i, sd);
            ft[2 * i] = ev->mu[i] * ev->lamc[i] * sd[0];
            ft[2 * i + 1] = ev->mu[i] * ev->lamc[i] * sd[1];
        }
    }
    return OK;
}

/* ev_outputs_fr at (t, y) for the records rec, then the frictional joints' outputs jout:
 * per joint the friction torque or force on its coordinate (-lam_j sticking, -F_c s0
 * slipping, 0 held by a persistent limit), its state (1 stick, 2 slip, 0 held) and the
 * energy its friction dissipated [J] (3 per joint); ERR_ARGS without frictional joints */
static int ev_joint_outputs(EvLoop *ev, double t, const double *y, const double *u,
                            const double *rec, double *gap, double *force, double *ft,
                            double *vt, double *out)
{
    if (!ev->nj)
        return ERR_ARGS;
    int rc = ev_outputs_fr(ev, t, y, u, rec, gap, force, ft, vt);
    if (rc != OK)
        return rc;
    for (int j = 0; j < ev->nj; j++) {
        const double *J = ev_jrec(ev, (double *)rec, j);
        double *o = out + 3 * j;
        if (ev->jheld[j]) {
            o[0] = 0.0;
            o[1] = 0.0;
        } else if (ev->jstk[j]) {
            o[0] = -ev->jlam[j];
            o[1] = 1.0;
        } else {
            o[0] = -ev->jb[j] * ev->js0[j];
            o[1] = 2.0;
        }
        o[2] = J[2];
    }
    return OK;
}

/* The rule at the start of a simulation (integrate._initial_impact): a frictionless contact
 * closed there (gap <= ctol) at rest (|gap rate| < cvel) starts persistent, as a frictional
 * one does (ev_initial), and is released at once when its force would pull; a contact closed
 * and approaching that is not persistent has its impact at t, as the event iteration of a
 * model exchange host finds it (ev_event_update, with the phase kernel's drift control stab,
 * alpha, beta, ptol as ev_advance configures it); otherwise the gap's sign at t would be
 * rounding (an impact at t, or after a penetration of ctol). y's velocities and rec are
 * updated; *impacts counts the impact (0 or 1). */
static int ev_initial_impact(EvLoop *ev, double t, double *y, const double *u, double *rec,
                             double ctol, double cvel, int stab, double alpha, double beta,
                             double ptol, int *impacts)
{
    int released = 0, n = ev->n, rc;
    *impacts = 0;
    if (ev->nc == 0)
        return OK;
    evk_configure(ev, stab, alpha, beta, ptol);
    ev->mode = stab;
    ev->alpha = alpha;
    ev->beta = beta;
    ev->u = u;
    if ((rc = evk_contact_rates(ev, t, y, y + n, ev->gap, ev->vminus)) != OK)
        return rc;
    for (int i = 0; i < ev->nc; i++)    /* the frictional ones: ev_initial */
        if (!(ev->fr && ev->mu[i] > 0.0) && ev->gap[i] <= ctol &&
            fabs(ev->vminus[i]) < cvel)
            rec[ev->nrec * i + 4] = 1.0;
    ev->jphase = 1;     /* the frictional joints' phase from the records, and back */
    for (int j = 0; j < ev->nj; j++) {
        const double *J = ev_jrec(ev, rec, j);
        ev->jstk[j] = J[0] != 0.0;
        ev->js0[j] = J[1] < 0.0 ? -1.0 : 1.0;
    }
    if ((rc = ev_event_update(ev, t, y, u, rec, ctol, cvel, stab == 1, impacts,
                              &released)) != OK)
        return rc;
    for (int j = 0; j < ev->nj; j++) {
        double *J = ev_jrec(ev, rec, j);
        J[0] = ev->jstk[j] ? 1.0 : 0.0;
        J[1] = ev->js0[j];
    }
    return OK;
}

/* the records of the frictional contacts closed at the start (integrate._initial_contacts):
 * gap <= contact_tol and |gap rate| < contact_velocity: persistent, sticking when the slip
 * speed is below contact_velocity, else slipping along it; then the phase start's rules */
static int ev_initial(EvLoop *ev, double t, const double *y, const double *u, double *rec,
                      double contact_tol, double contact_velocity)
{
    int n = ev->n, nc = ev->nc, rc;
    long changes = 0;
    ev->u = u;
    if ((rc = evk_contact_rates(ev, t, y, y + n, ev->gap, ev->vminus)) != OK)
        return rc;
    evk_slip_rates(ev, y + n, ev->vt);
    ev->jphase = 1;
    for (int j = 0; j < ev->nj; j++) {  /* sticking below contact_velocity, else slipping */
        double v = y[n + ev->jc[j]];
        ev->jstk[j] = fabs(v) < contact_velocity;
        if (!ev->jstk[j])
            ev->js0[j] = v > 0.0 ? 1.0 : -1.0;
    }
    for (int i = 0; i < nc; i++) {
        double *R = rec + ev->nrec * i;
        ev->active[i] = R[4] != 0.0;
        ev->stick[i] = R[5] != 0.0;
        ev->s0[2 * i] = R[6];
        ev->s0[2 * i + 1] = R[7];
        if (!(ev->mu[i] > 0.0 && ev->gap[i] <= contact_tol &&
              fabs(ev->vminus[i]) < contact_velocity))
            continue;
        double nv = ev_norm2(ev->vt + 2 * i);
        ev->active[i] = 1;
        ev->stick[i] = nv < contact_velocity;
        if (!ev->stick[i]) {
            ev->s0[2 * i] = ev->vt[2 * i] / nv;
            ev->s0[2 * i + 1] = ev->vt[2 * i + 1] / nv;
        }
    }
    if ((rc = ev_fr_consistent(ev, t, y, &changes, 0)) != OK)
        return rc;
    for (int i = 0; i < nc; i++) {
        double *R = rec + ev->nrec * i;
        R[4] = ev->active[i] ? 1.0 : 0.0;
        R[5] = ev->stick[i] ? 1.0 : 0.0;
        R[6] = ev->s0[2 * i];
        R[7] = ev->s0[2 * i + 1];
    }
    for (int j = 0; j < ev->nj; j++) {
        double *J = ev_jrec(ev, rec, j);
        J[0] = ev->jstk[j] ? 1.0 : 0.0;
        J[1] = ev->js0[j];
    }
    return OK;
}

#endif
