/* Shape-pair contacts: one feature of two moving shapes (sphere, capsule, box), a contact
 * whose points move on both bodies.
 *
 * The C twin of fmu_mb/mechanics/spatial/pairs.py (the derivation is in its docstring): the
 * feature's core (points ca, cb, normal n from a to b, core gap, radii, the core feature
 * types vertex / edge / face and their directions), the gap, the normal row and the two
 * tangential rows (t1, t2 = the tangent basis of n) at the surface points, with their
 * convective terms. A row is j[12] = (w_a, v_a, w_b, v_b) coefficients of the bodies'
 * angular velocities and reference-point velocities (world), as the spatial kernel's Row.
 *
 * Header only (static functions), included by the code that needs it. */
#ifndef MBP_PAIRS_H
#define MBP_PAIRS_H

#include "geometry.h"

#define MBP_ABSENT_GAP 1.0e3     /* [m] the gap of an absent feature (pairs.ABSENT_GAP) */
enum { MBP_V = 0, MBP_E = 1, MBP_F = 2 };

typedef struct {
    double ca[3], cb[3], n[3], gc, ra, rb, ua[3], ub[3];
    int ta, tb;
} mbp_core;

typedef struct {            /* a body: reference point, rotation (row-major), v, w (world) */
    const double *r, *A, *v, *w;
} mbp_body;

static void mbp_sub(const double *a, const double *b, double *o) {
    for (int i = 0; i < 3; i++) o[i] = a[i] - b[i];
}

/* x against box (R, p, half edges h): nearest point q, outward normal nb, the feature type
 * and direction u of the nearest point (pairs._box_point); returns the signed distance */
static double mbp_box_point(const double *x, const double *R, const double *p, const double *h,
                            double *q, double *nb, int *typ, double *u) {
    double local[3], ql[3], nl[3] = {0.0, 0.0, 0.0}, dist;
    int out[3], m = 0;
    for (int i = 0; i < 3; i++) {
        local[i] = 0.0;
        for (int j = 0; j < 3; j++) local[i] += R[j * 3 + i] * (x[j] - p[j]);
    }
    for (int i = 0; i < 3; i++) {
        ql[i] = local[i] < -h[i] ? -h[i] : (local[i] > h[i] ? h[i] : local[i]);
        out[i] = ql[i] != local[i];
        m += out[i];
    }
    u[0] = u[1] = u[2] = 0.0;
    if (m) {
        double dd[3];
        for (int i = 0; i < 3; i++) dd[i] = local[i] - ql[i];
        dist = sqrt(mbg_dot(3, dd, dd));
        for (int i = 0; i < 3; i++) nl[i] = dd[i] / dist;
        if (m == 1) *typ = MBP_F;
        else if (m == 2) {
            int j = !out[0] ? 0 : (!out[1] ? 1 : 2);
            *typ = MBP_E;
            for (int i = 0; i < 3; i++) u[i] = R[i * 3 + j];
        } else *typ = MBP_V;
    } else {
        int k = 0;
        double best = h[0] - fabs(local[0]);
        for (int i = 1; i < 3; i++)
            if (h[i] - fabs(local[i]) < best) { best = h[i] - fabs(local[i]); k = i; }
        double s = local[k] >= 0.0 ? 1.0 : -1.0;
        ql[k] = s * h[k];
        nl[k] = s;
        dist = -best;
        *typ = MBP_F;
    }
    for (int i = 0; i < 3; i++) {
        q[i] = p[i];
        nb[i] = 0.0;
        for (int j = 0; j < 3; j++) { q[i] += R[i * 3 + j] * ql[j]; nb[i] += R[i * 3 + j] * nl[j]; }
    }
    if (*typ == MBP_F)
        for (int i = 0; i < 3; i++) u[i] = nb[i];
    return dist;
}

/* feature fid of a capsule (a) against a box (b, half edges hb; pairs._capsule_box): 0, 1
 * the core's ends against the box, 2-9 the box's vertices against the core, 10 + eb the core
 * against the box's edge eb; 0 for an absent feature */
static int mbp_capsule_box(const double *sa, const double *Ra, const double *pa,
                           const double *sb, const double *Rb, const double *pb,
                           const double *hb, int fid, mbp_core *c) {
    mbg_shape A = {MBG_CAPSULE, 3, sa, Ra, pa}, B = {MBG_BOX, 3, sb, Rb, pb};
    double e0[3], e1[3], nb[3];
    c->ra = mbg_core(&A, e0, e1);
    if (fid < 2) {
        for (int i = 0; i < 3; i++) c->ca[i] = fid ? e1[i] : e0[i];
        c->gc = mbp_box_point(c->ca, Rb, pb, hb, c->cb, nb, &c->tb, c->ub);
        for (int i = 0; i < 3; i++) c->n[i] = -nb[i];
        c->ta = MBP_V;
        return 1;
    }
    mbg_col(&A, 2, c->ua);
    if (fid < 10) {
        double d[3], xe[3], up[3], v[3];
        mbg_vertex(3, Rb, pb, hb, fid - 2, c->cb);
        for (int i = 0; i < 3; i++) { d[i] = e1[i] - e0[i]; xe[i] = c->cb[i] - e0[i]; }
        double dd = mbg_dot(3, d, d);
        double t = dd > 1e-300 ? mbg_clamp01(mbg_dot(3, xe, d) / dd) : 0.0;
        for (int i = 0; i < 3; i++) c->ca[i] = e0[i] + t * d[i];
        mbg_col(&A, 2, up);
        mbp_sub(c->cb, c->ca, v);
        c->gc = mbg_unit_or(3, v, up, c->n);
        c->ta = 0.0 < t && t < 1.0 ? MBP_E : MBP_V;
        c->tb = MBP_V;
        return 1;
    }
    mbg_edge EB[12];
    mbg_edges(&B, EB);
    const mbg_edge *b = &EB[fid - 10];
    double ub1[3], ub2[3], n[3], ab[3], dv[3], s, t;
    mbg_col(&B, b->k, c->ub); mbg_col(&B, b->k1, ub1); mbg_col(&B, b->k2, ub2);
    mbg_cross(c->ua, c->ub, n);
    double ln = sqrt(mbg_dot(3, n, n));
    if (ln < MBG_PARALLEL_TOL) return 0;
    for (int i = 0; i < 3; i++) n[i] /= ln;
    if (b->s1 * mbg_dot(3, n, ub1) + b->s2 * mbg_dot(3, n, ub2) > 0.0)
        for (int i = 0; i < 3; i++) n[i] = -n[i];
    mbp_sub(pb, pa, ab);
    if (!(-b->s1 * mbg_dot(3, n, ub1) > MBG_SUPPORT_TOL
          && -b->s2 * mbg_dot(3, n, ub2) > MBG_SUPPORT_TOL && mbg_dot(3, n, ab) >= 0.0))
        return 0;
    mbg_segment_closest(3, e0, e1, b->e0, b->e1, &s, &t, c->ca, c->cb);
    if (!(0.0 < s && s < 1.0 && 0.0 < t && t < 1.0)) return 0;
    mbp_sub(c->cb, c->ca, dv);
    for (int i = 0; i < 3; i++) c->n[i] = n[i];
    c->gc = mbg_dot(3, n, dv);
    c->ta = c->tb = MBP_E;
    return 1;
}

/* the core of feature fid of shapes a, b (kinds in the order of pairs.KINDS) at world poses
 * (R row-major, the shape axes as columns); 0 for an absent feature */
static int mbp_feature(int ka, const double *sa, const double *Ra, const double *pa,
                       int kb, const double *sb, const double *Rb, const double *pb, int fid,
                       mbp_core *c) {
    memset(c, 0, sizeof *c);
    if (kb == MBG_SPHERE || kb == MBG_CAPSULE) {
        mbg_shape A = {ka, 3, sa, Ra, pa}, B = {kb, 3, sb, Rb, pb};
        double a0[3], a1[3], b0[3], b1[3], s, t, up[3], v[3];
        c->ra = mbg_core(&A, a0, a1);
        c->rb = mbg_core(&B, b0, b1);
        if (ka == MBG_CAPSULE) mbg_col(&A, 2, c->ua);
        if (kb == MBG_CAPSULE) mbg_col(&B, 2, c->ub);
        mbg_segment_closest(3, a0, a1, b0, b1, &s, &t, c->ca, c->cb);
        c->ta = ka == MBG_CAPSULE && 0.0 < s && s < 1.0 ? MBP_E : MBP_V;
        c->tb = kb == MBG_CAPSULE && 0.0 < t && t < 1.0 ? MBP_E : MBP_V;
        mbg_col(&B, 2, up);
        mbp_sub(c->cb, c->ca, v);
        c->gc = mbg_unit_or(3, v, up, c->n);
        return 1;
    }
    double hb[3] = {0.5 * sb[0], 0.5 * sb[1], 0.5 * sb[2]}, nb[3];
    if (ka == MBG_SPHERE) {
        for (int i = 0; i < 3; i++) c->ca[i] = pa[i];
        c->gc = mbp_box_point(pa, Rb, pb, hb, c->cb, nb, &c->tb, c->ub);
        for (int i = 0; i < 3; i++) c->n[i] = -nb[i];
        c->ra = sa[0];
        c->ta = MBP_V;
        return 1;
    }
    if (ka == MBG_CAPSULE)
        return mbp_capsule_box(sa, Ra, pa, sb, Rb, pb, hb, fid, c);
    double ha[3] = {0.5 * sa[0], 0.5 * sa[1], 0.5 * sa[2]};
    if (fid < 8) {
        mbg_vertex(3, Ra, pa, ha, fid, c->ca);
        c->gc = mbp_box_point(c->ca, Rb, pb, hb, c->cb, nb, &c->tb, c->ub);
        for (int i = 0; i < 3; i++) c->n[i] = -nb[i];
        c->ta = MBP_V;
        return 1;
    }
    if (fid < 16) {
        mbg_vertex(3, Rb, pb, hb, fid - 8, c->cb);
        c->gc = mbp_box_point(c->cb, Ra, pa, ha, c->ca, c->n, &c->ta, c->ua);
        c->tb = MBP_V;
        return 1;
    }
    int ea = (fid - 16) / 12, eb = (fid - 16) % 12;
    mbg_shape A = {ka, 3, sa, Ra, pa}, B = {kb, 3, sb, Rb, pb};
    mbg_edge EA[12], EB[12];
    mbg_edges(&A, EA);
    mbg_edges(&B, EB);
    const mbg_edge *a = &EA[ea], *b = &EB[eb];
    double ua1[3], ua2[3], ub1[3], ub2[3], n[3], ab[3], dv[3], s, t;
    mbg_col(&A, a->k, c->ua); mbg_col(&A, a->k1, ua1); mbg_col(&A, a->k2, ua2);
    mbg_col(&B, b->k, c->ub); mbg_col(&B, b->k1, ub1); mbg_col(&B, b->k2, ub2);
    mbg_cross(c->ua, c->ub, n);
    double ln = sqrt(mbg_dot(3, n, n));
    if (ln < MBG_PARALLEL_TOL) return 0;
    for (int i = 0; i < 3; i++) n[i] /= ln;
    if (a->s1 * mbg_dot(3, n, ua1) + a->s2 * mbg_dot(3, n, ua2) < 0.0)
        for (int i = 0; i < 3; i++) n[i] = -n[i];
    mbp_sub(pb, pa, ab);
    if (!(a->s1 * mbg_dot(3, n, ua1) > MBG_SUPPORT_TOL && a->s2 * mbg_dot(3, n, ua2) > MBG_SUPPORT_TOL
          && -b->s1 * mbg_dot(3, n, ub1) > MBG_SUPPORT_TOL
          && -b->s2 * mbg_dot(3, n, ub2) > MBG_SUPPORT_TOL && mbg_dot(3, n, ab) >= 0.0))
        return 0;
    mbg_segment_closest(3, a->e0, a->e1, b->e0, b->e1, &s, &t, c->ca, c->cb);
    if (!(0.0 < s && s < 1.0 && 0.0 < t && t < 1.0)) return 0;
    mbp_sub(c->cb, c->ca, dv);
    for (int i = 0; i < 3; i++) c->n[i] = n[i];
    c->gc = mbg_dot(3, n, dv);
    c->ta = c->tb = MBP_E;
    return 1;
}

/* the material velocity v + w x (x - r) of body B at x */
static void mbp_vel(const mbp_body *B, const double *x, double *o) {
    double rho[3], t[3];
    mbp_sub(x, B->r, rho);
    mbg_cross(B->w, rho, t);
    for (int i = 0; i < 3; i++) o[i] = B->v[i] + t[i];
}

/* v_rel, n' and the core points' motions wa, wb on their bodies (pairs.motion) */
static void mbp_motion(const mbp_core *c, const mbp_body *Ba, const mbp_body *Bb,
                       double *vrel, double *nd, double *wa, double *wb) {
    double va[3], vb[3], d[3], t[3], dd[3];
    const double *n = c->n;
    mbp_vel(Ba, c->ca, va);
    mbp_vel(Bb, c->cb, vb);
    mbp_sub(vb, va, vrel);
    mbp_sub(c->cb, c->ca, d);
    for (int i = 0; i < 3; i++) wa[i] = wb[i] = nd[i] = 0.0;
    if (c->ta == MBP_F || c->tb == MBP_F) {
        mbg_cross(c->tb == MBP_F ? Bb->w : Ba->w, n, nd);
        double gd = mbg_dot(3, n, vrel);
        for (int i = 0; i < 3; i++) dd[i] = gd * n[i] + c->gc * nd[i];
        if (c->tb == MBP_F) mbp_sub(dd, vrel, wb);
        else mbp_sub(vrel, dd, wa);
        return;
    }
    if (c->ta == MBP_E && c->tb == MBP_E) {
        double cc = mbg_dot(3, c->ua, c->ub), wua[3], wub[3], cr[3], x1[3], x2[3];
        mbg_cross(Ba->w, c->ua, wua);
        mbg_cross(Bb->w, c->ub, wub);
        double al = mbg_dot(3, vrel, c->ua) + mbg_dot(3, d, wua);
        double be = mbg_dot(3, vrel, c->ub) + mbg_dot(3, d, wub);
        double den = 1.0 - cc * cc, sd = (al - cc * be) / den, td = (cc * al - be) / den;
        for (int i = 0; i < 3; i++) { wa[i] = sd * c->ua[i]; wb[i] = td * c->ub[i]; }
        mbg_cross(c->ua, c->ub, cr);
        double lc = sqrt(mbg_dot(3, cr, cr)), sg = mbg_dot(3, n, cr) >= 0.0 ? 1.0 : -1.0;
        mbg_cross(wua, c->ub, x1);
        mbg_cross(c->ua, wub, x2);
        for (int i = 0; i < 3; i++) t[i] = x1[i] + x2[i];
        double nt = mbg_dot(3, n, t);
        for (int i = 0; i < 3; i++) nd[i] = sg * (t[i] - nt * n[i]) / lc;
        return;
    }
    if (c->tb == MBP_E) {
        mbg_cross(Bb->w, c->ub, t);
        double td = -(mbg_dot(3, vrel, c->ub) + mbg_dot(3, d, t));
        for (int i = 0; i < 3; i++) wb[i] = td * c->ub[i];
    } else if (c->ta == MBP_E) {
        mbg_cross(Ba->w, c->ua, t);
        double sd = mbg_dot(3, vrel, c->ua) + mbg_dot(3, d, t);
        for (int i = 0; i < 3; i++) wa[i] = sd * c->ua[i];
    }
    for (int i = 0; i < 3; i++) dd[i] = vrel[i] + wb[i] - wa[i];
    if (fabs(c->gc) > 1e-300) {
        double nd_ = mbg_dot(3, n, dd);
        for (int i = 0; i < 3; i++) nd[i] = (dd[i] - nd_ * n[i]) / c->gc;
    }
}

/* the row of e . (v_b(xb) - v_a(xa)) (j as the kernel's Row) and its convective part
 * e . (w_b x (w_b x rho_b) - w_a x (w_a x rho_a)) + e . (w_b x mb - w_a x ma) */
static double mbp_row(const double *e, const double *xa, const double *xb, const mbp_body *Ba,
                      const mbp_body *Bb, const double *ma, const double *mb, double *j) {
    double ra[3], rb[3], t1[3], t2[3], t3[3], t4[3];
    mbp_sub(xa, Ba->r, ra);
    mbp_sub(xb, Bb->r, rb);
    mbg_cross(e, ra, j);                 /* -(rho_a x e) */
    mbg_cross(rb, e, j + 6);
    for (int i = 0; i < 3; i++) { j[3 + i] = -e[i]; j[9 + i] = e[i]; }
    mbg_cross(Bb->w, rb, t1);
    mbg_cross(Bb->w, t1, t2);
    mbg_cross(Ba->w, ra, t3);
    mbg_cross(Ba->w, t3, t4);
    double g = mbg_dot(3, e, t2) - mbg_dot(3, e, t4);
    mbg_cross(Bb->w, mb, t1);
    mbg_cross(Ba->w, ma, t3);
    return g + mbg_dot(3, e, t1) - mbg_dot(3, e, t3);
}

/* t1, t2 of the tangent basis of n (mechanics.friction.tangent_basis) and their rates */
static void mbp_tangents(const double *n, const double *nd, double t[2][3], double td[2][3]) {
    int k = 0;
    for (int i = 1; i < 3; i++)
        if (fabs(n[i]) < fabs(n[k])) k = i;
    double u[3];
    for (int i = 0; i < 3; i++) {
        t[0][i] = -n[k] * n[i];
        u[i] = -(nd[k] * n[i] + n[k] * nd[i]);
    }
    t[0][k] += 1.0;
    double l1 = sqrt(mbg_dot(3, t[0], t[0]));
    for (int i = 0; i < 3; i++) t[0][i] /= l1;
    double tu = mbg_dot(3, t[0], u), x1[3], x2[3];
    for (int i = 0; i < 3; i++) td[0][i] = (u[i] - tu * t[0][i]) / l1;
    mbg_cross(n, t[0], t[1]);
    mbg_cross(nd, t[0], x1);
    mbg_cross(n, td[0], x2);
    for (int i = 0; i < 3; i++) td[1][i] = x1[i] + x2[i];
}

typedef struct {
    double gap, n[3], jn[12], gn, jt[2][12], gt[2], point[3];
} mbp_rows_t;

/* gap, normal row and tangential rows of feature fid of shapes a (kind ka, size sa, pose Fa
 * row-major and sp in body a's axes) and b; 0 for an absent feature (gap MBP_ABSENT_GAP,
 * zero rows) */
static int mbp_rows(int ka, const double *sa, const double *Fa, const double *spa,
                    int kb, const double *sb, const double *Fb, const double *spb, int fid,
                    const mbp_body *Ba, const mbp_body *Bb, mbp_rows_t *o) {
    double Ra[9], Rb[9], pa[3], pb[3];
    memset(o, 0, sizeof *o);
    o->gap = MBP_ABSENT_GAP;
    for (int i = 0; i < 3; i++) {
        pa[i] = Ba->r[i];
        pb[i] = Bb->r[i];
        for (int j = 0; j < 3; j++) {
            pa[i] += Ba->A[3 * i + j] * spa[j];
            pb[i] += Bb->A[3 * i + j] * spb[j];
            Ra[3 * i + j] = Rb[3 * i + j] = 0.0;
            for (int l = 0; l < 3; l++) {
                Ra[3 * i + j] += Ba->A[3 * i + l] * Fa[3 * l + j];
                Rb[3 * i + j] += Bb->A[3 * i + l] * Fb[3 * l + j];
            }
        }
    }
    mbp_core c;
    if (!mbp_feature(ka, sa, Ra, pa, kb, sb, Rb, pb, fid, &c))
        return 0;
    const double *n = c.n;
    double vrel[3], nd[3], wa[3], wb[3], qa[3], qb[3], vs[3], va[3], vb[3], sa_[3], sb_[3];
    double x[3], t[2][3], td[2][3];
    o->gap = c.gc - c.ra - c.rb;
    for (int i = 0; i < 3; i++) o->n[i] = n[i];
    mbp_motion(&c, Ba, Bb, vrel, nd, wa, wb);
    o->gn = mbp_row(n, c.ca, c.cb, Ba, Bb, wa, wb, o->jn) + mbg_dot(3, nd, vrel);
    for (int i = 0; i < 3; i++) {
        qa[i] = c.ca[i] + c.ra * n[i];
        qb[i] = c.cb[i] - c.rb * n[i];
        o->point[i] = qb[i];
    }
    mbp_vel(Ba, qa, va);
    mbp_vel(Bb, qb, vb);
    mbp_sub(vb, va, vs);
    mbg_cross(Ba->w, n, x);
    for (int i = 0; i < 3; i++) sa_[i] = wa[i] + c.ra * (nd[i] - x[i]);
    mbg_cross(Bb->w, n, x);
    for (int i = 0; i < 3; i++) sb_[i] = wb[i] - c.rb * (nd[i] - x[i]);
    mbp_tangents(n, nd, t, td);
    for (int k = 0; k < 2; k++)
        o->gt[k] = mbp_row(t[k], qa, qb, Ba, Bb, sa_, sb_, o->jt[k]) + mbg_dot(3, td[k], vs);
    return 1;
}

#endif
