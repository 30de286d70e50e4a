/*
 * fmu_mb engine: model exchange (issue 31), included at the end of engine.c.
 *
 * A host integrates the state x = (q_i, qd_i) of the independent tree coordinates ind[0..f-1]
 * (the states of the native FMU, fmu_mb.dynamics.linearize's coordinate partitioning) with
 * its own solver. Every mbe_me_set_states closes the loops for the given x: the dependent
 * coordinates by Newton on every model row with q_i held, starting from the last solution
 * (the engine's q), their rates from the velocity rows (lin_close); a state that cannot be
 * closed is refused (MBE_ERROR, nothing changed): never a silent drift.
 *
 * Event indicators (mbe_me_indicators), in this order: per contact its event value of the
 * co-simulation event loop (event_loop.h: the gap of a contact in flight, the force of a
 * persistent one), then, when there are dependent coordinates, the partition's condition
 * minus ME_PARTITION_TOL: the smallest Cholesky pivot of Dd' Dd (Dd: the rows' Jacobian
 * columns of the dependent coordinates) over the largest column norm of the rows' Jacobian,
 * 0 where the partition chosen at initialisation is singular. mbe_me_event is one event
 * iteration: the event loop's impact and release (ev_event_update) and its Zeno guard, and
 * the partition's check.
 */
#define ME_PARTITION_TOL 1e-3     /* the partition indicator's zero: the condition's warning */
#define ME_PARTITION_FAIL 1e-10   /* below: the closure is refused (cannot continue) */
#define ME_ZENO_DT 1e-8           /* the event loop's Zeno guard: events closer than this ... */
#define ME_ZENO_REPEATS 100       /* ... more than this many times per contact */

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
    double cond;             /* the partition's condition at the last closure (1: none)    */
    double *y;               /* (2 n) scratch: the state of an event iteration             */
    double *rec;             /* (ncon x EV_REC) scratch: its records                        */
    double t_last;           /* the Zeno guard: the time of the last event with a change   */
    int repeats, have_last;
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
    free(c);
    e->me = NULL;
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
    c->rec = malloc(sizeof(double) * (size_t)(EV_REC * e->ncon + 1));
    c->cond = 1.0;
    if (!c->ind || !c->y || !c->rec) {
        msg(err, errlen, "model exchange: out of memory");
        free(c->ind);
        free(c->y);
        free(c->rec);
        free(c);
        return NULL;
    }
    if (f > 0)
        memcpy(c->ind, ind, sizeof(int) * (size_t)f);
    if (!lin_init(&c->L, e, f, c->ind, err, errlen)) {
        lin_free(&c->L);
        free(c->ind);
        free(c->y);
        free(c->rec);
        free(c);
        return NULL;
    }
    e->me = c;
    return c;
}

/* The partition's condition at the last lin_close (L->Dq there): the smallest Cholesky pivot
 * of Dd' Dd over the largest column norm of Dq; 1 without dependent coordinates, 0 when
 * Dd' Dd is not positive definite. */
static double me_condition(MeCtx *c)
{
    Lin *L = &c->L;
    int n = L->e->n, nr = L->nr, m = L->ndep;
    if (m == 0 || nr == 0)
        return 1.0;
    double cmax = 0.0;
    for (int j = 0; j < n; j++) {
        double s = 0.0;
        for (int r = 0; r < nr; r++)
            s += L->Dq[(size_t)r * n + j] * L->Dq[(size_t)r * n + j];
        cmax = fmax(cmax, s);
    }
    double *N = L->N;                       /* Dd' Dd, then its Cholesky factor in place */
    for (int a = 0; a < m; a++)
        for (int b = 0; b <= a; b++) {
            double v = 0.0;
            for (int r = 0; r < nr; r++)
                v += L->Dq[(size_t)r * n + L->dep[a]] * L->Dq[(size_t)r * n + L->dep[b]];
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
    e->t = t;
    return MBE_OK;
}

/* x (2 f) = (q_i, qd_i) of the engine's state */
void mbe_me_get_states(const MbEngine *e, int f, const int *ind, double *x)
{
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
    Lin *L = &c->L;
    int n = e->n;
    L->t = e->t;
    memcpy(L->q0, e->y, sizeof(double) * (size_t)n);     /* Newton from the last solution */
    int failed = lin_close(L, x, x + f);
    double cond = failed ? 0.0 : me_condition(c);
    if (failed || !(cond >= ME_PARTITION_FAIL) || !all_finite(L->qd, n)) {
        msg(err, errlen, "the loops cannot be closed at t = %.9g s for these states: the "
            "independent coordinates chosen at initialisation %s (partition condition %.3g); "
            "model exchange cannot continue from here; use the co-simulation interface, whose "
            "integrator keeps every coordinate and projects", e->t,
            failed ? "do not determine the dependent ones here (Newton from the last solution "
                     "does not converge)" : "have become singular", cond);
        return MBE_ERROR;
    }
    c->cond = cond;
    memcpy(e->y, L->q, sizeof(double) * (size_t)n);
    memcpy(e->y + n, L->qd, sizeof(double) * (size_t)n);
    return MBE_OK;
}

/* xdot (2 f) = (qd_i, qdd_i) at the engine's state (closed by mbe_me_set_states) */
MbeStatus mbe_me_derivatives(MbEngine *e, const double *u, int f, const int *ind, double *xdot,
                             char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !e->initialized || (f > 0 && !xdot)) {
        msg(err, errlen, "mbe_me_derivatives: the engine is not initialized, or no array");
        return MBE_ERROR;
    }
    if (!check_inputs(e, u, err, errlen))
        return MBE_ERROR;
    MeCtx *c = me_ctx(e, f, ind, err, errlen);
    if (!c)
        return MBE_ERROR;
    int n = e->n;
    const double *uu = e->ni ? u : e->u0;
    int rc = lin_accelerations(e, e->t, e->y, e->y + n, uu, c->L.qdd);
    if (rc != OK || !all_finite(c->L.qdd, n)) {
        msg(err, errlen, "the accelerations at t = %.9g s cannot be computed: %s", e->t,
            rc != OK ? kernel_error(rc) : "not finite");
        return MBE_ERROR;
    }
    for (int k = 0; k < f; k++) {
        xdot[k] = e->y[n + ind[k]];
        xdot[f + k] = c->L.qdd[ind[k]];
    }
    return MBE_OK;
}

/* the number of event indicators: one per contact, one for the partition when the model has
 * dependent coordinates */
int mbe_me_n_indicators(const MbEngine *e, int f)
{
    return e ? e->ncon + (e->n > f ? 1 : 0) : 0;
}

MbeStatus mbe_me_indicators(MbEngine *e, const double *u, int f, const int *ind, double *z,
                            char *err, size_t errlen)
{
    clear_msg(err, errlen);
    if (!e || !e->initialized || (mbe_me_n_indicators(e, f) > 0 && !z)) {
        msg(err, errlen, "mbe_me_indicators: the engine is not initialized, or no array");
        return MBE_ERROR;
    }
    if (!check_inputs(e, u, err, errlen))
        return MBE_ERROR;
    MeCtx *c = me_ctx(e, f, ind, err, errlen);
    if (!c)
        return MBE_ERROR;
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
    if (e->n > f)
        z[e->ncon] = c->cond - ME_PARTITION_TOL;
    return MBE_OK;
}

/* One event iteration at the engine's state: impacts and releases of the contacts
 * (ev_event_update, the co-simulation loop's law and records) and the Zeno guard of its loop
 * (more than ME_ZENO_REPEATS events per contact, each within ME_ZENO_DT of the last: an
 * error). *changed = 1 when the velocities or the contacts' active set changed (the host
 * re-reads the states), *singular = 1 when the partition's condition is below
 * ME_PARTITION_TOL (its indicator is negative). On an error nothing is changed. */
MbeStatus mbe_me_event(MbEngine *e, const double *u, int f, const int *ind, int *changed,
                       int *singular, char *err, size_t errlen)
{
    clear_msg(err, errlen);
    *changed = 0;
    *singular = 0;
    if (!e || !e->initialized) {
        msg(err, errlen, "mbe_me_event: the engine is not initialized");
        return MBE_ERROR;
    }
    if (!check_inputs(e, u, err, errlen))
        return MBE_ERROR;
    MeCtx *c = me_ctx(e, f, ind, err, errlen);
    if (!c)
        return MBE_ERROR;
    *singular = e->n > f && c->cond < ME_PARTITION_TOL;
    if (!e->ncon)
        return MBE_OK;
    const double *uu = e->ni ? u : e->u0;
    int n = e->n, impacts = 0, released = 0;
    memcpy(c->y, e->y, sizeof(double) * (size_t)(2 * n));
    memcpy(c->rec, e->rec, sizeof(double) * (size_t)(EV_REC * e->ncon));
    int rc = (e->kind ? sk_events_update : mbk_events_update)(
        e->ev, e->t, c->y, uu, c->rec, e->set.contact_tol, e->set.contact_velocity,
        e->set.stabilization == 1, &impacts, &released);
    if (rc != OK) {
        msg(err, errlen, "the contact event at t = %.9g s cannot be handled: %s", e->t,
            kernel_error(rc));
        return MBE_ERROR;
    }
    if (!impacts && !released)
        return MBE_OK;
    if (c->have_last && e->t < c->t_last)
        c->have_last = 0;                   /* the host went back (a restored state) */
    int close = c->have_last && e->t - c->t_last <= ME_ZENO_DT * fmax(1.0, fabs(e->t));
    c->repeats = close ? c->repeats + 1 : 0;
    c->t_last = e->t;
    c->have_last = 1;
    if (c->repeats > ME_ZENO_REPEATS * e->ncon) {
        msg(err, errlen, "at t = %.9g s: %s", e->t, kernel_error(9));
        return MBE_ERROR;
    }
    memcpy(e->y, c->y, sizeof(double) * (size_t)(2 * n));
    memcpy(e->rec, c->rec, sizeof(double) * (size_t)(EV_REC * e->ncon));
    *changed = 1;
    return MBE_OK;
}
