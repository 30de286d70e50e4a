/*
 * The spatial part of the engine (included by engine.c once, after its helpers): the spatial
 * kernel's calls, and what fmu_mb.mechanics.spatial computes for the outputs in absolute
 * coordinates x = (r, p) per body (Euler parameters p, scalar first; the ground at index nb
 * with r = 0, p = (1, 0, 0, 0)):
 *   - Terms (kinematics.py): a value with its Jacobian on the 14 coordinates (r_p, p_p, r_c,
 *     p_c) of a pair of bodies; points r + A(p) s, directions A(p) a, dot, norm, angle;
 *   - the joints' constraint rows (constraints.joint_terms), the Euler-parameter
 *     normalisations, the joint coordinates (coordinate_term), the reactions
 *     (constraints.reactions with generalized_to_wrench);
 *   - the applied forces f in x (elements.applied_forces: gravity, the gyroscopic term, TSDA,
 *     RSDA, bushings, forces, torques), M(x) xdd, the energies, the body outputs (Cardan
 *     angles, angular velocity);
 *   - the initial state: placement.tree_placement, assembly's Newton with least M-norm steps
 *     on every row and the given coordinates, least M-norm velocities, then
 *     tree.initial_coordinates (with tree._fix_signs' choice of the relative Euler
 *     parameters' signs, kept in the engine's copy of the pose data) and qd0 = lstsq(Tq, xd0)
 *     with Tq's columns from the kernel's kinematics of unit rates.
 */

/* the spatial kernel's exported functions (spatial_kernel.c) */
void *sk_create(int nb, int n, int nv, const int *ri, const double *rd, const double *mass,
                const double *J, double gx, double gy, double gz, int ne, int nu, const int *ei,
                const double *ed, int nc, const int *ci, const double *cd);
int sk_set_pose_data(void *k, const double *rq);
int sk_set_armature(void *k, const double *arm);
int sk_kinematics(void *k, const double *q, const double *qd, double *x, double *xd);
int sk_poses(void *k, const double *q, const double *qd, double *x, double *xd);
int sk_accelerations_full(void *k, const double *q, const double *qd, const double *u,
                          double *qdd, double *x, double *xd, double *xdd);
int sk_element_outputs(void *k, const double *q, const double *qd, const double *u,
                       double *out);
void sk_points(void *k, const double *q, const double *qd, int np, const int *body,
               const double *pts, double *out);
int sk_set_drives(void *k, int nd, const int *di, const double *dd, int ndp, const double *dp);
int sk_set_couplers(void *k, int ncp, const int *ci, const double *cd);
void sk_set_time(void *k, double t);
int sk_accelerations(void *k, const double *q, const double *qd, const double *u, double *qdd);
int sk_accelerations_qr(void *k, const double *q, const double *qd, const double *u,
                        double *qdd, int *rank);
int sk_events_initial(void *ev, double t, const double *y, const double *u, double *rec,
                      double contact_tol, double contact_velocity);

#define SRI 6
#define SRD 24
#define SEI 5
#define SED 108
#define SCI 3
#define SCD 25
#define SJD 25

#include "pairs.h"                  /* shape-pair contacts (kind 6), shared with the kernel */

typedef struct { double v, J[14]; } STerm;
typedef struct { double v[3], J[3][14]; } VTerm;

static void q_rotate(const double *p, const double *s, double *o)   /* A(p) s */
{
    double e0 = p[0], e1 = p[1], e2 = p[2], e3 = p[3];
    double ee = e1 * e1 + e2 * e2 + e3 * e3, es = e1 * s[0] + e2 * s[1] + e3 * s[2];
    double cx = e2 * s[2] - e3 * s[1], cy = e3 * s[0] - e1 * s[2], cz = e1 * s[1] - e2 * s[0];
    double a = e0 * e0 - ee;
    o[0] = a * s[0] + 2.0 * es * e1 + 2.0 * e0 * cx;
    o[1] = a * s[1] + 2.0 * es * e2 + 2.0 * e0 * cy;
    o[2] = a * s[2] + 2.0 * es * e3 + 2.0 * e0 * cz;
}

static void q_rotjac(const double *p, const double *s, double J[3][4])   /* d(A s)/dp */
{
    double e0 = p[0], e[3] = {p[1], p[2], p[3]};
    double cr[3] = {e[1] * s[2] - e[2] * s[1], e[2] * s[0] - e[0] * s[2],
                    e[0] * s[1] - e[1] * s[0]};
    double es = e[0] * s[0] + e[1] * s[1] + e[2] * s[2];
    double ts[3][3] = {{0.0, -s[2], s[1]}, {s[2], 0.0, -s[0]}, {-s[1], s[0], 0.0}};
    for (int i = 0; i < 3; i++) {
        J[i][0] = 2.0 * (e0 * s[i] + cr[i]);
        for (int j = 0; j < 3; j++)
            J[i][1 + j] = 2.0 * ((i == j ? es : 0.0) + e[i] * s[j] - s[i] * e[j] -
                                 e0 * ts[i][j]);
    }
}

static void E_mat(const double *p, double E[3][4])      /* omega (global) = 2 E p' */
{
    double e0 = p[0], e1 = p[1], e2 = p[2], e3 = p[3];
    double M[3][4] = {{-e1, e0, -e3, e2}, {-e2, e3, e0, -e1}, {-e3, -e2, e1, e0}};
    memcpy(E, M, sizeof M);
}

static void G_mat(const double *p, double G[3][4])      /* omega' (body) = 2 G p' */
{
    double e0 = p[0], e1 = p[1], e2 = p[2], e3 = p[3];
    double M[3][4] = {{-e1, e0, e3, -e2}, {-e2, -e3, e0, e1}, {-e3, e2, -e1, e0}};
    memcpy(G, M, sizeof M);
}

/* point r_b + A s (point) or direction A s of body b on side 0 (parent) or 1 (child) */
static void vterm(const double *xe, int b, const double *s, int side, int point, VTerm *t)
{
    const double *r = xe + 7 * b, *p = r + 3;
    double As[3], Jp[3][4];
    q_rotate(p, s, As);
    q_rotjac(p, s, Jp);
    memset(t, 0, sizeof *t);
    int o = 7 * side;
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 4; k++)
            t->J[i][o + 3 + k] = Jp[i][k];
        if (point) {
            t->v[i] = r[i] + As[i];
            t->J[i][o + i] = 1.0;
        } else {
            t->v[i] = As[i];
        }
    }
}

static void vsub(const VTerm *a, const VTerm *b, VTerm *o)
{
    for (int i = 0; i < 3; i++) {
        o->v[i] = a->v[i] - b->v[i];
        for (int k = 0; k < 14; k++)
            o->J[i][k] = a->J[i][k] - b->J[i][k];
    }
}

static void vcomp(const VTerm *a, int i, STerm *o)
{
    o->v = a->v[i];
    memcpy(o->J, a->J[i], sizeof o->J);
}

static void vdot(const VTerm *a, const VTerm *b, STerm *o)
{
    o->v = a->v[0] * b->v[0] + a->v[1] * b->v[1] + a->v[2] * b->v[2];
    for (int k = 0; k < 14; k++)
        o->J[k] = (b->v[0] * a->J[0][k] + b->v[1] * a->J[1][k] + b->v[2] * a->J[2][k]) +
                  (a->v[0] * b->J[0][k] + a->v[1] * b->J[1][k] + a->v[2] * b->J[2][k]);
}

static int vnorm(const VTerm *d, STerm *o)
{
    double l = sqrt(d->v[0] * d->v[0] + d->v[1] * d->v[1] + d->v[2] * d->v[2]);
    if (!(l > 0.0))
        return 1;
    double e[3] = {d->v[0] / l, d->v[1] / l, d->v[2] / l};
    o->v = l;
    for (int k = 0; k < 14; k++)
        o->J[k] = e[0] * d->J[0][k] + e[1] * d->J[1][k] + e[2] * d->J[2][k];
    return 0;
}

static void sangle(const STerm *c, const STerm *s, STerm *o)   /* atan2(s, c) */
{
    double r2 = c->v * c->v + s->v * s->v;
    double v = atan2(s->v, c->v);
    for (int k = 0; k < 14; k++)
        o->J[k] = (c->v * s->J[k] - s->v * c->J[k]) / r2;
    o->v = v;
}

static void sscale(STerm *t, double c)
{
    t->v *= c;
    for (int k = 0; k < 14; k++)
        t->J[k] *= c;
}

static double srate(const STerm *t, const double *xde, int p, int c)
{
    double s = 0.0;
    for (int k = 0; k < 7; k++)
        s += t->J[k] * xde[7 * p + k];
    for (int k = 0; k < 7; k++)
        s += t->J[7 + k] * xde[7 * c + k];
    return s;
}

/* the joint frames of a pair: points sp, sc and frames Fp, Fc (row-major, axes = columns) */
typedef struct {
    const double *xe, *sp, *sc, *Fp, *Fc;
    int p, c;
} Frames3;

static void axis3(const Frames3 *f, int side, int i, VTerm *t)
{
    const double *F = side ? f->Fc : f->Fp;
    double a[3] = {F[i], F[3 + i], F[6 + i]};
    vterm(f->xe, side ? f->c : f->p, a, side, 0, t);
}

static void dvec(const Frames3 *f, VTerm *d)
{
    VTerm pc, pp;
    vterm(f->xe, f->c, f->sc, 1, 1, &pc);
    vterm(f->xe, f->p, f->sp, 0, 1, &pp);
    vsub(&pc, &pp, d);
}

static void adot(const Frames3 *f, int s1, int i1, int s2, int i2, STerm *o)
{
    VTerm a, b;
    axis3(f, s1, i1, &a);
    axis3(f, s2, i2, &b);
    vdot(&a, &b, o);
}

/* constraints.joint_terms: the rows of a joint of kind SJ_* into t (returns their count, -1
 * when undefined) */
static int joint_terms(int kind, const Frames3 *f, double length, STerm *t)
{
    int k = 0;
    VTerm d, a;
    dvec(f, &d);
    if (kind == SJ_SPH || kind == SJ_REV || kind == SJ_UNI || kind == SJ_WELD)
        for (int i = 0; i < 3; i++)
            vcomp(&d, i, &t[k++]);
    if (kind == SJ_CYL || kind == SJ_PRI) {
        axis3(f, 0, 0, &a);
        vdot(&a, &d, &t[k++]);
        axis3(f, 0, 1, &a);
        vdot(&a, &d, &t[k++]);
    }
    if (kind == SJ_REV || kind == SJ_CYL || kind == SJ_PRI || kind == SJ_WELD) {
        adot(f, 0, 0, 1, 2, &t[k++]);
        adot(f, 0, 1, 1, 2, &t[k++]);
    }
    if (kind == SJ_PRI || kind == SJ_WELD)
        adot(f, 0, 0, 1, 1, &t[k++]);
    if (kind == SJ_UNI)
        adot(f, 0, 2, 1, 2, &t[k++]);
    if (kind == SJ_DST) {
        if (vnorm(&d, &t[k]))
            return -1;
        t[k++].v -= length;
    }
    return k;
}

/* constraints.coordinate_term */
static void coord_term(int kind, const Frames3 *f, STerm *o)
{
    STerm c, s;
    if (kind == SC_REV) {
        adot(f, 0, 0, 1, 0, &c);
        adot(f, 0, 1, 1, 0, &s);
        sangle(&c, &s, o);
    } else if (kind == SC_UNI1) {
        adot(f, 0, 0, 1, 2, &c);
        adot(f, 0, 1, 1, 2, &s);
        sangle(&c, &s, o);
    } else if (kind == SC_UNI2) {
        adot(f, 1, 0, 0, 2, &c);
        adot(f, 1, 1, 0, 2, &s);
        sscale(&s, -1.0);
        sangle(&c, &s, o);
    } else {
        VTerm z, d;
        axis3(f, 0, 2, &z);
        dvec(f, &d);
        vdot(&z, &d, o);
    }
}

static void joint_frames(const MbEngine *e, int j, const double *xe, Frames3 *f)
{
    const int *J = IA(e, A_IJOINT) + 6 * j;
    const double *P = DA(e, A_DJOINT) + SJD * j;
    f->xe = xe;
    f->p = J[1];
    f->c = J[2];
    f->sp = P;
    f->sc = P + 3;
    f->Fp = P + 6;
    f->Fc = P + 15;
}

static void sextend(const MbEngine *e, const double *x, double *xe, int rate)
{
    int nb = e->nb;
    memcpy(xe, x, sizeof(double) * 7 * nb);
    for (int i = 0; i < 7; i++)
        xe[7 * nb + i] = 0.0;
    if (!rate)
        xe[7 * nb + 3] = 1.0;
}

/* ------------------------------------------------------------------ rows by body blocks
 * The spatial rows as SpRow (engine.c): a row touches the 7 columns of at most four bodies
 * (a coupler's two joints), so the start-up's and the outputs' passes over the rows (filling,
 * residuals, D f, the Gram matrix D M^-1 D' and its envelope) cost O(rows) instead of
 * O(rows x 7 nb). Every sum runs over a row's nonzero columns in ascending order, as the
 * dense loops do, less the exact zeros: the same numbers. */

/* row R's 7 entries of body b (zero when new; the blocks stay in ascending body order);
 * NULL for the ground (b >= nb) */
static double *sprow_block(SpRow *R, int nb, int b)
{
    if (b < 0 || b >= nb)
        return NULL;
    int i = 0;
    while (i < R->n && R->b[i] < b)
        i++;
    if (i < R->n && R->b[i] == b)
        return R->v[i];
    if (R->n == SPROW_BLOCKS)                 /* (no row touches more than four bodies) */
        return NULL;
    for (int j = R->n; j > i; j--) {
        R->b[j] = R->b[j - 1];
        memcpy(R->v[j], R->v[j - 1], sizeof R->v[j]);
    }
    R->b[i] = b;
    memset(R->v[i], 0, sizeof R->v[i]);
    R->n++;
    return R->v[i];
}

/* row R's entries of body b, NULL when the row does not touch b */
static const double *sprow_get(const SpRow *R, int b)
{
    for (int i = 0; i < R->n; i++)
        if (R->b[i] == b)
            return R->v[i];
    return NULL;
}

/* the blocks of bodies p and c of row R (created zero when new; NULL for the ground), both
 * looked up after both are there (an insertion moves the blocks after it) */
static void sprow_pair(SpRow *R, int nb, int p, int c, double **bp, double **bc)
{
    sprow_block(R, nb, p);
    sprow_block(R, nb, c);
    *bp = p >= 0 && p < nb ? (double *)sprow_get(R, p) : NULL;
    *bc = c >= 0 && c < nb ? (double *)sprow_get(R, c) : NULL;
}

/* row R times v (7 nb) */
static double sprow_dot(const SpRow *R, const double *v)
{
    double s = 0.0;
    for (int i = 0; i < R->n; i++) {
        const double *a = R->v[i], *w = v + 7 * R->b[i];
        for (int j = 0; j < 7; j++)
            s += a[j] * w[j];
    }
    return s;
}

/* sum over the columns of rows P and Q (ascending) of P (M^-1 when given) Q, exact zeros
 * skipped (engine.c gram's sum) */
static double sprow_gram(const SpRow *P, const SpRow *Q, const double *Minv)
{
    double s = 0.0;
    for (int i = 0, j = 0; i < P->n && j < Q->n;) {
        if (P->b[i] < Q->b[j]) {
            i++;
        } else if (P->b[i] > Q->b[j]) {
            j++;
        } else {
            const double *a = P->v[i], *c = Q->v[j], *m = Minv ? Minv + 7 * P->b[i] : NULL;
            for (int l = 0; l < 7; l++)
                if (a[l] != 0.0 && c[l] != 0.0)
                    s += (m ? a[l] * m[l] : a[l]) * c[l];
            i++;
            j++;
        }
    }
    return s;
}

/* the dense rows (k x 7 nb) of R */
static void sprows_dense(const SpRow *R, int k, int nb, double *D)
{
    blocks_dense(R, ROW_BLOCKS(SpRow, 7), k, nb, D);
}

static NzRows nzrows_sp(MbEngine *e, const SpRow *R, int k)
{
    return nzrows(e, R, ROW_BLOCKS(SpRow, 7), k);
}

static int sprows_finite(const SpRow *R, int k)
{
    for (int r = 0; r < k; r++)
        for (int i = 0; i < R[r].n; i++)
            if (!all_finite(R[r].v[i], 7))
                return 0;
    return 1;
}

/* engine.c velocity_residual over the blocks: max |R xd - b| over k rows; r (if given)
 * = b - R xd */
static double sprows_velocity_residual(const SpRow *R, int k, const double *xd,
                                       const double *b, double *r)
{
    double res = 0.0;
    for (int i = 0; i < k; i++) {
        double s = sprow_dot(R + i, xd);
        res = max_abs_nan(res, s - b[i]);
        if (r)
            r[i] = b[i] - s;
    }
    return res;
}

/* y = S^+ rhs for S = R R' (nt rows; dense_psd_solve's cut-off RANK_RTOL), S formed in the
 * order of the rows' first bodies (a stable counting sort: a chain's joint rows and each
 * body's Euler-parameter normalisation, declared after all joints, come together, so that S
 * is banded): its lower envelope from the rows' bodies (row i's first column is the first
 * row that shares a body with it) and its entries over the pairs of rows that share a body
 * (the others are exact zeros), so that forming S costs O(nnz) and the envelope Cholesky
 * O(nt b^2) for a band of width b; S and its factor are packed row by row on the envelope
 * (ENV_ROW, e->sro: O(nt b) memory touched, not nt^2), and the envelope Cholesky of
 * dense_psd_solve runs there; only when it is not accepted (near a singular pose) is S
 * spread to the dense layout for the eigen route. The solution is put back in the rows'
 * order. e->srw: 8 nt + 2 nb + 3 ints, e->srd: 2 nt, e->sro: nt. */
static int sprows_psd_solve(MbEngine *e, const SpRow *R, int nt, const double *rhs, double *y)
{
    int nb = e->nb, *env = e->srw, *cnt = env + 2 * nt, *list = cnt + nb + 1,
        *stamp = list + SPROW_BLOCKS * nt, *perm = stamp + nt, *key = perm + nt;
    double *S, *bp = e->srd, *yp = e->srd + nt;
    for (int b = 0; b <= nb + 1; b++)                /* perm: positions -> rows */
        key[b] = 0;
    for (int r = 0; r < nt; r++)
        key[(R[r].n ? R[r].b[0] : nb) + 1]++;
    for (int b = 0; b <= nb; b++)
        key[b + 1] += key[b];
    for (int r = 0; r < nt; r++)
        perm[key[R[r].n ? R[r].b[0] : nb]++] = r;
    for (int b = 0; b <= nb; b++)
        cnt[b] = 0;
    for (int r = 0; r < nt; r++)
        for (int i = 0; i < R[r].n; i++)
            cnt[R[r].b[i] + 1]++;
    for (int b = 0; b < nb; b++)
        cnt[b + 1] += cnt[b];
    for (int p = 0; p < nt; p++) {                   /* the positions of each body's rows */
        const SpRow *Rp = R + perm[p];
        stamp[p] = -1;
        for (int i = 0; i < Rp->n; i++)
            list[cnt[Rp->b[i]]++] = p;
    }
    for (int b = nb; b > 0; b--)                     /* (cnt[b]: the start of body b's) */
        cnt[b] = cnt[b - 1];
    cnt[0] = 0;
    for (int p = 0; p < nt; p++) {
        const SpRow *Rp = R + perm[p];
        int f = p;
        for (int i = 0; i < Rp->n; i++)
            if (list[cnt[Rp->b[i]]] < f)
                f = list[cnt[Rp->b[i]]];
        env[p] = f;
    }
    ptrdiff_t *off = e->sro;
    size_t size = dense_env_offsets(env, nt, off);
    if (reserve(&e->S, &e->ncap_S, size) != OK || reserve(&e->V, &e->ncap_V, size) != OK)
        return ERR_NOMEM;
    S = e->S;
    for (int p = 0; p < nt; p++) {
        const SpRow *Rp = R + perm[p];
        int f = env[p];
        double *Sp = S + off[p];
        for (int l = f; l <= p; l++)
            Sp[l] = 0.0;
        for (int i = 0; i < Rp->n; i++)
            for (int j = cnt[Rp->b[i]]; j < cnt[Rp->b[i] + 1] && list[j] <= p; j++) {
                int q = list[j];
                if (stamp[q] == p)
                    continue;
                stamp[q] = p;
                Sp[q] = sprow_gram(Rp, R + perm[q], NULL);
            }
        bp[p] = rhs[perm[p]];
    }
    dense_envelope_last(env, nt);
    int rc = OK;
    if (!dense_env_chol_solve(S, off, env, e->V, nt, RANK_RTOL, 1, bp, yp, 0.0, NULL)) {
        size_t dense = (size_t)nt * nt;
        if (reserve(&e->S, &e->ncap_S, dense) != OK || reserve(&e->V, &e->ncap_V, dense) != OK)
            return ERR_NOMEM;
        S = e->S;
        memcpy(e->V, S, sizeof(double) * size);      /* S spread to the dense layout */
        for (int p = 0; p < nt; p++)
            memcpy(S + (size_t)p * nt + env[p], e->V + off[p] + env[p],
                   sizeof(double) * (size_t)(p - env[p] + 1));
        rc = dense_psd_solve_env(S, env, e->V, e->w, nt, NULL, NULL, 0, RANK_RTOL, 1, bp, yp,
                                 NULL);
    }
    for (int p = 0; p < nt; p++)
        y[perm[p]] = yp[p];
    return rc;
}

static void spatial_drive_rows(MbEngine *e, const double *xe, double t, double *phi,
                               SpRow *R);
static void spatial_coupler_rows(MbEngine *e, const double *xe, double *phi, SpRow *R);
static int element_terms(const MbEngine *e, int i, const double *xe, const double *xde,
                         const double *u, STerm *t, double *s, int *pp, int *cc);

/* every row at x (constraints.evaluate, spatial) with the drives' rows at time t: phi and,
 * when R is given, the rows' Jacobian by body blocks (nrows rows); e->phit the rows' phi_t
 * (-s'(t) on a drive's row, else 0) */
static int spatial_rows_sp(MbEngine *e, const double *x, double tr, double *phi, SpRow *R)
{
    int nb = e->nb;
    double *xe = e->xe;
    STerm t[6];
    sextend(e, x, xe, 0);
    for (int r = 0; R && r < e->nrows; r++)
        R[r].n = 0;
    for (int j = 0; j < e->nj; j++) {
        const int *J = IA(e, A_IJOINT) + 6 * j;
        Frames3 f;
        joint_frames(e, j, xe, &f);
        int k = joint_terms(J[0], &f, DA(e, A_DJOINT)[SJD * j + 24], t);
        if (k != J[5])
            return j + 1;
        for (int r = 0; r < k; r++) {
            phi[J[4] + r] = t[r].v;
            if (!R)
                continue;
            double *bp, *bc;
            sprow_pair(R + J[4] + r, nb, f.p, f.c, &bp, &bc);
            for (int i = 0; i < 7; i++) {
                if (bp)
                    bp[i] = t[r].J[i];
                if (bc)
                    bc[i] = t[r].J[7 + i];
            }
        }
    }
    spatial_drive_rows(e, xe, tr, phi, R);
    spatial_coupler_rows(e, xe, phi, R);
    int r0 = e->nrows - nb;
    for (int b = 0; b < nb; b++) {
        const double *p = x + 7 * b + 3;
        phi[r0 + b] = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3]) - 1.0;
        double *bb = R ? sprow_block(R + r0 + b, nb, b) : NULL;
        if (bb)
            for (int i = 0; i < 4; i++)
                bb[3 + i] = 2.0 * p[i];
    }
    return OK;
}

/* spatial_rows_sp with the rows' Jacobian D dense (nrows x 7 nb) when given */
static int spatial_rows_at(MbEngine *e, const double *x, double tr, double *phi, double *D)
{
    int rc = spatial_rows_sp(e, x, tr, phi, D ? e->sr : NULL);
    if (D)
        sprows_dense(e->sr, e->nrows, e->nb, D);
    return rc;
}

static int spatial_rows(MbEngine *e, const double *x, double *phi, SpRow *R)
{
    return spatial_rows_sp(e, x, e->t, phi, R);
}

/* ------------------------------------------------------------------ spatial drives
 * (version 3) A drive's row (constraints.evaluate): its joint's coordinate q(x) - s(t)
 * (a revolute angle's difference wrapped into [-pi, pi)), Jacobian that of the coordinate,
 * phi_t = -s'(t); its multiplier is -effort. */
static void spatial_law(const MbEngine *e, int d, double t, double *v)
{
    const int *Dd = IA(e, A_ISDI) + 6 * d;
    drive_law_eval(Dd[3] == 2, DA(e, A_DSDP) + Dd[4], Dd[5], t, v);
}

static void spatial_drive_rows(MbEngine *e, const double *xe, double t, double *phi,
                               SpRow *R)
{
    int nb = e->nb;
    for (int r = 0; r < e->nrows; r++)
        e->phit[r] = 0.0;
    for (int d = 0; d < e->nd; d++) {
        int j = IA(e, A_ISDJ)[2 * d], row = IA(e, A_ISDJ)[2 * d + 1];
        int rev = IA(e, A_IJOINT)[6 * j] == SJ_REV;
        Frames3 f;
        STerm tc;
        double v[3];
        joint_frames(e, j, xe, &f);
        coord_term(rev ? SC_REV : SC_PRI, &f, &tc);
        spatial_law(e, d, t, v);
        double res = tc.v - v[0];
        if (rev)
            res = pymod(res + PI, 2.0 * PI) - PI;
        phi[row] = res;
        e->phit[row] = -v[1];
        if (!R)
            continue;
        R[row].n = 0;
        double *bp, *bc;
        sprow_pair(R + row, nb, f.p, f.c, &bp, &bc);
        for (int i = 0; i < 7; i++) {
            if (bp)
                bp[i] = tc.J[i];
            if (bc)
                bc[i] = tc.J[7 + i];
        }
    }
}

/* A coupler's row (constraints.evaluate): q_a(x) - ratio q_b(x) - offset (wrapped into
 * [-pi, pi) for a revolute joint a), Jacobian that of q_a minus ratio times that of q_b (the
 * two joints may share a body) */
static void spatial_coupler_rows(MbEngine *e, const double *xe, double *phi, SpRow *R)
{
    int nb = e->nb;
    for (int c = 0; c < e->ncp; c++) {
        const int *Cj = IA(e, A_ISCJ) + 3 * c;
        const double *cd = DA(e, A_DSCP) + 50 * c, ratio = cd[48];
        int row = Cj[2], rev = IA(e, A_IJOINT)[6 * Cj[0]] == SJ_REV;
        Frames3 fa, fb;
        STerm ta, tb;
        joint_frames(e, Cj[0], xe, &fa);
        joint_frames(e, Cj[1], xe, &fb);
        coord_term(rev ? SC_REV : SC_PRI, &fa, &ta);
        coord_term(IA(e, A_IJOINT)[6 * Cj[1]] == SJ_REV ? SC_REV : SC_PRI, &fb, &tb);
        double res = ta.v - ratio * tb.v - cd[49];
        if (rev)
            res = pymod(res + PI, 2.0 * PI) - PI;
        phi[row] = res;
        if (!R)
            continue;
        R[row].n = 0;
        double *b1, *b2, *b3, *b4;
        sprow_pair(R + row, nb, fa.p, fa.c, &b1, &b2);
        sprow_pair(R + row, nb, fb.p, fb.c, &b3, &b4);
        b1 = fa.p < nb ? (double *)sprow_get(R + row, fa.p) : NULL;   /* (moved by b3, b4) */
        b2 = fa.c < nb ? (double *)sprow_get(R + row, fa.c) : NULL;
        for (int i = 0; i < 7; i++) {
            if (b1)
                b1[i] += ta.J[i];
            if (b2)
                b2[i] += ta.J[7 + i];
            if (b3)
                b3[i] -= ratio * tb.J[i];
            if (b4)
                b4[i] -= ratio * tb.J[7 + i];
        }
    }
}

/* a cylinder's outputs (elements.element_outputs, spatial): F = -s, l, l - min_length, l',
 * F d / l (its force on body b at the pin), then the impacts of its end stops (IEND) */
static int spatial_cylinder_outputs(MbEngine *e, int el, const double *xe, const double *xde,
                                    const double *u, double *o)
{
    int row = IA(e, A_IELEM)[2 * el + 1], p, c;
    const double *P = DA(e, A_DSED) + SED * row;
    STerm t[6];
    double s[6];
    if (element_terms(e, row, xe, xde, u, t, s, &p, &c) != 1)
        return 2;
    Frames3 f = {xe, P, P + 3, P + 6, P + 15, p, c};
    VTerm d;
    dvec(&f, &d);
    double F = -s[0], l = t[0].v;
    o[0] = F;
    o[1] = l;
    o[2] = l - DA(e, A_DELEM)[el];
    o[3] = srate(&t[0], xde, p, c);
    for (int i = 0; i < 3; i++)
        o[4 + i] = F * (d.v[i] / l);
    double hits = 0.0;
    for (int j = 0; j < 2; j++) {
        int k = IA(e, A_IEND)[2 * el + j];
        if (k >= 0)
            hits += e->rec[e->nrec * k];
    }
    o[7] = hits;
    return OK;
}

/* ------------------------------------------------------------------ linearization
 * The tree's own Euler-parameter normalisations in q (tree coordinates): one row p . p - 1
 * per spherical tree joint (p = q[o..o+3]) and floating body (p = q[o+3..o+6]), in tree row
 * order (fmu_mb.dynamics.formulations._spatial_tmt.rows). spatial_tree_norms: their count
 * (and their first coordinates into first, when not NULL). */
static int spatial_tree_norms(const MbEngine *e, int *first)
{
    int k = 0;
    for (int row = 0; row < e->nb; row++) {
        const int *R = IA(e, A_ISRI) + SRI * row;
        if (R[0] != 3 && R[0] != 4)
            continue;
        if (first)
            first[k] = R[3] + (R[0] == 4 ? 3 : 0);
        k++;
    }
    return k;
}

/* their phi, phi_t (0) and rows of Dq (n wide each) at q */
static void spatial_tree_norms_rows(const MbEngine *e, const double *q, double *phi,
                                    double *phit, double *Dq)
{
    int k = 0, n = e->n;
    for (int row = 0; row < e->nb; row++) {
        const int *R = IA(e, A_ISRI) + SRI * row;
        if (R[0] != 3 && R[0] != 4)
            continue;
        const double *p = q + R[3] + (R[0] == 4 ? 3 : 0);
        int o = R[3] + (R[0] == 4 ? 3 : 0);
        phi[k] = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + p[3] * p[3]) - 1.0;
        phit[k] = 0.0;
        double *D = Dq + (size_t)k * n;
        for (int j = 0; j < n; j++)
            D[j] = 0.0;
        for (int i = 0; i < 4; i++)
            D[o + i] = 2.0 * p[i];
        k++;
    }
}

static double wrap_angle(double a) { return PI - pymod(PI - a, 2.0 * PI); }

/* the element terms of kernel element row i (TSDA: 1 term, RSDA: 1, bushing: 6) with their
 * forces s; returns the count (-1: undefined) */
static int element_terms(const MbEngine *e, int i, const double *xe, const double *xde,
                         const double *u, STerm *t, double *s, int *pp, int *cc)
{
    const int *E = IA(e, A_ISEI) + SEI * i;
    const double *P = DA(e, A_DSED) + SED * i;
    int kind = E[0], a = E[1], b = E[2], iu = E[3];
    double h = iu >= 0 ? u[iu] : 0.0;
    Frames3 f = {xe, P, P + 3, P + 6, P + 15, a, b};
    *pp = a;
    *cc = b;
    if (kind == 0) {                                   /* TSDA */
        VTerm d;
        dvec(&f, &d);
        if (vnorm(&d, &t[0]))
            return -1;
        /* P[30]: the input's gain (1; -1 for a cylinder, s = -F) */
        s[0] = P[24] * (t[0].v - P[26]) + P[25] * srate(&t[0], xde, a, b) + P[30] * h;
        return 1;
    }
    if (kind == 1) {                                   /* RSDA */
        coord_term(SC_REV, &f, &t[0]);
        s[0] = P[24] * wrap_angle(t[0].v - P[26]) + P[25] * srate(&t[0], xde, a, b) + h;
        return 1;
    }
    if (kind == 4) {                                   /* bushing */
        VTerm d, ax;
        dvec(&f, &d);
        for (int k = 0; k < 3; k++) {
            axis3(&f, 0, k, &ax);
            vdot(&ax, &d, &t[k]);
        }
        for (int k = 0; k < 3; k++) {
            int j = (k + 1) % 3, l = (k + 2) % 3;
            STerm u1, u2;
            adot(&f, 0, l, 1, j, &u1);
            adot(&f, 0, j, 1, l, &u2);
            t[3 + k].v = 0.5 * (u1.v - u2.v);
            for (int c = 0; c < 14; c++)
                t[3 + k].J[c] = 0.5 * (u1.J[c] - u2.J[c]);
        }
        double ev[6], er[6];
        for (int k = 0; k < 6; k++) {
            ev[k] = t[k].v - P[102 + k];
            er[k] = srate(&t[k], xde, a, b);
        }
        for (int k = 0; k < 6; k++) {
            double sk = 0.0, sc = 0.0;
            for (int j = 0; j < 6; j++) {
                sk += P[30 + 6 * k + j] * ev[j];
                sc += P[66 + 6 * k + j] * er[j];
            }
            s[k] = sk + sc;
        }
        return 6;
    }
    return 0;
}

/* elements.applied_forces (spatial) into f (7 nb) */
static int spatial_forces(MbEngine *e, const double *x, const double *xd, const double *u,
                          double *f)
{
    int nb = e->nb;
    double *xe = e->xe, *xde = e->xde, *fe = e->r;     /* r: 7 (nb + 1) */
    const double *g = DA(e, A_DGRAV), *mass = DA(e, A_DSMASS), *Jb = DA(e, A_DSJ);
    sextend(e, x, xe, 0);
    sextend(e, xd, xde, 1);
    memset(fe, 0, sizeof(double) * 7 * (nb + 1));
    for (int b = 0; b < nb; b++) {
        for (int i = 0; i < 3; i++)
            fe[7 * b + i] = mass[b] * g[i];
        const double *p = x + 7 * b + 3, *pd = xd + 7 * b + 3, *J = Jb + 9 * b;
        double Gd[3][4], w[3], Jw[3];
        G_mat(pd, Gd);
        for (int a = 0; a < 3; a++)
            w[a] = Gd[a][0] * p[0] + Gd[a][1] * p[1] + Gd[a][2] * p[2] + Gd[a][3] * p[3];
        for (int a = 0; a < 3; a++)
            Jw[a] = J[3 * a] * w[0] + J[3 * a + 1] * w[1] + J[3 * a + 2] * w[2];
        for (int i = 0; i < 4; i++)
            fe[7 * b + 3 + i] = 8.0 * (Gd[0][i] * Jw[0] + Gd[1][i] * Jw[1] + Gd[2][i] * Jw[2]);
    }
    for (int i = 0; i < e->ne; i++) {
        const int *E = IA(e, A_ISEI) + SEI * i;
        const double *P = DA(e, A_DSED) + SED * i;
        STerm t[6];
        double s[6];
        int p, c, k = element_terms(e, i, xe, xde, u, t, s, &p, &c);
        if (k < 0)
            return 2;
        for (int r = 0; r < k; r++)
            for (int j = 0; j < 7; j++) {
                fe[7 * p + j] -= t[r].J[j] * s[r];
                fe[7 * c + j] -= t[r].J[7 + j] * s[r];
            }
        if (E[0] == 2 || E[0] == 3) {                  /* force, torque */
            double mag = P[24] + (E[3] >= 0 ? u[E[3]] : 0.0), dir[3];
            int body = E[2];
            if (E[4])
                q_rotate(xe + 7 * body + 3, P + 27, dir);
            else
                memcpy(dir, P + 27, sizeof dir);
            double F[3] = {dir[0] * mag, dir[1] * mag, dir[2] * mag};
            if (E[0] == 2) {
                VTerm pt;
                vterm(xe, body, P + 3, 0, 1, &pt);
                for (int j = 0; j < 7; j++)
                    fe[7 * body + j] += F[0] * pt.J[0][j] + F[1] * pt.J[1][j] +
                                        F[2] * pt.J[2][j];
            } else {
                int bodies[2] = {E[2], E[1]};
                double sg[2] = {1.0, -1.0};
                for (int q = 0; q < 2; q++) {
                    double Em[3][4];
                    E_mat(xe + 7 * bodies[q] + 3, Em);
                    for (int j = 0; j < 4; j++)
                        fe[7 * bodies[q] + 3 + j] +=
                            2.0 * (Em[0][j] * sg[q] * F[0] + Em[1][j] * sg[q] * F[1] +
                                   Em[2][j] * sg[q] * F[2]);
                }
            }
        }
    }
    memcpy(f, fe, sizeof(double) * 7 * nb);
    return OK;
}

/* M(x) a: m a_r and 4 G' J G a_p per body */
static void spatial_mass_times(const MbEngine *e, const double *x, const double *a, double *o)
{
    const double *mass = DA(e, A_DSMASS), *Jb = DA(e, A_DSJ);
    for (int b = 0; b < e->nb; b++) {
        double G[3][4], w[3], Jw[3];
        const double *p = x + 7 * b + 3, *ap = a + 7 * b + 3, *J = Jb + 9 * b;
        G_mat(p, G);
        for (int i = 0; i < 3; i++)
            o[7 * b + i] = mass[b] * a[7 * b + i];
        for (int i = 0; i < 3; i++)
            w[i] = G[i][0] * ap[0] + G[i][1] * ap[1] + G[i][2] * ap[2] + G[i][3] * ap[3];
        for (int i = 0; i < 3; i++)
            Jw[i] = J[3 * i] * w[0] + J[3 * i + 1] * w[1] + J[3 * i + 2] * w[2];
        for (int j = 0; j < 4; j++)
            o[7 * b + 3 + j] = 4.0 * (G[0][j] * Jw[0] + G[1][j] * Jw[1] + G[2][j] * Jw[2]);
    }
}

/* The largest |eigenvalue| of the symmetric 3x3 J (row-major, its upper triangle read) by
 * cyclic Jacobi rotations: the C twin of fmu_mb.mechanics.spatial.inertia.max_abs_eigenvalue
 * (the same operations in the same order, compiled without FMA contraction). */
static double spatial_max_eig(const double *J)
{
    double d[3] = {J[0], J[4], J[8]};
    double a[3][3] = {{0, J[1], J[2]}, {0, 0, J[5]}, {0, 0, 0}};
    static const int PQR[3][3] = {{0, 1, 2}, {0, 2, 1}, {1, 2, 0}};
    for (int sweep = 0; sweep < 50; sweep++) {
        if (a[0][1] == 0.0 && a[0][2] == 0.0 && a[1][2] == 0.0)
            break;
        for (int k = 0; k < 3; k++) {
            int p = PQR[k][0], q = PQR[k][1], r = PQR[k][2];
            double apq = a[p][q];
            if (apq == 0.0)
                continue;
            double g = 100.0 * fabs(apq);
            if (fabs(d[p]) + g == fabs(d[p]) && fabs(d[q]) + g == fabs(d[q])) {
                a[p][q] = 0.0;
                continue;
            }
            double theta = (d[q] - d[p]) / (2.0 * apq), t;
            if (fabs(theta) > 1e150) {
                t = 0.5 / theta;
            } else {
                t = 1.0 / (fabs(theta) + sqrt(theta * theta + 1.0));
                if (theta < 0.0)
                    t = -t;
            }
            double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
            d[p] = d[p] - t * apq;
            d[q] = d[q] + t * apq;
            a[p][q] = 0.0;
            double *rp = r < p ? &a[r][p] : &a[p][r], *rq = r < q ? &a[r][q] : &a[q][r];
            double arp = *rp, arq = *rq;
            *rp = c * arp - s * arq;
            *rq = s * arp + c * arq;
        }
    }
    double x = fabs(d[0]);
    if (fabs(d[1]) > x)
        x = fabs(d[1]);
    if (fabs(d[2]) > x)
        x = fabs(d[2]);
    return x;
}

/* engine.c derive_metric for a spatial model: per body 3 x 1 / m and 4 x 1 / (4 Jmax),
 * Jmax the largest |eigenvalue| of its inertia (fmu_mb.mechanics.spatial.compiled). */
static void spatial_metric(const MbEngine *e, double *d)
{
    const double *m = d + e->off[A_DSMASS], *J = d + e->off[A_DSJ];
    double *w = d + e->off[A_DMINV];
    double big = 0.0;
    for (int b = 0; b < e->nb; b++)
        if (m[b] > big)
            big = m[b];
    double small = 1e-6 * (big >= 1e-300 ? big : 1e-300);
    for (int b = 0; b < e->nb; b++) {
        double jmax = spatial_max_eig(J + 9 * b);
        double wr = m[b] > 0 ? m[b] : small, wp = jmax > 0 ? 4.0 * jmax : small;
        for (int i = 0; i < 3; i++)
            w[7 * b + i] = 1.0 / wr;
        for (int i = 3; i < 7; i++)
            w[7 * b + i] = 1.0 / wp;
    }
}

static void *make_spatial_kernel(MbEngine *e)
{
    const double *g = DA(e, A_DGRAV);
    void *k = sk_create(e->nb, e->n, e->nv, IA(e, A_ISRI), DA(e, A_DSRD), DA(e, A_DSMASS),
                        DA(e, A_DSJ), g[0], g[1], g[2], e->ne, e->ni, IA(e, A_ISEI),
                        DA(e, A_DSED), e->nc, IA(e, A_ISCI), DA(e, A_DSCD));
    if (!k)
        return NULL;
    if (sk_set_pose_data(k, DA(e, A_DSRQ)) != 0 ||
        (e->nd && sk_set_drives(k, e->nd, IA(e, A_ISDI), DA(e, A_DSDD), e->cnt[A_DSDP],
                                DA(e, A_DSDP)) != 0) ||
        (e->ncp && sk_set_couplers(k, e->ncp, IA(e, A_ISCP), DA(e, A_DSCP)) != 0) ||
        (e->ncon && sk_set_contacts(k, e->ncon, IA(e, A_ICON), DA(e, A_DCON)) != 0) ||
        (e->cnt[A_DSARM] && sk_set_armature(k, DA(e, A_DSARM)) != 0)) {
        sk_free(k);
        return NULL;
    }
    sk_set_stabilization(k, e->set.stabilization, e->set.alpha, e->set.beta, e->set.proj_tol);
    return k;
}

static int check_spatial_data(MbEngine *e, char *err, size_t errlen)
{
    int nb = e->nb, n = e->n;
    struct { int a, want; } sizes[] = {
        {A_DGRAV, 3}, {A_ISRI, SRI * nb}, {A_DSRD, SRD * nb}, {A_DSMASS, nb}, {A_DSJ, 9 * nb},
        {A_ISEI, SEI * e->ne}, {A_DSED, SED * e->ne}, {A_ISCI, SCI * e->nc},
        {A_DSCD, SCD * e->nc}, {A_DSRQ, 9 * nb}, {A_IJOINT, 6 * e->nj},
        {A_DJOINT, SJD * e->nj}, {A_ICOORD, 2 * e->ncj}, {A_IELEM, 2 * e->nel},
        {A_IMARK, e->nmark}, {A_DMARK, 3 * e->nmark}, {A_DMINV, 7 * nb},
        {A_IPLACE, 2 * e->nplace}, {A_DBODY0, 13 * nb}, {A_IINIT, 3 * e->ncj},
        {A_DINIT, 3 * e->ncj}, {A_IEND, 2 * e->nel}, {A_ISDI, 6 * e->nd},
        {A_DSDD, 24 * e->nd}, {A_ISDJ, 2 * e->nd}, {A_ISCP, 6 * e->ncp},
        {A_DSCP, 50 * e->ncp}, {A_ISCJ, 3 * e->ncp}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (e->cnt[sizes[i].a] != sizes[i].want) {
            msg(err, errlen, "the model data's array %d has %d entries, expected %d",
                sizes[i].a, e->cnt[sizes[i].a], sizes[i].want);
            return 0;
        }
    if (e->cnt[A_DSARM] != 0 && e->cnt[A_DSARM] != nb) {
        msg(err, errlen, "the model data's armature has %d entries, expected 0 or %d",
            e->cnt[A_DSARM], nb);
        return 0;
    }
#define BAD(cond, what)                                                                  \
    do {                                                                                 \
        if (cond) {                                                                      \
            msg(err, errlen, "the model data are inconsistent: %s", what);               \
            return 0;                                                                    \
        }                                                                                \
    } while (0)
    BAD(e->nv < 0 || e->nv > n || n > 7 * nb || e->nc < 0 || e->nrows < nb + e->nd + e->ncp ||
        e->m != 0 || e->cnt[A_IDI] || e->cnt[A_DDP], "the spatial counts");
    int sq = 0, sv = 0;
    for (int i = 0; i < nb; i++) {
        const int *R = IA(e, A_ISRI) + SRI * i;
        static const int nq[] = {0, 1, 1, 4, 7}, dof[] = {0, 1, 1, 3, 6};
        BAD(R[0] < 0 || R[0] > 4 || R[1] < 0 || R[1] > nb || R[2] < 0 || R[2] >= nb ||
            R[3] < 0 || R[3] > n - nq[R[0]] || R[4] < 0 || R[4] > e->nv - dof[R[0]],
            "a tree joint's indices");
        sq += nq[R[0]];
        sv += dof[R[0]];
    }
    int order = tree_order(IA(e, A_ISRI), SRI, 2, 1, nb);
    if (order < 0) {
        msg(err, errlen, "out of memory");
        return 0;
    }
    BAD(!order, "the tree's order (each body once, after its parent)");
    BAD(sq != n || sv != e->nv, "the tree's coordinates");
    for (int i = 0; i < e->ne; i++) {
        const int *E = IA(e, A_ISEI) + SEI * i;
        BAD(E[0] < 0 || E[0] > 4 || E[1] < 0 || E[1] > nb || E[2] < 0 || E[2] > nb ||
            E[3] < -1 || E[3] >= e->ni, "an element's indices");
    }
    for (int i = 0; i < e->nc; i++) {
        const int *C = IA(e, A_ISCI) + SCI * i;
        BAD(C[0] < 0 || C[0] > 6 || C[1] < 0 || C[1] > nb || C[2] < 0 || C[2] > nb,
            "a cut joint's indices");
    }
    e->nrec = EV_REC;          /* friction (a plane or rim contact's mu > 0): 9 per record */
    for (int i = 0; e->cnt[A_DCON] == SKD * e->ncon && i < e->ncon; i++)
        if ((IA(e, A_ICON)[3 * i] == 1 || IA(e, A_ICON)[3 * i] == 5 ||
             IA(e, A_ICON)[3 * i] == 6) && DA(e, A_DCON)[SKD * i + 35] > 0.0)
            e->nrec = EV_REC_FR;
    e->cfr = e->nrec > EV_REC;     /* (joint friction alone also takes EV_REC_FR records) */
    int nout = 16 * nb + 6 * e->nmark + 5 + e->nd + (e->nrec > EV_REC ? 13 : 7) * e->ncon +
               3 * frictional_joints(e),
        srows = nb + e->nd + e->ncp,
        scoords = 0;
    for (int j = 0; j < e->nj; j++) {
        const int *J = IA(e, A_IJOINT) + 6 * j;
        static const int rows[] = {3, 5, 4, 4, 5, 6, 1};
        BAD(J[0] < 0 || J[0] > 6 || J[1] < 0 || J[1] > nb || J[2] < 0 || J[2] > nb ||
            J[1] == J[2] || J[3] < -1 || J[3] >= e->ncj || J[5] != rows[J[0]] || J[4] < 0 ||
            J[4] > e->nrows - nb - e->nd - e->ncp - J[5], "a joint");
        /* its coordinates (the outputs write them by kind): none, or its own in ICOORD */
        int nco = J[0] == SJ_REV || J[0] == SJ_PRI ? 1 : J[0] == SJ_CYL || J[0] == SJ_UNI ? 2 : 0;
        BAD(nco ? J[3] < 0 || J[3] > e->ncj - nco : J[3] != -1, "a joint's coordinate index");
        static const int sck[7][2] = {{-1, -1}, {SC_REV, -1}, {SC_UNI1, SC_UNI2},
                                      {SC_REV, SC_PRI}, {SC_PRI, -1}, {-1, -1}, {-1, -1}};
        for (int i = 0; i < nco; i++)
            BAD(IA(e, A_ICOORD)[2 * (J[3] + i)] != j ||
                IA(e, A_ICOORD)[2 * (J[3] + i) + 1] != sck[J[0]][i],
                "a joint's coordinate index");
        nout += (J[0] == SJ_REV || J[0] == SJ_PRI ? 2 : 0) +
                (J[0] == SJ_CYL || J[0] == SJ_UNI ? 4 : 0) + (J[0] == SJ_DST ? 1 : 6);
        srows += J[5];
        scoords += J[0] == SJ_REV || J[0] == SJ_PRI ? 1 : J[0] == SJ_CYL || J[0] == SJ_UNI ? 2
                                                                                      : 0;
    }
    BAD(srows != e->nrows || scoords != e->ncj, "the number of rows or joint coordinates");
    for (int i = 0; i < e->ncj; i++) {
        const int *Cc = IA(e, A_ICOORD) + 2 * i;
        BAD(Cc[0] < 0 || Cc[0] >= e->nj || Cc[1] < 0 || Cc[1] > 3, "a joint coordinate");
    }
    for (int i = 0; i < e->nel; i++) {
        const int *E = IA(e, A_IELEM) + 2 * i;
        static const int width[] = {2, 2, 8, 1, 1, 6};
        BAD(E[0] < 0 || E[0] > 5 || E[1] < 0 || E[1] >= e->ne, "an element");
        BAD(E[0] == EK_CYL && IA(e, A_ISEI)[SEI * E[1]] != 0, "a cylinder's element row");
        for (int j = 0; j < 2; j++)
            BAD(IA(e, A_IEND)[2 * i + j] < -1 || IA(e, A_IEND)[2 * i + j] >= e->ncon ||
                (E[0] != EK_CYL && IA(e, A_IEND)[2 * i + j] != -1), "a cylinder's end stops");
        nout += width[E[0]];
    }
    for (int d = 0; d < e->nd; d++) {          /* drives (version 3) */
        const int *Dd = IA(e, A_ISDI) + 6 * d, *Jd = IA(e, A_ISDJ) + 2 * d;
        BAD(Jd[0] < 0 || Jd[0] >= e->nj || Jd[1] != e->nrows - nb - e->nd - e->ncp + d ||
            (IA(e, A_IJOINT)[6 * Jd[0]] != SJ_REV && IA(e, A_IJOINT)[6 * Jd[0]] != SJ_PRI) ||
            Dd[0] != (IA(e, A_IJOINT)[6 * Jd[0]] == SJ_REV ? 1 : 2) ||
            (Dd[3] != 1 && Dd[3] != 2) || Dd[4] < 0 || Dd[5] < 1 ||
            Dd[4] > e->cnt[A_DSDP] - Dd[5] || (Dd[3] == 2 && Dd[5] != 4), "a drive");
    }
    for (int c = 0; c < e->ncp; c++) {         /* couplers */
        const int *Cj = IA(e, A_ISCJ) + 3 * c, *Ck = IA(e, A_ISCP) + 6 * c;
        for (int h = 0; h < 2; h++)
            BAD(Cj[h] < 0 || Cj[h] >= e->nj ||
                (IA(e, A_IJOINT)[6 * Cj[h]] != SJ_REV && IA(e, A_IJOINT)[6 * Cj[h]] != SJ_PRI) ||
                Ck[3 * h] != (IA(e, A_IJOINT)[6 * Cj[h]] == SJ_REV ? 1 : 2), "a coupler");
        BAD(Cj[2] != e->nrows - nb - e->ncp + c, "a coupler's row");
    }
    for (int i = 0; i < e->nmark; i++)
        BAD(IA(e, A_IMARK)[i] < 0 || IA(e, A_IMARK)[i] > nb, "a marker");
    for (int i = 0; i < e->nplace; i++) {
        const int *P = IA(e, A_IPLACE) + 2 * i;
        BAD(P[0] < 0 || P[0] >= e->nj, "the tree placement");
    }
    BAD(nout != e->nout, "the number of outputs");
#undef BAD
    return check_spatial_contacts(e, err, errlen);
}

static void q_matrix(const double *p, double A[3][3])     /* rotations.matrix */
{
    for (int i = 0; i < 3; i++) {
        double unit[3] = {0.0, 0.0, 0.0}, col[3];
        unit[i] = 1.0;
        q_rotate(p, unit, col);
        for (int r = 0; r < 3; r++)
            A[r][i] = col[r];
    }
}

/* rotations.from_matrix (scipy's Rotation.from_matrix, then e0 >= 0) */
static void q_from_matrix(double R[3][3], double *p)
{
    double dec[4] = {R[0][0], R[1][1], R[2][2], R[0][0] + R[1][1] + R[2][2]}, q[4];
    int ch = 0;
    for (int i = 1; i < 4; i++)
        if (dec[i] > dec[ch])
            ch = i;
    if (ch != 3) {
        int i = ch, j = (i + 1) % 3, k = (j + 1) % 3;
        q[i] = 1.0 - dec[3] + 2.0 * R[i][i];
        q[j] = R[j][i] + R[i][j];
        q[k] = R[k][i] + R[i][k];
        q[3] = R[k][j] - R[j][k];
    } else {
        q[0] = R[2][1] - R[1][2];
        q[1] = R[0][2] - R[2][0];
        q[2] = R[1][0] - R[0][1];
        q[3] = 1.0 + dec[3];
    }
    double nq = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double sg = q[3] >= 0 ? 1.0 : -1.0;
    p[0] = sg * q[3] / nq;
    p[1] = sg * q[0] / nq;
    p[2] = sg * q[1] / nq;
    p[3] = sg * q[2] / nq;
}

static void mm(double A[3][3], double B[3][3], double O[3][3])        /* O = A B */
{
    double T[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            T[i][j] = A[i][0] * B[0][j] + A[i][1] * B[1][j] + A[i][2] * B[2][j];
    memcpy(O, T, sizeof T);
}

static void mtm(double A[3][3], double B[3][3], double O[3][3])       /* O = A' B */
{
    double T[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            T[i][j] = A[0][i] * B[0][j] + A[1][i] * B[1][j] + A[2][i] * B[2][j];
    memcpy(O, T, sizeof T);
}

static void mv(double A[3][3], const double *v, double *o)
{
    double t[3];
    for (int i = 0; i < 3; i++)
        t[i] = A[i][0] * v[0] + A[i][1] * v[1] + A[i][2] * v[2];
    memcpy(o, t, sizeof t);
}

static void rowmajor(const double *F, double M[3][3])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            M[i][j] = F[3 * i + j];
}

/* placement.tree_placement: x (7 nb) of the bodies along the tree at the given coordinates */
static void spatial_placement(MbEngine *e, double *x)
{
    int nb = e->nb;
    double (*A)[3][3] = (double (*)[3][3])e->rot;        /* (nb + 1) rotations */
    double *r = e->xe;                                  /* (nb + 1) x 3 */
    for (int b = 0; b < nb; b++) {
        const double *B0 = DA(e, A_DBODY0) + 13 * b;
        memcpy(r + 3 * b, B0, sizeof(double) * 3);
        q_matrix(B0 + 3, A[b]);
    }
    r[3 * nb] = r[3 * nb + 1] = r[3 * nb + 2] = 0.0;
    memset(A[nb], 0, sizeof A[nb]);
    A[nb][0][0] = A[nb][1][1] = A[nb][2][2] = 1.0;
    for (int i = 0; i < e->nplace; i++) {
        int k = IA(e, A_IPLACE)[2 * i], parent_placed = IA(e, A_IPLACE)[2 * i + 1];
        const int *J = IA(e, A_IJOINT) + 6 * k;
        const double *P = DA(e, A_DJOINT) + SJD * k;
        int kind = J[0], p = J[1], c = J[2], ic = J[3];
        double q = 0.0;
        if (ic >= 0) {
            const int *g = IA(e, A_IINIT) + 3 * ic;
            const double *v = DA(e, A_DINIT) + 3 * ic;
            q = g[0] ? v[0] : g[2] ? v[2] : 0.0;
        }
        double R[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, t[3] = {0.0, 0.0, 0.0};
        if (kind == SJ_REV) {
            double cq = cos(q), sq = sin(q);
            R[0][0] = cq;
            R[0][1] = -sq;
            R[1][0] = sq;
            R[1][1] = cq;
        } else if (kind == SJ_PRI) {
            t[2] = q;
        } else if (kind == SJ_UNI) {
            double U[3][3] = {{0, 0, 1}, {0, -1, 0}, {1, 0, 0}};
            memcpy(R, U, sizeof R);
        }
        double Fp[3][3], Fc[3][3], T1[3][3], T2[3][3], FcT[3][3], FpT[3][3], RT[3][3];
        rowmajor(P + 6, Fp);
        rowmajor(P + 15, Fc);
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                FcT[a][b] = Fc[b][a];
                FpT[a][b] = Fp[b][a];
                RT[a][b] = R[b][a];
            }
        double v1[3], v2[3], v3[3];
        if (parent_placed) {
            mm(A[p], Fp, T1);
            mm(T1, R, T2);
            mm(T2, FcT, A[c]);
            mv(A[p], P, v1);
            mv(T1, t, v2);
            mv(A[c], P + 3, v3);
            for (int d = 0; d < 3; d++)
                r[3 * c + d] = r[3 * p + d] + v1[d] + v2[d] - v3[d];
        } else {
            mm(A[c], Fc, T1);
            mm(T1, RT, T2);
            mm(T2, FpT, A[p]);
            mv(A[c], P + 3, v1);
            mm(A[p], Fp, T1);
            mv(T1, t, v2);
            mv(A[p], P, v3);
            for (int d = 0; d < 3; d++)
                r[3 * p + d] = r[3 * c + d] + v1[d] - v2[d] - v3[d];
        }
    }
    for (int b = 0; b < nb; b++) {
        memcpy(x + 7 * b, r + 3 * b, sizeof(double) * 3);
        q_from_matrix(A[b], x + 7 * b + 3);
    }
}

/* the given joint coordinates' rows (flag 0: values, 1: rates) appended at row k of R
 * with their residuals (values) or targets (rates) in r */
static int spatial_given_rows(MbEngine *e, const double *x, int flag, int k, double *r,
                              SpRow *R)
{
    int nb = e->nb;
    sextend(e, x, e->xde, 0);
    for (int i = 0; i < e->ncj; i++) {
        if (!IA(e, A_IINIT)[3 * i + flag])
            continue;
        Frames3 f;
        STerm t;
        joint_frames(e, IA(e, A_ICOORD)[2 * i], e->xde, &f);
        coord_term(IA(e, A_ICOORD)[2 * i + 1], &f, &t);
        r[k] = flag ? DA(e, A_DINIT)[3 * i + 1] : t.v - DA(e, A_DINIT)[3 * i];
        double *bp, *bc;
        R[k].n = 0;
        sprow_pair(R + k, nb, f.p, f.c, &bp, &bc);
        for (int j = 0; j < 7; j++) {
            if (bp)
                bp[j] = t.J[j];
            if (bc)
                bc[j] = t.J[7 + j];
        }
        k++;
    }
    return k;
}

/* the relative Euler parameters' signs of the pose data as they were (a failed
 * mbe_initialize changes nothing) */
static void restore_signs(MbEngine *e, const double *sign0)
{
    double *rqs = DA(e, A_DSRQ);
    int moved = 0;
    for (int row = 0; row < e->nb; row++)
        if (rqs[9 * row + 8] != sign0[row]) {
            rqs[9 * row + 8] = sign0[row];
            moved = 1;
        }
    if (moved)
        sk_set_pose_data(e->kern, rqs);
}

static MbeStatus spatial_initialize(MbEngine *e, double t0, char *err, size_t errlen)
{
    int nb = e->nb, nc = 7 * nb, n = e->n, k = 0;
    const double *Minv = DA(e, A_DMINV);
    double *x = e->xa, *xd = e->xda, *dx = e->f, *r = e->r;
    SpRow *R = e->sr;                 /* the rows (e->A: dense for the fine cut's retries) */
    double ta = DA(e, A_DT0)[0];      /* the drives' rows at the model's own t0 (planar too) */
    spatial_placement(e, x);
    double size = 0.0;
    int any = 0;
    for (int j = 0; j < e->nj; j++)
        for (int i = 0; i < 6; i++) {
            size = fmax(size, fabs(DA(e, A_DJOINT)[SJD * j + i]));
            any = 1;
        }
    if (!any)
        size = 1.0;
    double scale = 1.0 + fmax(absmax(x, nc), size);
    for (int fine = 0; fine < 2; fine++) {        /* assembly._newton; fine: its retry */
        if (fine)
            spatial_placement(e, x);
        for (int it = 0; it <= 50; it++) {
            k = spatial_rows_sp(e, x, ta, r, R) == OK
                    ? spatial_given_rows(e, x, 0, e->nrows, r, R) : -1;
            if (it == 50 || k < 0 || !all_finite(r, k) || absmax(r, k) < 1e-12 * scale)
                break;
            int rc;
            if (fine) {         /* (dense: the fine cut is the retry of a failed assembly) */
                rc = reserve(&e->A, &e->ncap_A, (size_t)k * nc);
                if (rc != OK)
                    break;
                sprows_dense(R, k, nb, e->A);
                rc = min_norm_fine(e, e->A, k, Minv, r, dx);
            } else {
                NzRows Z = nzrows_sp(e, R, k);
                rc = min_norm(e, &Z, Minv, r, dx);
            }
            if (rc != OK)
                break;
            for (int i = 0; i < nc; i++)
                x[i] -= dx[i];
        }
        if (k >= 0 && all_finite(r, k) && absmax(r, k) <= 1e-9 * scale)
            break;
    }
    if (k < 0 || !all_finite(r, k) || absmax(r, k) > 1e-9 * scale) {
        open_rows_error(e, r, k, t0, err, errlen);
        return MBE_ERROR;
    }
    /* velocities: least M-norm xd with D xd = 0 and the given rates */
    double *b = e->rhs;
    spatial_rows_sp(e, x, ta, e->phi, R);
    for (int i = 0; i < e->nrows; i++)
        b[i] = -e->phit[i];                           /* a drive's s'(t) */
    k = spatial_given_rows(e, x, 1, e->nrows, b, R);
    for (int bb = 0; bb < nb; bb++) {                 /* assembly._velocity_guess */
        const double *B0 = DA(e, A_DBODY0) + 13 * bb, *p = x + 7 * bb + 3;
        double E[3][4];
        E_mat(p, E);
        memcpy(xd + 7 * bb, B0 + 7, sizeof(double) * 3);
        for (int j = 0; j < 4; j++)
            xd[7 * bb + 3 + j] = 0.5 * (E[0][j] * B0[10] + E[1][j] * B0[11] + E[2][j] * B0[12]);
    }
    double *guess = e->xde;                           /* (scratch here) */
    memcpy(guess, xd, sizeof(double) * nc);
    sprows_velocity_residual(R, k, xd, b, r);
    double res = 0.0;                 /* the guess meets the rows exactly: residual 0 */
    int needed = !sprows_finite(R, k);    /* (engine.c velocity_correction_needed) */
    for (int i = 0; i < k && !needed; i++)
        needed = r[i] != 0.0;
    if (needed) {
        NzRows Z = nzrows_sp(e, R, k);
        int rc = min_norm(e, &Z, Minv, r, dx);
        if (rc != OK) {
            msg(err, errlen, "the initial velocities cannot be computed (%s)",
                rc == ERR_NOMEM ? "out of memory" : "non-finite rows");
            return MBE_ERROR;
        }
        for (int j = 0; j < nc; j++)
            xd[j] += dx[j];
        res = sprows_velocity_residual(R, k, xd, b, NULL);
    }
    if (!(res <= 1e-8 * (1.0 + absmax(b, k)))) {
        /* the retry with the fine cut and residual corrections (assembly.assemble; dense:
         * it runs only when the plain solve failed) */
        if (reserve(&e->A, &e->ncap_A, (size_t)k * nc) != OK) {
            msg(err, errlen, "the initial velocities' retry: out of memory for its dense rows "
                "(%d x %d)", k, nc);
            return MBE_ERROR;
        }
        sprows_dense(R, k, nb, e->A);
        double res2 = fine_velocities(e, e->A, k, nc, Minv, b, guess, r, dx);
        if (res2 <= 1e-8 * (1.0 + absmax(b, k))) {
            memcpy(xd, guess, sizeof(double) * nc);
            res = res2;
        }
    }
    if (!(res <= 1e-8 * (1.0 + absmax(b, k)))) {
        msg(err, errlen, "the initial rates are inconsistent with the constraints (velocity "
            "residual %.3g); give fewer rates or consistent ones", res);
        return MBE_ERROR;
    }
    /* q0 from the relative poses (tree.initial_coordinates) */
    double *q = e->ytmp, *qd = e->ytmp + n;
    for (int i = 0; i < n; i++)
        q[i] = qd[i] = 0.0;
    for (int row = 0; row < nb; row++) {
        const int *R = IA(e, A_ISRI) + SRI * row;
        const double *D = DA(e, A_DSRD) + SRD * row, *rq = DA(e, A_DSRQ) + 9 * row;
        int kind = R[0], X = R[1], Y = R[2], o = R[3], fwd = !R[5];
        if (kind == 4) {
            memcpy(q + o, x + 7 * Y, sizeof(double) * 7);
            continue;
        }
        int Pb = fwd ? X : Y, Cb = fwd ? Y : X;
        const double *sp = fwd ? D : D + 3, *sc = fwd ? D + 3 : D;
        double Fp[3][3], Fc[3][3], Ap[3][3], Ac[3][3], ApF[3][3], AcF[3][3], Rm[3][3];
        static const double ONE[4] = {1.0, 0.0, 0.0, 0.0}, ZERO[3] = {0.0, 0.0, 0.0};
        rowmajor(fwd ? D + 6 : D + 15, Fp);
        q_matrix(fwd ? rq + 4 : rq, Fc);
        const double *rP = Pb < nb ? x + 7 * Pb : ZERO, *pP = Pb < nb ? x + 7 * Pb + 3 : ONE;
        const double *rC = Cb < nb ? x + 7 * Cb : ZERO, *pC = Cb < nb ? x + 7 * Cb + 3 : ONE;
        q_matrix(pP, Ap);
        q_matrix(pC, Ac);
        mm(Ap, Fp, ApF);
        mm(Ac, Fc, AcF);
        mtm(ApF, AcF, Rm);
        double v1[3], v2[3], dd[3], d[3];
        mv(Ac, sc, v1);
        mv(Ap, sp, v2);
        for (int i = 0; i < 3; i++)
            dd[i] = rC[i] + v1[i] - rP[i] - v2[i];
        for (int i = 0; i < 3; i++)
            d[i] = ApF[0][i] * dd[0] + ApF[1][i] * dd[1] + ApF[2][i] * dd[2];
        if (kind == 1)
            q[o] = atan2(Rm[1][0], Rm[0][0]);
        else if (kind == 2)
            q[o] = d[2];
        else if (kind == 3)
            q_from_matrix(Rm, q + o);
    }
    for (int i = 0; i < n; i++)
        if (fabs(q[i]) < 1e-13)
            q[i] = 0.0;
    /* the signs of the relative Euler parameters (tree._fix_signs): T(q0) gives the
     * assembled parameters themselves; then T(q0) must reproduce the pose */
    double *zero = e->qd2, *xt = e->x, *xdt = e->xd;
    for (int i = 0; i < n; i++)
        zero[i] = 0.0;
    double *rqs = DA(e, A_DSRQ), *sign0 = e->w;      /* the signs before (kept on failure) */
    for (int row = 0; row < nb; row++)
        sign0[row] = rqs[9 * row + 8];
    /* T(q0) once: flipping row k negates the Euler parameters of its body and of every body
     * placed after it from that body (exactly: the quaternion products are linear in each
     * factor), the positions not at all; mult[b] (in e->r, nb + 1) tracks that */
    double *mult = e->r;
    int flipped = 0;
    if (sk_kinematics(e->kern, q, zero, xt, xdt) == OK) {
        mult[nb] = 1.0;
        for (int row = 0; row < nb; row++) {
            int X = IA(e, A_ISRI)[SRI * row + 1], Y = IA(e, A_ISRI)[SRI * row + 2];
            const double *pa = xt + 7 * Y + 3, *pb = x + 7 * Y + 3;
            double m = mult[X];
            if (m * (pa[0] * pb[0] + pa[1] * pb[1] + pa[2] * pb[2] + pa[3] * pb[3]) < 0) {
                rqs[9 * row + 8] = -rqs[9 * row + 8];
                m = -m;
                flipped = 1;
            }
            mult[Y] = m;
        }
        if (flipped)
            sk_set_pose_data(e->kern, rqs);
    }
    int rc = sk_kinematics(e->kern, q, zero, xt, xdt);
    double dev = 0.0;
    for (int i = 0; i < nc; i++)
        dev = max_abs_nan(dev, xt[i] - x[i]);
    if (rc != OK || !(dev <= 1e-8 * (1.0 + absmax(x, nc)))) {
        restore_signs(e, sign0);
        msg(err, errlen, "T(q0) does not reproduce the assembled pose (error %.3g)", dev);
        return MBE_ERROR;
    }
    /* qd0 = lstsq(Tq, xd0): Tq's columns are the velocities of unit rates (linear in qd);
     * at rest (xd0 = 0) qd0 = 0 without forming Tq (O(n^2 nc)) */
    int moving = 0;
    for (int j = 0; j < nc; j++)
        moving |= xd[j] != 0.0;
    if (moving) {
        if (reserve(&e->D, &e->ncap_D, (size_t)n * nc) != OK ||
            reserve(&e->S, &e->ncap_S, (size_t)n * n) != OK ||
            reserve(&e->V, &e->ncap_V, (size_t)n * n) != OK) {
            restore_signs(e, sign0);
            msg(err, errlen, "the initial rates of the tree: out of memory for Tq (%d x %d)",
                n, nc);
            return MBE_ERROR;
        }
        double *Tt = e->D, *N = e->S;                     /* Tq' (n x nc), Tq'Tq (n x n) */
        for (int i = 0; i < n; i++) {
            zero[i] = 1.0;
            sk_kinematics(e->kern, q, zero, xt, Tt + (size_t)i * nc);
            zero[i] = 0.0;
        }
        for (int i = 0; i < n; i++) {
            double s = 0.0;
            for (int j = 0; j < nc; j++)
                s += Tt[(size_t)i * nc + j] * xd[j];
            e->rhs[i] = s;
            for (int l = 0; l <= i; l++) {
                double v = 0.0;
                for (int j = 0; j < nc; j++)
                    v += Tt[(size_t)i * nc + j] * Tt[(size_t)l * nc + j];
                N[i * n + l] = N[l * n + i] = v;
            }
        }
        if (n && dense_psd_solve(N, e->V, e->lam, n, NULL, NULL, 0, e->rhs, qd) != OK) {
            restore_signs(e, sign0);
            msg(err, errlen, "the initial rates of the tree cannot be computed");
            return MBE_ERROR;
        }
        double vdev = 0.0;
        for (int j = 0; j < nc; j++) {
            double s = 0.0;
            for (int i = 0; i < n; i++)
                s += Tt[(size_t)i * nc + j] * qd[i];
            vdev = max_abs_nan(vdev, s - xd[j]);
        }
        if (!(vdev <= 1e-8 * (1.0 + absmax(xd, nc)))) {
            restore_signs(e, sign0);
            msg(err, errlen, "the assembled velocities are not those of a motion of the tree "
                "joints (error %.3g)", vdev);
            return MBE_ERROR;
        }
    }
    memcpy(e->y, e->ytmp, sizeof(double) * 2 * n);
    memset(e->rec, 0, sizeof(double) * rec_size(e));
    if (e->nrec > EV_REC) {     /* frictional contacts closed at the start start persistent,
                                   frictional joints below contact_velocity stick */
        int rc = e->ev ? sk_events_initial(e->ev, t0, e->y, e->u0, e->rec, e->set.contact_tol,
                                           e->set.contact_velocity) : 5;
        if (rc != OK) {
            msg(err, errlen, "the frictional contacts' initial state cannot be found: %s",
                kernel_error(rc));
            return MBE_ERROR;
        }
    }
    if (initial_impact(e, t0, sk_events_initial_impact, err, errlen) != MBE_OK)
        return MBE_ERROR;
    e->t = t0;
    e->h = 0.0;
    e->initialized = 1;
    return MBE_OK;
}

/* ------------------------------------------------------------------ contacts in 3-D
 * The event loop of spatial_kernel.c's spatial_events.c (native/event_loop.h, the planar loop's
 * semantics) over a copy of the engine's kernel; the contacts are the kernel's (sk_set_contacts:
 * A_ICON x 3 kind, p, c; A_DCON x 36 s_p, s_c, F_p, F_c, normal, offset, side, t1, t2, mu as
 * fmu_mb.engine.spatial_kernel._contacts), A_DREST their restitution, A_DCSET the event
 * settings. Their gap rows in x (fmu_mb.mechanics.spatial.contacts.contact_rows) join the
 * model's rows in the reactions while a contact persists. */
#define SKD 36
void *sk_events_create(void *base, const double *e, int ni);
int sk_events_outputs(void *ev, double t, const double *y, const double *u,
                      const double *rec, double *gap, double *force);
int sk_events_outputs_fr(void *ev, double t, const double *y, const double *u,
                         const double *rec, double *gap, double *force, double *ft,
                         double *vt);
int sk_events_accelerations(void *ev, double t, const double *q, const double *qd,
                            const double *u, const double *rec, const double *rq, double *qdd,
                            double *x, double *xd, double *xdd);
int sk_events_set_joint_friction(void *ev, int nj, const int *ji, const double *jd,
                                 const int *jq, const int *jnu, const double *bound,
                                 const int *jlim);
int sk_events_joint_outputs(void *ev, double t, const double *y, const double *u,
                            const double *rec, double *gap, double *force, double *ft,
                            double *vt, double *jout);

/* the event loop over k with the frictional joints of the current parameters (their bounds
 * A_DJFRIC, their points and frames the first 24 numbers of their A_DJOINT: their rate rows
 * are their own coordinates', which their tree rows' coordinates are, reversed rows too) */
static void *spatial_make_events(MbEngine *e, void *k)
{
    void *ev = sk_events_create(k, DA(e, A_DREST), e->ni);
    if (!ev || !e->njf)
        return ev;
    for (int j = 0; j < e->njf; j++) {
        e->jfb[j] = DA(e, A_DJFRIC)[e->jfk[j]];
        memcpy(e->jfd + 24 * j, DA(e, A_DJOINT) + SJD * e->jfk[j], sizeof(double) * 24);
    }
    if (sk_events_set_joint_friction(ev, e->njf, e->jfi, e->jfd, e->jfq, e->jfnu, e->jfb,
                                     e->jflim) != OK) {
        sk_events_free(ev);
        return NULL;
    }
    return ev;
}

static int check_spatial_contacts(MbEngine *e, char *err, size_t errlen)
{
    int nb = e->nb;
    if (e->cnt[A_ICON] != 3 * e->ncon || e->cnt[A_DCON] != SKD * e->ncon ||
        e->cnt[A_DREST] != e->ncon ||
        e->cnt[A_DCSET] != (e->ncon || frictional_joints(e) ? 3 : 0)) {
        msg(err, errlen, "the model data's contact arrays do not fit %d contacts", e->ncon);
        return 0;
    }
    for (int i = 0; i < e->ncon; i++) {
        const int *K = IA(e, A_ICON) + 3 * i;
        const double *P = DA(e, A_DCON) + SKD * i;
        double r = DA(e, A_DREST)[i];
        const char *bad = NULL;
        if (K[0] < 1 || K[0] > 6 || K[1] < 0 || K[1] > nb || K[2] < 0 || K[2] > nb ||
            K[1] == K[2])
            bad = "a contact's kind or bodies";
        else if (!(P[28] == 1.0 || P[28] == -1.0))
            bad = "a contact's side (expected +1 or -1)";
        else if (!(r >= 0.0 && r <= 1.0))
            bad = "a contact's restitution (expected 0 <= e <= 1)";
        if (bad) {
            msg(err, errlen, "the model data are inconsistent: %s", bad);
            return 0;
        }
    }
    if (e->ncon || frictional_joints(e)) {
        if (!event_settings_ok(DA(e, A_DCSET))) {
            msg(err, errlen, "the model data are inconsistent: the event settings (expected "
                "finite numbers > 0)");
            return 0;
        }
    }
    return 1;
}

/* contact i's parameters (A_DCON) at xe; a rim's (kind 5, spatial_kernel.c rim_point) with
 * s_c the rim point nearest the plane, written to rim (SKD): its plane row is that of the body
 * point there (its gap and its Jacobian, by the envelope theorem), radius 0 */
static const double *spatial_contact_data(const MbEngine *e, int i, const double *xe,
                                          double *rim)
{
    const int *K = IA(e, A_ICON) + 3 * i;
    const double *P = DA(e, A_DCON) + SKD * i;
    if (K[0] != 5)
        return P;
    double Ac[3][3], Ap[3][3], n[3], a[3], d[3];
    q_matrix(xe + 7 * K[2] + 3, Ac);
    q_matrix(xe + 7 * K[1] + 3, Ap);
    mv(Ap, P + 24, n);
    mv(Ac, P + 15, a);
    double na = n[0] * a[0] + n[1] * a[1] + n[2] * a[2];
    for (int j = 0; j < 3; j++)
        d[j] = n[j] - na * a[j];
    double ld = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    memcpy(rim, P, sizeof(double) * SKD);
    for (int j = 0; j < 3; j++)
        rim[3 + j] = P[3 + j] - P[18] * (Ac[0][j] * d[0] + Ac[1][j] * d[1] + Ac[2][j] * d[2])
                     / ld;
    return rim;
}

/* the rows of shape pair i's feature (native/pairs.h, kind 6 of spatial_kernel.c) at the
 * poses xe, the bodies at rest (rows only) */
static void spatial_pair_rows(const MbEngine *e, int i, const double *xe, mbp_rows_t *o)
{
    static const double zero[3] = {0.0, 0.0, 0.0};
    const int *K = IA(e, A_ICON) + 3 * i;
    double A[2][9];
    mbp_body B[2];
    for (int s = 0; s < 2; s++) {
        double M[3][3];
        q_matrix(xe + 7 * K[1 + s] + 3, M);
        memcpy(A[s], M, sizeof M);
        B[s].r = xe + 7 * K[1 + s];
        B[s].A = A[s];
        B[s].v = B[s].w = zero;
    }
    const double *P = DA(e, A_DCON) + SKD * i;
    mbp_rows((int)P[32], P + 24, P + 6, P, (int)P[33], P + 29, P + 15, P + 3, (int)P[34],
             &B[0], &B[1], o);
}

/* out (2 x 7) = a pair row j (w_a, v_a, w_b, v_b; world) as coefficients of the two bodies'
 * absolute coordinates (r', p') at xe: v and 2 E(p)' w */
static void spatial_pair_row_x(const MbEngine *e, int i, const double *xe, const double *j,
                               double *out)
{
    const int *K = IA(e, A_ICON) + 3 * i;
    double Em[3][4];
    for (int s = 0; s < 2; s++) {
        const double *jw = j + 6 * s, *jv = j + 6 * s + 3;
        E_mat(xe + 7 * K[1 + s] + 3, Em);
        for (int k = 0; k < 3; k++)
            out[7 * s + k] = jv[k];
        for (int k = 0; k < 4; k++)
            out[7 * s + 3 + k] = 2.0 * (Em[0][k] * jw[0] + Em[1][k] * jw[1] + Em[2][k] * jw[2]);
    }
}

/* contact i's gap and its Jacobian on the pair's 14 coordinates at xe (contacts.contact_rows);
 * 1 when undefined (two points at zero distance) */
static int spatial_contact_term(const MbEngine *e, int i, const double *xe, STerm *t, int *p,
                                int *c)
{
    const int *K = IA(e, A_ICON) + 3 * i;
    double rim[SKD];
    if (K[0] == 6) {            /* a shape pair's feature: its gap and normal row */
        mbp_rows_t o;
        spatial_pair_rows(e, i, xe, &o);
        *p = K[1];
        *c = K[2];
        t->v = o.gap;
        spatial_pair_row_x(e, i, xe, o.jn, t->J);
        return 0;
    }
    const double *P = spatial_contact_data(e, i, xe, rim);
    Frames3 f = {xe, P, P + 3, P + 6, P + 15, K[1], K[2]};
    *p = K[1];
    *c = K[2];
    if (K[0] == 1 || K[0] == 5) {               /* n . (P_c - P_p), n = A_p normal */
        VTerm n, d;
        vterm(xe, K[1], P + 24, 0, 0, &n);
        dvec(&f, &d);
        vdot(&n, &d, t);
    } else if (K[0] == 2) {                     /* |P_c - P_p| */
        VTerm d;
        dvec(&f, &d);
        if (vnorm(&d, t))
            return 1;
    } else {                                    /* a revolute or prismatic coordinate */
        coord_term(K[0] == 3 ? SC_REV : SC_PRI, &f, t);
    }
    t->v -= P[27];
    sscale(t, P[28]);
    return 0;
}

/* f (7 nb) += the generalised forces of the persistent contacts' forces e->cforce, e->cft
 * (sk_events_outputs_fr): the normal force along the contact's gap row, the friction force
 * ft1 t1 + ft2 t2 (other's axes) on the body's material point at the contact point
 * P = C - r n and its opposite on other's; a shape pair's friction force ft1, ft2 along its
 * two tangential rows at the current poses (the slip of its two surface points, which move
 * on the bodies: pairs.h, as fmu_mb.mechanics.spatial.pairs); 1 when a gap row is undefined */
static int spatial_contact_forces(MbEngine *e, const double *x, double *f)
{
    int nb = e->nb;
    double *xe = e->xe;
    sextend(e, x, xe, 0);
    for (int i = 0; i < e->ncon; i++) {
        if (e->rec[e->nrec * i + 4] == 0.0)
            continue;
        STerm t;
        int p, c;
        if (spatial_contact_term(e, i, xe, &t, &p, &c))
            return 1;
        double fn = e->cforce[i];
        for (int k = 0; k < 7; k++) {
            if (p < nb)
                f[7 * p + k] += t.J[k] * fn;
            if (c < nb)
                f[7 * c + k] += t.J[7 + k] * fn;
        }
        const int *K = IA(e, A_ICON) + 3 * i;
        if (K[0] == 6) {        /* a shape pair: ft1 and ft2 times its tangential rows (the
                                   friction force at its two surface points) */
            if (e->cft[2 * i] == 0.0 && e->cft[2 * i + 1] == 0.0)
                continue;
            mbp_rows_t o;
            double jt[14];
            spatial_pair_rows(e, i, xe, &o);
            for (int k = 0; k < 2; k++) {
                spatial_pair_row_x(e, i, xe, o.jt[k], jt);
                for (int j = 0; j < 7; j++) {
                    if (p < nb)
                        f[7 * p + j] += e->cft[2 * i + k] * jt[j];
                    if (c < nb)
                        f[7 * c + j] += e->cft[2 * i + k] * jt[7 + j];
                }
            }
            continue;
        }
        double rim[SKD];
        const double *P = spatial_contact_data(e, i, xe, rim);
        if ((K[0] != 1 && K[0] != 5) || !(P[35] > 0.0))
            continue;
        double Ap[3][3], Ac[3][3], n[3], tl[3], Ft[3], C[3], Pw[3];
        const double *rp = xe + 7 * p, *rc = xe + 7 * c;
        q_matrix(rp + 3, Ap);
        q_matrix(rc + 3, Ac);
        mv(Ap, P + 24, n);
        for (int j = 0; j < 3; j++)
            tl[j] = e->cft[2 * i] * P[29 + j] + e->cft[2 * i + 1] * P[32 + j];
        mv(Ap, tl, Ft);
        mv(Ac, P + 3, C);
        for (int j = 0; j < 3; j++)
            Pw[j] = rc[j] + C[j] - P[27] * n[j];
        int bodies[2] = {c, p};
        double sg[2] = {1.0, -1.0};
        for (int q = 0; q < 2; q++) {
            int b = bodies[q];
            if (b >= nb)
                continue;
            double A[3][3], s[3], d[3];
            q_matrix(xe + 7 * b + 3, A);
            for (int j = 0; j < 3; j++)
                d[j] = Pw[j] - xe[7 * b + j];
            for (int j = 0; j < 3; j++)        /* P in b's axes */
                s[j] = A[0][j] * d[0] + A[1][j] * d[1] + A[2][j] * d[2];
            VTerm pt;
            vterm(xe, b, s, 0, 1, &pt);
            for (int j = 0; j < 7; j++)
                f[7 * b + j] += sg[q] * (Ft[0] * pt.J[0][j] + Ft[1] * pt.J[1][j] +
                                         Ft[2] * pt.J[2][j]);
        }
    }
    return 0;
}

/* f (7 nb) += the frictional joints' friction torques or forces e->jfo (the torque or
 * force the joint applies to its child along its coordinate, sk_events_joint_outputs) as
 * generalised forces: the value times the gradient of the joint's coordinate in the two
 * bodies' absolute coordinates (r, p) at x */
static void spatial_joint_friction_forces(MbEngine *e, const double *x, double *f)
{
    int nb = e->nb;
    double *xe = e->xe;
    sextend(e, x, xe, 0);
    for (int j = 0; j < e->njf; j++) {
        double F = e->jfo[3 * j];
        if (F == 0.0)
            continue;
        int k = e->jfk[j];
        Frames3 fr;
        STerm tc;
        joint_frames(e, k, xe, &fr);
        coord_term(IA(e, A_IJOINT)[6 * k] == SJ_REV ? SC_REV : SC_PRI, &fr, &tc);
        for (int i = 0; i < 7; i++) {
            if (fr.p < nb)
                f[7 * fr.p + i] += F * tc.J[i];
            if (fr.c < nb)
                f[7 * fr.c + i] += F * tc.J[7 + i];
        }
    }
}

static MbeStatus spatial_outputs(MbEngine *e, const double *u, int groups, double *y,
                                 char *err, size_t errlen)
{
    int nb = e->nb, n = e->n, nc = 7 * nb, nr = e->nrows, rc;
    double t = e->t, *q = e->y, *qd = e->y + n;
    double *x = e->xa, *xd = e->xda;
    const int GB = groups & MBE_GROUP_BODIES, GC = groups & MBE_GROUP_COORDS,
              GE = groups & MBE_GROUP_ELEMENTS, GM = groups & MBE_GROUP_MARKERS,
              GN = groups & MBE_GROUP_ENERGY, G2 = groups & MBE_GROUP_REACTIONS,
              G4 = groups & MBE_GROUP_RESIDUALS, GK = groups & MBE_GROUP_CONTACTS;
    sk_set_time(e->kern, t);
    int nact = 0;                  /* persistent contacts: their rows join the reactions' */
    for (int i = 0; i < e->ncon; i++)
        nact += e->rec[e->nrec * i + 4] != 0.0;
    /* (frictional joints: their phase of the records, sticking rows or slipping forces, in
     * the accelerations; their friction, state and loss from the loop) */
    if ((rc = sk_kinematics(e->kern, q, qd, x, xd)) != OK ||
        (G2 && (rc = nact || e->njf
                         ? sk_events_accelerations(e->ev, t, q, qd, u, e->rec, DA(e, A_DSRQ),
                                                   e->qdd, e->x, e->xd, e->xdd)
                         : sk_accelerations_full(e->kern, q, qd, u, e->qdd, e->x, e->xd,
                                                 e->xdd)) != OK) ||
        (e->njf && G2 &&
         (rc = sk_events_joint_outputs(e->ev, t, e->y, u, e->rec, e->gap, e->cforce, e->cft,
                                       e->cvt, e->jfo)) != OK) ||
        (e->ncon && (GK || G2) && !(e->njf && G2) &&
         (rc = e->nrec > EV_REC
                   ? sk_events_outputs_fr(e->ev, t, e->y, u, e->rec, e->gap, e->cforce, e->cft,
                                          e->cvt)
                   : sk_events_outputs(e->ev, t, e->y, u, e->rec, e->gap, e->cforce)) != OK)) {
        msg(err, errlen, "the outputs at t = %.9g s cannot be computed: %s", t,
            kernel_error(rc));
        return MBE_ERROR;
    }
    /* Newton-Euler multipliers at the dynamics' motion: D D' lam = D (f - M xdd) */
    double *lam = e->lam;
    if (G2 && (spatial_forces(e, e->x, e->xd, u, e->f) != OK ||
        spatial_rows(e, e->x, e->phi, e->sr) != OK)) {
        msg(err, errlen, "a spring or distance link has zero length at t = %.9g s", t);
        return MBE_ERROR;
    }
    int nt = nr;
    /* the persistent contacts' forces (the kernel's phase solve, friction included: the split
     * of redundant contacts' forces is the kernel's) act on the bodies as known forces and
     * the reactions are the joints' rows alone */
    if (G2 && nact && spatial_contact_forces(e, e->x, e->f)) {
        msg(err, errlen, "a contact's gap row is undefined at t = %.9g s (zero distance)", t);
        return MBE_ERROR;
    }
    if (G2 && e->njf)              /* the joints' friction torques join the applied forces */
        spatial_joint_friction_forces(e, e->x, e->f);
    if (G2) {
        spatial_mass_times(e, e->x, e->xdd, e->rhs);
        for (int i = 0; i < nc; i++)
            e->f[i] -= e->rhs[i];
        for (int a = 0; a < nt; a++)
            e->rhs[a] = sprow_dot(e->sr + a, e->f);
        int rc = sprows_psd_solve(e, e->sr, nt, e->rhs, lam);     /* D D' lam = rhs */
        if (rc != OK) {
            msg(err, errlen, "the reactions at t = %.9g s cannot be computed%s", t,
                rc == ERR_NOMEM ? " (out of memory)" : "");
            return MBE_ERROR;
        }
    }
    if ((G2 || G4) && spatial_rows(e, x, e->phi, e->sr2) != OK) {
        msg(err, errlen, "a distance link has zero length at t = %.9g s", t);
        return MBE_ERROR;
    }
    int k = GB ? 0 : 16 * nb;
    for (int b = 0; b < nb && GB; b++) {               /* elements.body_outputs */
        const double *r = x + 7 * b, *p = r + 3, *rd = xd + 7 * b, *pd = rd + 3;
        double A[3][3], E[3][4];
        for (int i = 0; i < 3; i++) {
            double unit[3] = {0.0, 0.0, 0.0}, col[3];
            unit[i] = 1.0;
            q_rotate(p, unit, col);
            for (int rr = 0; rr < 3; rr++)
                A[rr][i] = col[rr];
        }
        for (int i = 0; i < 7; i++)
            PUT(GB, r[i]);
        PUT(GB, atan2(-A[1][2], A[2][2]));
        PUT(GB, asin(fmin(fmax(A[0][2], -1.0), 1.0)));
        PUT(GB, atan2(-A[0][1], A[0][0]));
        for (int i = 0; i < 3; i++)
            PUT(GB, rd[i]);
        E_mat(p, E);
        for (int i = 0; i < 3; i++)
            PUT(GB, 2.0 * (E[i][0] * pd[0] + E[i][1] * pd[1] + E[i][2] * pd[2] +
                           E[i][3] * pd[3]));
    }
    double *xe = e->xe, *xde = e->xde;
    sextend(e, x, xe, 0);
    sextend(e, xd, xde, 1);
    for (int j = 0; j < e->nj; j++) {
        const int *J = IA(e, A_IJOINT) + 6 * j;
        const double *P = DA(e, A_DJOINT) + SJD * j;
        int kind = J[0];
        if (J[3] >= 0) {
            int ncoord = (kind == SJ_CYL || kind == SJ_UNI) ? 2 : 1;
            for (int i = J[3]; i < J[3] + ncoord; i++) {
                Frames3 f;
                STerm tc;
                if (!GC) {
                    k += 2;
                    continue;
                }
                joint_frames(e, j, xe, &f);
                coord_term(IA(e, A_ICOORD)[2 * i + 1], &f, &tc);
                PUT(GC, tc.v);
                PUT(GC, srate(&tc, xde, f.p, f.c));
            }
        }
        if (kind == SJ_DST) {
            PUT(G2, lam[J[4]]);
            continue;
        }
        if (!G2) {
            k += 6;
            continue;
        }
        int child_is_body = J[2] < nb;
        int b = child_is_body ? J[2] : J[1];
        const double *s = child_is_body ? P + 3 : P;
        double sg = child_is_body ? -1.0 : 1.0, Q[7] = {0, 0, 0, 0, 0, 0, 0};
        for (int r = J[4]; r < J[4] + J[5]; r++) {
            const double *Db = sprow_get(e->sr2 + r, b);
            for (int i = 0; i < 7 && Db; i++)
                Q[i] += Db[i] * lam[r];
        }
        for (int i = 0; i < 7; i++)
            Q[i] *= sg;
        const double *p = x + 7 * b + 3;
        double E[3][4], nn[3], arm[3];
        E_mat(p, E);
        for (int i = 0; i < 3; i++)
            nn[i] = 0.5 * (E[i][0] * Q[3] + E[i][1] * Q[4] + E[i][2] * Q[5] + E[i][3] * Q[6]);
        q_rotate(p, s, arm);
        y[k++] = Q[0];
        y[k++] = Q[1];
        y[k++] = Q[2];
        y[k++] = nn[0] - (arm[1] * Q[2] - arm[2] * Q[1]);
        y[k++] = nn[1] - (arm[2] * Q[0] - arm[0] * Q[2]);
        y[k++] = nn[2] - (arm[0] * Q[1] - arm[1] * Q[0]);
    }
    for (int d = 0; d < e->nd; d++)                    /* drive efforts: -lam of the row */
        PUT(G2, -lam[IA(e, A_ISDJ)[2 * d + 1]]);
    for (int i = 0; i < e->nel && !GE; i++) {
        static const int width[] = {2, 2, 8, 1, 1, 6};
        k += width[IA(e, A_IELEM)[2 * i]];
    }
    if (e->nel && GE) {                                /* the kernel's element outputs */
        double *out = e->eout;                         /* (ne + 1) x 8 */
        if ((rc = sk_element_outputs(e->kern, q, qd, u, out)) != OK) {
            msg(err, errlen, "the element outputs at t = %.9g s cannot be computed: %s", t,
                kernel_error(rc));
            return MBE_ERROR;
        }
        for (int i = 0; i < e->nel; i++) {
            static const int width[] = {2, 2, 0, 1, 1, 6};
            const int *E = IA(e, A_IELEM) + 2 * i;
            if (E[0] == EK_CYL) {
                if (spatial_cylinder_outputs(e, i, xe, xde, u, y + k) != OK) {
                    msg(err, errlen, "cylinder %d has zero length at t = %.9g s", i, t);
                    return MBE_ERROR;
                }
                k += 8;
                continue;
            }
            for (int c = 0; c < width[E[0]]; c++)
                y[k++] = out[8 * E[1] + c];
        }
    }
    if (!GM)
        k += 6 * e->nmark;
    if (e->nmark && GM) {
        double *out = e->eout;
        sk_points(e->kern, q, qd, e->nmark, IA(e, A_IMARK), DA(e, A_DMARK), out);
        for (int i = 0; i < 6 * e->nmark; i++)
            y[k++] = out[i];
    }
    k = contact_outputs(e, GK, G2, y, k);           /* gaps, records, forces */
    for (int j = 0; j < 3 * e->njf; j++, k++)      /* the joints' friction, state, loss */
        if (G2)
            y[k] = e->jfo[j];
    /* energies (spatial elements.kinetic_energy, potential_energy) and residuals */
    const double *mass = DA(e, A_DSMASS), *Jb = DA(e, A_DSJ), *g = DA(e, A_DGRAV);
    double Tr = 0.0, Tw = 0.0, Vg = 0.0;
    for (int b = 0; b < nb && GN; b++) {
        const double *r = x + 7 * b, *p = r + 3, *rd = xd + 7 * b, *pd = rd + 3,
                     *J = Jb + 9 * b;
        double G[3][4], w[3];
        G_mat(p, G);
        for (int i = 0; i < 3; i++)
            w[i] = 2.0 * (G[i][0] * pd[0] + G[i][1] * pd[1] + G[i][2] * pd[2] + G[i][3] * pd[3]);
        Tr += mass[b] * (rd[0] * rd[0] + rd[1] * rd[1] + rd[2] * rd[2]);
        for (int i = 0; i < 3; i++)
            Tw += w[i] * (J[3 * i] * w[0] + J[3 * i + 1] * w[1] + J[3 * i + 2] * w[2]);
        Vg += mass[b] * (r[0] * g[0] + r[1] * g[1] + r[2] * g[2]);
    }
    if (GN && e->cnt[A_DSARM])       /* armature: the rotors' 1/2 a qd^2 of each tree row */
        for (int b = 0; b < nb; b++) {
            double a = DA(e, A_DSARM)[b], v = qd[IA(e, A_ISRI)[SRI * b + 3]];
            Tr += a * v * v;
        }
    double T = 0.5 * (Tr + Tw), V = -Vg;
    if (GN) {
        double *zero = e->xde;                         /* the springs' values only */
        for (int i = 0; i < 7 * (nb + 1); i++)
            zero[i] = 0.0;
        for (int i = 0; i < e->ne; i++) {
            const int *E = IA(e, A_ISEI) + SEI * i;
            const double *P = DA(e, A_DSED) + SED * i;
            STerm tt[6];
            double s[6];
            int p, c, cnt = element_terms(e, i, xe, zero, u, tt, s, &p, &c);
            if (cnt < 0) {
                V = NAN;
                continue;
            }
            if (E[0] == 0)
                V += 0.5 * P[24] * (tt[0].v - P[26]) * (tt[0].v - P[26]);
            else if (E[0] == 1)
                V += 0.5 * P[24] * wrap_angle(tt[0].v - P[26]) * wrap_angle(tt[0].v - P[26]);
            else if (E[0] == 4) {
                double ev[6];
                for (int a = 0; a < 6; a++)
                    ev[a] = tt[a].v - P[102 + a];
                double q2 = 0.0;
                for (int a = 0; a < 6; a++)
                    for (int b = 0; b < 6; b++)
                        q2 += ev[a] * P[30 + 6 * a + b] * ev[b];
                V += 0.5 * q2;
            }
        }
    }
    double res = 0.0, vres = 0.0;
    for (int r = 0; r < nr && G4; r++) {
        res = max_abs_nan(res, e->phi[r]);
        vres = max_abs_nan(vres, sprow_dot(e->sr2 + r, xd) + e->phit[r]);
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
