/* Planar shape-pair contacts: one feature of two moving planar shapes (circle, segment,
 * rectangle), a contact whose points move on both bodies.
 *
 * The C twin of fmu_mb/mechanics/planar_pairs.py (the derivation and the feature ids are in
 * its docstring): the feature's core (points ca, cb, normal n from a to b, core gap, radii,
 * where the normal is fixed), the gap, the normal row and the tangential row (t = e_z x n)
 * at the surface points, with their convective terms. A row is j[6] = the coefficients of
 * body a's (vx, vy, w) and body b's (vx, vy, w), the bodies' absolute coordinates' rates.
 *
 * Header only (static functions), included by the code that needs it. */
#ifndef MBPP_PLANAR_PAIRS_H
#define MBPP_PLANAR_PAIRS_H

#include "geometry.h"

enum { MBPP_FREE = 0, MBPP_FIXED_A = 1, MBPP_FIXED_B = 2 };

typedef struct {
    double ca[2], cb[2], n[2], gc, ra, rb;
    int fixed;
} mbpp_core;

typedef struct {            /* a planar body: reference point r, angle's cos and sin, v, w */
    double r[2], c, s, v[2], w;
} mbpp_body;

typedef struct {
    double gap, n[2], jn[6], gn, jt[6], gt, point[2];
} mbpp_rows_t;

/* the feature count of a pair (kinds in the order of planar_pairs.KINDS), 0: not a pair */
static int mbpp_count(int ka, int kb) {
    if (ka == MBG_CIRCLE && (kb == MBG_CIRCLE || kb == MBG_SEGMENT || kb == MBG_RECTANGLE))
        return 1;
    if (ka == MBG_SEGMENT && kb == MBG_SEGMENT) return 4;
    if (ka == MBG_SEGMENT && kb == MBG_RECTANGLE) return 6;
    if (ka == MBG_RECTANGLE && kb == MBG_RECTANGLE) return 8;
    return 0;
}

static void mbpp_free(const double *x, const double *q, const double *R, double *qo,
                      double *n, double *dist, int *fixed) {
    double d[2] = {x[0] - q[0], x[1] - q[1]}, l = sqrt(d[0] * d[0] + d[1] * d[1]);
    qo[0] = q[0];
    qo[1] = q[1];
    if (l > MBG_COINCIDENT) {
        n[0] = d[0] / l;
        n[1] = d[1] / l;
        *dist = l;
    } else {                                   /* the shape's last axis */
        n[0] = R[1];
        n[1] = R[3];
        *dist = 0.0;
    }
    *fixed = 0;
}

/* point x against the core of shape (kind, R row-major, p, size s): the nearest point q,
 * the unit normal from the core towards x, the signed distance, fixed: n is fixed in the
 * shape's body (planar_pairs._point_core) */
static void mbpp_point_core(const double *x, int kind, const double *R, const double *p,
                            const double *s, double *q, double *n, double *dist, int *fixed) {
    if (kind == MBG_CIRCLE) {
        mbpp_free(x, p, R, q, n, dist, fixed);
        return;
    }
    if (kind == MBG_SEGMENT) {
        double u[2] = {R[0], R[2]}, h = 0.5 * s[0];
        double t = u[0] * (x[0] - p[0]) + u[1] * (x[1] - p[1]);
        if (-h < t && t < h) {
            double qq[2] = {p[0] + t * u[0], p[1] + t * u[1]};
            double d[2] = {x[0] - qq[0], x[1] - qq[1]}, m[2] = {-u[1], u[0]};
            double side = m[0] * d[0] + m[1] * d[1] >= 0.0 ? 1.0 : -1.0;
            q[0] = qq[0];
            q[1] = qq[1];
            n[0] = side * m[0];
            n[1] = side * m[1];
            *dist = side * (m[0] * d[0] + m[1] * d[1]);
            *fixed = 1;
            return;
        }
        double e = t >= h ? h : -h, end[2] = {p[0] + e * u[0], p[1] + e * u[1]};
        mbpp_free(x, end, R, q, n, dist, fixed);
        return;
    }
    double h[2] = {0.5 * s[0], 0.5 * s[1]}, local[2], ql[2], nl[2] = {0.0, 0.0};
    int out[2], m = 0;
    for (int i = 0; i < 2; i++) {
        local[i] = R[i] * (x[0] - p[0]) + R[2 + i] * (x[1] - p[1]);
        ql[i] = local[i] < -h[i] ? -h[i] : (local[i] > h[i] ? h[i] : local[i]);
        out[i] = ql[i] != local[i];
        m += out[i];
    }
    if (m == 2) {                                /* nearest a corner */
        double c[2] = {p[0] + R[0] * ql[0] + R[1] * ql[1], p[1] + R[2] * ql[0] + R[3] * ql[1]};
        mbpp_free(x, c, R, q, n, dist, fixed);
        return;
    }
    if (m == 1) {                                /* nearest an edge, outside */
        int i = out[0] ? 0 : 1;
        nl[i] = local[i] > 0.0 ? 1.0 : -1.0;
        *dist = fabs(local[i]) - h[i];
    } else {                                     /* inside: the nearest edge */
        int i = (h[1] - fabs(local[1]) < h[0] - fabs(local[0])) ? 1 : 0;
        double sg = local[i] >= 0.0 ? 1.0 : -1.0;
        *dist = -(h[i] - fabs(local[i]));
        ql[0] = local[0];
        ql[1] = local[1];
        ql[i] = sg * h[i];
        nl[i] = sg;
    }
    for (int i = 0; i < 2; i++) {
        q[i] = p[i] + R[2 * i] * ql[0] + R[2 * i + 1] * ql[1];
        n[i] = R[2 * i] * nl[0] + R[2 * i + 1] * nl[1];
    }
    *fixed = 1;
}

/* the core points of a shape (circle centre; segment ends; rectangle corners in the vertex
 * order of shapes._vertices) and its radius; returns their count */
static int mbpp_points(int kind, const double *R, const double *p, const double *s,
                       double pts[4][2], double *r) {
    if (kind == MBG_CIRCLE) {
        pts[0][0] = p[0];
        pts[0][1] = p[1];
        *r = s[0];
        return 1;
    }
    if (kind == MBG_SEGMENT) {
        double u[2] = {0.5 * s[0] * R[0], 0.5 * s[0] * R[2]};
        for (int i = 0; i < 2; i++) {
            pts[0][i] = p[i] - u[i];
            pts[1][i] = p[i] + u[i];
        }
        *r = s[1];
        return 2;
    }
    double h[2] = {0.5 * s[0], 0.5 * s[1]};
    for (int v = 0; v < 4; v++) {
        double l0 = (v >> 1 & 1 ? 1.0 : -1.0) * h[0], l1 = (v & 1 ? 1.0 : -1.0) * h[1];
        for (int i = 0; i < 2; i++) pts[v][i] = p[i] + R[2 * i] * l0 + R[2 * i + 1] * l1;
    }
    *r = 0.0;
    return 4;
}

static double mbpp_radius(int kind, const double *s) {
    return kind == MBG_CIRCLE ? s[0] : (kind == MBG_SEGMENT ? s[1] : 0.0);
}

/* the core of feature fid of shapes a, b at world poses (planar_pairs.feature) */
static void mbpp_feature(int ka, const double *sa, const double *Ra, const double *pa,
                         int kb, const double *sb, const double *Rb, const double *pb, int fid,
                         mbpp_core *c) {
    double pts[4][2], x[2], q[2], nq[2], dist;
    int fixed;
    memset(c, 0, sizeof *c);
    int na = mbpp_points(ka, Ra, pa, sa, pts, &c->ra);
    c->rb = mbpp_radius(kb, sb);
    if (fid < na) {                              /* a point of a against b's core */
        x[0] = pts[fid][0];
        x[1] = pts[fid][1];
        mbpp_point_core(x, kb, Rb, pb, sb, q, nq, &dist, &fixed);
        for (int i = 0; i < 2; i++) {
            c->ca[i] = x[i];
            c->cb[i] = q[i];
            c->n[i] = -nq[i];
        }
        c->fixed = fixed ? MBPP_FIXED_B : MBPP_FREE;
    } else {                                     /* a point of b against a's core */
        double rb;
        mbpp_points(kb, Rb, pb, sb, pts, &rb);
        x[0] = pts[fid - na][0];
        x[1] = pts[fid - na][1];
        mbpp_point_core(x, ka, Ra, pa, sa, q, nq, &dist, &fixed);
        for (int i = 0; i < 2; i++) {
            c->ca[i] = q[i];
            c->cb[i] = x[i];
            c->n[i] = nq[i];
        }
        c->fixed = fixed ? MBPP_FIXED_A : MBPP_FREE;
    }
    c->gc = dist;
}

/* the material velocity v + w x (x - r) of body B at x */
static void mbpp_vel(const mbpp_body *B, const double *x, double *o) {
    o[0] = B->v[0] - B->w * (x[1] - B->r[1]);
    o[1] = B->v[1] + B->w * (x[0] - B->r[0]);
}

/* v_rel, n' and the core points' motions ma, mb on their bodies (planar_pairs.motion) */
static void mbpp_motion(const mbpp_core *c, const mbpp_body *Ba, const mbpp_body *Bb,
                        double *vrel, double *nd, double *ma, double *mb) {
    double va[2], vb[2];
    const double *n = c->n;
    mbpp_vel(Ba, c->ca, va);
    mbpp_vel(Bb, c->cb, vb);
    for (int i = 0; i < 2; i++) {
        vrel[i] = vb[i] - va[i];
        ma[i] = mb[i] = nd[i] = 0.0;
    }
    double gd = n[0] * vrel[0] + n[1] * vrel[1];
    if (c->fixed == MBPP_FREE) {
        if (fabs(c->gc) > 1e-300)
            for (int i = 0; i < 2; i++) nd[i] = (vrel[i] - gd * n[i]) / c->gc;
        return;
    }
    double w = c->fixed == MBPP_FIXED_B ? Bb->w : Ba->w;
    nd[0] = -w * n[1];
    nd[1] = w * n[0];
    for (int i = 0; i < 2; i++) {
        double dd = gd * n[i] + c->gc * nd[i];
        if (c->fixed == MBPP_FIXED_B) mb[i] = dd - vrel[i];
        else ma[i] = vrel[i] - dd;
    }
}

/* the row j[6] of e . (v_b(xb) - v_a(xa)) and its convective part
 * e . (w_a^2 rho_a - w_b^2 rho_b) + e . (w_b x mb - w_a x ma) */
static double mbpp_row(const double *e, const double *xa, const double *xb,
                       const mbpp_body *Ba, const mbpp_body *Bb, const double *ma,
                       const double *mb, double *j) {
    double ra[2] = {xa[0] - Ba->r[0], xa[1] - Ba->r[1]};
    double rb[2] = {xb[0] - Bb->r[0], xb[1] - Bb->r[1]};
    j[0] = -e[0];
    j[1] = -e[1];
    j[2] = -(ra[0] * e[1] - ra[1] * e[0]);
    j[3] = e[0];
    j[4] = e[1];
    j[5] = rb[0] * e[1] - rb[1] * e[0];
    double g = 0.0;
    for (int i = 0; i < 2; i++)
        g += e[i] * (Ba->w * Ba->w * ra[i] - Bb->w * Bb->w * rb[i]);
    /* w x m = w (-m_y, m_x) */
    g += e[0] * (-Bb->w * mb[1] + Ba->w * ma[1]) + e[1] * (Bb->w * mb[0] - Ba->w * ma[0]);
    return g;
}

/* gap, normal row and tangential row of feature fid of shapes a (kind ka, size sa, pose in
 * body a's axes: rotation Fa row-major 2 x 2 and position spa) and b */
static void mbpp_rows(int ka, const double *sa, const double *Fa, const double *spa,
                      int kb, const double *sb, const double *Fb, const double *spb, int fid,
                      const mbpp_body *Ba, const mbpp_body *Bb, mbpp_rows_t *o) {
    double Ra[4], Rb[4], pa[2], pb[2];
    double Aa[4] = {Ba->c, -Ba->s, Ba->s, Ba->c}, Ab[4] = {Bb->c, -Bb->s, Bb->s, Bb->c};
    memset(o, 0, sizeof *o);
    for (int i = 0; i < 2; i++) {
        pa[i] = Ba->r[i] + Aa[2 * i] * spa[0] + Aa[2 * i + 1] * spa[1];
        pb[i] = Bb->r[i] + Ab[2 * i] * spb[0] + Ab[2 * i + 1] * spb[1];
        for (int j = 0; j < 2; j++) {
            Ra[2 * i + j] = Aa[2 * i] * Fa[j] + Aa[2 * i + 1] * Fa[2 + j];
            Rb[2 * i + j] = Ab[2 * i] * Fb[j] + Ab[2 * i + 1] * Fb[2 + j];
        }
    }
    mbpp_core c;
    mbpp_feature(ka, sa, Ra, pa, kb, sb, Rb, pb, fid, &c);
    const double *n = c.n;
    double vrel[2], nd[2], ma[2], mb[2], qa[2], qb[2], va[2], vb[2], vs[2], sa_[2], sb_[2];
    o->gap = c.gc - c.ra - c.rb;
    o->n[0] = n[0];
    o->n[1] = n[1];
    mbpp_motion(&c, Ba, Bb, vrel, nd, ma, mb);
    o->gn = mbpp_row(n, c.ca, c.cb, Ba, Bb, ma, mb, o->jn) + nd[0] * vrel[0] + nd[1] * vrel[1];
    for (int i = 0; i < 2; i++) {
        qa[i] = c.ca[i] + c.ra * n[i];
        qb[i] = c.cb[i] - c.rb * n[i];
        o->point[i] = qb[i];
    }
    mbpp_vel(Ba, qa, va);
    mbpp_vel(Bb, qb, vb);
    double wna[2] = {-Ba->w * n[1], Ba->w * n[0]}, wnb[2] = {-Bb->w * n[1], Bb->w * n[0]};
    for (int i = 0; i < 2; i++) {
        vs[i] = vb[i] - va[i];
        sa_[i] = ma[i] + c.ra * (nd[i] - wna[i]);
        sb_[i] = mb[i] - c.rb * (nd[i] - wnb[i]);
    }
    double t[2] = {-n[1], n[0]}, td[2] = {-nd[1], nd[0]};
    o->gt = mbpp_row(t, qa, qb, Ba, Bb, sa_, sb_, o->jt) + td[0] * vs[0] + td[1] * vs[1];
}

#endif
