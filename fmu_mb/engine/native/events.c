/*
 * fmu_mb native kernel, contact events (planar, formulation recursive): the event loop of
 * fmu_mb.dynamics.integrate._advance_contacts in C, so that a contact model integrates a
 * whole communication interval in one call with no Python in it.
 *
 * Included at the end of kernel.c (one library; it uses the kernel's static functions). The
 * loop itself is native/event_loop.h, shared with the spatial kernel (spatial_events.c); this
 * file supplies the planar kernel's operations (gaps, multipliers, steps, projection, the
 * impact rows and W = Mbar^-1 A' solves, kinetic energy). API:
 *
 *   MbkEvents *mbk_events_create(Kernel *base, int nc, const int *ci, const double *cd,
 *                                const double *e, int ni);
 *       The event loop of the kernel `base` (its tree, elements, gains, drives and its m_loop
 *       = base->m loop rows) with nc contacts: ci (nc, RI) and cd (nc, RD) the contacts' gap
 *       rows in the format of the loop rows (kernel.contact_rows: gap = sign (value -
 *       offset)), e (nc) Newton's restitution coefficients, ni the number of inputs u. The
 *       object copies what it needs
 *       (two private kernels: one with every gap row for the gaps and the impacts, one whose
 *       rows are the phase's active set), so `base` may be freed or changed afterwards.
 *       NULL when memory runs out or the arguments are invalid.
 *   void mbk_events_free(MbkEvents *ev);
 *   int mbk_advance_events(MbkEvents *ev, int method, double *par, double *y,
 *                          const double *u, double *rec);
 *       Integrate y = (q, qd) (2 n) from par[0] to par[1] with inputs u held, locating and
 *       applying every contact event on the way. method 0 dopri5, 1 dop853 (scipy's
 *       coefficients and step-size control, as mbk_step), 2 rk4 (equal steps of at most
 *       par[18], the Python stepper's cubic Hermite as dense output). par (EV_NPAR doubles):
 *         [0] t, [1] t_end, [2] h in: step-size hint (0: choose), out: the next step size,
 *         [3] rtol, [4] atol, [5] max_step, [6] drift control (0 none, 1 projection,
 *         2 baumgarte), [7] alpha, [8] beta [1/s], [9] projection_tol, [10] contact_tol
 *         [m or rad], [11] contact_velocity [m/s or rad/s], [12] event_tol [s],
 *         [13] max_steps (0: no limit), [18] rk4's step [s]; out: [14] time of a failure,
 *         [15] steps taken, [16] events handled plus contacts released at the start of a
 *         phase (0: rec unchanged), [17] contact index a failure refers to (-1: none).
 *       rec (nc, EV_REC) in/out, per contact: impacts, time of the last impact, impulse
 *       magnitude of the last impact [N.s or N.m.s], kinetic energy lost in its impacts [J],
 *       active (1: persistent contact). Returns OK, or an error code of kernel.c
 *       (ERR_NONFINITE, ERR_SINGULAR, ERR_STEP, ERR_ELEMENT, ERR_DRIFT, INTEG_ERR_BUDGET) or
 *       of this file (ERR_EVENT: a sign change could not be bracketed, ERR_ZENO: endless
 *       switching, ERR_IMPACT: no admissible impact solution); on an error y and rec are
 *       unchanged. Everything it needs lives in `ev` (no global mutable state; one call at
 *       a time per object).
 *
 * What it does, as the Python loop (same order of operations, so that event times, impulses
 * and velocities agree to rounding):
 *  - phases between events: persistent contacts whose force would be tensile are released
 *    first (most tensile first); the active contacts' gap rows are closed as loop rows
 *    (their multiplier lam_c gives the contact force -lam_c); one adaptive step at a time
 *    (mbk_step), drift control by projection after each step;
 *  - after each step the event functions (gap of each inactive contact, force -lam_c of each
 *    active one) are sampled at four points of the step on the integrator's dense output
 *    (scipy's RK45 quartic and DOP853 degree-7 interpolants, built here from the stages;
 *    DOP853's three extra stages evaluated here) and a sign change is located by Brent's
 *    method (as scipy.optimize.brentq) to |dt| <= event_tol + 4 eps |t|; a gap that starts
 *    at ~0 (<= 1e-3 contact_tol) just after an impact is searched from its flight phase (or
 *    below -contact_tol);
 *  - an impact: every contact with gap <= contact_tol is closed; the velocities after the
 *    impact solve seed 000's impact equations in joint coordinates (ch.3 eq. 15) with
 *    Newton's restitution law, [Mbar A'; A 0][qd+; r] = [Mbar qd-; b] for the loop rows
 *    (b = 0) and the contacts of an active set (b = -e Dq_c qd-), as the Schur complement
 *    S r = A qd- - b with W = Mbar^-1 A' from the articulated-body algorithm (one bias-free
 *    pass per row: no Mbar is formed), qd+ = qd- - W r; the active set is that of
 *    fmu_mb.dynamics.impact.solve_impact (simultaneous impacts: release the most pulling
 *    contact, add the most penetrating one); a contact whose rebound is below
 *    contact_velocity becomes persistent;
 *  - Zeno guard: more than 100 events per contact each within 10 ns of the last, or within a
 *    window of 10 us (a chatter crawling on): ERR_ZENO.
 *
 *   int mbk_advance_events_to_impact(MbkEvents *ev, int method, double *par, double *y,
 *                                    const double *u, double *rec, int *impact);
 *       The same, returning after the first impact (FMI 3.0's early return, engine.c's
 *       mbe_do_step_to_event): *impact = 1 and par[0] = its time, y and rec just after it.
 *   int mbk_events_accelerations(MbkEvents *ev, double t, const double *q, const double *qd,
 *                                const double *u, const double *rec, double *qdd, double *x,
 *                                double *xd, double *xdd);
 *       mbk_accelerations with the rows of rec's persistent contacts closed (the motion
 *       whose Newton-Euler multipliers give engine.c's reactions during a contact).
 *
 *   int mbk_events_outputs(MbkEvents *ev, double t, const double *y, const double *u,
 *                          const double *rec, double *gap, double *force);
 *       The contact outputs at a state: gap (nc) and the persistent contacts' forces (nc,
 *       pushing positive, 0 when not active); with rec's records (impacts, last_time,
 *       last_impulse, energy_loss, active) they serve every contact output of
 *       fmu_mb.dynamics.outputs. ERR_GAP: a point-point gap undefined at y (zero distance).
 *   int mbk_events_set_friction(MbkEvents *ev, const double *mu);
 *       Coulomb friction mu (nc) at point-line contacts and shape pairs (once, after mbk_events_create): the
 *       records become EV_REC_FR doubles per contact, the phases get sticking rows and
 *       sliding forces (kernel.c: R_TAN rows, slide_solve); mbk_events_initial,
 *       mbk_events_outputs_fr (friction force, slip velocity) and mbk_events_error_contact
 *       (the contact of an ERR_FRICTION) serve it.
 *   int mbk_events_set_points(MbkEvents *ev, const int *pt);
 *       With friction (after mbk_events_set_friction): pt (nc) 1 at the point-line contacts
 *       (R_PRJ rows with a contact point; 0 at joint limits and the others), whose slip
 *       velocity mbk_events_outputs_fr reports frictionless too, as the Python outputs do.
 *   int mbk_events_set_joint_friction(MbkEvents *ev, int nj, const int *ji,
 *                                     const double *bound, const int *jlim);
 *       Coulomb friction at nj tree joints (once, after mbk_events_set_friction): the
 *       records gain 3 doubles per joint after the contacts' (stick, s0, loss), the phases
 *       the sticking joints' R_JRATE rows and the slipping ones' forces; nc may be 0 (a model
 *       whose only events are its joints'); mbk_events_joint_outputs gives their outputs.
 * The Reduction Method (seed 002) stays in Python (fmu_mb.dynamics.integrate).
 */
#include "friction.h"                          /* the friction law (event_loop.h calls it) */
#include "event_loop.h"

typedef EvLoop MbkEvents;

struct EvKernel {
    Kernel *kall;          /* loop rows + every contact's gap row (gaps, impact rows, energy) */
    Kernel *kph;           /* the same rows; the first m_loop + (selected contacts) in use */
    int m_loop;
    int *ri;               /* (m_loop + nc, RI) rows: loops, then the contacts */
    double *rd;            /* (m_loop + nc, RD) */
    /* friction (mbk_events_set_friction): the phase's sticking and sliding contacts and
     * their recorded slip directions (evk_friction, used at the next evk_select), and every
     * contact's slip-velocity row (nc, n) at the q of the last evk_contact_rates */
    unsigned char *stk, *sld;
    double *s0, *Dt;
    unsigned char *pt;     /* the point-line contacts (mbk_events_set_points), or NULL */
    int *jpc;              /* (nj, 2) the frictional joints' parent and child bodies */
};

void mbk_events_free(MbkEvents *ev)
{
    if (!ev)
        return;
    if (ev->k) {
        mbk_free(ev->k->kall);
        mbk_free(ev->k->kph);
        free(ev->k->ri);
        free(ev->k->rd);
        free(ev->k->stk);
        free(ev->k->sld);
        free(ev->k->s0);
        free(ev->k->Dt);
        free(ev->k->pt);
        free(ev->k->jpc);
        free(ev->k);
    }
    ev_release(ev);
    free(ev);
}

/* a copy of the kernel b (tree, elements, gains, drives) with the rows (m, ri, rd) */
static Kernel *ev_clone(const Kernel *b, int m, const int *ri, const double *rd)
{
    Kernel *k = mbk_create(b->nb, b->n, b->ji, b->jd, b->ne, b->ei, b->ed, b->mass,
                           b->inertia, b->gx, b->gy);
    if (!k)
        return NULL;
    k->syev = b->syev;               /* the same rank-revealing solve as the base kernel */
    if (m > 0 && mbk_set_rows(k, m, ri, rd) != OK)
        goto fail;
    if (b->nd > 0) {
        int ndp = 0;
        for (int d = 0; d < b->nd; d++) {
            const int *D = b->di + DI * d;
            if (D[2] + D[3] > ndp)
                ndp = D[2] + D[3];
        }
        if (mbk_set_drives(k, b->nd, b->di, ndp, b->dp) != OK)
            goto fail;
    }
    if (b->G && b->ng > 0 && mbk_set_gains(k, b->ng, b->ni, b->G) != OK)
        goto fail;
    if (b->npair > 0 && mbk_set_pairs(k, b->npair, b->pair) != OK)
        goto fail;
    return k;
fail:
    mbk_free(k);
    return NULL;
}

MbkEvents *mbk_events_create(Kernel *base, int nc, const int *ci, const double *cd,
                             const double *e, int ni)
{
    if (!base || nc < 0 || (nc > 0 && (!ci || !cd || !e)) || ni < 0)
        return NULL;
    MbkEvents *ev = calloc(1, sizeof *ev);
    if (!ev)
        return NULL;
    EvKernel *K = ev->k = calloc(1, sizeof *K);
    if (!K || ev_init(ev, base->n, nc, e, ni) != OK)
        goto fail;
    int ml = base->m, mt = ml + nc;
    size_t c = (size_t)nc;
    K->m_loop = ml;
    K->ri = malloc(sizeof(int) * RI * (size_t)(mt + 1));
    K->rd = malloc(sizeof(double) * RD * (size_t)(mt + 1));
    if (!K->ri || !K->rd)
        goto fail;
    if (ml > 0) {
        memcpy(K->ri, base->ri, sizeof(int) * RI * (size_t)ml);
        memcpy(K->rd, base->rd, sizeof(double) * RD * (size_t)ml);
    }
    if (nc > 0) {
        memcpy(K->ri + RI * ml, ci, sizeof(int) * RI * c);
        memcpy(K->rd + RD * ml, cd, sizeof(double) * RD * c);
    }
    for (int r = 0; r < mt; r++) {
        const int *R = K->ri + RI * r;
        if (R[0] == R_PAIR) {
            int i = (int)K->rd[RD * r];
            if (i < 0 || i >= base->npair)
                goto fail;
        } else if (R[0] < R_PX || R[0] > R_DST)
            goto fail;
        if (R[1] < 0 || R[1] > base->nb || R[2] < 0 ||
            R[2] > base->nb)
            goto fail;
    }
    K->kall = ev_clone(base, mt, K->ri, K->rd);
    K->kph = ev_clone(base, mt, K->ri, K->rd);
    if (!K->kall || !K->kph)
        goto fail;
    K->kph->msplit = ml;
    for (int i = 0; i < nc; i++)
        ev->sel[i] = 1;
    return ev;
fail:
    mbk_events_free(ev);
    return NULL;
}

/* Coulomb friction at the contacts: mu (nc) >= 0, nonzero only at point-line contacts
 * (R_PRJ rows between two bodies' points) and shape pairs (R_PAIR rows: their sticking rows
 * are R_PTAN; fmu_mb.engine.kernel.ContactEvents passes 0 for joint limits and distance
 * limits). With some mu > 0 the records have EV_REC_FR doubles per
 * contact (stick, s0 along the tangent t = e_z x n and 0, slide loss) and the phases have
 * sticking rows (v_t = 0) and sliding forces mu f_n opposite the slip. OK or ERR_ARGS. */
/* kph's rows with room for every contact's gap and tangent rows and the nj frictional
 * joints' rate rows (jc their tree coordinates), the friction buffers allocated: OK or
 * ERR_ARGS */
static int ev_fr_rows(MbkEvents *ev, int nj, const int *ji)
{
    EvKernel *K = ev->k;
    int nc = ev->nc, ml = K->m_loop;
    size_t c = (size_t)(nc > 0 ? nc : 1), nn = (size_t)(ev->n > 0 ? ev->n : 1);
    int mt = ml + 2 * nc + nj;
    int *ri = calloc((size_t)RI * (size_t)(mt + 1), sizeof(int));
    double *rd = calloc((size_t)RD * (size_t)(mt + 1), sizeof(double));
    Kernel *kp = K->kph;
    if (!K->stk) {
        K->stk = calloc(c, 1);
        K->sld = calloc(c, 1);
        K->s0 = calloc(2 * c, sizeof(double));
        K->Dt = calloc(c * nn, sizeof(double));
        free(kp->slr); free(kp->slmu); free(kp->sls0);
        kp->slr = calloc(c, sizeof(int));
        kp->slmu = calloc(c, sizeof(double));
        kp->sls0 = calloc(c, sizeof(double));
    }
    int rc = ERR_ARGS;
    if (ri && rd && K->stk && K->sld && K->s0 && K->Dt && kp->slr && kp->slmu && kp->sls0) {
        memcpy(ri, K->ri, sizeof(int) * RI * (size_t)(ml + nc));
        memcpy(rd, K->rd, sizeof(double) * RD * (size_t)(ml + nc));
        for (int i = 0; i < nc; i++) {
            memcpy(ri + RI * (ml + nc + i), K->ri + RI * (ml + i), sizeof(int) * RI);
            ri[RI * (ml + nc + i)] = K->ri[RI * (ml + i)] == R_PAIR ? R_PTAN : R_TAN;
            memcpy(rd + RD * (ml + nc + i), K->rd + RD * (ml + i), sizeof(double) * RD);
        }
        for (int j = 0; j < nj; j++) {
            int *R = ri + RI * (ml + 2 * nc + j);
            R[0] = R_JRATE;
            R[1] = ji[3 * j + 1];
            R[2] = ji[3 * j + 2];
            rd[RD * (ml + 2 * nc + j)] = ji[3 * j];
        }
        rc = mbk_set_rows(kp, mt, ri, rd);
    }
    free(ri);
    free(rd);
    if (rc != OK)
        return rc;
    kp->slcap = nc;
    kp->nsl = 0;
    return OK;
}

int mbk_events_set_friction(MbkEvents *ev, const double *mu)
{
    if (!ev || !mu || ev->fr)          /* (once per event loop, before the joints') */
        return ERR_ARGS;
    EvKernel *K = ev->k;
    int nc = ev->nc, ml = K->m_loop, fr = 0, rc;
    for (int i = 0; i < nc; i++) {
        if (!(mu[i] >= 0.0) || !isfinite(mu[i]))
            return ERR_ARGS;
        if (mu[i] > 0.0 && K->ri[RI * (ml + i)] != R_PRJ && K->ri[RI * (ml + i)] != R_PAIR)
            return ERR_ARGS;
        fr |= mu[i] > 0.0;
    }
    if (!fr)
        return OK;
    if ((rc = ev_fr_rows(ev, 0, NULL)) != OK)
        return rc;
    memcpy(ev->mu, mu, sizeof(double) * (size_t)nc);
    ev->fr = 1;
    ev->nrec = EV_REC_FR;
    evk_select(ev, ev->sel);
    return OK;
}

int mbk_events_set_points(MbkEvents *ev, const int *pt)
{
    if (!ev || !pt || !ev->fr || ev->k->pt)      /* (once, after mbk_events_set_friction) */
        return ERR_ARGS;
    EvKernel *K = ev->k;
    for (int i = 0; i < ev->nc; i++)
        if ((pt[i] != 0 && pt[i] != 1) || (pt[i] && K->ri[RI * (K->m_loop + i)] != R_PRJ))
            return ERR_ARGS;
    K->pt = malloc((size_t)(ev->nc > 0 ? ev->nc : 1));
    if (!K->pt)
        return ERR_ARGS;
    for (int i = 0; i < ev->nc; i++)
        K->pt[i] = (unsigned char)pt[i];
    return OK;
}

/* Coulomb friction at nj joints (once, after mbk_events_set_friction when the contacts have
 * friction): ji (nj, 3) their tree coordinates and parent and child bodies (nb: ground),
 * bound (nj) > 0 [N.m or N], jlim (nc) the index
 * of the frictional joint each contact limits (a joint limit), else -1. The records grow
 * to EV_REC_FR doubles per contact and 3 per joint after them (stick, s0 +-1, loss [J]);
 * the phases get the sticking joints' rate rows (R_JRATE) and the slipping ones' forces
 * -F_c s0 (event_loop.h ev_joints). OK or ERR_ARGS. */
int mbk_events_set_joint_friction(MbkEvents *ev, int nj, const int *ji, const double *bound,
                                  const int *jlim)
{
    if (!ev || nj < 1 || !ji || ev->nj)
        return ERR_ARGS;
    Kernel *kp = ev->k->kph;
    for (int j = 0; j < nj; j++)
        if (ji[3 * j] < 0 || ji[3 * j] >= ev->n || ji[3 * j + 1] < 0 ||
            ji[3 * j + 1] > kp->nb || ji[3 * j + 2] < 0 || ji[3 * j + 2] > kp->nb)
            return ERR_ARGS;
    int *jc = malloc(sizeof(int) * (size_t)nj), *jpc = malloc(sizeof(int) * 2 * (size_t)nj);
    double *zero = calloc((size_t)(ev->n > 0 ? ev->n : 1), sizeof(double));
    int rc = zero && jc && jpc ? mbk_set_joint_torques(kp, zero) : ERR_ARGS;
    free(zero);
    if (rc == OK) {
        for (int j = 0; j < nj; j++) {
            jc[j] = ji[3 * j];
            jpc[2 * j] = ji[3 * j + 1];
            jpc[2 * j + 1] = ji[3 * j + 2];
        }
        free(ev->k->jpc);
        ev->k->jpc = jpc;
        jpc = NULL;
        if ((rc = ev_fr_rows(ev, nj, ji)) == OK)
            rc = ev_joints(ev, nj, jc, bound, jlim);
    }
    free(jc);
    free(jpc);
    if (rc != OK)
        return rc;
    ev_select(ev, ev->sel);
    return OK;
}

/* the frictional joints' outputs (event_loop.h ev_joint_outputs: friction torque or force,
 * state 1 stick 2 slip 0 held, dissipated energy; 3 per joint) at (t, y) for the records
 * rec, with the contacts' outputs of mbk_events_outputs_fr */
int mbk_events_joint_outputs(MbkEvents *ev, double t, const double *y, const double *u,
                             const double *rec, double *gap, double *force, double *ft,
                             double *vt, double *jout)
{
    return ev_joint_outputs(ev, t, y, u, rec, gap, force, ft, vt, jout);
}

/* ------------------------------------------------------------------ the planar operations */
/* kph's rows: the loop rows, then the gap rows of the contacts with mask[i] set, in order,
 * then (friction) the tangent rows of the selected sticking contacts; the selected sliding
 * contacts' gap rows carry their sliding force (kph's nsl, slr, slmu, sls0) */
static void evk_select(EvLoop *ev, const unsigned char *mask)
{
    EvKernel *K = ev->k;
    Kernel *k = K->kph;
    int r = K->m_loop;
    int changed = 0;
    k->nsl = 0;
    for (int i = 0; i < ev->nc; i++) {
        if (!mask[i])
            continue;
        if (r >= k->m || memcmp(k->ri + RI * r, K->ri + RI * (K->m_loop + i), sizeof(int) * RI))
            changed = 1;
        memcpy(k->ri + RI * r, K->ri + RI * (K->m_loop + i), sizeof(int) * RI);
        memcpy(k->rd + RD * r, K->rd + RD * (K->m_loop + i), sizeof(double) * RD);
        if (ev->fr && K->sld[i] && !K->stk[i]) {
            k->slr[k->nsl] = r;
            k->slmu[k->nsl] = ev->mu[i];
            k->sls0[k->nsl] = K->s0[2 * i];
            k->nsl++;
        }
        r++;
    }
    for (int i = 0; ev->fr && i < ev->nc; i++) {
        if (!mask[i] || !K->stk[i])
            continue;
        int old[RI], had = r < k->m;
        if (had)
            memcpy(old, k->ri + RI * r, sizeof old);
        memcpy(k->ri + RI * r, K->ri + RI * (K->m_loop + i), sizeof(int) * RI);
        k->ri[RI * r] = K->ri[RI * (K->m_loop + i)] == R_PAIR ? R_PTAN : R_TAN;
        memcpy(k->rd + RD * r, K->rd + RD * (K->m_loop + i), sizeof(double) * RD);
        if (!had || memcmp(old, k->ri + RI * r, sizeof old))
            changed = 1;
        r++;
    }
    /* the joints (ev->jphase): a sticking one's rate row, a slipping one's force -F_c s0 on
     * its coordinate, a joint at rest of ev_joint_rest its trial force jf */
    for (int j = 0; j < ev->nj; j++) {
        int ic = ev->jc[j];
        k->jtau[ic] = 0.0;
        if (!ev->jphase || ev->jheld[j])
            continue;
        if (ev->jrest[j]) {
            k->jtau[ic] += ev->jf[j];
        } else if (!ev->jstk[j]) {
            k->jtau[ic] -= ev->jb[j] * ev->js0[j];
        } else {
            int *R = k->ri + RI * r;
            if (r >= k->m || R[0] != R_JRATE || (int)k->rd[RD * r] != ic)
                changed = 1;
            R[0] = R_JRATE;
            R[1] = K->jpc[2 * j];
            R[2] = K->jpc[2 * j + 1];
            memset(k->rd + RD * r, 0, sizeof(double) * RD);
            k->rd[RD * r] = ic;
            r++;
        }
    }
    if (changed || r != k->m)
        k->rows_dirty = 1;          /* the rows' structure is rebuilt by the next rows() */
    k->m = r;
}

static void evk_configure(EvLoop *ev, int stab, double alpha, double beta, double ptol)
{
    Kernel *kp = ev->k->kph;
    kp->mode = stab;
    kp->alpha = alpha;
    kp->beta = beta;
    kp->proj_tol = ptol;
}

/* the gaps of every contact into g from the body positions kx->x: the values phi of kall's
 * contact rows, computed as rows() computes them (the same expressions) without their
 * Jacobians */
static int ev_gaps_x(EvLoop *ev, const Kernel *kx, double *g)
{
    Kernel *k = ev->k->kall;
    int ml = ev->k->m_loop;
    for (int i = 0; i < ev->nc; i++) {
        int r = ml + i;
        const int *R = k->ri + RI * r;
        const double *P = k->rd + RD * r;
        int kind = R[0], p = R[1], c = R[2];
        double Qp[2], Qc[2], ep[2], ec[2], val;
        body_point(kx, p, P, Qp, ep);
        body_point(kx, c, P + 2, Qc, ec);
        double d[2] = {Qc[0] - Qp[0], Qc[1] - Qp[1]};
        if (kind == R_PAIR) {
            mbpp_rows_t o;
            if (pair_eval(kx, (int)P[0], p, c, 0, &o) != OK)
                return ERR_GAP;
            val = o.gap;
        } else if (kind == R_PX || kind == R_PY) {
            val = d[kind == R_PY];
        } else if (kind == R_ANG) {
            val = kx->x[3 * c + 2] - kx->x[3 * p + 2];
        } else if (kind == R_PRJ) {
            double cs = kx->cs[2 * p], sn = kx->cs[2 * p + 1];
            double w[2] = {cs * P[4] - sn * P[5], sn * P[4] + cs * P[5]};
            val = d[0] * w[0] + d[1] * w[1];
        } else {
            double l = sqrt(d[0] * d[0] + d[1] * d[1]);
            if (!(l > 0.0))
                return ERR_GAP;
            val = l;
        }
        g[i] = P[7] * (val - P[6]);
    }
    return OK;
}

/* the gaps of every contact at q into g (ERR_GAP: a point-point gap undefined at q) */
static int evk_gaps(EvLoop *ev, const double *q, double *g)
{
    Kernel *k = ev->k->kall;
    double *zero = k->qtmp;
    for (int j = 0; j < k->n; j++)
        zero[j] = 0.0;
    kinematics(k, q, zero);
    return ev_gaps_x(ev, k, g);
}

/* the gaps at the configuration of the last evk_lam: the body positions of kph's
 * kinematics there (positions do not depend on the rates: the same numbers as evk_gaps at
 * that q, without a second pass of forward kinematics); EV_NA when kph's accelerations
 * move q first (prescribed drives) */
static int evk_gaps_lam(EvLoop *ev, double *g)
{
    if (ev->k->kph->nd > 0)
        return EV_NA;
    return ev_gaps_x(ev, ev->k->kph, g);
}

/* the contact multipliers lam_c (of the contacts selected in kph; the force is -lam_c) at
 * (t, y), without Baumgarte terms (as the Python loop's accelerations) */
static int evk_lam(EvLoop *ev, double t, const double *y, double *lamc)
{
    Kernel *k = ev->k->kph;
    int mode = k->mode, n = k->n;
    k->mode = 0;
    int rc = accel(k, t, y, y + n, ev->u, ev->qdp);
    k->mode = mode;
    if (rc != OK)
        return rc;
    int r = ev->k->m_loop;
    for (int i = 0; i < ev->nc; i++)
        if (ev->sel[i])
            lamc[i] = k->lam[r++];
    return OK;
}

/* the multipliers of the selected contacts from the last solve of kph */
static int evk_phase_lam(EvLoop *ev, double *lam)
{
    for (int i = 0, r = ev->k->m_loop; i < ev->nc; i++)
        if (ev->sel[i])
            lam[i] = ev->k->kph->lam[r++];
    return 1;
}

/* the event values at the new state of the last mbk_step from its last stage's solve there
 * (K[s] = f(t_new, y_new): kph's kinematics and multipliers at y_new; without prescribed
 * drives, which move q first, and without Baumgarte terms, which the values do not have) */
static int evk_step_values(EvLoop *ev, double *v)
{
    Kernel *k = ev->k->kph;
    if (k->nd > 0 || k->mode == 2 || memcmp(ev->sel, ev->active, (size_t)ev->nc) != 0 ||
        ev_gaps_x(ev, k, v) != OK)
        return 0;
    for (int i = 0, r = ev->k->m_loop; i < ev->nc; i++)
        if (ev->sel[i]) {
            double lam = k->lam[r++];
            if (ev->active[i])
                v[i] = -lam;
        }
    return 1;
}

/* kinetic energy 1/2 xd' M xd [J] at (q, qd) */
static double evk_kinetic(EvLoop *ev, const double *y)
{
    Kernel *k = ev->k->kall;
    kinematics(k, y, y + k->n);
    double T = 0.0;
    for (int b = 0; b < k->nb; b++) {
        const double *v = k->xd + 3 * b;
        T += k->mass[b] * v[0] * v[0];
        T += k->mass[b] * v[1] * v[1];
        T += k->inertia[b] * v[2] * v[2];
    }
    return 0.5 * T;
}

/* the right-hand side of the Python stepper's extra stages: (qd, qdd) with qd as given */
static int evk_rhs(EvLoop *ev, double t, const double *y, double *dy)
{
    Kernel *k = ev->k->kph;
    int n = k->n;
    memcpy(dy, y + n, sizeof(double) * n);
    int rc = accel(k, t, y, y + n, ev->u, dy + n);
    if (rc != OK)
        return rc;
    for (int i = 0; i < 2 * n; i++)
        if (!isfinite(dy[i]))
            return ERR_NONFINITE;
    return OK;
}

static int evk_step(EvLoop *ev, int method, double *par, double *y, int have_f, double *K)
{
    int nfev;
    return mbk_step(ev->k->kph, method, par, y, ev->u, have_f, K, &nfev);
}

static int evk_project(EvLoop *ev, double t, double *y) { return project(ev->k->kph, t, y); }
static int evk_project_steps(EvLoop *ev) { return ev->k->kph->m > 0; }
static int evk_reuse_f(EvLoop *ev) { return ev->k->kph->nd == 0; }

/* gaps and gap rates of every contact at (q, qd), kall's rows kept for evk_rates */
static int evk_contact_rates(EvLoop *ev, double t, const double *q, const double *qd,
                             double *gap, double *v)
{
    (void)t;
    Kernel *ka = ev->k->kall;
    int n = ev->n, ml = ev->k->m_loop, rc;
    kinematics(ka, q, qd);
    if ((rc = rows(ka, 0)) != OK)
        return rc == ERR_SINGULAR ? ERR_GAP : rc;
    for (int i = 0; i < ev->nc; i++) {
        const double *Dr = ka->Dq + (size_t)(ml + i) * n;
        double acc = 0.0;
        for (int j = 0; j < n; j++)
            acc += Dr[j] * qd[j];
        v[i] = acc;
        gap[i] = ka->phi[ml + i];
        if (ev->fr) {
            const int *R = ka->ri + RI * (ml + i);
            double *D = ev->k->Dt + (size_t)i * n;
            if (ev->mu[i] > 0.0)
                slip_row(ka, R[0], R[1], R[2], ka->rd + RD * (ml + i), NULL, D, NULL);
            else
                memset(D, 0, sizeof(double) * (size_t)n);
        }
    }
    return OK;
}

static void evk_rates(EvLoop *ev, const double *qd, double *v)
{
    Kernel *ka = ev->k->kall;
    int n = ev->n, ml = ev->k->m_loop;
    for (int i = 0; i < ev->nc; i++) {
        const double *Dr = ka->Dq + (size_t)(ml + i) * n;
        double acc = 0.0;
        for (int j = 0; j < n; j++)
            acc += Dr[j] * qd[j];
        v[i] = acc;
    }
}

/* The rows of the selected contacts at q (kinematics, rows, articulated inertias, S) and the
 * impact solves' right-hand side k->rr = Dq qd minus each trial contact's target velocity
 * (its rows after the ml loop rows) */
static int impact_rhs(Kernel *k, int n, int nc, int ml, const double *q, const double *qd,
                      const unsigned char *trial, const double *target)
{
    int m = k->m, rc;
    kinematics(k, q, qd);
    if ((rc = rows(k, 0)) != OK || (rc = articulate(k)) != OK || (m && (rc = schur(k)) != OK))
        return rc;
    for (int r = 0; r < m; r++) {
        const double *Dr = k->Dq + (size_t)r * n;
        double acc = 0.0;
        for (int j = 0; j < n; j++)
            acc += Dr[j] * qd[j];
        k->rr[r] = acc;
    }
    for (int i = 0, r = ml; i < nc; i++)
        if (trial[i])
            k->rr[r++] -= target[i];
    return OK;
}

/* [Mbar A'; A 0][qd+; r] = [Mbar qd-; b] for the loop rows (b = 0) and the contacts in trial
 * (b = target) by the Schur complement S r = A qd- - b, W = Mbar^-1 A' from the
 * articulated-body algorithm (one bias-free pass per row), qd+ = qd- - W r */
static int evk_impact_solve(EvLoop *ev, const double *q, const double *qd,
                            const unsigned char *trial, const double *target, double *qdp,
                            double *rcon)
{
    int n = ev->n, nc = ev->nc, ml = ev->k->m_loop, rc;
    Kernel *k = ev->k->kph;
    ev_select(ev, trial);
    int m = k->m;
    if ((rc = impact_rhs(k, n, nc, ml, q, qd, trial, target)) != OK)
        return rc;
    if (m && ((rc = psd_solve(k, k->rr, k->lam)) != OK ||
              (rc = split_contacts(k, 1, k->lam)) != OK))
        return rc;
    for (int j = 0; j < n; j++) {
        double acc = 0.0;
        for (int r = 0; r < m; r++)
            acc += k->Wt[(size_t)r * n + j] * k->lam[r];
        qdp[j] = qd[j] - acc;
    }
    for (int i = 0, r = ml; i < nc; i++)
        rcon[i] = trial[i] ? k->lam[r++] : 0.0;
    return OK;
}

/* ------------------------------------------------------------------ friction
 * One tangent per planar contact: the event loop's second tangential component is 0. */
/* the phase kernel's friction flags and recorded slip directions (at its next selection) */
static void evk_friction(EvLoop *ev, const unsigned char *stick, const unsigned char *slide,
                         const double *s0)
{
    EvKernel *K = ev->k;
    size_t c = (size_t)ev->nc;
    memcpy(K->stk, stick, c);
    memcpy(K->sld, slide, c);
    memcpy(K->s0, s0, sizeof(double) * 2 * c);
}

/* every contact's slip velocity v_t (2 per contact: v_t, 0) at the kinematics of k: the
 * frictional contacts', every shape pair's and every point-line contact's
 * (mbk_events_set_points; frictionless ones too, as the Python outputs give them; the events
 * read the frictional ones only), 0 for the others (joint limits, point-point contacts) */
static void ev_slip_now(EvLoop *ev, const Kernel *k, double *vt)
{
    const EvKernel *K = ev->k;
    for (int i = 0; i < ev->nc; i++) {
        const int *R = K->ri + RI * (K->m_loop + i);
        int has = ev->mu[i] > 0.0 || R[0] == R_PAIR || (K->pt && K->pt[i]);
        vt[2 * i] = has ? slip_row(k, R[0], R[1], R[2], K->rd + RD * (K->m_loop + i), NULL,
                                   NULL, NULL) : 0.0;
        vt[2 * i + 1] = 0.0;
    }
}

/* at (t, y) without Baumgarte terms: the selected contacts' normal multipliers lamc, the
 * sticking ones' tangential multipliers lamt (2 per contact, the second 0) and every
 * contact's slip velocities vt (2 per contact, the second 0) */
static int evk_fric(EvLoop *ev, double t, const double *y, double *lamc, double *lamt,
                    double *vt)
{
    Kernel *k = ev->k->kph;
    int mode = k->mode, n = k->n, ml = ev->k->m_loop;
    k->mode = 0;
    int rc = accel(k, t, y, y + n, ev->u, ev->qdp);
    k->mode = mode;
    if (rc != OK)
        return rc;
    int r = ml, rs = ml;
    for (int i = 0; i < ev->nc; i++)
        rs += ev->sel[i] != 0;
    for (int i = 0; i < ev->nc; i++) {
        if (!ev->sel[i])
            continue;
        lamc[i] = k->lam[r++];
        if (ev->k->stk[i]) {
            lamt[2 * i] = k->lam[rs++];
            lamt[2 * i + 1] = 0.0;
        }
    }
    for (int j = 0; j < ev->nj; j++)     /* the sticking joints' rows follow (evk_select) */
        ev->jlam[j] = ev->jphase && !ev->jheld[j] && !ev->jrest[j] && ev->jstk[j]
                      ? k->lam[rs++] : 0.0;
    ev_slip_now(ev, k, vt);
    return OK;
}

/* the frictional joints' accelerations (nj) of the last evk_fric: their tree coordinates' */
static void evk_joint_acc(EvLoop *ev, double *acc)
{
    for (int j = 0; j < ev->nj; j++)
        acc[j] = ev->qdp[ev->jc[j]];
}

/* gap'' of contact i at (t, y) with the selected contacts (i not among them): the body
 * accelerations of the solve in contact i's gap row, Dq_i qdd + conv_i; below 1e-9 of its
 * terms (and 1e-9 m/s^2) it is rounding of 0 and reads 0, as spatial_events.c */
static int evk_gap_acc(EvLoop *ev, int i, double t, const double *y, double *acc_out)
{
    EvKernel *K = ev->k;
    Kernel *k = K->kph, *ka = K->kall;
    int mode = k->mode, n = k->n, ml = K->m_loop;
    k->mode = 0;
    int rc = accel(k, t, y, y + n, ev->u, ev->qdp);
    k->mode = mode;
    if (rc != OK)
        return rc;
    const double *q = y, *qd = y + n;
    if (k->nd)
        prescribe(k, t, &q, &qd);
    kinematics(ka, q, qd);
    body_acc(ka, NULL, ka->a0);
    if ((rc = rows(ka, 1)) != OK)
        return rc == ERR_SINGULAR ? ERR_GAP : rc;
    const double *Dr = ka->Dq + (size_t)(ml + i) * n;
    double acc = ka->conv[ml + i], scale = fabs(acc);
    for (int j = 0; j < n; j++) {
        acc += Dr[j] * ev->qdp[j];
        scale += fabs(Dr[j] * ev->qdp[j]);
    }
    *acc_out = fabs(acc) <= 1e-9 * (1.0 + scale) ? 0.0 : acc;
    return OK;
}

static int evk_fric_last(EvLoop *ev, double *lamc, double *lamt, double *vt, double *g)
{
    (void)ev; (void)lamc; (void)lamt; (void)vt; (void)g;
    return 0;
}

/* every contact's slip velocities (2 each, the second 0) for velocities qd at the q of the
 * last evk_contact_rates */
static void evk_slip_rates(EvLoop *ev, const double *qd, double *vt)
{
    int n = ev->n;
    for (int i = 0; i < ev->nc; i++) {
        double acc = 0.0;
        if (ev->fr) {
            const double *D = ev->k->Dt + (size_t)i * n;
            for (int j = 0; j < n; j++)
                acc += D[j] * qd[j];
        }
        vt[2 * i] = acc;
        vt[2 * i + 1] = 0.0;
    }
}

/* evk_impact_solve with friction: the contacts in trial closed (their rates = target), the
 * sticking ones (stick) with their slip rates 0, the sliding ones (slide) with the impulse
 * mu r_n s along s = dir (2 per contact, the first used); rn the normal impulses, rt the
 * sticking ones' tangential impulses (2 per contact, the second 0) */
static int evk_impact_fr(EvLoop *ev, const double *q, const double *qd,
                         const unsigned char *trial, const unsigned char *stick,
                         const unsigned char *slide, const double *dir,
                         const double *target, double *qdp, double *rn, double *rt)
{
    EvKernel *K = ev->k;
    Kernel *k = K->kph;
    int n = ev->n, nc = ev->nc, ml = K->m_loop, rc;
    evk_friction(ev, stick, slide, dir);
    evk_select(ev, trial);
    memcpy(ev->sel, trial, (size_t)nc);
    int m = k->m;
    if ((rc = impact_rhs(k, n, nc, ml, q, qd, trial, target)) != OK)
        return rc;
    if (m && k->nsl > 0) {
        if ((rc = slide_solve(k, qd, 1, qdp)) != OK)
            return rc;
    } else {
        if (m && ((rc = psd_solve(k, k->rr, k->lam)) != OK ||
                  (rc = split_contacts(k, 1, k->lam)) != OK))
            return rc;
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int r = 0; r < m; r++)
                acc += k->Wt[(size_t)r * n + j] * k->lam[r];
            qdp[j] = qd[j] - acc;
        }
    }
    int r = ml, rs = ml;
    for (int i = 0; i < nc; i++)
        rs += trial[i] != 0;
    for (int i = 0; i < nc; i++) {
        rn[i] = rt[2 * i] = rt[2 * i + 1] = 0.0;
        if (!trial[i])
            continue;
        rn[i] = k->lam[r++];
        if (stick[i])
            rt[2 * i] = k->lam[rs++];
    }
    return OK;
}

/* ------------------------------------------------------------------ the API */
int mbk_advance_events(MbkEvents *ev, int method, double *par, double *y_io, const double *u,
                       double *rec_io)
{
    return ev_advance(ev, method, par, y_io, u, rec_io, 0, NULL);
}

/* mbk_advance_events that returns after the first impact inside (par[0], par[1]] (FMI 3.0's
 * early return): *impact = 1 and par[0] = the impact time, y and rec the state just after
 * it; else *impact = 0 and par[0] = par[1]. Going on from there with the same h (par[2])
 * takes the steps mbk_advance_events takes after that impact. */
int mbk_advance_events_to_impact(MbkEvents *ev, int method, double *par, double *y_io,
                                 const double *u, double *rec_io, int *impact)
{
    if (impact)
        *impact = 0;
    return ev_advance(ev, method, par, y_io, u, rec_io, 1, impact);
}

/* With friction (mbk_events_set_friction): the contact outputs of mbk_events_outputs and per
 * contact the friction force ft and the slip velocity vt (2 each, the second 0) for the
 * records rec (nc, EV_REC_FR); ERR_ARGS without friction. */
int mbk_events_outputs_fr(MbkEvents *ev, double t, const double *y, const double *u,
                          const double *rec, double *gap, double *force, double *ft,
                          double *vt)
{
    if (!ev->fr)
        return ERR_ARGS;
    return ev_outputs_fr(ev, t, y, u, rec, gap, force, ft, vt);
}

/* the contact the last ERR_FRICTION (14) refers to, -1: none or several */
int mbk_events_error_contact(MbkEvents *ev) { return ev->fr_contact; }

/* With friction: the records rec (nc, EV_REC_FR) at the start (event_loop.h ev_initial). */
int mbk_events_initial(MbkEvents *ev, double t, const double *y, const double *u, double *rec,
                       double contact_tol, double contact_velocity)
{
    if (!ev->fr)
        return ERR_ARGS;
    return ev_initial(ev, t, y, u, rec, contact_tol, contact_velocity);
}

/* The contact outputs at (t, y) with inputs u for the records rec (nc, EV_REC): gap (nc) [m
 * or rad] and force (nc), the force of each persistent contact, pushing positive (-lam_c of
 * the accelerations with the active contacts' rows closed), 0 for the others. */
int mbk_events_outputs(MbkEvents *ev, double t, const double *y, const double *u,
                       const double *rec, double *gap, double *force)
{
    return ev_outputs(ev, t, y, u, rec, gap, force);
}

/* The accelerations (mbk_accelerations) at (t, q, qd) with the rows of the persistent
 * contacts of rec (active) closed, as mbk_events_outputs solves them: the motion whose
 * Newton-Euler multipliers give the joint reactions while a contact holds. */
int mbk_events_accelerations(MbkEvents *ev, double t, const double *q, const double *qd,
                             const double *u, const double *rec, double *qdd, double *x,
                             double *xd, double *xdd)
{
    for (int i = 0; i < ev->nc; i++) {
        const double *R = rec + ev->nrec * i;
        ev->trial[i] = R[4] != 0.0;
        if (ev->fr) {           /* the friction phase of the records: sticking rows, slip */
            ev->stick[i] = R[5] != 0.0;
            ev->s0[2 * i] = R[6];
            ev->s0[2 * i + 1] = R[7];
        }
    }
    ev->jphase = 1;
    for (int j = 0; j < ev->nj; j++) {      /* the joints' friction phase of the records */
        const double *J = ev_jrec(ev, (double *)rec, j);
        ev->jstk[j] = J[0] != 0.0;
        ev->js0[j] = J[1] < 0.0 ? -1.0 : 1.0;
    }
    ev_select(ev, ev->trial);
    Kernel *k = ev->k->kph;
    int mode = k->mode;
    k->mode = 0;
    int rc = mbk_accelerations(k, t, q, qd, u, qdd, x, xd, xdd);
    k->mode = mode;
    return rc;
}

/* the dense-output coefficients compiled in (for the test against scipy's): which 0: RK45's
 * P (7 x 4), 1: DOP853's extra stages' A rows (3 x 16), 2: their C (3), 3: DOP853's D (4 x 16) */
int mbk_events_coefficients(int which, double *out)
{
    switch (which) {
    case 0: memcpy(out, EV_RK45_P, sizeof EV_RK45_P); return 28;
    case 1: memcpy(out, EV_DOP853_AX, sizeof EV_DOP853_AX); return 48;
    case 2: memcpy(out, EV_DOP853_CX, sizeof EV_DOP853_CX); return 3;
    case 3: memcpy(out, EV_DOP853_D, sizeof EV_DOP853_D); return 64;
    default: return 0;
    }
}

/* Event mode (engine_me.h, FMI model exchange): the contacts' event values at (t, y) for the
 * records rec (event_loop.h ev_event_values), and one event iteration there
 * (ev_event_update: impacts, releases; y's velocities and rec updated). */
int mbk_events_values(MbkEvents *ev, double t, const double *y, const double *u,
                       const double *rec, double *v)
{
    return ev_event_values(ev, t, y, u, rec, v);
}

/* the start of a simulation (event_loop.h ev_initial_impact): a frictionless contact closed
 * at rest at t starts persistent, one closed and approaching has its impact there */
int mbk_events_initial_impact(MbkEvents *ev, double t, double *y, const double *u, double *rec,
                              double ctol, double cvel, int stab, double alpha, double beta,
                              double ptol, int *impacts)
{
    return ev_initial_impact(ev, t, y, u, rec, ctol, cvel, stab, alpha, beta, ptol, impacts);
}

int mbk_events_update(MbkEvents *ev, double t, double *y, const double *u, double *rec,
                       double ctol, double cvel, int project, int *impacts, int *released)
{
    return ev_event_update(ev, t, y, u, rec, ctol, cvel, project, impacts, released);
}
