/*
 * fmu_mb engine: model exchange, included at the end of engine.c.
 *
 * A host integrates the state x = (q_i, qd_i) of the independent tree coordinates ind[0..f-1]
 * (the states of the native FMU, fmu_mb.dynamics.linearize's coordinate partitioning) with
 * its own solver. Every mbe_me_set_states closes the loops for the given x: the dependent
 * coordinates by Newton on every model row with q_i held, starting from the last solution
 * (the engine's q), their rates from the velocity rows (lin_close); a state that cannot be
 * closed is refused (MBE_ERROR, nothing changed): never a silent drift. A planar model
 * without drives takes Newton on the kernel's loop rows instead (me_close_kernel). Near a
 * dead point (the partition's condition below ME_CHORD_COND) the closure follows the branch
 * of the motion (me_close_branch), the accelerations solve the loops by QR
 * (me_accelerations: the rows' condition not squared, as the Schur solve's cut-off would)
 * and mbe_me_derivatives refuses accelerations that violate the rows' acceleration
 * equations (me_acc_residual).
 *
 * Event indicators (mbe_me_indicators), in this order: per contact its event value of the
 * co-simulation event loop (event_loop.h: the gap of a contact in flight, the force of a
 * persistent one), with Coulomb friction at a contact then per contact its stick/slip value
 * (me_n_contact_indicators), then, when there are dependent coordinates, the partition's condition
 * minus ME_PARTITION_TOL: the smallest Cholesky pivot of Dd' Dd (Dd: the rows' Jacobian
 * columns of the dependent coordinates) over the largest column norm of the rows' Jacobian,
 * 0 where the partition chosen at initialisation is singular, then, when there are charts
 * (below), the smallest |l_d| of their local quaternions minus ME_CHART_TOL. mbe_me_event is
 * one event iteration: the event loop's impact, release and stick/slip transitions
 * (ev_event_update) and its Zeno guard, the partition's check and the charts' re-centring.
 *
 * Charts of the Euler parameters. Where the partition keeps three of the four Euler parameters
 * of a spherical tree joint or a floating body as states (the fourth, slot d, fixed by the
 * normalisation), the three states are chart coordinates s of a local quaternion l:
 * p = r (x) l (Hamilton product, slot 0 scalar), l_d = sigma sqrt(1 - |s|^2), the other three
 * slots of l = s, r a unit reference quaternion held by the instance (identity and sigma the
 * sign of p_d at the start: there s are the Euler parameters themselves). The closure takes
 * all four Euler parameters from the chart (the normalisation is then no row of its Newton).
 * Where |l_d| falls below ME_CHART_TOL (the chart's event indicator crosses zero), the event
 * iteration re-centres it: r := p (x) conj(e_d), sigma := 1, so l = e_d and s = 0 (a jump
 * of the states, valuesOfContinuousStatesChanged). Any orientation is so reached with
 * |l_d| >= ME_CHART_TOL, and the states stay a minimal set. The charts (mbe_me_chart_size
 * doubles: r and sigma per chart) are part of the FMU state (mbe_me_get_chart,
 * mbe_me_set_chart).
 */
#include "zeno.h"                /* the Zeno guard's rate bound, the event loop's */

#define ME_PARTITION_TOL 1e-3     /* the partition indicator's zero: the condition's warning */
#define ME_PARTITION_FAIL 1e-10   /* below: the closure is refused (cannot continue) */
#define ME_PARTITION_ROOT 1e-9    /* an event where the partition's indicator is below this is
                                     at or past its zero: a host's located root has it 0 to the
                                     condition's round-off (~1e-13), either sign */
#define ME_ZENO_DT 1e-8           /* the event loop's Zeno guard: events closer than this ... */
#define ME_ZENO_REPEATS 100       /* ... more than this many times per contact; and its rate
                                     bound per contact (zeno.h) */
#define ME_CHART_TOL 0.5          /* a chart's |l_d| below: re-centred in event mode */
#define ME_CHART_REC 5            /* doubles per chart: r (4), sigma (0: not yet set) */

int mbk_events_values(void *ev, double t, const double *y, const double *u, const double *rec,
                      double *v);
int mbk_events_update(void *ev, double t, double *y, const double *u, double *rec,
                      double ctol, double cvel, int project, int *impacts,
                      int *released);
int sk_events_values(void *ev, double t, const double *y, const double *u, const double *rec,
                     double *v);
int sk_events_update(void *ev, double t, double *y, const double *u, double *rec,
                     double ctol, double cvel, int project, int *impacts,
                      int *released);

typedef struct {
    Lin L;
    int f, *ind;
    /* the chord closure (me_close): the rows' Jacobian Dq0 (nr x n) at a recent solution and
     * the Cholesky factor R (m x m) of its Dd0' Dd0; have = 1 when they are valid */
    int have;
    double *Dq0, *R, *r, *s, *vres;
    double *G;               /* (m x nact) -(Dd0' Dd0)^-1 Dd0' on the rows act: the chord step
                                of rows b is G b[act] (rows of Dq0 that vanish are left out)  */
    int *act, nact;
    double *Gv;              /* G's nonzeros, row by row in column order: row a's are          */
    int *Gr, *Gs;            /* Gv[Gs[a] .. Gs[a + 1] - 1], at the rows Gr (of b) [...]       */
    double *P;               /* (m x f) G Di0: the tangent predictor dq_d = P dq_i            */
    double cond;             /* the partition's condition at the last closure (1: none)    */
    double phimax, vmax;     /* max |phi| and max |vres| of the last me_rows (vmax: 0
                                without rates)                                             */
    double *y;               /* (2 n) scratch: the state of an event iteration             */
    double *rec;             /* (ncon x nrec) scratch: its records                          */
    double t_last;           /* the Zeno guard: the time of the last event with a change   */
    int repeats, have_last;
    double *zt;              /* its rate windows (zeno.h) per contact, spanning the host's */
    int *zn;                 /* steps: zt[0..ncon-1], zn[0..ncon-1]; those of an event
                                iteration in zt[ncon..], zn[ncon..] until it succeeds. Not
                                part of an FMU state: they restart when the time goes back
                                (a restored state) and at mbe_me_reset */
    /* the charts of the Euler parameters (nch of them): the quaternion at q[ch_o[j]..+3], its
     * slot ch_d[j] fixed by the others, ch_pos[4 j + a] the state of slot a (-1: slot d);
     * chart[ME_CHART_REC j ..]: r, sigma. The closure's partition ind_ext (f_ext = f + nch):
     * ind and the slots d of the charts; qx (2 f_ext): the closure's (q_i, qd_i) */
    int nch, f_ext, *ind_ext, *ch_o, *ch_d, *ch_pos;
    double *chart, *qx;
    /* the trajectory predictor (me_predict): the accelerations at the engine's state from
     * the last mbe_me_derivatives there (have_qdd) */
    double *qdd0, *qdd_y;      /* (qdd_y: the state (q, qd) of qdd0) */
    int have_qdd;
    double *u;                 /* (ni) the inputs of the last mbe_me_derivatives (0 before) */
    /* the planar closure by Newton on the kernel's loop rows (me_close_kernel; kfast: a
     * planar model without drives, whose model rows are the tree joints' rows, which vanish
     * at every q, and the cut joints' rows, the kernel's mk rows): their values kphi (mk), the
     * Jacobian kDq (mk x n) at the last pass, the Cholesky factor kR (m x m) of its
     * Dd' Dd, scratch kb (mk + n) */
    int kfast, mk;
    double *kphi, *kDq, *kR, *kb;
    /* one independent coordinate (me_predict_one): the second derivatives g2 (m) of the
     * closure map q_d = g(q_i) at q_i = g2q, and g2p at g2pq (have_g2: 0, 1 or 2 of them) */
    double *g2, *g2p, g2q, g2pq;
    int have_g2;
} MeCtx;

static void me_free(MbEngine *e)
{
    MeCtx *c = e ? (MeCtx *)e->me : NULL;
    if (!c)
        return;
    lin_free(&c->L);
    free(c->ind);
    free(c->y);
    free(c->rec);
    free(c->zt);
    free(c->zn);
    free(c->Dq0);
    free(c->R);
    free(c->r);
    free(c->s);
    free(c->vres);
    free(c->G);
    free(c->P);
    free(c->act);
    free(c->Gv);
    free(c->Gr);
    free(c->Gs);
    free(c->ind_ext);
    free(c->ch_o);
    free(c->ch_d);
    free(c->ch_pos);
    free(c->chart);
    free(c->qx);
    free(c->qdd0);
    free(c->qdd_y);
    free(c->u);
    free(c->kphi);
    free(c->kDq);
    free(c->kR);
    free(c->kb);
    free(c->g2);
    free(c->g2p);
    free(c);
    e->me = NULL;
}

/* p = a (x) b (Hamilton product, slot 0 scalar) */
static void me_qmul(const double *a, const double *b, double *p)
{
    p[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    p[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    p[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    p[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

/* p = conj(a) (x) b */
static void me_qcmul(const double *a, const double *b, double *p)
{
    const double ac[4] = {a[0], -a[1], -a[2], -a[3]};
    me_qmul(ac, b, p);
}

/* The charts of the partition (f, ind): a tree quaternion with exactly three of its four
 * Euler parameters among ind. Fills c->nch, ch_o, ch_d, ch_pos, chart (not set), ind_ext;
 * 0 when out of memory. */
static int me_charts(MeCtx *c, MbEngine *e, int f, const int *ind)
{
    int nq = e->kind ? spatial_tree_norms(e, NULL) : 0;
    int *first = malloc(sizeof(int) * (size_t)(nq + 1));
    c->ch_o = malloc(sizeof(int) * (size_t)(nq + 1));
    c->ch_d = malloc(sizeof(int) * (size_t)(nq + 1));
    c->ch_pos = malloc(sizeof(int) * (size_t)(4 * nq + 1));
    c->chart = calloc((size_t)(ME_CHART_REC * nq + 1), sizeof(double));
    c->ind_ext = malloc(sizeof(int) * (size_t)(f + nq + 1));
    c->qx = malloc(sizeof(double) * (size_t)(2 * (f + nq) + 1));
    if (!first || !c->ch_o || !c->ch_d || !c->ch_pos || !c->chart || !c->ind_ext || !c->qx) {
        free(first);
        return 0;
    }
    if (nq)
        spatial_tree_norms(e, first);
    if (f > 0)
        memcpy(c->ind_ext, ind, sizeof(int) * (size_t)f);
    c->nch = 0;
    for (int k = 0; k < nq; k++) {
        int pos[4], held = 0, d = -1;
        for (int a = 0; a < 4; a++) {
            pos[a] = -1;
            for (int i = 0; i < f; i++)
                if (ind[i] == first[k] + a)
                    pos[a] = i;
            if (pos[a] >= 0)
                held++;
            else
                d = a;
        }
        if (held != 3)
            continue;
        int j = c->nch++;
        c->ch_o[j] = first[k];
        c->ch_d[j] = d;
        memcpy(c->ch_pos + 4 * j, pos, sizeof pos);
        c->ind_ext[f + j] = first[k] + d;
    }
    c->f_ext = f + c->nch;
    free(first);
    return 1;
}

/* The charts not set yet (at the start, after mbe_me_reset): the identity and the sign of the
 * engine's p_d, so that the states are the declared Euler parameters. */
static void me_chart_ready(MeCtx *c, const MbEngine *e)
{
    for (int j = 0; j < c->nch; j++) {
        double *r = c->chart + ME_CHART_REC * j;
        if (r[4] != 0.0)
            continue;
        r[0] = 1.0;
        r[1] = r[2] = r[3] = 0.0;
        r[4] = e->y[c->ch_o[j] + c->ch_d[j]] < 0.0 ? -1.0 : 1.0;
    }
}

/* x (2 f) = (q_i, qd_i) of the coordinates q and their rates qd, the charts' slots as their
 * local quaternions' (conj(r) (x) p): the states of (q, qd), or their derivatives of (qd,
 * qdd) (r is constant between events) */
static void me_to_states(const MeCtx *c, const double *q, const double *qd, double *x)
{
    int f = c->f;
    for (int k = 0; k < f; k++) {
        x[k] = q[c->ind[k]];
        x[f + k] = qd[c->ind[k]];
    }
    for (int j = 0; j < c->nch; j++) {
        const double *r = c->chart + ME_CHART_REC * j;
        const int *pos = c->ch_pos + 4 * j;
        double l[4], ld[4];
        me_qcmul(r, q + c->ch_o[j], l);
        me_qcmul(r, qd + c->ch_o[j], ld);
        for (int a = 0; a < 4; a++)
            if (pos[a] >= 0) {
                x[pos[a]] = l[a];
                x[f + pos[a]] = ld[a];
            }
    }
}

/* The closure's (q_i, qd_i) of the partition ind_ext (c->qx, 2 f_ext) for the states x: the
 * charts' four Euler parameters and their rates from s, s': -1, or the chart whose |s| >= 1
 * (no quaternion) */
static int me_from_states(MeCtx *c, const double *x)
{
    int f = c->f, fe = c->f_ext;
    double *qi = c->qx, *qdi = c->qx + fe;
    for (int k = 0; k < f; k++) {
        qi[k] = x[k];
        qdi[k] = x[f + k];
    }
    for (int j = 0; j < c->nch; j++) {
        const double *r = c->chart + ME_CHART_REC * j;
        const int *pos = c->ch_pos + 4 * j;
        int d = c->ch_d[j];
        double l[4], ld[4], p[4], pd[4], ss = 0.0, sv = 0.0;
        for (int a = 0; a < 4; a++)
            if (a != d) {
                l[a] = x[pos[a]];
                ld[a] = x[f + pos[a]];
                ss += l[a] * l[a];
                sv += l[a] * ld[a];
            }
        if (!(ss < 1.0))
            return j;
        double cd = sqrt(1.0 - ss);
        l[d] = r[4] * cd;
        ld[d] = -r[4] * sv / cd;
        me_qmul(r, l, p);
        me_qmul(r, ld, pd);
        for (int a = 0; a < 4; a++)
            if (a != d) {
                qi[pos[a]] = p[a];
                qdi[pos[a]] = pd[a];
            }
        qi[f + j] = p[d];
        qdi[f + j] = pd[d];
    }
    return -1;
}

/* the smallest |l_d| of the charts at the engine's state (1 without charts) */
static double me_chart_min(const MeCtx *c, const MbEngine *e)
{
    double m = 1.0;
    for (int j = 0; j < c->nch; j++) {
        double l[4];
        me_qcmul(c->chart + ME_CHART_REC * j, e->y + c->ch_o[j], l);
        m = fmin(m, fabs(l[c->ch_d[j]]));
    }
    return m;
}

/* The context for the partition (f, ind), made at the first call (or when the partition
 * differs from the last one); NULL with a message when the arguments are wrong. */
static MeCtx *me_ctx(MbEngine *e, int f, const int *ind, char *err, size_t errlen)
{
    MeCtx *c = (MeCtx *)e->me;
    if (c && c->f == f && (f == 0 || memcmp(c->ind, ind, sizeof(int) * (size_t)f) == 0))
        return c;
    me_free(e);
    c = calloc(1, sizeof *c);
    if (!c) {
        msg(err, errlen, "model exchange: out of memory");
        return NULL;
    }
    c->f = f;
    c->ind = malloc(sizeof(int) * (size_t)(f + 1));
    c->y = malloc(sizeof(double) * (size_t)(2 * e->n + 1));
    c->rec = malloc(sizeof(double) * (size_t)(e->nrec * e->ncon + 1));
    c->qdd0 = malloc(sizeof(double) * (size_t)(e->n + 1));
    c->qdd_y = malloc(sizeof(double) * (size_t)(2 * e->n + 1));
    c->u = calloc((size_t)e->ni + 1, sizeof(double));
    c->zt = calloc(2 * (size_t)e->ncon + 1, sizeof(double));
    c->zn = calloc(2 * (size_t)e->ncon + 1, sizeof(int));
    c->cond = 1.0;
    if (!c->ind || !c->y || !c->rec || !c->qdd0 || !c->qdd_y || !c->u || !c->zt || !c->zn) {
        msg(err, errlen, "model exchange: out of memory");
        free(c->ind);
        free(c->y);
        free(c->rec);
        free(c->zt);
        free(c->zn);
        free(c->qdd0);
        free(c->qdd_y);
        free(c->u);
        free(c);
        return NULL;
    }
    if (f > 0)
        memcpy(c->ind, ind, sizeof(int) * (size_t)f);
    e->me = c;
    if (!me_charts(c, e, f, ind)) {
        msg(err, errlen, "model exchange: out of memory");
        me_free(e);
        return NULL;
    }
    if (!lin_init(&c->L, e, c->f_ext, c->ind_ext, err, errlen)) {
        me_free(e);
        return NULL;
    }
    size_t n = (size_t)e->n, nr = (size_t)c->L.nr, m = (size_t)c->L.ndep;
    c->Dq0 = malloc(sizeof(double) * (nr * n + 1));
    c->R = malloc(sizeof(double) * (m * m + 1));
    c->r = malloc(sizeof(double) * (nr + 1));
    c->s = malloc(sizeof(double) * (m + 1));
    c->vres = malloc(sizeof(double) * (nr + 1));
    c->G = malloc(sizeof(double) * (m * nr + 1));
    c->P = malloc(sizeof(double) * (m * (size_t)c->f_ext + 1));
    c->act = malloc(sizeof(int) * (nr + 1));
    c->Gv = malloc(sizeof(double) * (m * nr + 1));
    c->Gr = malloc(sizeof(int) * (m * nr + 1));
    c->Gs = malloc(sizeof(int) * (m + 1));
    if (!c->Dq0 || !c->R || !c->r || !c->s || !c->vres || !c->G || !c->P ||
        !c->act || !c->Gv || !c->Gr || !c->Gs) {
        msg(err, errlen, "model exchange: out of memory");
        me_free(e);
        return NULL;
    }
    c->kfast = e->kind == 0 && e->nd == 0 && e->m > 0 && m > 0;
    for (int r = 0; c->kfast && r < e->m; r++) {
        int kind = IA(e, A_IRI)[3 * r];
        c->kfast = kind == R_PX || kind == R_PY || kind == R_ANG || kind == R_PRJ ||
                   kind == R_DST;
    }
    if (c->kfast) {
        size_t mk = (size_t)e->m;
        c->mk = e->m;
        c->kphi = malloc(sizeof(double) * (mk + 1));
        c->kDq = malloc(sizeof(double) * (mk * n + 1));
        c->kR = malloc(sizeof(double) * (m * m + 1));
        c->kb = malloc(sizeof(double) * (mk + n + 1));
        c->g2 = malloc(sizeof(double) * (m + 1));
        c->g2p = malloc(sizeof(double) * (m + 1));
        if (!c->kphi || !c->kDq || !c->kR || !c->kb || !c->g2 || !c->g2p) {
            msg(err, errlen, "model exchange: out of memory");
            me_free(e);
            return NULL;
        }
    }
    return c;
}

/* The partition's condition of the rows' Jacobian Dq (nr x n): the smallest Cholesky pivot
 * of Dd' Dd (Dd: the columns dep of Dq) over the largest column norm of Dq, its Cholesky
 * factor in N (m x m, lower); 1 without dependent coordinates, 0 when Dd' Dd is not
 * positive definite. */
static double me_chol(const double *Dq, int nr, int n, const int *dep, int m, double *N)
{
    if (m == 0 || nr == 0)
        return 1.0;
    double cmax = 0.0;
    for (int j = 0; j < n; j++) {
        double s = 0.0;
        for (int r = 0; r < nr; r++)
            s += Dq[(size_t)r * n + j] * Dq[(size_t)r * n + j];
        cmax = fmax(cmax, s);
    }
    for (int a = 0; a < m; a++)             /* Dd' Dd, then its Cholesky factor in place */
        for (int b = 0; b <= a; b++) {
            double v = 0.0;
            for (int r = 0; r < nr; r++)
                v += Dq[(size_t)r * n + dep[a]] * Dq[(size_t)r * n + dep[b]];
            N[a * m + b] = v;
        }
    double pmin = INFINITY;
    for (int j = 0; j < m; j++) {
        double s = N[j * m + j];
        for (int i = 0; i < j; i++)
            s -= N[j * m + i] * N[j * m + i];
        if (!(s > 0.0))
            return 0.0;
        double d = sqrt(s);
        N[j * m + j] = d;
        pmin = fmin(pmin, d);
        for (int r = j + 1; r < m; r++) {
            double t = N[r * m + j];
            for (int i = 0; i < j; i++)
                t -= N[r * m + i] * N[j * m + i];
            N[r * m + j] = t / d;
        }
    }
    return cmax > 0.0 ? pmin / sqrt(cmax) : 0.0;
}

/* me_chol of the rows' Jacobian L->Dq of the last lin_close or lin_rows, into c->R */
static double me_condition(MeCtx *c)
{
    Lin *L = &c->L;
    return me_chol(L->Dq, L->nr, L->e->n, L->dep, L->ndep, c->R);
}

/* fmax(a, b) without the call (NaN: the other one, as fmax) */
static double me_max(double a, double b)
{
    return (b > a || a != a) ? b : a;
}

/* A vector of a pair's rows and its rate: v as engine_spatial.h's vterm computes it (the same
 * operations, so the same numbers), d its time derivative along the bodies' rates xd (7 per
 * body: r', p'; NULL or the ground b >= nb: 0). d(A(p) s)/dt from A(p) s = a s + 2 (e.s) e +
 * 2 e0 (e x s), a = e0^2 - e.e, differentiated along p' = (e0', e'). */
typedef struct {
    double v[3], d[3];
} MeVec;

static void me_vec(const double *xe, const double *xd, int nb, int b, const double *s,
                   int point, MeVec *t)
{
    const double *r = xe + 7 * b, *p = r + 3;
    double e0 = p[0], e1 = p[1], e2 = p[2], e3 = p[3];      /* q_rotate's operations */
    double ee = e1 * e1 + e2 * e2 + e3 * e3, es = e1 * s[0] + e2 * s[1] + e3 * s[2];
    double cx = e2 * s[2] - e3 * s[1], cy = e3 * s[0] - e1 * s[2], cz = e1 * s[1] - e2 * s[0];
    double a = e0 * e0 - ee;
    double As[3] = {a * s[0] + 2.0 * es * e1 + 2.0 * e0 * cx,
                    a * s[1] + 2.0 * es * e2 + 2.0 * e0 * cy,
                    a * s[2] + 2.0 * es * e3 + 2.0 * e0 * cz};
    for (int i = 0; i < 3; i++)
        t->v[i] = point ? r[i] + As[i] : As[i];
    if (!xd || b >= nb) {
        t->d[0] = t->d[1] = t->d[2] = 0.0;
        return;
    }
    const double *rd = xd + 7 * b, *pd = rd + 3;
    double f0 = pd[0], f1 = pd[1], f2 = pd[2], f3 = pd[3];
    double fs = f1 * s[0] + f2 * s[1] + f3 * s[2];
    double ad = 2.0 * (e0 * f0 - (e1 * f1 + e2 * f2 + e3 * f3));
    double dx = f2 * s[2] - f3 * s[1], dy = f3 * s[0] - f1 * s[2], dz = f1 * s[1] - f2 * s[0];
    t->d[0] = (point ? rd[0] : 0.0) + ad * s[0] + 2.0 * (fs * e1 + es * f1) +
              2.0 * (f0 * cx + e0 * dx);
    t->d[1] = (point ? rd[1] : 0.0) + ad * s[1] + 2.0 * (fs * e2 + es * f2) +
              2.0 * (f0 * cy + e0 * dy);
    t->d[2] = (point ? rd[2] : 0.0) + ad * s[2] + 2.0 * (fs * e3 + es * f3) +
              2.0 * (f0 * cz + e0 * dz);
}

/* axis i of the joint frame on side 0 (parent) or 1 (child), as engine_spatial.h's axis3 */
static void me_axis(const Frames3 *f, const double *xd, int nb, int side, int i, MeVec *t)
{
    const double *F = side ? f->Fc : f->Fp;
    double a[3] = {F[i], F[3 + i], F[6 + i]};
    me_vec(f->xe, xd, nb, side ? f->c : f->p, a, 0, t);
}

/* a . b and its rate (the value as vdot's) */
static void me_dot(const MeVec *a, const MeVec *b, double *v, double *d)
{
    *v = a->v[0] * b->v[0] + a->v[1] * b->v[1] + a->v[2] * b->v[2];
    *d = (a->d[0] * b->v[0] + a->d[1] * b->v[1] + a->d[2] * b->v[2]) +
         (a->v[0] * b->d[0] + a->v[1] * b->d[1] + a->v[2] * b->d[2]);
}

static void me_adot(const Frames3 *f, const double *xd, int nb, int s1, int i1, int s2,
                    int i2, double *v, double *d)
{
    MeVec a, b;
    me_axis(f, xd, nb, s1, i1, &a);
    me_axis(f, xd, nb, s2, i2, &b);
    me_dot(&a, &b, v, d);
}

/* engine_spatial.h's joint_terms without the Jacobians: the rows' values v (the same numbers)
 * and their rates d along the bodies' rates xd (the Jacobian rows times xd, to round-off);
 * their count, -1 when undefined */
static int me_joint_rows(int kind, const Frames3 *f, const double *xd, int nb, double length,
                         double *v, double *d)
{
    int k = 0;
    MeVec pc, pp, dv, a;
    me_vec(f->xe, xd, nb, f->c, f->sc, 1, &pc);
    me_vec(f->xe, xd, nb, f->p, f->sp, 1, &pp);
    for (int i = 0; i < 3; i++) {
        dv.v[i] = pc.v[i] - pp.v[i];
        dv.d[i] = pc.d[i] - pp.d[i];
    }
    if (kind == SJ_SPH || kind == SJ_REV || kind == SJ_UNI || kind == SJ_WELD)
        for (int i = 0; i < 3; i++, k++) {
            v[k] = dv.v[i];
            d[k] = dv.d[i];
        }
    if (kind == SJ_CYL || kind == SJ_PRI) {
        me_axis(f, xd, nb, 0, 0, &a);
        me_dot(&a, &dv, v + k, d + k);
        k++;
        me_axis(f, xd, nb, 0, 1, &a);
        me_dot(&a, &dv, v + k, d + k);
        k++;
    }
    if (kind == SJ_REV || kind == SJ_CYL || kind == SJ_PRI || kind == SJ_WELD) {
        me_adot(f, xd, nb, 0, 0, 1, 2, v + k, d + k);
        k++;
        me_adot(f, xd, nb, 0, 1, 1, 2, v + k, d + k);
        k++;
    }
    if (kind == SJ_PRI || kind == SJ_WELD) {
        me_adot(f, xd, nb, 0, 0, 1, 1, v + k, d + k);
        k++;
    }
    if (kind == SJ_UNI) {
        me_adot(f, xd, nb, 0, 2, 1, 2, v + k, d + k);
        k++;
    }
    if (kind == SJ_DST) {
        double l = sqrt(dv.v[0] * dv.v[0] + dv.v[1] * dv.v[1] + dv.v[2] * dv.v[2]);
        if (!(l > 0.0))
            return -1;
        double u[3] = {dv.v[0] / l, dv.v[1] / l, dv.v[2] / l};
        v[k] = l - length;
        d[k] = u[0] * dv.d[0] + u[1] * dv.d[1] + u[2] * dv.d[2];
        k++;
    }
    return k;
}

/* me_rows of a spatial model: the rows of the cut joints, the drives and the bodies' and the
 * tree's Euler-parameter normalisations; the tree joints' rows vanish at x = T(q) for every q
 * (their phi and rate are 0 here, as lin_rows's Jacobian rows of them are). The cut joints'
 * rates come from me_joint_rows (no Jacobians: they are the cost of a closure's pass) */
static int me_rows_spatial(MeCtx *c, const double *q, const double *qd)
{
    Lin *L = &c->L;
    MbEngine *e = L->e;
    int nb = e->nb, nrm = e->nrows, r0 = nrm - nb;
    double *phi = L->phi, *v = c->vres, *xe = e->xe;
    const double *xd = L->xd;
    if (sk_poses(e->kern, q, qd ? qd : L->zero, L->x, L->xd) != OK)
        return 1;
    sextend(e, L->x, xe, 0);
    for (int r = 0; r < nrm; r++) {
        phi[r] = 0.0;
        v[r] = 0.0;
    }
    for (int j = 0; j < e->nj; j++) {
        const int *J = IA(e, A_IJOINT) + 6 * j;
        if (J[3] >= 0)                      /* a tree joint */
            continue;
        Frames3 fr;
        joint_frames(e, j, xe, &fr);
        double jv[6], jd[6];
        int k = me_joint_rows(J[0], &fr, qd ? xd : NULL, nb, DA(e, A_DJOINT)[SJD * j + 24],
                              jv, jd);
        if (k != J[5])
            return 1;
        for (int r = 0; r < k; r++) {
            phi[J[4] + r] = jv[r];
            v[J[4] + r] = jd[r];
        }
    }
    for (int d = 0; d < e->nd; d++) {
        int j = IA(e, A_ISDJ)[2 * d], row = IA(e, A_ISDJ)[2 * d + 1];
        int rev = IA(e, A_IJOINT)[6 * j] == SJ_REV;
        Frames3 fr;
        STerm tc;
        double s[3];
        joint_frames(e, j, xe, &fr);
        coord_term(rev ? SC_REV : SC_PRI, &fr, &tc);
        spatial_law(e, d, L->t, s);
        double res = tc.v - s[0];
        phi[row] = rev ? pymod(res + PI, 2.0 * PI) - PI : res;
        double w = -s[1];
        for (int i = 0; qd && i < 7; i++) {
            if (fr.p < nb)
                w += tc.J[i] * xd[7 * fr.p + i];
            if (fr.c < nb)
                w += tc.J[7 + i] * xd[7 * fr.c + i];
        }
        v[row] = w;
    }
    for (int b = 0; b < nb; b++) {
        const double *p = L->x + 7 * b + 3, *pd = xd + 7 * b + 3;
        phi[r0 + b] = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3]) - 1.0;
        v[r0 + b] = qd ? 2.0 * (p[0] * pd[0] + p[1] * pd[1] + p[2] * pd[2] + p[3] * pd[3]) : 0;
    }
    int k = 0;
    for (int row = 0; row < nb; row++) {    /* the tree's normalisations (spatial_tree_norms) */
        const int *R = IA(e, A_ISRI) + SRI * row;
        if (R[0] != 3 && R[0] != 4)
            continue;
        int o = R[3] + (R[0] == 4 ? 3 : 0);
        const double *p = q + o;
        phi[nrm + k] = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3]) - 1.0;
        v[nrm + k] = qd ? 2.0 * (p[0] * qd[o] + p[1] * qd[o + 1] + p[2] * qd[o + 2] +
                                 p[3] * qd[o + 3]) : 0.0;
        k++;
    }
    c->phimax = absmax(phi, L->nr);
    c->vmax = qd ? absmax(v, L->nr) : 0.0;
    return isfinite(c->phimax) && isfinite(c->vmax) ? 0 : 1;
}

/* phi (L->phi, the nr rows) at q and, with qd, the velocity residual Dq qd + phi_t (c->vres):
 * one kinematics pass; their largest entries c->phimax, c->vmax; 0 on success (all finite) */
static int me_rows(MeCtx *c, const double *q, const double *qd)
{
    Lin *L = &c->L;
    MbEngine *e = L->e;
    if (e->kind)
        return me_rows_spatial(c, q, qd);
    int nr = e->nrows, nc = 3 * e->nb;
    if (lin_kinematics(e, q, qd ? qd : L->zero, L->x, L->xd) != OK ||
        model_rows(e, L->x, L->t, e->phi, e->phit, qd ? e->D : NULL) != OK)
        return 1;
    memcpy(L->phi, e->phi, sizeof(double) * (size_t)nr);
    c->vmax = 0.0;
    if (qd) {
        for (int r = 0; r < nr; r++) {
            double v = e->phit[r];
            for (int i = 0; i < nc; i++)
                v += e->D[(size_t)r * nc + i] * L->xd[i];
            c->vres[r] = v;
        }
        c->vmax = absmax(c->vres, nr);
        if (!isfinite(c->vmax))
            return 1;
    }
    c->phimax = absmax(L->phi, nr);
    return isfinite(c->phimax) ? 0 : 1;
}

/* s = -(Dd' Dd)^-1 Dd' b (b: nr rows) by the Cholesky factor R of me_chol */
static void me_chol_solve(const double *Dq, int nr, int n, const int *dep, int m,
                          const double *R, const double *b, double *s)
{
    for (int a = 0; a < m; a++) {
        double v = 0.0;
        for (int r = 0; r < nr; r++)
            v += Dq[(size_t)r * n + dep[a]] * b[r];
        s[a] = v;
    }
    for (int a = 0; a < m; a++) {           /* R y = s, then R' z = y */
        double v = s[a];
        for (int k = 0; k < a; k++)
            v -= R[a * m + k] * s[k];
        s[a] = v / R[a * m + a];
    }
    for (int a = m - 1; a >= 0; a--) {
        double v = s[a];
        for (int k = a + 1; k < m; k++)
            v -= R[k * m + a] * s[k];
        s[a] = v / R[a * m + a];
    }
    for (int a = 0; a < m; a++)
        s[a] = -s[a];
}

/* c->s = -(Dd0' Dd0)^-1 Dd0' b by the Cholesky factor R */
static void me_solve(MeCtx *c, const double *b)
{
    Lin *L = &c->L;
    me_chol_solve(c->Dq0, L->nr, L->e->n, L->dep, L->ndep, c->R, b, c->s);
}

/* the chord step of the dependent coordinates for rows b: s = G b (over G's nonzeros, in
 * column order: the sums of the dense product less its exact zeros) */
static void me_chord(MeCtx *c, const double *b)
{
    int m = c->L.ndep;
    for (int a = 0; a < m; a++) {
        double v = 0.0;
        for (int j = c->Gs[a]; j < c->Gs[a + 1]; j++)
            v += c->Gv[j] * b[c->Gr[j]];
        c->s[a] = v;
    }
}

/* one chord step of the positions for rows b and one of the rates for rows bd: L->q and L->qd
 * of the dependent coordinates += G b, G bd (me_chord's sums, one pass over G) */
static void me_chord2(MeCtx *c, const double *b, const double *bd)
{
    Lin *L = &c->L;
    int m = L->ndep;
    for (int a = 0; a < m; a++) {
        double v = 0.0, w = 0.0;
        for (int j = c->Gs[a]; j < c->Gs[a + 1]; j++) {
            v += c->Gv[j] * b[c->Gr[j]];
            w += c->Gv[j] * bd[c->Gr[j]];
        }
        L->q[L->dep[a]] += v;
        L->qd[L->dep[a]] += w;
    }
}

/* Dq0 := L->Dq (the rows' Jacobian just computed), its condition, factor, G and P; c->have */
static void me_refresh(MeCtx *c)
{
    Lin *L = &c->L;
    int n = L->e->n, nr = L->nr, m = L->ndep, f = L->f;
    memcpy(c->Dq0, L->Dq, sizeof(double) * (size_t)nr * n);
    c->cond = me_condition(c);
    c->have = c->cond > 0.0;
    if (!c->have)
        return;
    c->nact = 0;
    for (int r = 0; r < nr; r++) {
        int any = 0;
        for (int j = 0; j < n && !any; j++)
            any = c->Dq0[(size_t)r * n + j] != 0.0;
        if (any)
            c->act[c->nact++] = r;
    }
    int na = c->nact;
    for (int k = 0; k < na; k++) {
        for (int r = 0; r < nr; r++)
            c->r[r] = r == c->act[k];
        me_solve(c, c->r);
        for (int a = 0; a < m; a++)
            c->G[(size_t)a * na + k] = c->s[a];
    }
    int nz = 0;
    for (int a = 0; a < m; a++) {
        c->Gs[a] = nz;
        for (int k = 0; k < na; k++)
            if (c->G[(size_t)a * na + k] != 0.0) {
                c->Gv[nz] = c->G[(size_t)a * na + k];
                c->Gr[nz++] = c->act[k];
            }
    }
    c->Gs[m] = nz;
    for (int a = 0; a < m; a++)
        for (int k = 0; k < f; k++) {
            double v = 0.0;
            for (int j = 0; j < na; j++)
                v += c->G[(size_t)a * na + j] * c->Dq0[(size_t)c->act[j] * n + L->ind[k]];
            c->P[(size_t)a * f + k] = v;
        }
}

#define ME_CHORD_IT 8             /* chord iterations before a full Newton closure */
#define ME_CHORD_COND 1e-2        /* a partition's condition below: no chord (its step G is
                                     large), the trajectory predictor and Newton instead */

/* The time tau for which the last solution's motion q0 + qd0 tau + qdd0 tau^2 / 2 best
 * reaches the independent qi (least squares, Gauss-Newton from tau = qd0_i . dq_i /
 * |qd0_i|^2): 0 when there is no motion to follow (no accelerations of this state from
 * mbe_me_derivatives, at rest, or qi off the motion by more than 1e-3 of the move) */
static int me_tau(MeCtx *c, const double *qi, const double *qd0, double *tau_out)
{
    Lin *L = &c->L;
    int f = L->f, n = L->e->n;
    const double *q0 = L->q0, *a0 = c->qdd0;
    if (!c->have_qdd || memcmp(c->qdd_y, q0, sizeof(double) * (size_t)n) != 0 ||
        memcmp(c->qdd_y + n, qd0, sizeof(double) * (size_t)n) != 0)
        return 0;
    double vv = 0.0, vd = 0.0;
    for (int k = 0; k < f; k++) {
        int j = L->ind[k];
        vv += qd0[j] * qd0[j];
        vd += qd0[j] * (qi[k] - q0[j]);
    }
    if (!(vv > 0.0))
        return 0;
    double tau = vd / vv;
    for (int it = 0; it < 3; it++) {
        double jr = 0.0, jj = 0.0;
        for (int k = 0; k < f; k++) {
            int j = L->ind[k];
            double r = qd0[j] * tau + 0.5 * a0[j] * tau * tau - (qi[k] - q0[j]);
            double d = qd0[j] + a0[j] * tau;
            jr += d * r;
            jj += d * d;
        }
        if (!(jj > 0.0))
            return 0;
        tau -= jr / jj;
    }
    double rr = 0.0, dd = 0.0;              /* the motion must reach qi: a fit to 1e-3 */
    for (int k = 0; k < f; k++) {
        int j = L->ind[k];
        double r = qd0[j] * tau + 0.5 * a0[j] * tau * tau - (qi[k] - q0[j]);
        rr += r * r;
        dd += (qi[k] - q0[j]) * (qi[k] - q0[j]);
    }
    *tau_out = tau;
    return isfinite(tau) && rr <= 1e-6 * dd;
}

#define ME_CHORD_SMALL 1e-14      /* a predicted residual this small takes one chord step */
#define ME_TINY_MOVE 1e-12        /* a move of the states below: full Newton (me_close) */

/* dd = -(Dd' Dd)^+ Dd' b (L->dd) with the eigenvalues of Dd' Dd below PROJECTION_RTOL times
 * the largest cut off: the minimum-norm step of the dependent coordinates for rows b, which
 * leaves alone only the directions that the rows do not fix to round-off */
static int me_dep_solve(Lin *L, const double *b)
{
    int m = L->ndep;
    lin_dep_normal(L, b);
    return dense_psd_solve_n(L->N, L->V, L->w, m, NULL, NULL, 0, PROJECTION_RTOL, 1, L->g,
                             L->dd) == OK && all_finite(L->dd, m) ? 0 : 1;
}

#define ME_BRANCH_IT 40           /* Newton iterations of the closure near a dead point */
#define ME_RATE_IT 4              /* ... and corrections of its rates, at most */

/* The accelerations qdd at (t, q, qd) with inputs u for model exchange: near a dead point
 * (the partition's condition below ME_CHORD_COND) the loop rows solved by QR (kernel.c's
 * mbk_accelerations_qr, spatial_kernel.c's sk_accelerations_qr: dense_qr.h), whose rank
 * decision is on the rows' own singular values, not on their squares as the Schur solve's
 * cut-off (which drops the rows that are becoming dependent there, so that the accelerations
 * violate their acceleration equations); elsewhere, or with persistent contacts, the kernel's
 * own solve (lin_accelerations), the same accelerations where S is regular */
static int me_accelerations(const MeCtx *c, double t, const double *q, const double *qd,
                            const double *u, double *qdd)
{
    MbEngine *e = c->L.e;
    int rank = 0;
    if (!(e->n > c->f && c->cond < ME_CHORD_COND))
        return lin_accelerations(e, t, q, qd, u, qdd);
    for (int i = 0; e->ev && i < e->ncon; i++)
        if (e->rec[EV_REC * i + 4] != 0.0)
            return lin_accelerations(e, t, q, qd, u, qdd);
    if (e->kind) {
        sk_set_time(e->kern, t);
        return sk_accelerations_qr(e->kern, q, qd, u, qdd, &rank);
    }
    return mbk_accelerations_qr(e->kern, t, q, qd, u, qdd, &rank);
}

/* The closed state (L->q, L->qd) of (qi, qdi) near a singular partition (a dead point, where
 * the loops' branches meet and the rows' Jacobian of the dependent coordinates loses rank):
 * the branch the motion follows. Newton starts from the last solution moved along its motion
 * (q0 + qd0 tau + qdd0 tau^2 / 2 to me_tau's time, else the last solution) and takes
 * minimum-norm steps (me_dep_solve): they correct the start where the rows fix it and keep it
 * in the directions that the rows no longer fix (at the dead point itself), so the closure
 * stays on the branch of the start. The rates likewise: the rates of the motion at tau plus
 * the minimum-norm correction onto Dq qd + phi_t = 0 (velocity continuity: at the dead point
 * the rows leave the rates along the other branch free, and the motion's are kept). 0 on
 * success, 1 when Newton does not reach the rows' round-off. */
static int me_close_branch(MeCtx *c, const double *qi, const double *qdi, const double *qd0)
{
    Lin *L = &c->L;
    int n = L->e->n, nr = L->nr, f = L->f, m = L->ndep;
    double tau = 0.0;
    int moved = me_tau(c, qi, qd0, &tau);
    if (!moved && !(c->have_qdd && memcmp(c->qdd_y, L->q0, sizeof(double) * (size_t)n) == 0 &&
                    memcmp(c->qdd_y + n, qd0, sizeof(double) * (size_t)n) == 0)) {
        /* the motion's accelerations at the last solution (with the last inputs) */
        if (me_accelerations(c, L->t, L->q0, qd0, c->u, c->qdd0) == OK &&
            all_finite(c->qdd0, n)) {
            memcpy(c->qdd_y, L->q0, sizeof(double) * (size_t)n);
            memcpy(c->qdd_y + n, qd0, sizeof(double) * (size_t)n);
            c->have_qdd = 1;
            moved = me_tau(c, qi, qd0, &tau);
        }
    }
    memcpy(L->q, L->q0, sizeof(double) * (size_t)n);
    memcpy(L->qd, qd0, sizeof(double) * (size_t)n);
    for (int a = 0; moved && a < m; a++) {
        int j = L->dep[a];
        L->q[j] += qd0[j] * tau + 0.5 * c->qdd0[j] * tau * tau;
        L->qd[j] += c->qdd0[j] * tau;
    }
    for (int k = 0; k < f; k++) {
        L->q[L->ind[k]] = qi[k];
        L->qd[L->ind[k]] = qdi[k];
    }
    double scale = 1.0 + absmax(L->q, n), prev = INFINITY, res = INFINITY;
    for (int it = 0;; it++) {
        if (lin_rows(L, L->q))
            return 1;
        res = absmax(L->phi, nr);
        if (res <= 1e-15 * scale || (it > 2 && res >= 0.5 * prev) || it == ME_BRANCH_IT)
            break;
        prev = res;
        if (me_dep_solve(L, L->phi))
            return 1;
        for (int a = 0; a < m; a++)
            L->q[L->dep[a]] += L->dd[a];
    }
    if (!(res <= PROJECTION_ACCEPT * scale))
        return 1;
    /* the rates: minimum-norm corrections onto Dq qd + phi_t = 0, repeated while the residual
     * falls (the normal equations' solve leaves an error of the square of Dd's condition times
     * the round-off in the directions that the rows are about to lose, which the accelerations
     * there amplify by 1 / sigma_min(Dd)^2: each repetition multiplies it by that error) */
    prev = INFINITY;
    for (int it = 0; it < ME_RATE_IT; it++) {
        for (int r = 0; r < nr; r++) {      /* the rates' residual Dq qd + phi_t */
            double v = L->phit[r];
            for (int j = 0; j < n; j++)
                v += L->Dq[(size_t)r * n + j] * L->qd[j];
            L->phi[r] = v;
        }
        res = absmax(L->phi, nr);
        if (it > 0 && !(res < 0.5 * prev))
            break;
        prev = res;
        if (me_dep_solve(L, L->phi))
            return 1;
        for (int a = 0; a < m; a++)
            L->qd[L->dep[a]] += L->dd[a];
    }
    return 0;
}

/* The start of the closure (L->q, L->qd) of (qi, qdi) from the last solution L->q0, qd0
 * its rates, with the tangent predictor P of the last solution's Jacobian (c->have): dq_d =
 * P dq_i, dqd_d = P dqd_i, and along the last solution's motion (me_tau) its curvature
 * k = qdd0_d - P qdd0_i: + k tau^2 / 2, + k tau (second order along the motion, first order
 * in any other direction) */
static void me_predict(MeCtx *c, const double *qi, const double *qdi, const double *qd0)
{
    Lin *L = &c->L;
    int n = L->e->n, f = L->f, m = L->ndep;
    memcpy(L->q, L->q0, sizeof(double) * (size_t)n);
    memcpy(L->qd, qd0, sizeof(double) * (size_t)n);
    if (c->have) {
        double tau = 0.0;
        int curved = me_tau(c, qi, qd0, &tau);
        for (int a = 0; a < m; a++) {
            const double *Pa = c->P + (size_t)a * f;
            double v = 0.0, w = 0.0, k = curved ? c->qdd0[L->dep[a]] : 0.0;
            for (int i = 0; i < f; i++) {
                v += Pa[i] * (qi[i] - L->q0[L->ind[i]]);
                w += Pa[i] * (qdi[i] - qd0[L->ind[i]]);
                if (curved)
                    k -= Pa[i] * c->qdd0[L->ind[i]];
            }
            L->q[L->dep[a]] += v + 0.5 * k * tau * tau;
            L->qd[L->dep[a]] += w + k * tau;
        }
    }
    for (int k = 0; k < f; k++) {
        L->q[L->ind[k]] = qi[k];
        L->qd[L->ind[k]] = qdi[k];
    }
}

/* The start of the closure (L->q, L->qd) of (qi, qdi) for one independent coordinate (f = 1,
 * c->have): the Taylor series of the closure map q_d = g(q_i) at the last solution q0 to
 * third order in dq = qi - q0_i: g0 + P dq + g2 dq^2 / 2 + g3 dq^3 / 6, and its rates
 * (P + g2 dq + g3 dq^2 / 2) qdi. g2 from the motion's accelerations there (qdd_d = P qdd_i +
 * g2 qd_i^2), g3 by the difference of g2 from the solution before (when it is at least
 * dq / 4 away; else the series to second order); me_predict's start when the accelerations
 * at q0 are not known or the series' terms do not fall (ME_SERIES). */
#define ME_SERIES 0.1             /* me_predict_one's terms, at most, relative to 1 + |P| */

static void me_predict_one(MeCtx *c, const double *qi, const double *qdi, const double *qd0)
{
    Lin *L = &c->L;
    int n = L->e->n, m = L->ndep, i0 = L->ind[0];
    double v = qd0[i0], dq = qi[0] - L->q0[i0];
    if (!c->have_qdd || !(v != 0.0) || memcmp(c->qdd_y, L->q0, sizeof(double) * (size_t)n) != 0 ||
        memcmp(c->qdd_y + n, qd0, sizeof(double) * (size_t)n) != 0) {
        me_predict(c, qi, qdi, qd0);
        return;
    }
    if (!(c->have_g2 && c->g2q == L->q0[i0])) {       /* g2 at q0: the motion's curvature */
        if (c->have_g2) {
            memcpy(c->g2p, c->g2, sizeof(double) * (size_t)m);
            c->g2pq = c->g2q;
        }
        for (int a = 0; a < m; a++)
            c->g2[a] = (c->qdd0[L->dep[a]] - c->P[a] * c->qdd0[i0]) / (v * v);
        c->g2q = L->q0[i0];
        c->have_g2 = c->have_g2 ? 2 : 1;
    }
    /* the series' terms must fall: |g2 dq| and |g3 dq^2| below ME_SERIES (1 + |P|) (g2 from
     * a motion at rest, v at the round-off of a persistent contact, is the round-off of qdd
     * over v^2), else me_predict's start; a g3 that does not is left out */
    double span = c->g2q - c->g2pq, pmax = 1.0;
    int third = c->have_g2 == 2 && fabs(span) >= 0.25 * fabs(dq);
    for (int a = 0; a < m; a++)
        pmax = me_max(pmax, 1.0 + fabs(c->P[a]));
    for (int a = 0; a < m; a++) {
        if (!(fabs(c->g2[a] * dq) <= ME_SERIES * pmax)) {
            me_predict(c, qi, qdi, qd0);
            return;
        }
        if (third && !(fabs((c->g2[a] - c->g2p[a]) / span * dq * dq) <= ME_SERIES * pmax))
            third = 0;
    }
    memcpy(L->q, L->q0, sizeof(double) * (size_t)n);
    memcpy(L->qd, qd0, sizeof(double) * (size_t)n);
    for (int a = 0; a < m; a++) {
        double g3 = third ? (c->g2[a] - c->g2p[a]) / span : 0.0;
        int j = L->dep[a];
        L->q[j] += dq * (c->P[a] + dq * (0.5 * c->g2[a] + dq * g3 / 6.0));
        L->qd[j] = (c->P[a] + dq * (c->g2[a] + 0.5 * dq * g3)) * qdi[0];
    }
    L->q[i0] = qi[0];
    L->qd[i0] = qdi[0];
}

#define ME_NEWTON_IT 8            /* Newton iterations of me_close_kernel, at most */
#define ME_RATE_FIX 3             /* ... and solves of its rates */
#define ME_KEEP_RES 4e-16         /* rows within this times max(1, |Dq|) [m or rad] are
                                     closed as they are (Dq's entries: the lever arms [m]
                                     that carry the round-off of the angles) */

/* The closed state (L->q, L->qd) of (qi, qdi) of a planar model by Newton on the kernel's
 * loop rows (c->kfast: the model rows that do not vanish at every q), from me_predict's
 * start: per iteration one kinematics pass gives the rows and their Jacobian Dq at q
 * (mbk_loop_rows), and q_d += -(Dd' Dd)^-1 Dd' phi, until |phi| is at the round-off. The
 * closed positions are those of the last pass: a q whose rows are within ME_KEEP_RES (times
 * the largest entry of Dq, when above 1), or
 * else the step from the first q within the round-off of the coordinates' scale (4e-16 of
 * it), as Newton's last step, with one more pass there. So the last pass is at the closed
 * positions: the kernel keeps them for the accelerations of this state (mbk_loop_rows), and
 * the rates come from the rows' velocity equations Dq qd = 0 with that pass's Dq (linear
 * in qd_d: one solve, repeated while its residual falls above the round-off). c->P,
 * c->cond: the tangent and the condition of the last Dq. 0 on success; 1 (L->q, L->qd
 * undefined) when an iteration does not halve the residual, the condition falls below
 * ME_CHORD_COND or the rows cannot be evaluated. */
static int me_close_kernel(MeCtx *c, const double *qi, const double *qdi, const double *qd0)
{
    Lin *L = &c->L;
    MbEngine *e = L->e;
    int n = e->n, f = L->f, m = L->ndep, mk = c->mk, ok = 0;
    double cond = 0.0, prev = INFINITY, *s = c->s, *b = c->kb;
    if (f == 1 && c->have)
        me_predict_one(c, qi, qdi, qd0);
    else
        me_predict(c, qi, qdi, qd0);
    double scale = 1.0 + absmax(L->q, n), vscale = 1.0 + absmax(L->qd, n);
    for (int it = 0, last = 0; it < ME_NEWTON_IT; it++) {
        if (mbk_loop_rows(e->kern, L->q, c->kphi, c->kDq) != OK)
            return 1;
        double res = absmax(c->kphi, mk);
        cond = me_chol(c->kDq, mk, n, L->dep, m, c->kR);
        if (!isfinite(res) || !(cond >= ME_CHORD_COND))
            return 1;
        if (last || res <= ME_KEEP_RES ||
            res <= ME_KEEP_RES * me_max(1.0, absmax(c->kDq, mk * n))) {
            ok = 1;                         /* (last: the pass after Newton's last step) */
            break;
        }
        if (it > 0 && !(res < 0.5 * prev))
            return 1;
        me_chol_solve(c->kDq, mk, n, L->dep, m, c->kR, c->kphi, s);
        for (int a = 0; a < m; a++)
            L->q[L->dep[a]] += s[a];
        last = res <= 4e-16 * scale;
        prev = res;
    }
    if (!ok)
        return 1;
    prev = INFINITY;
    for (int it = 0; it < ME_RATE_FIX; it++) {
        for (int r = 0; r < mk; r++) {          /* the velocity residual Dq qd */
            const double *Dr = c->kDq + (size_t)r * n;
            double v = 0.0;
            for (int j = 0; j < n; j++)
                v += Dr[j] * L->qd[j];
            b[r] = v;
        }
        double res = absmax(b, mk);
        if (!isfinite(res) || res <= 4e-16 * vscale || (it > 0 && !(res < 0.5 * prev)))
            break;
        prev = res;
        me_chol_solve(c->kDq, mk, n, L->dep, m, c->kR, b, s);
        for (int a = 0; a < m; a++)
            L->qd[L->dep[a]] += s[a];
    }
    for (int k = 0; k < f; k++) {               /* the tangent P = -(Dd' Dd)^-1 Dd' Di */
        for (int r = 0; r < mk; r++)
            b[r] = c->kDq[(size_t)r * n + L->ind[k]];
        me_chol_solve(c->kDq, mk, n, L->dep, m, c->kR, b, s);
        for (int a = 0; a < m; a++)
            c->P[(size_t)a * f + k] = s[a];
    }
    c->have = 1;
    c->cond = cond;
    return 0;
}

/* The closed state (L->q, L->qd) of (qi, qdi) from the last solution L->q0 (the engine's
 * q), qd0 its rates: chord iterations with the rows' Jacobian of a recent solution (one
 * kinematics pass each), the tangent predictor first; lin_close's full Newton (and a new
 * Jacobian) when they do not converge fast. c->cond: the partition's condition of the
 * Jacobian in use. 0 on success. */
static int me_close(MeCtx *c, const double *qi, const double *qdi, const double *qd0)
{
    Lin *L = &c->L;
    MbEngine *e = L->e;
    int n = e->n, nr = L->nr, f = L->f, m = L->ndep, slow = 0;
    if (m == 0 || nr == 0) {
        c->cond = 1.0;
        return lin_close(L, qi, qdi);
    }
    /* a move below the round-off of the chord's result (a solver's difference quotient of a
     * state near zero): Newton, whose result does not depend on where it started, so that the
     * quotient sees the state's change, not the round-off of two closures (the accelerations
     * of a light link's spin amplify 1e-16 in q 1e3-fold) */
    double move = 0.0, size = 1.0;
    for (int k = 0; k < f; k++) {
        move = me_max(move, me_max(fabs(qi[k] - L->q0[L->ind[k]]),
                                   fabs(qdi[k] - qd0[L->ind[k]])));
        size = me_max(size, me_max(fabs(qi[k]), fabs(qdi[k])));
    }
    if (c->kfast && move > ME_TINY_MOVE * size && c->cond >= ME_CHORD_COND) {
        if (me_close_kernel(c, qi, qdi, qd0) == 0)
            return 0;
    } else if (c->have && move > ME_TINY_MOVE * size && c->cond >= ME_CHORD_COND) {
        me_predict(c, qi, qdi, qd0);
        double scale = 1.0 + absmax(L->q, n), vscale = 1.0 + absmax(L->qd, n);
        double prev = INFINITY;
        /* the predicted state's residuals (one kinematics pass with the rates): when both are
         * below ME_CHORD_SMALL, one chord step each leaves an error below ME_CHORD_SMALL times
         * the chord's contraction (~ |q - q0| |d Dq / dq| / sigma_min(Dd), small there) */
        if (me_rows(c, L->q, L->qd) == 0 && c->phimax <= ME_CHORD_SMALL * scale &&
            c->vmax <= ME_CHORD_SMALL * vscale) {
            me_chord2(c, L->phi, c->vres);
            return 0;
        }
        int ok = 0;
        for (int it = 0; it < ME_CHORD_IT; it++) {
            if (me_rows(c, L->q, NULL))
                break;
            double res = c->phimax;
            me_chord(c, L->phi);
            for (int a = 0; a < m; a++)
                L->q[L->dep[a]] += c->s[a];
            if (res <= 4e-16 * scale) {     /* (and the step from it: to round-off, as
                                               Newton's last step; the accelerations of a
                                               light link's spin amplify 1e-17 in q 1e4-fold) */
                ok = 1;
                slow |= it > 2;
                break;
            }
            if (it > 0 && !(res < 0.5 * prev))
                break;
            prev = res;
        }
        prev = INFINITY;
        for (int it = 0; ok && it < ME_CHORD_IT; it++) {
            if (me_rows(c, L->q, L->qd)) {
                ok = 0;
                break;
            }
            double res = c->vmax;
            me_chord(c, c->vres);
            for (int a = 0; a < m; a++)
                L->qd[L->dep[a]] += c->s[a];
            if (res <= 4e-16 * vscale) {
                slow |= it > 2;
                break;
            }
            if (it > 0 && !(res < 0.5 * prev)) {
                ok = 0;
                break;
            }
            prev = res;
            ok = it + 1 < ME_CHORD_IT;
        }
        if (ok && !slow)
            return 0;
        if (ok) {                           /* converged slowly: a new Jacobian here */
            if (lin_rows(L, L->q) == 0)
                me_refresh(c);
            return 0;
        }
    }
    if (c->cond < ME_CHORD_COND) {
        if (me_close_branch(c, qi, qdi, qd0))   /* near a dead point: along the motion */
            return 1;
    } else if (lin_close(L, qi, qdi))      /* full Newton from the last solution */
        return 1;
    me_refresh(c);
    return 0;
}

MbeStatus mbe_me_set_time(MbEngine *e, double t, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !e->initialized) {
        msg(err, errlen, "mbe_me_set_time: the engine is not initialized");
        return MBE_ERROR;
    }
    if (!isfinite(t)) {
        msg(err, errlen, "the time %g is not finite; expected a finite time [s]", t);
        return MBE_ERROR;
    }
    const MeCtx *c = (const MeCtx *)e->me;
    if (c && c->have_last && t < c->t_last)
        me_zeno_restart(e);               /* the host went back: the counts start again */
    e->t = t;
    return MBE_OK;
}

/* x (2 f): the states of the engine's state (the charts' slots their chart coordinates) */
void mbe_me_get_states(MbEngine *e, int f, const int *ind, double *x)
{
    char err[8];
    MeCtx *c = e && e->initialized ? me_ctx(e, f, ind, err, sizeof err) : NULL;
    if (c) {
        me_chart_ready(c, e);
        me_to_states(c, e->y, e->y + e->n, x);
        return;
    }
    for (int k = 0; e && k < f; k++) {
        x[k] = e->y[ind[k]];
        x[f + k] = e->y[e->n + ind[k]];
    }
}

MbeStatus mbe_me_set_states(MbEngine *e, int f, const int *ind, const double *x, char *err,
                            size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !e->initialized || (f > 0 && !x)) {
        msg(err, errlen, "mbe_me_set_states: the engine is not initialized, or no states");
        return MBE_ERROR;
    }
    for (int k = 0; k < 2 * f; k++)
        if (!(fabs(x[k]) <= MBE_STATE_LIMIT)) {
            msg(err, errlen, "continuous state %d is %g; expected a finite value with |x| <= "
                "%g", k, x[k], MBE_STATE_LIMIT);
            return MBE_ERROR;
        }
    MeCtx *c = me_ctx(e, f, ind, err, errlen);
    if (!c)
        return MBE_ERROR;
    me_chart_ready(c, e);
    int bad = me_from_states(c, x);
    if (bad >= 0) {
        const int *pos = c->ch_pos + 4 * bad;
        int d = c->ch_d[bad];
        msg(err, errlen, "the continuous states %d, %d and %d (the chart coordinates of the "
            "Euler parameters at coordinates %d..%d) have a sum of squares >= 1; expected < 1 "
            "(a unit quaternion's other three parameters)", pos[(d + 1) % 4], pos[(d + 2) % 4],
            pos[(d + 3) % 4], c->ch_o[bad], c->ch_o[bad] + 3);
        return MBE_ERROR;
    }
    Lin *L = &c->L;
    int n = e->n, fe = c->f_ext;
    L->t = e->t;
    memcpy(L->q0, e->y, sizeof(double) * (size_t)n);     /* Newton from the last solution */
    int failed = me_close(c, c->qx, c->qx + fe, e->y + n);
    double cond = failed ? 0.0 : c->cond;
    if (failed || !(cond >= ME_PARTITION_FAIL) || !all_finite(L->qd, n)) {
        c->have = 0;
        msg(err, errlen, "the dependent coordinates (of the closed loops, or the Euler "
            "parameter that the other three fix) cannot be found at t = %.9g s for these "
            "states: the independent ones chosen at initialisation %s (partition condition "
            "%.3g); "
            "model exchange cannot continue from here; use the co-simulation interface, whose "
            "integrator keeps every coordinate and projects", e->t,
            failed ? "do not determine the dependent ones here (Newton from the last solution "
                     "does not converge)" : "have become singular", cond);
        return MBE_ERROR;
    }
    memcpy(e->y, L->q, sizeof(double) * (size_t)n);
    memcpy(e->y + n, L->qd, sizeof(double) * (size_t)n);
    c->have_qdd = 0;                        /* (the accelerations of the new state: later) */
    return MBE_OK;
}

/* The context of a call at the engine's state with inputs u (ok: the array the call writes
 * is given), or NULL with a message naming fn */
static MeCtx *me_call(MbEngine *e, const char *fn, int ok, const double *u, int f,
                      const int *ind, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !e->initialized || !ok) {
        msg(err, errlen, "%s: the engine is not initialized, or no array", fn);
        return NULL;
    }
    if (!check_inputs(e, u, err, errlen))
        return NULL;
    return me_ctx(e, f, ind, err, errlen);
}

#define ME_ACC_STEP 1e-4           /* [s] the central difference of me_acc_residual, at most */
#define ME_ACC_MOVE 1e-3           /* ... and at most this move of a coordinate [m or rad] */
#define ME_ACC_TOL 1e-10           /* its largest residual, relative to 1 + |qdd| */

/* c->vres at q + qd s + qdd s^2 / 2, qd + qdd s, time t + s: 0 on success */
static int me_vres_along(MeCtx *c, double t, const double *q, const double *qd,
                         const double *qdd, double s)
{
    Lin *L = &c->L;
    int n = L->e->n;
    double *qs = c->y, *qds = c->y + n;
    for (int j = 0; j < n; j++) {
        qs[j] = q[j] + qd[j] * s + 0.5 * qdd[j] * s * s;
        qds[j] = qd[j] + qdd[j] * s;
    }
    L->t = t + s;
    return me_rows(c, qs, qds);
}

/* The rows' second time derivative along the motion (q, qd, qdd) at time t (zero when the
 * accelerations satisfy the rows' acceleration equations): the velocity residual
 * Dq qd + phi_t along q + qd s + qdd s^2 / 2, qd + qdd s, t + s differentiated at s = 0 by
 * central differences of steps h and h / 2 and Richardson's extrapolation (the error of
 * order h^4 of the rows' fifth derivative: the h^2 error of one difference, ~h^2 / 6 times
 * the motion's |qd|^4 scale, would exceed the tolerance where the rates are large); h:
 * ME_ACC_STEP, or less so that no coordinate moves more than ME_ACC_MOVE; round-off leaves
 * ~1e-16 / h of the rows' velocity scale. Its largest entry, or INFINITY when the rows cannot
 * be evaluated. */
static double me_acc_residual(MeCtx *c, double t, const double *q, const double *qd,
                              const double *qdd)
{
    Lin *L = &c->L;
    int n = L->e->n, nr = L->nr;
    double h = fmin(ME_ACC_STEP, ME_ACC_MOVE / (1.0 + absmax(qd, n)));
    double told = L->t, out = 0.0;
    double *d = malloc(sizeof(double) * (size_t)(2 * nr + 1)), *vp = d + nr;
    if (!d)
        return INFINITY;
    for (int k = 0; k < 2 && isfinite(out); k++) {
        double hk = k ? 0.5 * h : h;
        if (me_vres_along(c, t, q, qd, qdd, hk)) {
            out = INFINITY;
            break;
        }
        memcpy(vp, c->vres, sizeof(double) * (size_t)nr);
        if (me_vres_along(c, t, q, qd, qdd, -hk)) {
            out = INFINITY;
            break;
        }
        for (int r = 0; r < nr; r++) {
            double dk = (vp[r] - c->vres[r]) / (2.0 * hk);
            d[r] = k ? (4.0 * dk - d[r]) / 3.0 : dk;
        }
    }
    L->t = told;
    for (int r = 0; r < nr && isfinite(out); r++)
        out = fmax(out, fabs(d[r]));
    free(d);
    return out;
}

/* xdot (2 f): the derivatives of the states (qd_i, qdd_i; the charts' slots those of their
 * chart coordinates) at the engine's state (closed by mbe_me_set_states). Near a dead point
 * (the partition's condition below ME_CHORD_COND) the accelerations come from the QR solve
 * (me_accelerations) and are checked against the rows' acceleration equations
 * (me_acc_residual): accelerations that violate them would let the host's integration of the
 * states drift silently off the motion, so there the call is refused. */
MbeStatus mbe_me_derivatives(MbEngine *e, const double *u, int f, const int *ind, double *xdot,
                             char *err, size_t errlen)
{
    MeCtx *c = me_call(e, "mbe_me_derivatives", f == 0 || xdot, u, f, ind, err, errlen);
    if (!c)
        return MBE_ERROR;
    int n = e->n;
    const double *uu = e->ni ? u : e->u0;
    int rc = me_accelerations(c, e->t, e->y, e->y + n, uu, c->L.qdd);
    if (rc != OK || !all_finite(c->L.qdd, n)) {
        msg(err, errlen, "the accelerations at t = %.9g s cannot be computed: %s", e->t,
            rc != OK ? kernel_error(rc) : "not finite");
        return MBE_ERROR;
    }
    if (e->n > f && c->cond < ME_CHORD_COND) {
        double res = me_acc_residual(c, e->t, e->y, e->y + n, c->L.qdd);
        if (!(res <= ME_ACC_TOL * (1.0 + absmax(c->L.qdd, n)))) {
            msg(err, errlen, "at t = %.9g s the loops are near a dead point (partition "
                "condition %.3g): the accelerations violate the rows' acceleration equations "
                "by %.3g (the loops' rows are dependent to round-off here); model exchange "
                "cannot continue from here; use the co-simulation interface, whose integrator "
                "keeps every coordinate and projects", e->t, c->cond, res);
            return MBE_ERROR;
        }
    }
    me_chart_ready(c, e);
    me_to_states(c, e->y + n, c->L.qdd, xdot);
    if (e->ni)
        memcpy(c->u, uu, sizeof(double) * (size_t)e->ni);
    memcpy(c->qdd0, c->L.qdd, sizeof(double) * (size_t)n);
    memcpy(c->qdd_y, e->y, sizeof(double) * (size_t)(2 * n));
    c->have_qdd = 1;
    return MBE_OK;
}

/* The contacts' event indicators (the event loop's event values, event_loop.h
 * ev_event_values): one per contact (its gap in flight, its normal force while persistent);
 * with Coulomb friction (records of EV_REC_FR doubles) then one more per contact, its
 * friction value: mu f_n - |f_t| while sticking (stick -> slip where it crosses zero), the
 * slip velocity along the slip direction v_t . s0 while slipping (slip -> stick, or a
 * reversal), 1 otherwise. The phase set (persistent, sticking, s0 per contact) is the
 * records' (e->rec), discrete state of the instance that mbe_me_event's iteration updates
 * with the loop's transitions (ev_event_update_fr) and that the derivatives' constrained
 * solve uses (lin_accelerations: the event loop's phase kernel). */
static int me_n_contact_indicators(const MbEngine *e)
{
    return e->nrec > EV_REC ? 2 * e->ncon : e->ncon;
}

/* the number of event indicators: one per contact (two with friction), one for the partition
 * when the model has dependent coordinates, one for the charts when there are any; -1 with a
 * message when the partition is refused */
int mbe_me_n_indicators(MbEngine *e, int f, const int *ind, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e) {
        msg(err, errlen, "mbe_me_n_indicators: no engine");
        return -1;
    }
    MeCtx *c = me_ctx(e, f, ind, err, errlen);
    if (!c)
        return -1;
    return me_n_contact_indicators(e) + (e->n > f ? 1 : 0) + (c->nch > 0 ? 1 : 0);
}

MbeStatus mbe_me_indicators(MbEngine *e, const double *u, int f, const int *ind, double *z,
                            char *err, size_t errlen)
{
    MeCtx *c = me_call(e, "mbe_me_indicators", 1, u, f, ind, err, errlen);
    if (!c)
        return MBE_ERROR;
    int nzc = me_n_contact_indicators(e);
    if (!z && nzc + (e->n > f ? 1 : 0) + (c->nch > 0 ? 1 : 0) > 0) {
        msg(err, errlen, "mbe_me_indicators: no array");
        return MBE_ERROR;
    }
    const double *uu = e->ni ? u : e->u0;
    if (e->ncon) {
        int rc = (e->kind ? sk_events_values : mbk_events_values)(e->ev, e->t, e->y, uu,
                                                                  e->rec, z);
        if (rc != OK) {
            msg(err, errlen, "the contacts' event values at t = %.9g s cannot be computed: %s",
                e->t, kernel_error(rc));
            return MBE_ERROR;
        }
    }
    if (e->n > f) {              /* the condition at this state (a fresh Jacobian, which the
                                    chord closure uses from now on) */
        Lin *L = &c->L;
        L->t = e->t;
        if (lin_rows(L, e->y)) {
            msg(err, errlen, "the loops' rows at t = %.9g s cannot be evaluated", e->t);
            return MBE_ERROR;
        }
        me_refresh(c);
        z[nzc] = c->cond - ME_PARTITION_TOL;
    }
    if (c->nch > 0) {
        me_chart_ready(c, e);
        z[nzc + (e->n > f ? 1 : 0)] = me_chart_min(c, e) - ME_CHART_TOL;
    }
    return MBE_OK;
}

/* Re-centre the charts whose |l_d| is below 1.2 ME_CHART_TOL (their indicator near zero or
 * below): r := p (x) conj(e_d), sigma := 1; the number re-centred */
static int me_recentre(MeCtx *c, const MbEngine *e)
{
    int k = 0;
    me_chart_ready(c, e);
    for (int j = 0; j < c->nch; j++) {
        double *r = c->chart + ME_CHART_REC * j, l[4];
        const double *p = e->y + c->ch_o[j];
        int d = c->ch_d[j];
        me_qcmul(r, p, l);
        if (!(fabs(l[d]) < 1.2 * ME_CHART_TOL))
            continue;
        double ed[4] = {0.0, 0.0, 0.0, 0.0};
        ed[d] = d == 0 ? 1.0 : -1.0;        /* conj(e_d) */
        double nrm = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3]);
        double pu[4] = {p[0] / nrm, p[1] / nrm, p[2] / nrm, p[3] / nrm};
        me_qmul(pu, ed, r);
        r[4] = 1.0;
        k++;
    }
    return k;
}

/* The charts (mbe_me_chart_size doubles: per chart r, sigma) for the FMU state */
size_t mbe_me_chart_size(MbEngine *e, int f, const int *ind)
{
    char err[8];
    MeCtx *c = e ? me_ctx(e, f, ind, err, sizeof err) : NULL;
    return c ? (size_t)(ME_CHART_REC * c->nch) : 0;
}

void mbe_me_get_chart(MbEngine *e, int f, const int *ind, double *s)
{
    char err[8];
    MeCtx *c = e ? me_ctx(e, f, ind, err, sizeof err) : NULL;
    if (c && e->initialized)
        me_chart_ready(c, e);
    if (c && c->nch)
        memcpy(s, c->chart, sizeof(double) * (size_t)(ME_CHART_REC * c->nch));
}

/* Set the charts from s (mbe_me_get_chart's); MBE_ERROR and nothing changed when r is not a
 * unit quaternion or sigma not -1, 0 (not set) or 1 */
MbeStatus mbe_me_set_chart(MbEngine *e, int f, const int *ind, const double *s, char *err,
                           size_t errlen)
{
    clear_msg(err, errlen);
    MeCtx *c = e ? me_ctx(e, f, ind, err, errlen) : NULL;
    if (!c)
        return MBE_ERROR;
    for (int j = 0; j < c->nch; j++) {
        const double *r = s + ME_CHART_REC * j;
        double nrm = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + r[3] * r[3]);
        if (!(r[4] == 0.0 || r[4] == 1.0 || r[4] == -1.0) ||
            !(r[4] == 0.0 || fabs(nrm - 1.0) <= 1e-12)) {
            msg(err, errlen, "the state's chart %d of the Euler parameters at coordinates "
                "%d..%d is (%g, %g, %g, %g; %g); expected a unit quaternion and a sign -1 or 1 "
                "(or all 0: not set)", j, c->ch_o[j], c->ch_o[j] + 3, r[0], r[1], r[2], r[3],
                r[4]);
            return MBE_ERROR;
        }
    }
    if (c->nch)
        memcpy(c->chart, s, sizeof(double) * (size_t)(ME_CHART_REC * c->nch));
    c->have = 0;
    c->have_qdd = 0;
    return MBE_OK;
}

/* The Zeno guard of the event iterations started again: no last event, no counts (a set or
 * restored state, a reset, the time set back) */
static void me_zeno_restart(MbEngine *e)
{
    MeCtx *c = e ? (MeCtx *)e->me : NULL;
    if (c) {
        c->have_last = 0;
        c->repeats = 0;
        memset(c->zn, 0, sizeof(int) * (size_t)e->ncon);
    }
}

/* The charts not set (at a new start: the identity and the sign of p_d at the next call) */
void mbe_me_reset(MbEngine *e)
{
    MeCtx *c = e ? (MeCtx *)e->me : NULL;
    if (c && c->nch)
        memset(c->chart, 0, sizeof(double) * (size_t)(ME_CHART_REC * c->nch));
    if (c) {
        c->have = 0;
        c->have_qdd = 0;
    }
    me_zeno_restart(e);
}

/* the charts' part of an event iteration: re-centred charts change the states */
static MbeStatus me_event_charts(MeCtx *c, const MbEngine *e, int *changed)
{
    if (me_recentre(c, e))
        *changed = 1;                       /* the states jump: the host re-reads them */
    return MBE_OK;
}

#define ME_COND_MOVE 1e-6         /* me_cond_rate's move of the coordinates, relative to
                                     1 + |q| */

/* The rate of the partition's condition (me_chol) along the motion at the engine's state:
 * the central difference of the condition at q -+ qd s (time t -+ s), s the time of a move
 * of ME_COND_MOVE (1 + |q|); 0 at rest or where the rows cannot be evaluated. (The condition
 * of ~1e-3 near its indicator's zero carries ~1e-13 of round-off; the move changes it by
 * ~1e-6 of its rate times the coordinates' scale.) */
static double me_cond_rate(MeCtx *c, MbEngine *e)
{
    Lin *L = &c->L;
    int n = e->n;
    const double *q = e->y, *qd = e->y + n;
    double vmax = absmax(qd, n), cnd[2] = {0.0, 0.0};
    if (!(vmax > 0.0) || !isfinite(vmax))
        return 0.0;
    double s = ME_COND_MOVE * (1.0 + absmax(q, n)) / vmax;
    for (int k = 0; k < 2; k++) {
        double sk = k ? s : -s;
        for (int j = 0; j < n; j++)
            c->y[j] = q[j] + sk * qd[j];
        L->t = e->t + sk;
        if (lin_rows(L, c->y)) {
            L->t = e->t;
            return 0.0;
        }
        cnd[k] = me_chol(L->Dq, L->nr, n, L->dep, L->ndep, L->N);
    }
    L->t = e->t;
    return (cnd[1] - cnd[0]) / (2.0 * s);
}

/* One event iteration at the engine's state: impacts and releases of the contacts
 * (ev_event_update, the co-simulation loop's law and records) and the Zeno guard of its loop
 * (more than ME_ZENO_REPEATS events per contact, each within ME_ZENO_DT of the last, or more
 * than EV_ZENO_COUNT events of one contact (an iteration that changes its record) within
 * EV_ZENO_SPAN of simulated time, over any number of the host's steps: an error).
 * *changed = 1 when the velocities or the contacts' active set changed (the host
 * re-reads the states), *singular = 1 when the partition's condition is below
 * ME_PARTITION_TOL + ME_PARTITION_ROOT (its indicator negative, or zero to round-off: the
 * event at its located root) and does not rise along the motion (me_cond_rate: the way
 * towards a dead point, not the way back from one). Then the charts near their indicator's
 * zero are re-centred (*changed = 1). On an error nothing is changed. */
MbeStatus mbe_me_event(MbEngine *e, const double *u, int f, const int *ind, int *changed,
                       int *singular, char *err, size_t errlen)
{
    *changed = 0;
    *singular = 0;
    MeCtx *c = me_call(e, "mbe_me_event", 1, u, f, ind, err, errlen);
    if (!c)
        return MBE_ERROR;
    *singular = e->n > f && c->cond < ME_PARTITION_TOL + ME_PARTITION_ROOT &&
                !(me_cond_rate(c, e) > 0.0);
    if (!e->ncon)
        return me_event_charts(c, e, changed);
    const double *uu = e->ni ? u : e->u0;
    int n = e->n, impacts = 0, released = 0;
    memcpy(c->y, e->y, sizeof(double) * (size_t)(2 * n));
    memcpy(c->rec, e->rec, sizeof(double) * (size_t)(e->nrec * e->ncon));
    int rc = (e->kind ? sk_events_update : mbk_events_update)(
        e->ev, e->t, c->y, uu, c->rec, e->set.contact_tol, e->set.contact_velocity,
        e->set.stabilization == 1, &impacts, &released);
    if (rc != OK) {
        msg(err, errlen, "the contact event at t = %.9g s cannot be handled: %s", e->t,
            kernel_error(rc));
        return MBE_ERROR;
    }
    if (!impacts && !released)
        return me_event_charts(c, e, changed);
    int nc = e->ncon, rate = -1;
    if (c->have_last && e->t < c->t_last) {  /* the host went back (a restored state) */
        c->have_last = 0;
        memset(c->zn, 0, sizeof(int) * (size_t)nc);
    }
    int close = c->have_last && e->t - c->t_last <= ME_ZENO_DT * fmax(1.0, fabs(e->t));
    c->repeats = close ? c->repeats + 1 : 0;
    c->t_last = e->t;
    c->have_last = 1;
    memcpy(c->zt + nc, c->zt, sizeof(double) * (size_t)nc);
    memcpy(c->zn + nc, c->zn, sizeof(int) * (size_t)nc);
    for (int i = 0; i < nc; i++)            /* the contacts this iteration changed */
        if (memcmp(c->rec + e->nrec * i, e->rec + e->nrec * i, sizeof(double) * e->nrec) &&
            zeno_rate(c->zt + nc + i, c->zn + nc + i, e->t) && rate < 0)
            rate = i;
    if (c->repeats > ME_ZENO_REPEATS * e->ncon || rate >= 0) {
        char who[48] = "";
        if (rate >= 0)
            snprintf(who, sizeof who, " (contact %d of the model's contacts)", rate);
        msg(err, errlen, "at t = %.9g s%s: %s", e->t, who, kernel_error(9));
        return MBE_ERROR;
    }
    memcpy(c->zt, c->zt + nc, sizeof(double) * (size_t)nc);
    memcpy(c->zn, c->zn + nc, sizeof(int) * (size_t)nc);
    memcpy(e->y, c->y, sizeof(double) * (size_t)(2 * n));
    memcpy(e->rec, c->rec, sizeof(double) * (size_t)(e->nrec * e->ncon));
    c->have_qdd = 0;
    *changed = 1;
    return me_event_charts(c, e, changed);
}

/* me_eval's context: the charts, the derivatives' scratch */
typedef struct {
    MeCtx *c;
    double *xd;
} MeEval;

/* F (nunk) at the states and inputs z (2 f + ni) through the charts: the unknowns (state
 * derivatives, then outputs) as lin_eval's; 0 on success */
static int me_eval(void *ctx, const double *z, int nunk, const int *unk, int want_y, double *F)
{
    MeEval *m = (MeEval *)ctx;
    MeCtx *c = m->c;
    Lin *L = &c->L;
    MbEngine *e = L->e;
    int n = e->n, f = c->f, fe = c->f_ext;
    if (me_from_states(c, z) >= 0 || lin_full(L, c->qx, c->qx + fe, z + 2 * f))
        return 1;
    me_to_states(c, L->qd, L->qdd, m->xd);
    if (want_y) {
        memcpy(L->ysave, e->y, sizeof(double) * (size_t)(2 * n));
        memcpy(e->y, L->q, sizeof(double) * (size_t)n);
        memcpy(e->y + n, L->qd, sizeof(double) * (size_t)n);
        MbeStatus st = mbe_outputs_groups(e, z + 2 * f, MBE_GROUP_ALL, L->yo, NULL, 0);
        memcpy(e->y, L->ysave, sizeof(double) * (size_t)(2 * n));
        if (st != MBE_OK)
            return 1;
    }
    for (int k = 0; k < nunk; k++)
        F[k] = unk[k] < 2 * f ? m->xd[unk[k]] : L->yo[unk[k] - 2 * f];
    return 0;
}

/* mbe_directional_derivative for the model-exchange states: the same where every chart is
 * the identity (its states are then the Euler parameters), else Ridders's differences
 * through the charts (the knowns and unknowns as mbe_directional_derivative's) */
MbeStatus mbe_me_directional_derivative(MbEngine *e, const double *u, int f, const int *ind,
                                        int nknown, const int *known, const double *seed,
                                        int nunk, const int *unknown, double *dv, char *err,
                                        size_t errlen)
{
    MeCtx *c = me_call(e, "mbe_me_directional_derivative", 1, u, f, ind, err, errlen);
    if (!c)
        return MBE_ERROR;
    me_chart_ready(c, e);
    int identity = 1;
    for (int j = 0; j < c->nch; j++) {
        const double *r = c->chart + ME_CHART_REC * j;
        identity &= r[0] == 1.0 && r[1] == 0.0 && r[2] == 0.0 && r[3] == 0.0;
    }
    if (identity)
        return mbe_directional_derivative(e, u, f, ind, nknown, known, seed, nunk, unknown, dv,
                                          err, errlen);
    int n = e->n, ni = e->ni, nz = 2 * f + ni, want_y = 0;
    if (nknown < 0 || nunk < 0 || (nknown > 0 && (!known || !seed)) ||
        (nunk > 0 && (!unknown || !dv))) {
        msg(err, errlen, "mbe_me_directional_derivative: NULL or negative-length arrays");
        return MBE_ERROR;
    }
    for (int k = 0; k < nknown; k++)
        if (known[k] < 0 || known[k] >= nz || !isfinite(seed[k])) {
            msg(err, errlen, "mbe_me_directional_derivative: known %d is %d (seed %g); expected "
                "a state 0 to %d or an input %d to %d with a finite seed", k, known[k], seed[k],
                2 * f - 1, 2 * f, nz - 1);
            return MBE_ERROR;
        }
    for (int k = 0; k < nunk; k++) {
        if (unknown[k] < 0 || unknown[k] >= 2 * f + e->nout) {
            msg(err, errlen, "mbe_me_directional_derivative: unknown %d is %d; expected a state "
                "derivative 0 to %d or an output %d to %d", k, unknown[k], 2 * f - 1, 2 * f,
                2 * f + e->nout - 1);
            return MBE_ERROR;
        }
        want_y |= unknown[k] >= 2 * f;
    }
    const double *uu = ni ? u : e->u0;
    double *z0 = malloc(sizeof(double) * (size_t)(nz + 1));
    double *dir = calloc((size_t)nz + 1, sizeof(double));
    MeEval m = {c, malloc(sizeof(double) * (size_t)(2 * f + 1))};
    MbeStatus status = MBE_OK;
    if (!z0 || !dir || !m.xd) {
        msg(err, errlen, "mbe_me_directional_derivative: out of memory");
        status = MBE_ERROR;
        goto done;
    }
    me_to_states(c, e->y, e->y + n, z0);
    for (int k = 0; k < ni; k++)
        z0[2 * f + k] = uu[k];
    for (int k = 0; k < nknown; k++)
        dir[known[k]] += seed[k];
    Lin *L = &c->L;
    L->t = e->t;
    memcpy(L->q0, e->y, sizeof(double) * (size_t)n);
    double *F0 = m.xd;                      /* the operating point re-closed (as
                                               mbe_directional_derivative) */
    if (me_eval(&m, z0, 0, NULL, 0, F0)) {
        msg(err, errlen, "the loops cannot be closed at t = %.9g s with the state's "
            "independent coordinates (a singular pose?)", e->t);
        status = MBE_ERROR;
        goto done;
    }
    memcpy(L->q0, L->q, sizeof(double) * (size_t)n);
    status = lin_ridders(me_eval, &m, f, nz, z0, dir, nunk, unknown, want_y, dv, e->t, err,
                         errlen);
    c->have = 0;                            /* the chord's Jacobian: from the next closure */
done:
    free(z0);
    free(dir);
    free(m.xd);
    return status;
}
