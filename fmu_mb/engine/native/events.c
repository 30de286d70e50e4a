/*
 * fmu_mb native kernel, contact events (planar, formulation recursive): the event loop of
 * fmu_mb.dynamics.integrate._advance_contacts in C, so that a contact model integrates a
 * whole communication interval in one call with no Python in it.
 *
 * Included at the end of kernel.c (one library; it uses the kernel's static functions). API:
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
 *    at ~0 just after an impact is searched from its flight phase (or below -contact_tol);
 *  - an impact: every contact with gap <= contact_tol is closed; the velocities after the
 *    impact solve seed 000's impact equations in joint coordinates (ch.3 eq. 15) with
 *    Newton's restitution law, [Mbar A'; A 0][qd+; r] = [Mbar qd-; b] for the loop rows
 *    (b = 0) and the contacts of an active set (b = -e Dq_c qd-), as the Schur complement
 *    S r = A qd- - b with W = Mbar^-1 A' from the articulated-body algorithm (one bias-free
 *    pass per row: no Mbar is formed), qd+ = qd- - W r; the active set is that of
 *    fmu_mb.dynamics.impact.solve_impact (simultaneous impacts: release the most pulling
 *    contact, add the most penetrating one); a contact whose rebound is below
 *    contact_velocity becomes persistent;
 *  - Zeno guard: more than 100 events per contact each within 10 ns of the last: ERR_ZENO.
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
 * The Reduction Method (seed 002) stays in Python (fmu_mb.dynamics.integrate).
 */
#define EV_REC 5
#define EV_NPAR 19
enum { ERR_EVENT = 8, ERR_ZENO = 9, ERR_IMPACT = 10, ERR_GAP = 11 };
enum { EV_IMPACT = 0, EV_RELEASE = 1 };

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


typedef struct {
    Kernel *kall;          /* loop rows + every contact's gap row (gaps, impact rows, energy) */
    Kernel *kph;           /* the same rows; the first m_loop + (selected contacts) in use */
    int n, nc, m_loop;
    int *ri;               /* (m_loop + nc, RI) rows: loops, then the contacts */
    double *rd;            /* (m_loop + nc, RD) */
    double *e;             /* (nc) restitution */
    unsigned char *sel;    /* (nc) contacts whose rows kph has now */
    /* the state and records of a call (copies: the caller's are written on success) */
    double *y, *rec;
    unsigned char *active; /* (nc) persistent contacts during the call */
    /* one step: y_old, y_new (unprojected), the stages (16 rows) and dense coefficients */
    double *yold, *ynew, *K, *F, *yd, *ys, *f;
    double t_old, t_new, h_dense;
    int method, dense_rows;
    /* event functions: values at the samples, candidate lists */
    double *v, *vprev, *lamc, *g;
    /* impacts: rows of all contacts' gap rates, active set trials */
    double *vminus, *vplus, *target, *rcon, *qdp;
    unsigned char *closed, *trial, *seen;
    int nseen;
    const double *u;
    double contact_tol;
    /* reuse, bit for bit, of what the last step computed: the contact multipliers at its
     * end state (the next step's values at t0) and f(t, y) at the end of the last call (the
     * next call's first stage, when t, y, u, the active set and the drift control agree) */
    double *lam0, *lam1;
    int ni, fc_ok;
    double t_fc, mode_fc, alpha_fc, beta_fc, *y_fc, *u_fc, *f_fc;
    unsigned char *sel_fc;
} MbkEvents;

void mbk_events_free(MbkEvents *ev)
{
    if (!ev)
        return;
    mbk_free(ev->kall);
    mbk_free(ev->kph);
    void *p[] = {ev->ri, ev->rd, ev->e, ev->sel, ev->y, ev->rec, ev->active, ev->yold,
                 ev->ynew, ev->K, ev->F, ev->yd, ev->ys, ev->f, ev->v, ev->vprev, ev->lamc,
                 ev->g, ev->vminus, ev->vplus, ev->target, ev->rcon, ev->qdp, ev->closed,
                 ev->trial, ev->seen, ev->lam0, ev->lam1, ev->y_fc, ev->u_fc, ev->f_fc,
                 ev->sel_fc};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        free(p[i]);
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
    return k;
fail:
    mbk_free(k);
    return NULL;
}

MbkEvents *mbk_events_create(Kernel *base, int nc, const int *ci, const double *cd,
                             const double *e, int ni)
{
    if (!base || nc < 1 || !ci || !cd || !e || ni < 0)
        return NULL;
    MbkEvents *ev = calloc(1, sizeof *ev);
    if (!ev)
        return NULL;
    int n = base->n, ml = base->m, mt = ml + nc;
    size_t m2 = (size_t)(2 * n > 0 ? 2 * n : 1), c = (size_t)nc;
    ev->n = n;
    ev->nc = nc;
    ev->m_loop = ml;
    ev->ri = malloc(sizeof(int) * RI * (size_t)mt);
    ev->rd = malloc(sizeof(double) * RD * (size_t)mt);
    ev->e = dup(e, sizeof(double) * c);
    if (!ev->ri || !ev->rd || !ev->e)
        goto fail;
    if (ml > 0) {
        memcpy(ev->ri, base->ri, sizeof(int) * RI * (size_t)ml);
        memcpy(ev->rd, base->rd, sizeof(double) * RD * (size_t)ml);
    }
    memcpy(ev->ri + RI * ml, ci, sizeof(int) * RI * c);
    memcpy(ev->rd + RD * ml, cd, sizeof(double) * RD * c);
    for (int r = 0; r < mt; r++) {
        const int *R = ev->ri + RI * r;
        if (R[0] < R_PX || R[0] > R_DST || R[1] < 0 || R[1] > base->nb || R[2] < 0 ||
            R[2] > base->nb)
            goto fail;
    }
    ev->kall = ev_clone(base, mt, ev->ri, ev->rd);
    ev->kph = ev_clone(base, mt, ev->ri, ev->rd);
    ev->sel = calloc(c, 1);
    ev->y = calloc(m2, sizeof(double));
    ev->rec = calloc(EV_REC * c, sizeof(double));
    ev->active = calloc(c, 1);
    ev->yold = calloc(m2, sizeof(double));
    ev->ynew = calloc(m2, sizeof(double));
    ev->K = calloc((MAXS + 1) * m2, sizeof(double));
    ev->F = calloc(8 * m2, sizeof(double));
    ev->yd = calloc(m2, sizeof(double));
    ev->ys = calloc(4 * m2, sizeof(double));
    ev->f = calloc(m2, sizeof(double));
    ev->v = calloc(c, sizeof(double));
    ev->vprev = calloc(c, sizeof(double));
    ev->lamc = calloc(c, sizeof(double));
    ev->g = calloc(c, sizeof(double));
    ev->vminus = calloc(c, sizeof(double));
    ev->vplus = calloc(c, sizeof(double));
    ev->target = calloc(c, sizeof(double));
    ev->rcon = calloc(c, sizeof(double));
    ev->qdp = calloc(m2, sizeof(double));
    ev->closed = calloc(c, 1);
    ev->trial = calloc(c, 1);
    ev->seen = calloc((4 * c + 5) * c, 1);
    ev->ni = ni;
    ev->lam0 = calloc(c, sizeof(double));
    ev->lam1 = calloc(c, sizeof(double));
    ev->y_fc = calloc(m2, sizeof(double));
    ev->f_fc = calloc(m2, sizeof(double));
    ev->u_fc = calloc((size_t)(ni > 0 ? ni : 1), sizeof(double));
    ev->sel_fc = calloc(c, 1);
    if (!ev->lam0 || !ev->lam1 || !ev->y_fc || !ev->f_fc || !ev->u_fc || !ev->sel_fc)
        goto fail;
    if (!ev->kall || !ev->kph || !ev->sel || !ev->y || !ev->rec || !ev->active || !ev->yold ||
        !ev->ynew || !ev->K || !ev->F || !ev->yd || !ev->ys || !ev->f || !ev->v ||
        !ev->vprev || !ev->lamc || !ev->g || !ev->vminus || !ev->vplus || !ev->target ||
        !ev->rcon || !ev->qdp || !ev->closed || !ev->trial || !ev->seen)
        goto fail;
    for (int i = 0; i < nc; i++)
        ev->sel[i] = 1;
    return ev;
fail:
    mbk_events_free(ev);
    return NULL;
}

/* kph's rows: the loop rows, then the gap rows of the contacts with mask[i] set, in order */
static void ev_select(MbkEvents *ev, const unsigned char *mask)
{
    if (memcmp(mask, ev->sel, (size_t)ev->nc) == 0)
        return;
    Kernel *k = ev->kph;
    int r = ev->m_loop;
    for (int i = 0; i < ev->nc; i++) {
        if (!mask[i])
            continue;
        memcpy(k->ri + RI * r, ev->ri + RI * (ev->m_loop + i), sizeof(int) * RI);
        memcpy(k->rd + RD * r, ev->rd + RD * (ev->m_loop + i), sizeof(double) * RD);
        r++;
    }
    k->m = r;
    memcpy(ev->sel, mask, (size_t)ev->nc);
}

static int ev_any(const unsigned char *mask, int nc)
{
    for (int i = 0; i < nc; i++)
        if (mask[i])
            return 1;
    return 0;
}

/* the gaps of every contact at q into g: the values phi of kall's contact rows at q as
 * given, computed as rows() computes them (the same expressions) without their Jacobians */
static int ev_gaps(MbkEvents *ev, const double *q, double *g)
{
    Kernel *k = ev->kall;
    double *zero = k->qtmp;
    for (int j = 0; j < k->n; j++)
        zero[j] = 0.0;
    kinematics(k, q, zero);
    for (int i = 0; i < ev->nc; i++) {
        int r = ev->m_loop + i;
        const int *R = k->ri + RI * r;
        const double *P = k->rd + RD * r;
        int kind = R[0], p = R[1], c = R[2];
        double Qp[2], Qc[2], ep[2], ec[2], val;
        body_point(k, p, P, Qp, ep);
        body_point(k, c, P + 2, Qc, ec);
        double d[2] = {Qc[0] - Qp[0], Qc[1] - Qp[1]};
        if (kind == R_PX || kind == R_PY) {
            val = d[kind == R_PY];
        } else if (kind == R_ANG) {
            val = k->x[3 * c + 2] - k->x[3 * p + 2];
        } else if (kind == R_PRJ) {
            double ph = k->x[3 * p + 2], cs = cos(ph), sn = sin(ph);
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

/* the contact multipliers lam_c (of the contacts selected in kph; the force is -lam_c) at
 * (t, y), without Baumgarte terms (as the Python loop's accelerations) */
static int ev_lam(MbkEvents *ev, double t, const double *y, double *lamc)
{
    Kernel *k = ev->kph;
    int mode = k->mode, n = k->n;
    k->mode = 0;
    int rc = accel(k, t, y, y + n, ev->u, ev->qdp);
    k->mode = mode;
    if (rc != OK)
        return rc;
    int r = ev->m_loop;
    for (int i = 0; i < ev->nc; i++)
        if (ev->sel[i])
            lamc[i] = k->lam[r++];
    return OK;
}

/* kinetic energy 1/2 xd' M xd [J] at (q, qd) */
static double ev_kinetic(MbkEvents *ev, const double *y)
{
    Kernel *k = ev->kall;
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

/* ------------------------------------------------------------------ dense output */
/* the right-hand side of the Python stepper's extra stages: (qd, qdd) with qd as given */
static int ev_rhs_plain(MbkEvents *ev, double t, const double *y, double *dy)
{
    Kernel *k = ev->kph;
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

/* the interpolant of the last step (t_old, t_new, yold, ynew unprojected, stages in K,
 * h_taken): RK45: Q = K' P, y(t) = yold + h sum_j Q_j x^(j+1); DOP853: F of scipy's
 * Dop853DenseOutput with its three extra stages */
static int ev_dense_setup(MbkEvents *ev, double h_taken)
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
        if ((rc = ev_rhs_plain(ev, ev->t_old + EV_DOP853_CX[j - 13] * h, yt, K + j * m)) != OK)
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

static void ev_dense(const MbkEvents *ev, double t, double *y)
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
static int ev_values_at(MbkEvents *ev, double t, const double *y, double *out,
                        const double *lam0);

static int ev_values(MbkEvents *ev, double t, const double *y, double *out)
{
    return ev_values_at(ev, t, y, out, NULL);
}

static int ev_values_at(MbkEvents *ev, double t, const double *y, double *out,
                        const double *lam0)
{
    int nc = ev->nc, rc;
    int watch = 0, act = 0;
    for (int i = 0; i < nc; i++) {
        out[i] = INFINITY;
        if (ev->active[i])
            act = 1;
        else
            watch = 1;
    }
    if (watch) {
        if ((rc = ev_gaps(ev, y, ev->g)) != OK)
            return rc;
        for (int i = 0; i < nc; i++)
            if (!ev->active[i])
                out[i] = ev->g[i];
    }
    if (act) {
        if (!lam0 && (rc = ev_lam(ev, t, y, ev->lamc)) != OK)
            return rc;
        for (int i = 0; i < nc; i++)
            if (ev->active[i])
                out[i] = -(lam0 ? lam0[i] : ev->lamc[i]);
    }
    return OK;
}

/* event function of contact i at t on the dense output, plus shift */
static int ev_fun(MbkEvents *ev, int i, double t, double shift, double *val)
{
    double *y = ev->yd;
    int rc;
    ev_dense(ev, t, y);
    if (ev->active[i]) {
        if ((rc = ev_lam(ev, t, y, ev->lamc)) != OK)
            return rc;
        *val = -ev->lamc[i] + shift;
    } else {
        if ((rc = ev_gaps(ev, y, ev->g)) != OK)
            return rc;
        *val = ev->g[i] + shift;
    }
    return OK;
}

/* Brent's method on [xa, xb] as scipy.optimize.brentq (xtol, rtol, 100 iterations) */
static int ev_brent(MbkEvents *ev, int i, double shift, double xa, double xb, double xtol,
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
static int ev_find(MbkEvents *ev, double t0, const double *y0, const double *lam0,
                   double t1, double tol, double event_tol, double *y, double *te_out,
                   int *kind_out, int *idx_out, int *found)
{
    int nc = ev->nc, m = 2 * ev->n, rc;
    double samples[4];
    for (int k = 1; k < 4; k++)
        samples[k - 1] = t0 + (t1 - t0) * k / 4;
    samples[3] = t1;
    for (int k = 0; k < 4; k++)
        ev_dense(ev, samples[k], ev->ys + (size_t)k * m);
    if ((rc = ev_values_at(ev, t0, y0, ev->vprev, lam0)) != OK)
        return rc;
    double prev_t = t0, best_t = 0.0;
    int best_kind = 0, best_i = -1;
    unsigned char *hit = ev->trial;
    *found = 0;
    for (int k = 0; k < 4; k++) {
        double ts = samples[k];
        const double *v = ev->v, *pv = ev->vprev;
        if ((rc = ev_values(ev, ts, ev->ys + (size_t)k * m, ev->v)) != OK)
            return rc;
        int any = 0;
        for (int i = 0; i < nc; i++) {
            int watch = !ev->active[i];
            hit[i] = watch ? (v[i] < 0.0 && (pv[i] > 0.0 || v[i] < -tol)) : (v[i] < 0.0);
            any |= hit[i];
        }
        if (!any) {
            prev_t = ts;
            memcpy(ev->vprev, ev->v, sizeof(double) * nc);
            continue;
        }
        for (int i = 0; i < nc; i++) {
            if (!hit[i])
                continue;
            int watch = !ev->active[i];
            double a = prev_t, te, val;
            if (!(pv[i] > 0.0) && watch) {
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
            if (a > prev_t || pv[i] > 0.0) {
                if ((rc = ev_brent(ev, i, 0.0, a, ts, event_tol, 4 * 2.220446049250313e-16,
                                   &te)) != OK)
                    return rc;
            } else if (watch && pv[i] + tol > 0.0) {
                if ((rc = ev_brent(ev, i, tol, a, ts, event_tol, 4 * 2.220446049250313e-16,
                                   &te)) != OK)
                    return rc;
            } else {
                te = prev_t;
            }
            int kind = watch ? EV_IMPACT : EV_RELEASE;
            if (best_i < 0 || te < best_t || (te == best_t && (kind < best_kind ||
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
    *idx_out = best_i;
    *found = 1;
    return OK;
}

/* ------------------------------------------------------------------ impacts */
/* The impact at y = (q, qd-) of contact i_event at te: every contact with gap <= contact_tol
 * (and i_event) is closed; qd+ from seed 000 ch.3 eq. 15 for the active set of
 * impact.solve_impact; the records updated as integrate._handle_event does. */
static int ev_impact(MbkEvents *ev, double te, double *y, int i_event, double contact_velocity)
{
    int n = ev->n, nc = ev->nc, ml = ev->m_loop, rc;
    double *q = y, *qd = y + n;
    Kernel *ka = ev->kall, *k = ev->kph;
    kinematics(ka, q, qd);
    if ((rc = rows(ka, 0)) != OK)
        return rc == ERR_SINGULAR ? ERR_GAP : rc;
    double vmax = 0.0;
    for (int i = 0; i < nc; i++) {
        const double *Dr = ka->Dq + (size_t)(ml + i) * n;
        double acc = 0.0;
        for (int j = 0; j < n; j++)
            acc += Dr[j] * qd[j];
        ev->vminus[i] = acc;
        ev->closed[i] = ka->phi[ml + i] <= ev->contact_tol || i == i_event;
        ev->target[i] = -ev->e[i] * fmin(acc, 0.0);
        vmax = fmax(vmax, fabs(acc));
        ev->trial[i] = ev->closed[i] && acc < 0.0;
    }
    double scale = 1e-10 * (1.0 + vmax);
    int nseen = 0, ok = 0;
    for (int it = 0; it < 4 * nc + 4; it++) {
        ev_select(ev, ev->trial);
        int m = k->m;
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
            if (ev->trial[i])
                k->rr[r++] -= ev->target[i];
        if (m && (rc = psd_solve(k, k->rr, k->lam)) != OK)
            return rc;
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int r = 0; r < m; r++)
                acc += k->Wt[(size_t)r * n + j] * k->lam[r];
            ev->qdp[j] = qd[j] - acc;
        }
        int pull = -1, pen = -1;
        for (int i = 0, r = ml; i < nc; i++) {
            ev->rcon[i] = ev->trial[i] ? k->lam[r++] : 0.0;
            const double *Dr = ka->Dq + (size_t)(ml + i) * n;
            double acc = 0.0;
            for (int j = 0; j < n; j++)
                acc += Dr[j] * ev->qdp[j];
            ev->vplus[i] = acc;
        }
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
        double p = -ev->rcon[i], *R = ev->rec + EV_REC * i;
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
static int ev_rk4_step(MbkEvents *ev, double *tc, double *y, long *k, long n, double t0,
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
    if ((rc = ev_rhs_plain(ev, t + dt / 2, yt, k2)) != OK)
        return rc;
    for (int i = 0; i < m; i++)
        yt[i] = y[i] + dt / 2 * k2[i];
    if ((rc = ev_rhs_plain(ev, t + dt / 2, yt, k3)) != OK)
        return rc;
    for (int i = 0; i < m; i++)
        yt[i] = y[i] + dt * k3[i];
    if ((rc = ev_rhs_plain(ev, t + dt, yt, k4)) != OK)
        return rc;
    for (int i = 0; i < m; i++)
        y[i] = y[i] + dt / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    *tc = t_new;
    if (!integ_all_finite(y, m))
        return ERR_NONFINITE;
    if ((rc = ev_rhs_plain(ev, t_new, y, ev->f)) != OK)
        return rc;
    if (stab == 1) {
        memcpy(yp, y, sizeof(double) * m);
        if ((rc = project(ev->kph, t_new, y)) != OK)
            return rc;
        if (memcmp(yp, y, sizeof(double) * m) != 0 &&
            (rc = ev_rhs_plain(ev, t_new, y, ev->f)) != OK)
            return rc;
    }
    memcpy(ev->ynew, y, sizeof(double) * m);
    memcpy(F + 2 * m, y, sizeof(double) * m);
    memcpy(F + 3 * m, ev->f, sizeof(double) * m);
    ev->t_old = t;
    ev->t_new = t_new;
    ev->h_dense = t_new - t;
    *lam1_ok = 0;
    if (stab == 1 && ev->kph->m > ev->m_loop) {
        for (int i = 0, r = ev->m_loop; i < nc; i++)
            if (ev->sel[i])
                ev->lam1[i] = ev->kph->lam[r++];
        *lam1_ok = 1;
    }
    return OK;
}

/* ------------------------------------------------------------------ the loop */
static int ev_advance(MbkEvents *ev, int method, double *par, double *y_io, const double *u,
                      double *rec_io, int stop, int *stopped);

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

static int ev_advance(MbkEvents *ev, int method, double *par, double *y_io, const double *u,
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
    Kernel *kp = ev->kph;
    if (!(t <= t_end) || m == 0 || stab < 0 || stab > 2 || (method == 2 && !(rk_step > 0.0)))
        return ERR_ARGS;
    ev->u = u;
    ev->method = method;
    ev->contact_tol = ctol;
    kp->mode = stab;
    kp->alpha = par[7];
    kp->beta = par[8];
    kp->proj_tol = ptol;
    double *y = ev->y;
    memcpy(y, y_io, sizeof(double) * m);
    memcpy(ev->rec, rec_io, sizeof(double) * EV_REC * nc);
    for (int i = 0; i < nc; i++)
        ev->active[i] = rec_io[EV_REC * i + 4] != 0.0;
    par[14] = t;
    par[17] = -1.0;
    long steps = 0, events = 0, changes = 0;
    int repeats = 0, have_last = 0;
    double t_last = 0.0, t_start = t;
    while (t < t_end) {
        int lam0_ok = 0;
        for (;;) {                  /* release tensile persistent contacts, most tensile first */
            if (!ev_any(ev->active, nc))
                break;
            ev_select(ev, ev->active);
            if ((rc = ev_lam(ev, t, y, ev->lamc)) != OK) {
                par[14] = t;
                return rc;
            }
            int best = -1;
            double bv = -INFINITY;
            for (int i = 0; i < nc; i++) {
                double v = ev->active[i] ? ev->lamc[i] : -INFINITY;
                if (best < 0 || v > bv) {
                    best = i;
                    bv = v;
                }
            }
            if (bv <= 0.0) {        /* (also the first step's event values at t) */
                memcpy(ev->lam0, ev->lamc, sizeof(double) * nc);
                lam0_ok = 1;
                break;
            }
            ev->active[best] = 0;
            changes++;
        }
        ev_select(ev, ev->active);
        int project_steps = stab == 1 && kp->m > 0, have_f = 0, found = 0, kind = 0, idx = -1;
        double tc = t, hs = h, te = t;
        if (ev->fc_ok && kp->nd == 0 && ev->t_fc == t && ev->mode_fc == kp->mode &&
            ev->alpha_fc == kp->alpha && ev->beta_fc == kp->beta &&
            memcmp(ev->sel_fc, ev->sel, (size_t)nc) == 0 &&
            memcmp(ev->y_fc, y, sizeof(double) * m) == 0 &&
            (ev->ni == 0 || memcmp(ev->u_fc, u, sizeof(double) * ev->ni) == 0)) {
            memcpy(ev->f, ev->f_fc, sizeof(double) * m);      /* f(t, y) of the last call */
            have_f = 1;
        }
        ev->fc_ok = 0;
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
            if (!have_f && (rc = ev_rhs_plain(ev, t, y, ev->f)) != OK) {
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
            int nfev, lam1_ok = 0;
            if (method == 2) {
                if ((rc = ev_rk4_step(ev, &tc, y, &rk_k, rk_n, rk_t0, rk_dt, t_end, stab,
                                      &lam1_ok)) != OK) {
                    par[14] = tc;
                    return rc;
                }
                hs = rk_dt;
                if ((rc = ev_find(ev, ev->t_old, ev->yold, lam0_ok ? ev->lam0 : NULL, tc,
                                  ctol, etol, y, &te, &kind, &idx, &found)) != OK) {
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
            if ((rc = mbk_step(kp, method, sp, y, u, have_f, ev->K, &nfev)) != OK) {
                par[14] = sp[0];
                return rc;
            }
            ev->t_old = tc;
            ev->t_new = sp[0];
            memcpy(ev->ynew, y, sizeof(double) * m);
            memcpy(ev->f, ev->K + (size_t)s * m, sizeof(double) * m);
            if (project_steps) {
                if ((rc = project(kp, sp[0], y)) != OK ||
                    (rc = ev_rhs_plain(ev, sp[0], y, ev->f)) != OK) {
                    par[14] = sp[0];
                    return rc;
                }
                /* its multipliers are the next step's event values at t0 (mode 1 solves
                 * as mode 0: no Baumgarte terms) */
                for (int i = 0, r = ev->m_loop; i < nc; i++)
                    if (ev->sel[i])
                        ev->lam1[i] = kp->lam[r++];
                lam1_ok = 1;
            }
            have_f = 1;
            tc = sp[0];
            hs = sp[2];
            if ((rc = ev_dense_setup(ev, sp[6])) != OK ||
                (rc = ev_find(ev, ev->t_old, ev->yold, lam0_ok ? ev->lam0 : NULL, tc, ctol,
                              etol, y, &te, &kind, &idx, &found)) != OK) {
                par[14] = tc;
                return rc;
            }
            lam0_ok = lam1_ok;
            if (lam1_ok)
                memcpy(ev->lam0, ev->lam1, sizeof(double) * nc);
        }
        h = hs;
        if (!found) {
            t = tc;
            /* f(t_end, y) for the next call's first stage: K[s] at the unprojected state
             * (= y without projection and drives) or the rhs after the projection */
            if (kp->nd == 0 && (project_steps || memcmp(ev->ynew, y, sizeof(double) * m) == 0)) {
                ev->fc_ok = 1;
                ev->t_fc = t;
                ev->mode_fc = kp->mode;
                ev->alpha_fc = kp->alpha;
                ev->beta_fc = kp->beta;
                memcpy(ev->sel_fc, ev->sel, (size_t)nc);
                memcpy(ev->y_fc, y, sizeof(double) * m);
                memcpy(ev->f_fc, ev->f, sizeof(double) * m);
                if (ev->ni)
                    memcpy(ev->u_fc, u, sizeof(double) * ev->ni);
            }
            break;
        }
        /* Zeno guard: more than 100 events per contact, each within 10 ns of the last */
        int close = have_last && te - t_last <= 1e-8 * fmax(1.0, fabs(te));
        repeats = close ? repeats + 1 : 0;
        if (repeats > 100 * nc) {
            par[14] = te;
            par[17] = idx;
            return ERR_ZENO;
        }
        t_last = te;
        have_last = 1;
        if (stab == 1 && (rc = project(kp, te, y)) != OK) {
            par[14] = te;
            return rc;
        }
        if (kind == EV_RELEASE) {
            ev->active[idx] = 0;
        } else if ((rc = ev_impact(ev, te, y, idx, cvel)) != OK) {
            par[14] = te;
            par[17] = idx;
            return rc;
        }
        if (stab == 1) {
            double T0 = ev_kinetic(ev, y);
            ev_select(ev, ev->active);
            if ((rc = project(kp, te, y)) != OK) {
                par[14] = te;
                return rc;
            }
            if (kind == EV_IMPACT)      /* a rebound below contact_velocity removed */
                ev->rec[EV_REC * idx + 3] += fmax(T0 - ev_kinetic(ev, y), 0.0);
        }
        t = te;
        events++;
        if (stop && kind == EV_IMPACT) {
            if (stopped)
                *stopped = 1;
            break;
        }
    }
    for (int i = 0; i < nc; i++)
        ev->rec[EV_REC * i + 4] = ev->active[i] ? 1.0 : 0.0;
    memcpy(y_io, y, sizeof(double) * m);
    memcpy(rec_io, ev->rec, sizeof(double) * EV_REC * nc);
    par[0] = stopped && *stopped ? t : t_end;
    par[2] = h;
    par[15] = (double)steps;
    par[16] = (double)(events + changes);
    return OK;
}

/* The contact outputs at (t, y) with inputs u for the records rec (nc, EV_REC): gap (nc) [m
 * or rad] and force (nc), the force of each persistent contact, pushing positive (-lam_c of
 * the accelerations with the active contacts' rows closed), 0 for the others. */
int mbk_events_outputs(MbkEvents *ev, double t, const double *y, const double *u,
                       const double *rec, double *gap, double *force)
{
    int nc = ev->nc, rc, any = 0;
    ev->u = u;
    if ((rc = ev_gaps(ev, y, gap)) != OK)
        return rc;
    for (int i = 0; i < nc; i++) {
        ev->trial[i] = rec[EV_REC * i + 4] != 0.0;
        any |= ev->trial[i];
        force[i] = 0.0;
    }
    if (!any)
        return OK;
    ev_select(ev, ev->trial);
    if ((rc = ev_lam(ev, t, y, ev->lamc)) != OK)
        return rc;
    for (int i = 0; i < nc; i++)
        if (ev->trial[i])
            force[i] = -ev->lamc[i];
    return OK;
}

/* The accelerations (mbk_accelerations) at (t, q, qd) with the rows of the persistent
 * contacts of rec (active) closed, as mbk_events_outputs solves them: the motion whose
 * Newton-Euler multipliers give the joint reactions while a contact holds. */
int mbk_events_accelerations(MbkEvents *ev, double t, const double *q, const double *qd,
                             const double *u, const double *rec, double *qdd, double *x,
                             double *xd, double *xdd)
{
    for (int i = 0; i < ev->nc; i++)
        ev->trial[i] = rec[EV_REC * i + 4] != 0.0;
    ev_select(ev, ev->trial);
    Kernel *k = ev->kph;
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
