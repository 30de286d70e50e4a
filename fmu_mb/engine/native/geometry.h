/* Narrowphase of collision shapes: the contact points of a pair of shapes at world poses.
 *
 * The C twin of fmu_mb/mechanics/shapes.py (collide), the same algorithms in the same order,
 * equal to 1e-12 (tests/test_shapes.py). A shape is a kind (MBG_SPHERE ...) and a size (the
 * order of shapes.SIZE_FIELDS); its pose is R (d x d, row-major, the shape axes as columns)
 * and p (d), d = 3 for spatial kinds, 2 for planar ones. Every contact point: the feature
 * id, the point on a's surface and on b's (world), the unit normal from a to b and the gap
 * (signed distance along the normal, < 0: overlap). All candidate features are returned
 * whatever their gap, in increasing id order.
 *
 * Header only (static functions), included by the code that needs it. */
#ifndef MBG_GEOMETRY_H
#define MBG_GEOMETRY_H

#include <math.h>
#include <string.h>

#include "unused.h"

enum { MBG_SPHERE = 0, MBG_CAPSULE = 1, MBG_BOX = 2, MBG_CYLINDER = 3, MBG_PLANE = 4,
       MBG_CIRCLE = 5, MBG_SEGMENT = 6, MBG_RECTANGLE = 7, MBG_LINE = 8 };

#define MBG_MAX_POINTS 160       /* box-box: 16 vertex-face + 144 edge-edge features */
#define MBG_PARALLEL_TOL 1e-9
#define MBG_SUPPORT_TOL 1e-12
#define MBG_COINCIDENT 1e-12      /* [m] two points closer than this have no direction */

typedef struct {
    int id;
    double pa[3], pb[3], n[3], gap;
} mbg_contact;

typedef struct {                /* a shape at a world pose */
    int kind, d;
    const double *s, *R, *p;
} mbg_shape;

static double mbg_dot(int d, const double *a, const double *b) {
    double s = a[0] * b[0];
    for (int i = 1; i < d; i++) s += a[i] * b[i];
    return s;
}

static void mbg_col(const mbg_shape *S, int k, double *out) {   /* shape axis k (world) */
    for (int i = 0; i < S->d; i++) out[i] = S->R[i * S->d + k];
}

static double mbg_clamp01(double x) { return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x); }

static void mbg_put(mbg_contact *c, int d, int id, const double *pa, const double *pb,
                    const double *n, double gap) {
    memset(c, 0, sizeof *c);
    c->id = id;
    for (int i = 0; i < d; i++) { c->pa[i] = pa[i]; c->pb[i] = pb[i]; c->n[i] = n[i]; }
    c->gap = gap;
}

/* unit vector of v (length l) or the fallback when l <= MBG_COINCIDENT (coincident points) */
static double mbg_unit_or(int d, const double *v, const double *fallback, double *out) {
    double l = sqrt(mbg_dot(d, v, v));
    for (int i = 0; i < d; i++) out[i] = l > MBG_COINCIDENT ? v[i] / l : fallback[i];
    return l;
}

/* closest points of segments p1-q1 and p2-q2 (Ericson, Real-Time Collision Detection 5.1.9) */
static void mbg_segment_closest(int d, const double *p1, const double *q1, const double *p2,
                                const double *q2, double *s_out, double *t_out, double *c1,
                                double *c2) {
    double d1[3] = {0}, d2[3] = {0}, r[3] = {0}, s, t;
    for (int i = 0; i < d; i++) { d1[i] = q1[i] - p1[i]; d2[i] = q2[i] - p2[i];
                                  r[i] = p1[i] - p2[i]; }
    double a = mbg_dot(d, d1, d1), e = mbg_dot(d, d2, d2), f = mbg_dot(d, d2, r);
    if (a <= 1e-300 && e <= 1e-300) { s = t = 0.0; }
    else if (a <= 1e-300) { s = 0.0; t = mbg_clamp01(f / e); }
    else {
        double c = mbg_dot(d, d1, r);
        if (e <= 1e-300) { s = mbg_clamp01(-c / a); t = 0.0; }
        else {
            double b = mbg_dot(d, d1, d2), denom = a * e - b * b;
            s = denom > 1e-14 * a * e ? mbg_clamp01((b * f - c * e) / denom) : 0.0;
            t = (b * s + f) / e;
            if (t < 0.0) { t = 0.0; s = mbg_clamp01(-c / a); }
            else if (t > 1.0) { t = 1.0; s = mbg_clamp01((b - c) / a); }
        }
    }
    for (int i = 0; i < d; i++) { c1[i] = p1[i] + s * d1[i]; c2[i] = p2[i] + t * d2[i]; }
    *s_out = s;
    *t_out = t;
}

/* signed distance of x to the box (R, p, half edges h): nearest surface point q, outward
 * normal n, returns dist (< 0 inside) */
static double mbg_point_box(int d, const double *x, const double *R, const double *p,
                            const double *h, double *q, double *n) {
    double local[3] = {0}, ql[3] = {0}, nl[3] = {0.0, 0.0, 0.0}, dist;
    int outside = 0;
    for (int i = 0; i < d; i++) {
        local[i] = 0.0;
        for (int j = 0; j < d; j++) local[i] += R[j * d + i] * (x[j] - p[j]);
    }
    for (int i = 0; i < d; i++) {
        ql[i] = local[i] < -h[i] ? -h[i] : (local[i] > h[i] ? h[i] : local[i]);
        if (ql[i] != local[i]) outside = 1;
    }
    if (outside) {
        double dd[3] = {0};
        for (int i = 0; i < d; i++) dd[i] = local[i] - ql[i];
        dist = sqrt(mbg_dot(d, dd, dd));
        for (int i = 0; i < d; i++) nl[i] = dd[i] / dist;
    } else {
        int k = 0;
        double best = h[0] - fabs(local[0]);
        for (int i = 1; i < d; i++)
            if (h[i] - fabs(local[i]) < best) { best = h[i] - fabs(local[i]); k = i; }
        double s = local[k] >= 0.0 ? 1.0 : -1.0;
        ql[k] = s * h[k];
        nl[k] = s;
        dist = -best;
    }
    for (int i = 0; i < d; i++) {
        q[i] = p[i];
        n[i] = 0.0;
        for (int j = 0; j < d; j++) { q[i] += R[i * d + j] * ql[j]; n[i] += R[i * d + j] * nl[j]; }
    }
    return dist;
}

/* vertex v of a box: sign + along axis i when bit (d-1-i) of v is set */
static void mbg_vertex(int d, const double *R, const double *p, const double *h, int v,
                       double *x) {
    double l[3] = {0};
    for (int i = 0; i < d; i++) l[i] = ((v >> (d - 1 - i)) & 1 ? 1.0 : -1.0) * h[i];
    for (int i = 0; i < d; i++) {
        x[i] = p[i];
        for (int j = 0; j < d; j++) x[i] += R[i * d + j] * l[j];
    }
}

/* ---- against a plane (3-D) or line (2-D): the plane is a, its normal a's last axis */
static int mbg_plane_points(const mbg_shape *A, int np, const double (*pts)[3],
                            double radius, const int *ids, mbg_contact *out) {
    int d = A->d;
    double n[3] = {0}, pa[3] = {0}, pb[3] = {0};
    mbg_col(A, d - 1, n);
    for (int k = 0; k < np; k++) {
        double c[3] = {0};
        for (int i = 0; i < d; i++) c[i] = pts[k][i] - A->p[i];
        double dn = mbg_dot(d, n, c);
        for (int i = 0; i < d; i++) { pa[i] = pts[k][i] - dn * n[i];
                                      pb[i] = pts[k][i] - radius * n[i]; }
        mbg_put(&out[k], d, ids[k], pa, pb, n, dn - radius);
    }
    return np;
}

static int mbg_plane_shape(const mbg_shape *A, const mbg_shape *B, mbg_contact *out) {
    static const int ids[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int d = B->d;
    double pts[8][3] = {{0}}, u[3] = {0}, radius = 0.0;
    int np = 0;
    switch (B->kind) {
    case MBG_SPHERE: case MBG_CIRCLE:
        for (int i = 0; i < d; i++) pts[0][i] = B->p[i];
        np = 1; radius = B->s[0];
        break;
    case MBG_CAPSULE: case MBG_SEGMENT: {
        int cap = B->kind == MBG_CAPSULE;
        mbg_col(B, cap ? 2 : 0, u);
        double half = 0.5 * (cap ? B->s[1] : B->s[0]);
        for (int i = 0; i < d; i++) { u[i] *= half; pts[0][i] = B->p[i] - u[i];
                                      pts[1][i] = B->p[i] + u[i]; }
        np = 2; radius = cap ? B->s[0] : B->s[1];
        break; }
    case MBG_BOX: case MBG_RECTANGLE: {
        double h[3] = {0};
        for (int i = 0; i < d; i++) h[i] = 0.5 * B->s[i];
        np = 1 << d;
        for (int v = 0; v < np; v++) mbg_vertex(d, B->R, B->p, h, v, pts[v]);
        break; }
    case MBG_CYLINDER: {
        double n[3] = {0}, ax[3] = {0}, dv[3] = {0}, w[3] = {0}, x0[3] = {0};
        mbg_col(A, 2, n);
        mbg_col(B, 2, ax);
        mbg_col(B, 0, x0);
        double na = mbg_dot(3, n, ax);
        for (int i = 0; i < 3; i++) dv[i] = n[i] - na * ax[i];
        mbg_unit_or(3, dv, x0, w);
        for (int i = 0; i < 3; i++) {
            double rim = B->s[0] * w[i], uu = 0.5 * B->s[1] * ax[i];
            pts[0][i] = B->p[i] - uu - rim;
            pts[1][i] = B->p[i] + uu - rim;
        }
        np = 2;
        break; }
    default:
        return -1;
    }
    return mbg_plane_points(A, np, (const double (*)[3])pts, radius, ids, out);
}

/* ---- round shapes: a core point or segment thickened by a radius; coincident cores take
 * the last axis of U's frame as normal (b's; a's for a rectangle corner on a segment) */
static void mbg_round(const mbg_shape *U, int id, const double *ca, double ra, const double *cb,
                      double rb, mbg_contact *out) {
    int d = U->d;
    double v[3] = {0}, n[3] = {0}, up[3] = {0}, pa[3] = {0}, pb[3] = {0};
    mbg_col(U, d - 1, up);
    for (int i = 0; i < d; i++) v[i] = cb[i] - ca[i];
    double l = mbg_unit_or(d, v, up, n);
    for (int i = 0; i < d; i++) { pa[i] = ca[i] + ra * n[i]; pb[i] = cb[i] - rb * n[i]; }
    mbg_put(out, d, id, pa, pb, n, l - ra - rb);
}

static int mbg_is_core(int kind) { return kind == MBG_CAPSULE || kind == MBG_SEGMENT; }

/* core segment e0-e1 and radius of a capsule or segment; a sphere or circle: e0 = e1 */
static double mbg_core(const mbg_shape *S, double *e0, double *e1) {
    int d = S->d;
    if (!mbg_is_core(S->kind)) {
        for (int i = 0; i < d; i++) e0[i] = e1[i] = S->p[i];
        return S->s[0];
    }
    int cap = S->kind == MBG_CAPSULE;
    double u[3] = {0};
    mbg_col(S, cap ? 2 : 0, u);
    double half = 0.5 * (cap ? S->s[1] : S->s[0]);
    for (int i = 0; i < d; i++) { e0[i] = S->p[i] - half * u[i]; e1[i] = S->p[i] + half * u[i]; }
    return cap ? S->s[0] : S->s[1];
}

static void mbg_point_segment(int d, const double *x, const double *e0, const double *e1,
                              double *c) {
    double dv[3] = {0}, xe[3] = {0};
    for (int i = 0; i < d; i++) { dv[i] = e1[i] - e0[i]; xe[i] = x[i] - e0[i]; }
    double dd = mbg_dot(d, dv, dv);
    double t = dd > 1e-300 ? mbg_clamp01(mbg_dot(d, xe, dv) / dd) : 0.0;
    for (int i = 0; i < d; i++) c[i] = e0[i] + t * dv[i];
}

static int mbg_round_round(const mbg_shape *A, const mbg_shape *B, mbg_contact *out) {
    int d = A->d;
    double a0[3] = {0}, a1[3] = {0}, b0[3] = {0}, b1[3] = {0}, ca[3] = {0}, cb[3] = {0};
    double s, t;
    double ra = mbg_core(A, a0, a1), rb = mbg_core(B, b0, b1);
    if (!mbg_is_core(A->kind) && !mbg_is_core(B->kind)) {
        mbg_round(B, 0, A->p, ra, B->p, rb, out);
    } else if (!mbg_is_core(A->kind)) {
        mbg_point_segment(d, A->p, b0, b1, cb);
        mbg_round(B, 0, A->p, ra, cb, rb, out);
    } else {
        mbg_segment_closest(d, a0, a1, b0, b1, &s, &t, ca, cb);
        mbg_round(B, 0, ca, ra, cb, rb, out);
    }
    return 1;
}

/* a sphere/circle (A) against a box/rectangle (B) */
static int mbg_sphere_box(const mbg_shape *A, const mbg_shape *B, mbg_contact *out) {
    int d = A->d;
    double h[3] = {0}, q[3] = {0}, nb[3] = {0}, n[3] = {0}, pa[3] = {0};
    for (int i = 0; i < d; i++) h[i] = 0.5 * B->s[i];
    double dist = mbg_point_box(d, A->p, B->R, B->p, h, q, nb);
    for (int i = 0; i < d; i++) { n[i] = -nb[i]; pa[i] = A->p[i] + A->s[0] * n[i]; }
    mbg_put(out, d, 0, pa, q, n, dist - A->s[0]);
    return 1;
}

/* each vertex of box A against box B (ids first + v), normal from A to B; flip: the roles
 * of a and b in the output swapped (B's vertices against A, normal still from a to b) */
static int mbg_vertex_features(const mbg_shape *A, const mbg_shape *B, int first, int flip,
                               mbg_contact *out) {
    int d = A->d, nv = 1 << d;
    double ha[3] = {0}, hb[3] = {0}, x[3] = {0}, q[3] = {0}, nb[3] = {0}, n[3] = {0};
    for (int i = 0; i < d; i++) { ha[i] = 0.5 * A->s[i]; hb[i] = 0.5 * B->s[i]; }
    for (int v = 0; v < nv; v++) {
        mbg_vertex(d, A->R, A->p, ha, v, x);
        double dist = mbg_point_box(d, x, B->R, B->p, hb, q, nb);
        if (flip) mbg_put(&out[v], d, first + v, q, x, nb, dist);
        else {
            for (int i = 0; i < d; i++) n[i] = -nb[i];
            mbg_put(&out[v], d, first + v, x, q, n, dist);
        }
    }
    return nv;
}

static void mbg_cross(const double *a, const double *b, double *c) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

typedef struct { int k, k1, k2; double s1, s2, e0[3], e1[3]; } mbg_edge;

static void mbg_edges(const mbg_shape *S, mbg_edge *E) {
    for (int k = 0; k < 3; k++) {
        int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
        for (int m = 0; m < 4; m++) {
            mbg_edge *e = &E[4 * k + m];
            e->k = k; e->k1 = k1; e->k2 = k2;
            e->s1 = m & 2 ? 1.0 : -1.0;
            e->s2 = m & 1 ? 1.0 : -1.0;
            for (int i = 0; i < 3; i++) {
                const double *Ri = &S->R[3 * i];
                double c = S->p[i] + Ri[k1] * (e->s1 * 0.5 * S->s[k1])
                           + Ri[k2] * (e->s2 * 0.5 * S->s[k2]);
                e->e0[i] = c - Ri[k] * (0.5 * S->s[k]);
                e->e1[i] = c + Ri[k] * (0.5 * S->s[k]);
            }
        }
    }
}

static int mbg_box_box(const mbg_shape *A, const mbg_shape *B, mbg_contact *out) {
    int m = mbg_vertex_features(A, B, 0, 0, out);
    m += mbg_vertex_features(B, A, 1 << A->d, 1, out + m);
    if (A->d != 3) return m;
    mbg_edge EA[12], EB[12];
    mbg_edges(A, EA);
    mbg_edges(B, EB);
    double ab[3];
    for (int i = 0; i < 3; i++) ab[i] = B->p[i] - A->p[i];
    for (int ea = 0; ea < 12; ea++) {
        const mbg_edge *a = &EA[ea];
        double ua[3] = {0}, ua1[3] = {0}, ua2[3] = {0};
        mbg_col(A, a->k, ua); mbg_col(A, a->k1, ua1); mbg_col(A, a->k2, ua2);
        for (int eb = 0; eb < 12; eb++) {
            const mbg_edge *b = &EB[eb];
            double ub[3] = {0}, ub1[3] = {0}, ub2[3] = {0}, n[3] = {0};
            mbg_col(B, b->k, ub); mbg_col(B, b->k1, ub1); mbg_col(B, b->k2, ub2);
            mbg_cross(ua, ub, n);
            double ln = sqrt(mbg_dot(3, n, n));
            if (ln < MBG_PARALLEL_TOL) continue;
            for (int i = 0; i < 3; i++) n[i] /= ln;
            if (a->s1 * mbg_dot(3, n, ua1) + a->s2 * mbg_dot(3, n, ua2) < 0.0)
                for (int i = 0; i < 3; i++) n[i] = -n[i];
            if (!(a->s1 * mbg_dot(3, n, ua1) > MBG_SUPPORT_TOL
                  && a->s2 * mbg_dot(3, n, ua2) > MBG_SUPPORT_TOL
                  && -b->s1 * mbg_dot(3, n, ub1) > MBG_SUPPORT_TOL
                  && -b->s2 * mbg_dot(3, n, ub2) > MBG_SUPPORT_TOL && mbg_dot(3, n, ab) >= 0.0))
                continue;
            double s, t, ca[3] = {0}, cb[3] = {0}, dv[3] = {0};
            mbg_segment_closest(3, a->e0, a->e1, b->e0, b->e1, &s, &t, ca, cb);
            if (!(0.0 < s && s < 1.0 && 0.0 < t && t < 1.0)) continue;
            for (int i = 0; i < 3; i++) dv[i] = cb[i] - ca[i];
            mbg_put(&out[m++], 3, 16 + 12 * ea + eb, ca, cb, n, mbg_dot(3, n, dv));
        }
    }
    return m;
}

/* a segment (A, thickened by its radius) against a rectangle (B): A's ends (ids 0, 1) and
 * B's corners (ids 2-5) */
static int mbg_segment_rectangle(const mbg_shape *A, const mbg_shape *B, mbg_contact *out) {
    double e[2][3] = {{0}}, h[3] = {0}, q[3] = {0}, nb[3] = {0}, n[3] = {0}, pa[3] = {0};
    double x[3] = {0}, c[3] = {0};
    double r = mbg_core(A, e[0], e[1]);
    for (int i = 0; i < 2; i++) h[i] = 0.5 * B->s[i];
    for (int k = 0; k < 2; k++) {
        double dist = mbg_point_box(2, e[k], B->R, B->p, h, q, nb);
        for (int i = 0; i < 2; i++) { n[i] = -nb[i]; pa[i] = e[k][i] + r * n[i]; }
        mbg_put(&out[k], 2, k, pa, q, n, dist - r);
    }
    for (int v = 0; v < 4; v++) {
        mbg_vertex(2, B->R, B->p, h, v, x);
        mbg_point_segment(2, x, e[0], e[1], c);
        mbg_round(A, 2 + v, c, r, x, 0.0, &out[2 + v]);
    }
    return 6;
}

/* a capsule (A) against a box (B): A's core ends (ids 0, 1), B's vertices against the core
 * (ids 2-9), the core against B's support edges (id 10 + eb; shapes.capsule_box) */
static int mbg_capsule_box(const mbg_shape *A, const mbg_shape *B, mbg_contact *out) {
    double e[2][3] = {{0}}, h[3], q[3], nb[3], n[3], pa[3], x[3], c[3], ua[3], ab[3];
    double r = mbg_core(A, e[0], e[1]);
    int m = 0;
    for (int i = 0; i < 3; i++) h[i] = 0.5 * B->s[i];
    for (int k = 0; k < 2; k++) {
        double dist = mbg_point_box(3, e[k], B->R, B->p, h, q, nb);
        for (int i = 0; i < 3; i++) { n[i] = -nb[i]; pa[i] = e[k][i] + r * n[i]; }
        mbg_put(&out[m++], 3, k, pa, q, n, dist - r);
    }
    for (int v = 0; v < 8; v++) {
        mbg_vertex(3, B->R, B->p, h, v, x);
        mbg_point_segment(3, x, e[0], e[1], c);
        mbg_round(A, 2 + v, c, r, x, 0.0, &out[m++]);
    }
    mbg_edge EB[12];
    mbg_edges(B, EB);
    mbg_col(A, 2, ua);
    for (int i = 0; i < 3; i++) ab[i] = B->p[i] - A->p[i];
    for (int eb = 0; eb < 12; eb++) {
        const mbg_edge *b = &EB[eb];
        double ub[3], ub1[3], ub2[3], s, t, ca[3], cb[3], dv[3];
        mbg_col(B, b->k, ub); mbg_col(B, b->k1, ub1); mbg_col(B, b->k2, ub2);
        mbg_cross(ua, ub, n);
        double ln = sqrt(mbg_dot(3, n, n));
        if (ln < MBG_PARALLEL_TOL) continue;
        for (int i = 0; i < 3; i++) n[i] /= ln;
        if (b->s1 * mbg_dot(3, n, ub1) + b->s2 * mbg_dot(3, n, ub2) > 0.0)
            for (int i = 0; i < 3; i++) n[i] = -n[i];
        if (!(-b->s1 * mbg_dot(3, n, ub1) > MBG_SUPPORT_TOL
              && -b->s2 * mbg_dot(3, n, ub2) > MBG_SUPPORT_TOL && mbg_dot(3, n, ab) >= 0.0))
            continue;
        mbg_segment_closest(3, e[0], e[1], b->e0, b->e1, &s, &t, ca, cb);
        if (!(0.0 < s && s < 1.0 && 0.0 < t && t < 1.0)) continue;
        for (int i = 0; i < 3; i++) { dv[i] = cb[i] - ca[i]; pa[i] = ca[i] + r * n[i]; }
        mbg_put(&out[m++], 3, 10 + eb, pa, cb, n, mbg_dot(3, n, dv) - r);
    }
    return m;
}

/* a before b: the pair's function exists in this order (1), in the reversed order (0) */
static int mbg_pair(int ka, int kb, mbg_contact *out, const mbg_shape *A, const mbg_shape *B) {
    if (ka == MBG_PLANE && (kb == MBG_SPHERE || kb == MBG_CAPSULE || kb == MBG_BOX
                            || kb == MBG_CYLINDER))
        return mbg_plane_shape(A, B, out);
    if (ka == MBG_LINE && (kb == MBG_CIRCLE || kb == MBG_SEGMENT || kb == MBG_RECTANGLE))
        return mbg_plane_shape(A, B, out);
    if ((ka == MBG_SPHERE && (kb == MBG_SPHERE || kb == MBG_CAPSULE))
        || (ka == MBG_CAPSULE && kb == MBG_CAPSULE)
        || (ka == MBG_CIRCLE && (kb == MBG_CIRCLE || kb == MBG_SEGMENT))
        || (ka == MBG_SEGMENT && kb == MBG_SEGMENT))
        return mbg_round_round(A, B, out);
    if ((ka == MBG_SPHERE && kb == MBG_BOX) || (ka == MBG_CIRCLE && kb == MBG_RECTANGLE))
        return mbg_sphere_box(A, B, out);
    if ((ka == MBG_BOX && kb == MBG_BOX) || (ka == MBG_RECTANGLE && kb == MBG_RECTANGLE))
        return mbg_box_box(A, B, out);
    if (ka == MBG_SEGMENT && kb == MBG_RECTANGLE)
        return mbg_segment_rectangle(A, B, out);
    if (ka == MBG_CAPSULE && kb == MBG_BOX)
        return mbg_capsule_box(A, B, out);
    return -1;
}

static int mbg_dim(int kind) { return kind >= MBG_CIRCLE ? 2 : 3; }

/* Contact points of shapes a and b (kinds, sizes, poses R row-major d x d and p) into out
 * (room for MBG_MAX_POINTS); returns their number, -1 for a pair without a narrowphase
 * (or of a spatial and a planar shape). */
MB_MAYBE_UNUSED static int mbg_collide(int ka, const double *sa, const double *Ra, const double *pa,
                       int kb, const double *sb, const double *Rb, const double *pb,
                       mbg_contact *out) {
    if (ka < 0 || ka > MBG_LINE || kb < 0 || kb > MBG_LINE || mbg_dim(ka) != mbg_dim(kb))
        return -1;
    int d = mbg_dim(ka);
    mbg_shape A = {ka, d, sa, Ra, pa}, B = {kb, d, sb, Rb, pb};
    int m = mbg_pair(ka, kb, out, &A, &B);
    if (m >= 0) return m;
    m = mbg_pair(kb, ka, out, &B, &A);
    for (int k = 0; k < m; k++) {               /* reversed: swap the points, flip n */
        for (int i = 0; i < 3; i++) {
            double t = out[k].pa[i];
            out[k].pa[i] = out[k].pb[i];
            out[k].pb[i] = t;
            out[k].n[i] = -out[k].n[i];
        }
    }
    return m;
}

#endif
