/*
 * fmu_mb spatial native kernel, contact events (formulation recursive): the contact event loop
 * of native/event_loop.h (the planar kernel's loop, events.c, with the same semantics and
 * records) over the spatial kernel, so that a spatial contact model integrates a whole
 * communication interval in one call with no Python in it.
 *
 * Included at the end of spatial_kernel.c (it uses the kernel's static functions). API, as
 * events.c's mbk_events_* (same par vector EV_NPAR, records EV_REC, status codes):
 *
 *   SkEvents *sk_events_create(SK *base, const double *e, int ni);
 *       The event loop of the kernel `base` with its contacts (sk_set_contacts; at least
 *       one) and their restitution coefficients e (nk); ni inputs. The object keeps a
 *       private copy of the kernel (tree, elements, cut joints, drives, contacts), whose
 *       persistent contacts it closes as rows (sk_set_active), so `base` may be freed or
 *       used in parallel afterwards. NULL when memory runs out or the arguments are invalid.
 *   void sk_events_free(SkEvents *ev);
 *   int sk_advance_events(SkEvents *ev, int method, double *par, double *y, const double *u,
 *                         double *rec);
 *   int sk_advance_events_to_impact(SkEvents *ev, int method, double *par, double *y,
 *                                   const double *u, double *rec, int *impact);
 *   int sk_events_outputs(SkEvents *ev, double t, const double *y, const double *u,
 *                         const double *rec, double *gap, double *force);
 *   int sk_events_accelerations(SkEvents *ev, double t, const double *q, const double *qd,
 *                               const double *u, const double *rec, const double *rq,
 *                               double *qdd, double *x, double *xd, double *xdd);
 *       As mbk_*: y = (q, qd) of 2 n (q' of the Euler parameters in qd, as the kernel's
 *       state); see events.c for par and rec.
 *   int sk_events_set_joint_friction(SkEvents *ev, int nj, const int *ji, const double *jd,
 *                                    const int *jq, const int *jnu, const double *bound,
 *                                    const int *jlim);
 *       Coulomb friction at nj revolute or prismatic tree joints (once): ji (nj, 3) kind (1
 *       revolute, 2 prismatic), parent, child (nb: ground), jd (nj, DRD) their points and
 *       frames (as sk_set_joint_friction's), jq their coordinates (indices of q), jnu their
 *       velocity coordinates (indices of ν), bound > 0 [N.m or N], jlim (nk) the frictional
 *       joint each contact limits, -1. As events.c's mbk_events_set_joint_friction: records
 *       of 3 doubles per joint after the contacts' (stick, s0, loss), the sticking joints'
 *       rate rows after the sticking contacts' rows, the slipping ones' forces -F_c s0 on
 *       their velocity coordinates; a loop made with no contact (sk_events_create of a
 *       kernel with nk = 0) runs the joints' events only.
 *   int sk_events_joint_outputs(SkEvents *ev, double t, const double *y, const double *u,
 *                               const double *rec, double *gap, double *force, double *ft,
 *                               double *vt, double *jout);
 *       The contacts' outputs of sk_events_outputs_fr and the joints' (3 each: friction
 *       torque or force, state 1 stick 2 slip 0 held, dissipated energy [J]).
 *
 * The spatial operations: gaps and gap rows of fmu_mb.mechanics.spatial.contacts (contact_row);
 * the phase's right-hand side and multipliers from the kernel with the persistent contacts as
 * rows after the cut joints' and the drives'; one dopri5/dop853 step (integ_one_step) and, with
 * projection, sk_project after it (Euler parameters normalised, |p| = 1 and p . p' = 0, and
 * the rows closed), as the Python loop's stepper with formulation recursive does. Impacts:
 * seed 000 ch.3 eq. 15 in the velocity coordinates ν of the kernel (ν = q' except for the
 * Euler-parameter sets, whose ν is the angular velocity), with the cut joints' and drives'
 * rows (b = s'(t) for a drive) and the contacts of the active set: S r = A ν- - b with
 * W = Mbar^-1 A' from bias-free articulated-body passes, ν+ = ν- - W r, q'+ from ν+. The
 * Python loop solves the same equations in q' with the Euler-parameter normalisation rows
 * (formulations/_spatial_contacts.impact): the same ν+ (both are the least kinetic-energy
 * change), equal to rounding. Frictionless.
 */
#include "event_loop.h"

typedef EvLoop SkEvents;

struct EvKernel {
    SK *k;                 /* private kernel: the phase's persistent contacts as rows */
    int base;              /* rows before the contacts': cut joints and drives */
    int *idx;              /* (nk) indices of the selected contacts */
    double *Dc;            /* (nk, nv) every contact's gap row at the impact's q */
    double *Dt;            /* (nk, 2, nv) every plane contact's tangential rows there */
    double *q, *nu, *nup;  /* the impact's q (n), ν- and ν+ (nv) */
    int fresh;             /* 1: k's kinematics and multipliers are those of the last right-hand
                              side or evk_lam (at the phase rows), which the reuse reads */
    int *jji;              /* (nj, 3) the frictional joints' kind, parent, child */
    double *jjd;           /* (nj, DRD) their points and frames */
    int *jnu;              /* (nj) their velocity coordinates */
};

static SK *sk_clone(const SK *b)
{
    SK *k = sk_create(b->nb, b->n, b->nv, b->ri, b->rd, b->mass, b->J, b->g[0], b->g[1],
                      b->g[2], b->ne, b->nu, b->ei, b->ed, b->nc, b->ci, b->cd);
    if (!k)
        return NULL;
    if (b->nd > 0) {
        int ndp = 0;
        for (int d = 0; d < b->nd; d++) {
            const int *D = b->di + DRI * d;
            if (D[4] + D[5] > ndp)
                ndp = D[4] + D[5];
        }
        if (sk_set_drives(k, b->nd, b->di, b->dd, ndp, b->dp) != OK)
            goto fail;
    }
    if (b->ncp > 0 && sk_set_couplers(k, b->ncp, b->cpi, b->cpd) != OK)
        goto fail;
    if (sk_set_contacts(k, b->nk, b->ki, b->kd) != OK)
        goto fail;
    if (b->arm && sk_set_armature(k, b->arm) != OK)
        goto fail;
    k->mode = b->mode;
    k->proj_tol = b->proj_tol;
    return k;
fail:
    sk_free(k);
    return NULL;
}

void sk_events_free(SkEvents *ev)
{
    if (!ev)
        return;
    if (ev->k) {
        sk_free(ev->k->k);
        free(ev->k->idx);
        free(ev->k->Dc);
        free(ev->k->Dt);
        free(ev->k->q);
        free(ev->k->nu);
        free(ev->k->nup);
        free(ev->k->jji);
        free(ev->k->jjd);
        free(ev->k->jnu);
        free(ev->k);
    }
    ev_release(ev);
    free(ev);
}

SkEvents *sk_events_create(SK *base, const double *e, int ni)
{
    static const double no_e = 0.0;    /* (a loop without contacts reads no e) */
    if (!base || base->nk < 0 || (base->nk > 0 && !e) || ni < 0 || ni != base->nu)
        return NULL;
    if (!e)
        e = &no_e;
    SkEvents *ev = calloc(1, sizeof *ev);
    if (!ev)
        return NULL;
    int nc = base->nk;
    size_t vv = (size_t)(base->nv > 0 ? base->nv : 1), n1 = (size_t)(base->n + 1);
    size_t c1 = (size_t)(nc > 0 ? nc : 1);
    EvKernel *K = ev->k = calloc(1, sizeof *K);
    if (!K || ev_init(ev, base->n, nc, e, ni) != OK)
        goto fail;
    K->k = sk_clone(base);
    K->idx = calloc(c1, sizeof(int));
    K->Dc = calloc(c1 * vv, sizeof(double));
    K->Dt = calloc(2 * c1 * vv, sizeof(double));
    K->q = calloc(n1, sizeof(double));
    K->nu = calloc(vv, sizeof(double));
    K->nup = calloc(vv, sizeof(double));
    if (!K->k || !K->idx || !K->Dc || !K->Dt || !K->q || !K->nu || !K->nup)
        goto fail;
    for (int i = 0; i < nc; i++) {          /* Coulomb's mu of the plane contacts */
        ev->mu[i] = has_point(base, i) ? base->kd[KD * i + 35] : 0.0;
        ev->fr |= ev->mu[i] > 0.0;
    }
    if (ev->fr)                             /* records: + stick, s0 (2), sliding loss */
        ev->nrec = EV_REC_FR;
    K->base = K->k->mc + K->k->nd + K->k->ncp;
    for (int i = 0; i < nc; i++) {          /* row buffers for every contact, then none */
        K->idx[i] = i;
        ev->sel[i] = 1;
    }
    if (sk_set_active(K->k, nc, K->idx) != OK)
        goto fail;
    return ev;
fail:
    sk_events_free(ev);
    return NULL;
}

/* ------------------------------------------------------------------ the spatial operations */
static void evk_select(EvLoop *ev, const unsigned char *mask)
{
    EvKernel *K = ev->k;
    int na = 0;
    for (int i = 0; i < ev->nc; i++)
        if (mask[i])
            K->idx[na++] = i;
    sk_set_active(K->k, na, K->idx);        /* (indices valid, buffers held: cannot fail) */
    K->fresh = 0;
    if (!ev->nj)
        return;
    /* the joints (ev->jphase): a sticking one's rate row after the sticking contacts' rows,
     * a slipping one's force -F_c s0 on its velocity coordinate, a joint at rest of
     * ev_joint_rest its trial force jf (the buffers hold every joint's row: see
     * sk_events_set_joint_friction) */
    SK *k = K->k;
    int ns = 0;
    for (int i = 0; i < k->nv; i++)
        k->jtau[i] = 0.0;
    for (int j = 0; j < ev->nj; j++) {
        if (!ev->jphase || ev->jheld[j])
            continue;
        if (ev->jrest[j]) {
            k->jtau[K->jnu[j]] += ev->jf[j];
        } else if (!ev->jstk[j]) {
            k->jtau[K->jnu[j]] -= ev->jb[j] * ev->js0[j];
        } else {
            memcpy(k->jri + 3 * ns, K->jji + 3 * j, sizeof(int) * 3);
            memcpy(k->jrd + DRD * ns, K->jjd + DRD * j, sizeof(double) * DRD);
            ns++;
        }
    }
    k->njr = ns;
    k->m = k->mc + k->nd + k->ncp + k->na + 2 * k->nst + ns;
}

static void evk_configure(EvLoop *ev, int stab, double alpha, double beta, double ptol)
{
    sk_set_stabilization(ev->k->k, stab, alpha, beta, ptol);
}

/* every contact's gap into g from the kernel's present kinematics (positions: the gaps do
 * not depend on the rates); ERR_GAP: a point-point gap undefined there */
static int sk_ev_gaps_x(EvLoop *ev, double *g)
{
    SK *k = ev->k->k;
    Row R;
    for (int i = 0; i < ev->nc; i++) {
        if (contact_row(k, i, &R) != OK)
            return ERR_GAP;
        g[i] = R.val;
    }
    return OK;
}

static int evk_gaps(EvLoop *ev, const double *q, double *g)
{
    SK *k = ev->k->k;
    memset(k->qtmp, 0, sizeof(double) * k->n);
    ev->k->fresh = 0;
    kinematics(k, q, k->qtmp);
    return sk_ev_gaps_x(ev, g);
}

/* the gaps at the q of the last evk_lam: the poses of its kinematics there (r and A of the
 * bodies are functions of q alone, computed by the same operations whatever the rates: the
 * same numbers as evk_gaps at that q, without a second forward pass) */
static int evk_gaps_lam(EvLoop *ev, double *g)
{
    if (!ev->k->fresh)
        return EV_NA;
    return sk_ev_gaps_x(ev, g);
}

/* the event values at the new state of the last sk_step from its last stage's solve there
 * (K[s] = f(t_new, y_new): the kernel's kinematics and multipliers at y_new, at the time
 * t_new; not in Baumgarte mode, whose multipliers have the stabilisation terms the values do
 * not have, nor when the phase rows are not the active set): 1 when valid, else 0 */
static int evk_step_values(EvLoop *ev, double *v)
{
    SK *k = ev->k->k;
    if (!ev->k->fresh || k->mode == 2 || memcmp(ev->sel, ev->active, (size_t)ev->nc) != 0 ||
        sk_ev_gaps_x(ev, v) != OK)
        return 0;
    for (int a = 0; a < k->na; a++)
        v[k->act[a]] = -k->lam[ev->k->base + a];
    return 1;
}

/* (qd, qdd) at (t, y) in the kernel's drift mode */
static int evk_rhs(EvLoop *ev, double t, const double *y, double *dy)
{
    sk_set_inputs(ev->k->k, ev->u);
    int rc = rhs(ev->k->k, t, y, dy);
    ev->k->fresh = rc == OK;
    return rc;
}

static int evk_lam(EvLoop *ev, double t, const double *y, double *lamc)
{
    SK *k = ev->k->k;
    int mode = k->mode, n = k->n;
    k->mode = 0;
    k->t = t;
    sk_set_inputs(k, ev->u);
    int rc = accel(k, y, y + n, ev->qdp);
    k->mode = mode;
    ev->k->fresh = rc == OK;
    if (rc != OK)
        return rc;
    for (int a = 0; a < k->na; a++)
        lamc[k->act[a]] = k->lam[ev->k->base + a];
    return OK;
}

/* the multipliers of the selected contacts from the last right-hand side (mode 1 solves as
 * mode 0: no Baumgarte terms; the loop asks only with projection) */
static int evk_phase_lam(EvLoop *ev, double *lam)
{
    SK *k = ev->k->k;
    if (!ev->k->fresh || k->mode == 2)
        return 0;
    for (int a = 0; a < k->na; a++)
        lam[k->act[a]] = k->lam[ev->k->base + a];
    return 1;
}

static int evk_step(EvLoop *ev, int method, double *par, double *y, int have_f, double *K)
{
    int nfev, rc = sk_step(ev->k->k, method, par, y, ev->u, have_f, K, &nfev);
    ev->k->fresh = rc == OK;          /* (its last solve: K[s] = f(t_new, y_new)) */
    return rc;
}

static int evk_project(EvLoop *ev, double t, double *y)
{
    ev->k->k->t = t;
    ev->k->fresh = 0;
    return sk_project(ev->k->k, y);
}

static int evk_project_steps(EvLoop *ev)
{
    (void)ev;
    return 1;                /* the Euler parameters are normalised even without rows */
}

static int evk_reuse_f(EvLoop *ev)
{
    (void)ev;
    return 1;
}

/* kinetic energy sum 1/2 (m v . v + ω_b . J ω_b) [J], ω_b in body axes, plus the rotors'
 * 1/2 a qd^2 (armature) */
static double evk_kinetic(EvLoop *ev, const double *y)
{
    SK *k = ev->k->k;
    ev->k->fresh = 0;
    kinematics(k, y, y + k->n);
    double T = 0.0;
    for (int b = 0; b < k->nb; b++) {
        const double *v = k->v + 3 * b, *w = k->w + 3 * b, *A = k->A + 9 * b;
        const double *J = k->J + 9 * b;
        double wb[3], Jw[3];
        for (int i = 0; i < 3; i++)
            wb[i] = A[i] * w[0] + A[3 + i] * w[1] + A[6 + i] * w[2];
        mat3(J, wb, Jw);
        T += k->mass[b] * dot3(v, v) + dot3(wb, Jw);
        if (k->arm) {                    /* the rotor of a joint with armature: a qd^2 */
            double qd = y[k->n + k->ri[RI * b + 3]];
            T += k->arm[b] * qd * qd;
        }
    }
    return 0.5 * T;
}

static void sk_ev_rates(EvLoop *ev, const double *nu, double *v)
{
    int nv = ev->k->k->nv;
    for (int i = 0; i < ev->nc; i++) {
        const double *D = ev->k->Dc + (size_t)i * nv;
        double acc = 0.0;
        for (int j = 0; j < nv; j++)
            acc += D[j] * nu[j];
        v[i] = acc;
    }
}

static int evk_contact_rates(EvLoop *ev, double t, const double *q, const double *qd,
                             double *gap, double *v)
{
    EvKernel *K = ev->k;
    SK *k = K->k;
    int nv = k->nv;
    Row R;
    k->t = t;
    K->fresh = 0;
    kinematics(k, q, qd);
    for (int i = 0; i < ev->nc; i++) {
        double *D = K->Dc + (size_t)i * nv;
        if (contact_row(k, i, &R) != OK)
            return ERR_GAP;
        gap[i] = R.val;
        memset(D, 0, sizeof(double) * nv);
        add_path(k, R.p, R.j, R.j + 3, D);
        add_path(k, R.c, R.j + 6, R.j + 9, D);
        double *T = K->Dt + 2 * (size_t)i * nv;
        memset(T, 0, sizeof(double) * 2 * nv);
        if (ev->fr && has_point(k, i))
            for (int kk = 0; kk < 2; kk++) {
                contact_tangent(k, i, kk, &R);
                add_path(k, R.p, R.j, R.j + 3, T + kk * nv);
                add_path(k, R.c, R.j + 6, R.j + 9, T + kk * nv);
            }
    }
    memcpy(K->q, q, sizeof(double) * k->n);
    qd_to_nu(k, q, qd, K->nu);
    sk_ev_rates(ev, K->nu, v);
    return OK;
}

static void evk_rates(EvLoop *ev, const double *qd, double *v)
{
    EvKernel *K = ev->k;
    qd_to_nu(K->k, K->q, qd, K->nup);
    sk_ev_rates(ev, K->nup, v);
}

/* the impact equations at (q, qd) for the phase kernel's present rows (the contacts of the
 * selection at their targets; with friction its sticking rows at 0 and its sliding impulses)
 * by the Schur complement S r = A qd- - b, W = Mbar^-1 A' (one bias-free articulated pass per
 * row), qd+ = qd- - W r: qdp, the multipliers in k->lam */
static int impact_rows_solve(EvLoop *ev, const double *q, const double *qd,
                             const double *target, double *qdp)
{
    EvKernel *K = ev->k;
    SK *k = K->k;
    int nv = k->nv, m = k->m, rc;
    kinematics(k, q, qd);
    if ((rc = cut_rows(k)) != OK || (rc = articulate(k)) != OK)
        return rc;
    for (int i = 0; i < nv; i++)
        K->nup[i] = K->nu[i];
    if (m > 0) {
        schur(k);
        for (int r = 0; r < m; r++)
            k->rr[r] = rate(k, &k->rows[r]) - k->rows[r].rt;
        for (int a = 0; a < k->na; a++)
            k->rr[K->base + a] -= target[k->act[a]];
        if (k->nsl > 0) {
            if ((rc = slide_solve(k, K->nu, 1, K->nup)) != OK)
                return rc;
        } else {
            if ((rc = psd_solve(k, k->rr, k->lam)) != OK ||
                (rc = split_contacts(k, 1, k->lam)) != OK)
                return rc;
            for (int i = 0; i < nv; i++)
                for (int r = 0; r < m; r++)
                    K->nup[i] -= k->Wt[(size_t)r * nv + i] * k->lam[r];
        }
    }
    nu_to_qd(k, q, K->nup, qdp);
    return OK;
}

static int evk_impact_solve(EvLoop *ev, const double *q, const double *qd,
                            const unsigned char *trial, const double *target, double *qdp,
                            double *rcon)
{
    EvKernel *K = ev->k;
    SK *k = K->k;
    ev_select(ev, trial);
    K->fresh = 0;
    int rc = impact_rows_solve(ev, q, qd, target, qdp);
    if (rc != OK)
        return rc;
    for (int i = 0; i < ev->nc; i++)
        rcon[i] = 0.0;
    for (int a = 0; a < k->na; a++)
        rcon[k->act[a]] = k->lam[K->base + a];
    return OK;
}

/* ------------------------------------------------------------------ friction */
/* the phase kernel's friction flags and recorded slip directions (at its next selection) */
static void evk_friction(EvLoop *ev, const unsigned char *stick, const unsigned char *slide,
                         const double *s0)
{
    sk_set_friction(ev->k->k, stick, slide, s0);
}

/* at (t, y) without Baumgarte terms: the selected contacts' normal multipliers lamc, the
 * sticking ones' tangential multipliers lamt (2 per contact) and every contact's slip
 * velocities vt (2 per contact, 0 for the contacts without a contact point) */
static int evk_fric(EvLoop *ev, double t, const double *y, double *lamc, double *lamt,
                    double *vt)
{
    SK *k = ev->k->k;
    int mode = k->mode, n = k->n, base = ev->k->base;
    k->mode = 0;
    k->t = t;
    sk_set_inputs(k, ev->u);
    int rc = accel(k, y, y + n, ev->qdp);
    k->mode = mode;
    ev->k->fresh = 0;
    if (rc != OK)
        return rc;
    int r = base + k->na;
    for (int a = 0; a < k->na; a++) {
        int i = k->act[a];
        lamc[i] = k->lam[base + a];
        if (k->stick[i]) {
            lamt[2 * i] = k->lam[r++];
            lamt[2 * i + 1] = k->lam[r++];
        }
    }
    for (int j = 0; j < ev->nj; j++)     /* the sticking joints' rows follow (evk_select) */
        ev->jlam[j] = ev->jphase && !ev->jheld[j] && !ev->jrest[j] && ev->jstk[j]
                      ? k->lam[r++] : 0.0;
    for (int i = 0; i < ev->nc; i++) {
        Row R;
        vt[2 * i] = vt[2 * i + 1] = 0.0;
        if (!has_point(k, i))
            continue;
        contact_tangent(k, i, 0, &R);
        vt[2 * i] = rate(k, &R);
        contact_tangent(k, i, 1, &R);
        vt[2 * i + 1] = rate(k, &R);
    }
    return OK;
}

/* evk_fric's multipliers and the sliding contacts' slip velocities (0 for the others), and
 * evk_gaps' gaps at the state of the last right-hand side (rhs: accel at (t, y) as
 * evk_fric's, mode 1 solving as mode 0), from its solve and kinematics (the gaps depend on
 * the poses alone): 1 when valid, else 0 */
/* the frictional joints' accelerations (nj) of the last evk_fric: their coordinates' */
static void evk_joint_acc(EvLoop *ev, double *acc)
{
    for (int j = 0; j < ev->nj; j++)
        acc[j] = ev->qdp[ev->jc[j]];
}

static int evk_fric_last(EvLoop *ev, double *lamc, double *lamt, double *vt, double *g)
{
    SK *k = ev->k->k;
    int base = ev->k->base;
    if (!ev->k->fresh || k->mode == 2 || memcmp(ev->sel, ev->active, (size_t)ev->nc) != 0 ||
        sk_ev_gaps_x(ev, g) != OK)
        return 0;
    int r = base + k->na;
    for (int a = 0; a < k->na; a++) {
        int i = k->act[a];
        lamc[i] = k->lam[base + a];
        if (k->stick[i]) {
            lamt[2 * i] = k->lam[r++];
            lamt[2 * i + 1] = k->lam[r++];
        }
    }
    for (int i = 0; i < ev->nc; i++) {     /* (the event values read the sliding ones') */
        Row R;
        vt[2 * i] = vt[2 * i + 1] = 0.0;
        if (!ev->slide[i] || !has_point(k, i))
            continue;
        contact_tangent(k, i, 0, &R);
        vt[2 * i] = rate(k, &R);
        contact_tangent(k, i, 1, &R);
        vt[2 * i + 1] = rate(k, &R);
    }
    return 1;
}

/* gap'' of contact i at (t, y) with the selected contacts (i not among them): the body
 * accelerations of the solve (as sk_accelerations_full) in the gap row's j . A + gamma */
static int evk_gap_acc(EvLoop *ev, int i, double t, const double *y, double *acc_out)
{
    SK *k = ev->k->k;
    int mode = k->mode, n = k->n;
    k->mode = 0;
    k->t = t;
    sk_set_inputs(k, ev->u);
    int rc = accel(k, y, y + n, ev->qdp);
    k->mode = mode;
    ev->k->fresh = 0;
    if (rc != OK)
        return rc;
    body_accelerations(k);
    Row R;
    if (contact_row(k, i, &R) != OK)
        return ERR_GAP;
    double acc = accel_of(k, &R), scale = fabs(R.gam);
    const double *ap = k->acc + 6 * R.p, *ac = k->acc + 6 * R.c;
    for (int j = 0; j < 6; j++)
        scale += fabs(R.j[j] * ap[j]) + fabs(R.j[6 + j] * ac[j]);
    /* below 1e-9 m/s^2 or 1e-9 of its terms it is rounding of 0 (integrate._painleve_check:
     * a contact redundant with the ones still closed, which hold its gap) and reads 0 */
    *acc_out = fabs(acc) <= 1e-9 * (1.0 + scale) ? 0.0 : acc;
    return OK;
}

/* every contact's slip velocities (2 each) for velocities qd at the q of the last
 * evk_contact_rates */
static void evk_slip_rates(EvLoop *ev, const double *qd, double *vt)
{
    EvKernel *K = ev->k;
    int nv = K->k->nv;
    qd_to_nu(K->k, K->q, qd, K->nup);
    for (int i = 0; i < 2 * ev->nc; i++) {
        const double *D = K->Dt + (size_t)i * nv;
        double acc = 0.0;
        for (int j = 0; j < nv; j++)
            acc += D[j] * K->nup[j];
        vt[i] = acc;
    }
}

/* evk_impact_solve with friction: the contacts in trial closed (their rates = target), the
 * sticking ones (stick) with their tangential rates 0, the sliding ones (slide) with the
 * impulse mu r_n s along s = dir (2 per contact); rn the normal impulses, rt the sticking
 * ones' tangential impulses (2 per contact) */
static int evk_impact_fr(EvLoop *ev, const double *q, const double *qd,
                         const unsigned char *trial, const unsigned char *stick,
                         const unsigned char *slide, const double *dir,
                         const double *target, double *qdp, double *rn, double *rt)
{
    EvKernel *K = ev->k;
    SK *k = K->k;
    sk_set_friction(k, stick, slide, dir);
    evk_select(ev, trial);
    memcpy(ev->sel, trial, (size_t)ev->nc);
    int rc = impact_rows_solve(ev, q, qd, target, qdp);
    if (rc != OK)
        return rc;
    for (int i = 0; i < ev->nc; i++)
        rn[i] = rt[2 * i] = rt[2 * i + 1] = 0.0;
    int r = K->base + k->na;
    for (int a = 0; a < k->na; a++) {
        int i = k->act[a];
        rn[i] = k->lam[K->base + a];
        if (k->stick[i]) {
            rt[2 * i] = k->lam[r++];
            rt[2 * i + 1] = k->lam[r++];
        }
    }
    return OK;
}

/* ------------------------------------------------------------------ the API */
int sk_advance_events(SkEvents *ev, int method, double *par, double *y_io, const double *u,
                      double *rec_io)
{
    return ev_advance(ev, method, par, y_io, u, rec_io, 0, NULL);
}

int sk_advance_events_to_impact(SkEvents *ev, int method, double *par, double *y_io,
                                const double *u, double *rec_io, int *impact)
{
    if (impact)
        *impact = 0;
    return ev_advance(ev, method, par, y_io, u, rec_io, 1, impact);
}

int sk_events_outputs_fr(SkEvents *ev, double t, const double *y, const double *u,
                         const double *rec, double *gap, double *force, double *ft,
                         double *vt)
{
    if (!ev->fr)
        return ERR_ARGS;
    return ev_outputs_fr(ev, t, y, u, rec, gap, force, ft, vt);
}

int sk_events_initial(SkEvents *ev, double t, const double *y, const double *u, double *rec,
                      double contact_tol, double contact_velocity)
{
    if (!ev->fr)
        return ERR_ARGS;
    return ev_initial(ev, t, y, u, rec, contact_tol, contact_velocity);
}

int sk_events_set_joint_friction(SkEvents *ev, int nj, const int *ji, const double *jd,
                                 const int *jq, const int *jnu, const double *bound,
                                 const int *jlim)
{
    if (!ev || nj < 1 || !ji || !jd || !jq || !jnu || !bound || ev->nj)
        return ERR_ARGS;
    EvKernel *K = ev->k;
    SK *k = K->k;
    for (int j = 0; j < nj; j++) {
        const int *J = ji + 3 * j;
        if ((J[0] != 1 && J[0] != 2) || J[1] < 0 || J[1] > k->nb || J[2] < 0 ||
            J[2] > k->nb || jnu[j] < 0 || jnu[j] >= k->nv)
            return ERR_ARGS;
        for (int i = 0; i < DRD; i++)
            if (!isfinite(jd[DRD * j + i]))
                return ERR_ARGS;
    }
    size_t J = (size_t)nj, vv = (size_t)(k->nv > 0 ? k->nv : 1);
    int need = k->mc + k->nd + k->ncp + 3 * k->nk + nj;     /* every phase's rows */
    int *jji = malloc(sizeof(int) * 3 * J), *jnu2 = malloc(sizeof(int) * J);
    int *jri = calloc(3 * J, sizeof(int));
    double *jjd = malloc(sizeof(double) * DRD * J), *jrd = calloc(DRD * J, sizeof(double));
    double *jtau = calloc(vv, sizeof(double));
    if (!jji || !jnu2 || !jri || !jjd || !jrd || !jtau ||
        (need > k->mcap && alloc_rows(k, need) != OK)) {
        free(jji); free(jnu2); free(jri); free(jjd); free(jrd); free(jtau);
        return ERR_ARGS;
    }
    memcpy(jji, ji, sizeof(int) * 3 * J);
    memcpy(jnu2, jnu, sizeof(int) * J);
    memcpy(jjd, jd, sizeof(double) * DRD * J);
    free(K->jji); free(K->jnu); free(K->jjd);
    K->jji = jji;
    K->jnu = jnu2;
    K->jjd = jjd;
    free(k->jri); free(k->jrd); free(k->jtau);
    k->jri = jri;
    k->jrd = jrd;
    k->jtau = jtau;
    k->njr = 0;
    int rc = ev_joints(ev, nj, jq, bound, jlim);
    if (rc != OK)
        return rc;
    ev->fr = 1;
    ev->nrec = EV_REC_FR;
    ev_select(ev, ev->sel);
    return OK;
}

int sk_events_joint_outputs(SkEvents *ev, double t, const double *y, const double *u,
                            const double *rec, double *gap, double *force, double *ft,
                            double *vt, double *jout)
{
    return ev_joint_outputs(ev, t, y, u, rec, gap, force, ft, vt, jout);
}

int sk_events_outputs(SkEvents *ev, double t, const double *y, const double *u,
                      const double *rec, double *gap, double *force)
{
    return ev_outputs(ev, t, y, u, rec, gap, force);
}

/* qdd (and, with the pose data rq of sk_set_pose_data, the bodies' x, xd, xdd as
 * sk_accelerations_full) at (t, q, qd) with the rows of rec's persistent contacts closed, no
 * Baumgarte terms: the motion whose Newton-Euler multipliers give the reactions while a
 * contact holds; with friction the records' phase (sticking rows, sliding forces). rq NULL:
 * qdd only (x, xd, xdd may be NULL). */
int sk_events_accelerations(SkEvents *ev, double t, const double *q, const double *qd,
                            const double *u, const double *rec, const double *rq,
                            double *qdd, double *x, double *xd, double *xdd)
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
    SK *k = ev->k->k;
    int mode = k->mode, rc;
    ev->k->fresh = 0;
    k->mode = 0;
    k->t = t;
    if (rq) {
        if (!k->rq && sk_set_pose_data(k, rq) != OK) {
            k->mode = mode;
            return ERR_ARGS;
        }
        memcpy(k->rq, rq, sizeof(double) * 9 * k->nb);
        rc = sk_accelerations_full(k, q, qd, u, qdd, x, xd, xdd);
    } else {
        rc = sk_accelerations(k, q, qd, u, qdd);
    }
    k->mode = mode;
    return rc;
}

/* Event mode (engine_me.h, FMI model exchange): the contacts' event values at (t, y) for the
 * records rec (event_loop.h ev_event_values), and one event iteration there
 * (ev_event_update: impacts, releases; y's velocities and rec updated). */
int sk_events_values(SkEvents *ev, double t, const double *y, const double *u,
                       const double *rec, double *v)
{
    return ev_event_values(ev, t, y, u, rec, v);
}

/* the start of a simulation (event_loop.h ev_initial_impact): a frictionless contact closed
 * at rest at t starts persistent, one closed and approaching has its impact there */
int sk_events_initial_impact(SkEvents *ev, double t, double *y, const double *u, double *rec,
                              double ctol, double cvel, int stab, double alpha, double beta,
                              double ptol, int *impacts)
{
    return ev_initial_impact(ev, t, y, u, rec, ctol, cvel, stab, alpha, beta, ptol, impacts);
}

int sk_events_update(SkEvents *ev, double t, double *y, const double *u, double *rec,
                       double ctol, double cvel, int project, int *impacts, int *released)
{
    return ev_event_update(ev, t, y, u, rec, ctol, cvel, project, impacts, released);
}
