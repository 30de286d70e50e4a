/*
 * The layout of the engine's model data (the blob of engine.h), made by fmu_mb/engine/data.py.
 *
 *   header   8 x uint32: MBE_DATA_MAGIC, MBE_DATA_VERSION, n_ints, n_doubles, n_code, n_consts,
 *            n_chars, 0
 *   ints     n_ints x int32 (little-endian)
 *   (pad to a multiple of 8 bytes)
 *   doubles  n_doubles x float64: every number of the model (what the parameter program of
 *            params.h patches; its layout depends on the model's structure only)
 *   code     n_code x int32 (the parameter program, params.h; may be empty)
 *   (pad to a multiple of 8 bytes)
 *   consts   n_consts x float64
 *   chars    n_chars bytes: the parameter names, each NUL-terminated, in table order, then
 *            the joint names (model order; for messages)
 *
 * ints[0] = MBE_N_ARRAYS; ints[1 + 2 a], ints[2 + 2 a] = offset and count of array a (in ints
 * for the A_I* arrays, in doubles for the A_D* arrays). The order below is also
 * fmu_mb.engine.data.ARRAYS (tests/test_engine.py checks that they agree). Shapes: "x k"
 * means k entries per item.
 */
#ifndef FMU_MB_ENGINE_DATA_H
#define FMU_MB_ENGINE_DATA_H

enum {
    /* common */
    A_IHEAD = 0,   /* H_* below */
    A_DGRAV,       /* gravity (2 planar, 3 spatial) */
    A_DT0,         /* t0 */
    A_DPARAM,      /* x 3 per parameter: default, min, max (+-inf: unbounded) */
    A_IPARAM,      /* x 1 per parameter: 1 structural (cannot change at run time) */
    /* planar kernel (mbk_create and the set_* calls, as fmu_mb/engine/kernel.py) */
    A_IJI, A_DJD, A_IEI, A_DED, A_DMASS, A_DINERTIA,
    A_IRI, A_DRD,  /* loop rows (mbk_set_rows) */
    A_IDI, A_DDP,  /* drives (mbk_set_drives) */
    A_DGAIN,       /* hydraulic cylinders' input gains (n_tsda x n_inputs), or empty */
    /* planar model rows, joints, coordinates (outputs and assembly) */
    A_IROWS,       /* x 4 per compiled row: kind (R_*), body p, body c, drive index or -1 */
    A_DROWS,       /* x 7 per row: sp(2), sc(2), w0(2), offset */
    A_IJOINT,      /* x 6 per joint: kind (JK_*), parent, child, coordinate position or -1,
                      first row, number of rows */
    A_DJOINT,      /* x 7 per joint: parent point(2), child point(2), angle0, axis(2) */
    A_ICOORD,      /* x 2 per joint coordinate: joint, tree coordinate or -1 */
    A_IDROW,       /* x 1 per drive: its compiled row */
    A_IELEM,       /* x 2 per element (model order): kind (EK_*), row in the kernel's ei */
    A_DELEM,       /* x 1 per element: a cylinder's min length (else 0) */
    A_IMARK,       /* x 1 per marker: body */
    A_DMARK,       /* x 2 per marker: local point */
    /* the initial state's recipe (fmu_mb.mechanics.assembly), planar and spatial */
    A_IPLACE,      /* x 2 per tree joint in placement order: joint, 1 when its parent is placed */
    A_DBODY0,      /* x 6 per body: declared x, y, angle, vx, vy, omega (spatial x 13:
                      position(3), orientation(4), velocity(3), angular velocity(3)) */
    A_IINIT,       /* x 3 per joint coordinate: value, rate, guess given (0/1) */
    A_DINIT,       /* x 3 per joint coordinate: value, rate, guess */
    A_DMINV,       /* 3 nb: the projection metric's inverse weights (inv_mass_diag) */
    A_IQSRC,       /* planar: x 2 per q: (0, joint coordinate) or (1, entry of x) */
    /* spatial kernel (sk_create, sk_set_pose_data); a spatial model also fills A_IJOINT
     * (kind SJ_*, parent, child, first coordinate or -1, first row, rows), A_DJOINT (x 25:
     * sp(3), sc(3), Fp(9), Fc(9) row-major with the axes as columns, length), A_ICOORD
     * (joint, SC_*), A_IELEM (EK_*, row of the kernel's ei; a cylinder's row is a TSDA's of
     * input gain -1), A_DELEM (a cylinder's min length), A_IEND (version 3), A_IMARK, A_DMARK
     * (x 3), A_DMINV (7 nb); its rows: the joints', then the drives' (A_ISDI below), then the
     * couplers' (A_ISCP), then the nb Euler-parameter normalisations */
    A_ISRI, A_DSRD, A_DSMASS, A_DSJ, A_ISEI, A_DSED, A_ISCI, A_DSCD, A_DSRQ,
    /* contacts (version 2; planar: the event loop of kernel.c's events.c; version 3: spatial,
     * spatial_kernel.c's spatial_events.c), H_NCON of them */
    A_ICON,        /* x 3 per contact: its gap row's kind (R_ANG, R_PRJ, R_DST, R_PAIR), p,
                      c (spatial: sk_set_contacts' kind 1 point-plane, 2 point-point, 3 revolute limit,
                      4 prismatic limit, p, c) */
    A_DCON,        /* x 8 per contact: sp(2), sc(2), w0(2), offset, side (gap = side (value -
                      offset)), as kernel.contact_rows (spatial x 29: s_p(3), s_c(3), F_p(9),
                      F_c(9), normal(3) in p's axes, offset, side, as
                      spatial_kernel._contacts) */
    A_DREST,       /* x 1 per contact: Newton's restitution coefficient e */
    A_DCSET,       /* 3: contact_tol [m or rad], contact_velocity [m/s or rad/s], event_tol [s]
                      (planar models, with or without contacts; spatial ones with contacts
                      or joint friction; empty in spatial ones without either) */
    A_IEND,        /* x 2 per element: the contacts of a cylinder's lower and upper end stop
                      (-1: none; E.end_stops counts their impacts) */
    /* spatial drives (version 3), H_ND of them: the spatial kernel's sk_set_drives arrays
     * and, per drive, its joint and its compiled row (joint rows, then the drives' rows, then
     * the Euler-parameter normalisations) */
    A_ISDI,        /* x 6 per drive: kind (1 revolute, 2 prismatic), parent, child, law (1
                      polynomial, 2 harmonic), offset and count of its numbers in A_DSDP */
    A_DSDD,        /* x 24 per drive: sp(3), sc(3), Fp(9), Fc(9) of its joint */
    A_DSDP,        /* the laws' numbers */
    A_ISDJ,        /* x 2 per drive: joint, compiled row */
    /* armature (spatial): empty, or x 1 per tree row, the reflected rotor inertia of its
     * revolute or prismatic joint (sk_set_armature) */
    A_DSARM,
    /* couplers (spatial), H_NCP of them: the spatial kernel's sk_set_couplers arrays and, per
     * coupler, its joints and its compiled row (after the drives' rows) */
    A_ISCP,        /* x 6 per coupler: kind (1 revolute, 2 prismatic), parent, child of its
                      joint, then of its master joint */
    A_DSCP,        /* x 50 per coupler: both joints' sp(3), sc(3), Fp(9), Fc(9), ratio, offset */
    A_ISCJ,        /* x 3 per coupler: joint, master joint, compiled row */
    /* planar contacts' Coulomb friction: empty (every contact frictionless), or x 1 per
     * contact, its mu (> 0 only at point-line contacts and shape pairs; native/events.c) */
    A_DCMU,
    /* planar shape pairs: empty, or x 19 per shape-pair record (kernel.c mbk_set_pairs,
     * fmu_mb.engine.kernel.pair_data: kind codes of shapes a and b, feature id, sizes (2
     * each), shape a's rotation (2 x 2 row-major) and position in its body's axes, the same
     * of b); a contact of kind R_PAIR holds its record's index in A_DCON's first slot */
    A_DPAIR,
    /* joints' Coulomb friction (fmu_mb.dynamics.friction): empty (no joint has any), or x 1
     * per joint (model order), its bound F_c [N.m or N] on the coordinate (> 0 only at
     * revolute and prismatic joints; 0: frictionless) */
    A_DJFRIC,
    /* planar contacts with friction somewhere (A_DCMU given): empty, or x 1 per contact, 1 at
     * a point-line contact (an R_PRJ row with a contact point, not a joint limit), else 0:
     * its slip velocity is an output, frictionless too (native/events.c
     * mbk_events_set_points) */
    A_ICPT,
    /* joints' Coulomb friction and contacts: empty (no joint has friction), or x 1 per
     * contact, the frictional joint (model order) whose limit it is, else -1 (a joint held by
     * a persistent limit has no friction row) */
    A_IJLIM,
    /* spatial joints' Coulomb friction: empty (no joint has friction, or a planar model), or
     * x 1 per joint (model order), its tree row (the row of A_ISRI whose coordinate is the
     * joint's), -1 when it has none (a cut joint); the friction's rate row takes the joint's
     * points and frames from A_DJOINT, and its events the settings of A_DCSET (given with
     * joint friction, contacts or not) */
    A_ISJF,
    MBE_N_ARRAYS
};

/* A_IHEAD */
enum {
    H_KIND = 0,    /* 0 planar, 1 spatial */
    H_NB, H_N, H_NJ, H_NROWS, H_NCJ, H_NE, H_M, H_ND, H_NEL, H_NMARK, H_NI, H_NOUT, H_NP,
    H_NPLACE, H_NV, H_NC, H_NCON, H_NCP,
    H_SIZE
};

enum { R_PX = 0, R_PY = 1, R_ANG = 2, R_PRJ = 3, R_DST = 4, R_DANG = 5, R_DPRJ = 6,
       R_PAIR = 7 };     /* R_PAIR: contacts only (a shape pair's feature, A_DPAIR) */
enum { JK_REV = 0, JK_PRI = 1, JK_WELD = 2, JK_DST = 3 };
enum { EK_TSDA = 0, EK_RSDA = 1, EK_CYL = 2, EK_FORCE = 3, EK_TORQUE = 4, EK_BUSH = 5 };
enum { SJ_SPH = 0, SJ_REV = 1, SJ_UNI = 2, SJ_CYL = 3, SJ_PRI = 4, SJ_WELD = 5, SJ_DST = 6 };
enum { SC_REV = 0, SC_PRI = 1, SC_UNI1 = 2, SC_UNI2 = 3 };

#endif
