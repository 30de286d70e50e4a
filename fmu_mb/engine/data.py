"""A Model compiled into the engine's model data (the blob of native/engine.h, layout in
native/engine_data.h): what the kernels take (the very arrays fmu_mb.engine.kernel and
spatial_kernel pass to mbk_create / sk_create and their set_* calls), the model's constraint
rows, joints, elements and markers for the outputs (fmu_mb.dynamics.outputs.output_spec order),
the recipe of the initial state (the inputs of the assembly: declared body poses, the initial
values, rates and guesses of the joint coordinates, the tree placement order; the loops are
closed by Newton in C, in mbe_initialize), and the parameter table.

Every number goes to ONE array of doubles (`EngineData.doubles`), every integer to one array
of ints, so that the parameter program (fmu_mb.engine.params, native/params.h) can patch double
slots; the layout of `.doubles` depends on the model's structure only (counts of bodies,
joints, elements...), not on the values of its non-structural parameters.
"""
import math
import struct

import numpy as np

from ..errors import InputError
from ..mechanics.assembly import placement_seeds

MAGIC = 0x424d4d46          # "FMMB" (native/engine.h MBE_DATA_MAGIC)
VERSION = 3                 # 2: contacts, 3: spatial contacts, drives and cylinders

#: the arrays of the data, in the order of native/engine_data.h's A_* enum ("I": ints,
#: "D": doubles)
ARRAYS = ("IHEAD", "DGRAV", "DT0", "DPARAM", "IPARAM",
          "IJI", "DJD", "IEI", "DED", "DMASS", "DINERTIA", "IRI", "DRD", "IDI", "DDP", "DGAIN",
          "IROWS", "DROWS", "IJOINT", "DJOINT", "ICOORD", "IDROW", "IELEM", "DELEM", "IMARK",
          "DMARK",
          "IPLACE", "DBODY0", "IINIT", "DINIT", "DMINV", "IQSRC",
          "ISRI", "DSRD", "DSMASS", "DSJ", "ISEI", "DSED", "ISCI", "DSCD", "DSRQ",
          "ICON", "DCON", "DREST", "DCSET", "IEND",
          "ISDI", "DSDD", "DSDP", "ISDJ", "DSARM", "ISCP", "DSCP", "ISCJ",
          "DCMU", "DPAIR", "DJFRIC", "ICPT", "IJLIM", "ISJF")
HEAD = ("KIND", "NB", "N", "NJ", "NROWS", "NCJ", "NE", "M", "ND", "NEL", "NMARK", "NI", "NOUT",
        "NP", "NPLACE", "NV", "NC", "NCON", "NCP")

#: contact_tol [m or rad], contact_velocity [m/s or rad/s], event_tol [s]: the defaults of
#: fmu_mb.dynamics.integrate.Settings, which the Python FMU runs with (the engine layer does
#: not import the dynamics layer; tests/test_engine.py holds them equal)
EVENT_SETTINGS = (1e-9, 1e-3, 1e-15)

_R = {"px": 0, "py": 1, "ang": 2, "prj": 3, "dst": 4, "dang": 5, "dprj": 6}
_JK = {"revolute": 0, "prismatic": 1, "weld": 2, "distance": 3}
_EK = {"tsda": 0, "rsda": 1, "cylinder": 2, "force": 3, "torque": 4, "bushing": 5}
_SJK = {"spherical": 0, "revolute": 1, "universal": 2, "cylindrical": 3, "prismatic": 4,
        "weld": 5, "distance": 6}
_SCK = {"revolute": 0, "prismatic": 1, "universal1": 2, "universal2": 3}


class EngineData:
    """The model data of one Model: `ints` (int32) and `doubles` (float64) arrays, the
    parameter names, and `slots`: {array name: (offset, count)} in its array."""

    def __init__(self, ints, doubles, slots, names, joint_names=()):
        self.ints = np.ascontiguousarray(ints, dtype=np.int32)
        self.doubles = np.ascontiguousarray(doubles, dtype=np.float64)
        self.slots = slots
        self.parameter_names = tuple(names)
        self.joint_names = tuple(joint_names)

    def array(self, name):
        """The named array (a view of ints or doubles)."""
        off, cnt = self.slots[name]
        return (self.ints if name[0] == "I" else self.doubles)[off:off + cnt]

    def derived(self):
        """(slots, derive): the double slots the engine derives itself after the parameter
        program has run (mbe_set_parameters: derive_metric), and derive(doubles) -> a copy
        with them derived, the Python twin (same operations). The parameter program does
        not compute these slots; its verification runs derive over the program's result."""
        off, cnt = self.slots["DMINV"]
        return np.arange(off, off + cnt), lambda d: derive_metric(self, d)

    def to_bytes(self, program=None, doubles=None):
        """The blob of native/engine.h. program: the compiled parameter program (an object
        with `code` (ints) and `consts` (doubles), or a pair (code, consts)); None: none, the
        engine then takes the default parameter values only. doubles: another array of the
        same layout instead of self.doubles."""
        d = self.doubles if doubles is None else np.ascontiguousarray(doubles, np.float64)
        if d.shape != self.doubles.shape:
            raise InputError(f"engine data: expected {self.doubles.shape[0]} doubles, "
                             f"received {d.shape}")
        if program is None:
            code, consts = np.zeros(0, np.int32), np.zeros(0)
        else:
            code, consts = (program if isinstance(program, tuple)
                            else (program.code, program.consts))
            code = np.ascontiguousarray(code, dtype=np.int32).reshape(-1)
            consts = np.ascontiguousarray(consts, dtype=np.float64).reshape(-1)
        chars = b"".join(n.encode("utf-8") + b"\0"
                         for n in self.parameter_names + self.joint_names)
        head = struct.pack("<8I", MAGIC, VERSION, len(self.ints), len(d), len(code),
                           len(consts), len(chars), 0)

        def pad(b):
            return b + b"\0" * (-len(b) % 8)

        return (head + pad(self.ints.astype("<i4").tobytes()) + d.astype("<f8").tobytes()
                + pad(code.astype("<i4").tobytes()) + consts.astype("<f8").tobytes() + chars)


def joint_friction_unsupported(model):
    """The reason why the engine library (the native FMU) does not run a model's joint
    friction, or None: it runs the frictional tree joints of planar models (the event loop
    of native/events.c) and those of spatial models (native/spatial_events.c, on the
    coordinates of their tree rows). A frictional cut joint of a closed loop and the
    combinations the Python reference refuses (friction with armature, a driven frictional
    joint) stay out, named."""
    fr = [j.name for j in model.joints if getattr(j, "friction", 0.0) > 0.0]
    if not fr:
        return None
    driven = [d.joint for d in model.drives if d.joint in fr]
    if driven:
        return (f"its joints {driven} have Coulomb friction and a drive, which no "
                f"formulation runs (give friction=0 on driven joints)")
    if model.spatial:
        from ..mechanics.spatial import tree as st

        arm = [j.name for j in model.joints if getattr(j, "armature", 0.0)]
        if arm:
            return (f"its joints {fr} have Coulomb friction and joints {arm} armature, "
                    f"which no formulation runs together")
        tm = st.tree_map(model)
        tj = list(tm.joints)
        cut = [nm for nm in fr if model.joints.index(model.joint(nm)) not in tj]
        if cut:
            return (f"its joints {cut} have Coulomb friction and are cut joints of a closed "
                    f"loop (no tree coordinate), which the compiled event loop does not run")
        return None
    from ..mechanics.tree import tree_map

    tm = tree_map(model)
    cut = [j.name for k, j in enumerate(model.joints) if j.name in fr and k not in tm.joints]
    if cut:
        return (f"its joints {cut} have Coulomb friction and are cut joints of a closed loop "
                f"(no tree coordinate), which the compiled event loop does not run")
    return None


def supported(model):
    """None when the engine library runs `model`, else the reason why not (a sentence)."""
    why = joint_friction_unsupported(model)
    if why is not None:
        return why
    if getattr(model, "contacts", None):
        red = [c.name for c in model.contacts if c.method == "reduction"]
        if red:
            return (f"its contacts {red} use the Reduction Method (seed 002), whose passes "
                    f"run in Python only")
    if model.spatial:
        from .spatial_kernel import supported as spatial_supported

        return spatial_supported(model, contacts=True)    # (contacts: spatial_events.c)
    from .kernel import supported as planar_supported

    why = planar_supported(model)
    if why is None and any(e.kind not in _EK for e in model.elements):
        why = f"its elements {[e.name for e in model.elements if e.kind not in _EK]}"
    return why


def derive_metric(data, doubles):
    """A copy of `doubles` (data's layout) whose DMINV (the projection metric's inverse
    weights) is derived from its masses and inertias by the builder's rule
    (mechanics/builder.py _compile, mechanics/spatial/compiled.py compile_spatial): the
    weights are the masses (and 4 x the largest |eigenvalue| of a spatial body's inertia for
    its Euler parameters), a zero one replaced by 1e-6 x the largest mass. The Python twin of
    engine.c's derive_metric: the same floating-point operations, so the same bits."""
    d = np.array(doubles, dtype=float)
    kind = int(data.array("IHEAD")[HEAD.index("KIND")])
    nb = int(data.array("IHEAD")[HEAD.index("NB")])
    off, cnt = data.slots["DMINV"]
    if nb == 0:
        return d

    def at(name):
        o, c = data.slots[name]
        return [float(v) for v in d[o:o + c]]

    w = []
    if kind == 0:
        m, inertia = at("DMASS"), at("DINERTIA")
        mx = m[0]
        for b in range(nb):
            for v in (m[b], m[b], inertia[b]):
                if v > mx:
                    mx = v
        small = 1e-6 * (mx if mx >= 1e-300 else 1e-300)
        for b in range(nb):
            w += [m[b] if m[b] > 0 else small] * 2 + [inertia[b] if inertia[b] > 0 else small]
    else:
        from ..mechanics.spatial.inertia import max_abs_eigenvalue

        m, J = at("DSMASS"), at("DSJ")
        big = 0.0
        for v in m:
            if v > big:
                big = v
        small = 1e-6 * (big if big >= 1e-300 else 1e-300)
        for b in range(nb):
            jmax = max_abs_eigenvalue([J[9 * b:9 * b + 3], J[9 * b + 3:9 * b + 6],
                                       J[9 * b + 6:9 * b + 9]])
            wr = m[b] if m[b] > 0 else small
            wp = 4.0 * jmax if jmax > 0 else small
            w += [wr] * 3 + [wp] * 4
    if len(w) != cnt:
        raise InputError(f"engine data: DMINV holds {cnt} numbers, the bodies give {len(w)}")
    d[off:off + cnt] = [1.0 / x for x in w]
    return d


def model_data(model):
    """The EngineData of `model` (InputError when the engine cannot run it)."""
    why = supported(model)
    if why is not None:
        raise InputError(f"model '{model.name}': the compiled engine cannot run it: {why}")
    arrays = {}
    head = dict.fromkeys(HEAD, 0)
    head["NI"] = len(model.inputs)
    head["NOUT"] = n_outputs(model)
    arrays["DGRAV"] = np.asarray(model.gravity, float)
    arrays["DT0"] = [float(model.t0)]
    _parameters(model, arrays, head)
    if model.spatial:
        head["KIND"] = 1
        _spatial(model, arrays, head)
        _spatial_contacts(model, arrays, head)
    else:
        _planar(model, arrays, head)
        _contacts(model, arrays, head)
    _joint_friction(model, arrays)
    arrays["IHEAD"] = [head[k] for k in HEAD]
    return _pack(arrays, [p.name for p in model.parameters], [j.name for j in model.joints])


def n_outputs(model):
    """The number of outputs of fmu_mb.dynamics.outputs.output_spec(model) (the engine
    layer does not import the dynamics layer; tests/test_engine.py holds them equal)."""
    nb = len(model.bodies)
    per = {"tsda": 2, "rsda": 2, "cylinder": 8 if model.spatial else 7, "force": 1,
           "torque": 1, "bushing": 6}
    contacts = getattr(model, "contacts", ()) or ()
    friction = any(c.friction > 0.0 for c in contacts)     # + state, slip, loss, ft (1 or 2)
    count = (len(model.drives) + sum(per[e.kind] for e in model.elements) + 5
             + ((13 if model.spatial else 11) if friction else 7) * len(contacts)
             + 3 * sum(1 for j in model.joints if getattr(j, "friction", 0.0) > 0.0))
    if model.spatial:
        coord = {"revolute": 2, "prismatic": 2, "cylindrical": 4, "universal": 4}
        count += 16 * nb + 6 * len(model.markers)
        for j in model.joints:
            count += coord.get(j.kind, 0) + (1 if j.kind == "distance" else 6)
        return count
    count += 6 * nb + 4 * len(model.markers)
    for j in model.joints:
        count += ((2 if j.kind in ("revolute", "prismatic") else 0)
                  + (1 if j.kind == "distance" else 2)
                  + (1 if j.kind in ("weld", "prismatic") else 0))
    return count


def _pack(arrays, names, joint_names):
    ints, doubles, slots = [len(ARRAYS)] + [0] * (2 * len(ARRAYS)), [], {}
    for a, name in enumerate(ARRAYS):
        v = np.asarray(arrays.get(name, []), dtype=np.int64 if name[0] == "I" else float)
        v = v.reshape(-1)
        dest = ints if name[0] == "I" else doubles
        slots[name] = (len(dest), len(v))
        ints[1 + 2 * a], ints[2 + 2 * a] = len(dest), len(v)
        dest.extend(v.tolist())
    if max((abs(i) for i in ints), default=0) >= 2 ** 31:
        raise InputError("engine data: an index does not fit in 32 bits")
    return EngineData(ints, doubles, slots, names, joint_names)


def _parameters(model, arrays, head):
    dp, ip = [], []
    for p in model.parameters:
        numeric = isinstance(p.value, (int, float)) and not isinstance(p.value, bool)
        value = float(p.value) if numeric else 0.0
        lo = -math.inf if p.min is None else float(p.min)
        hi = math.inf if p.max is None else float(p.max)
        dp += [value, lo, hi]
        ip.append(int(bool(p.structural) or not numeric or p.choices is not None))
    arrays["DPARAM"], arrays["IPARAM"] = dp, ip
    head["NP"] = len(model.parameters)


def _planar(model, arrays, head):
    from .kernel import drive_data, loop_rows, tree_arrays
    from ..mechanics.tree import tree_map

    C = model.compiled
    tm = tree_map(model)
    nb = len(model.bodies)
    k = tree_arrays(model)
    arrays.update(IJI=k["ji"], DJD=k["jd"], IEI=k["ei"], DED=k["ed"], DMASS=k["mass"],
                  DINERTIA=k["inertia"])
    ri, rd = loop_rows(model)
    di, dp, _ = drive_data(model)
    arrays.update(IRI=ri, DRD=rd, IDI=di, DDP=dp)
    if C.tsda_gain is not None:
        arrays["DGAIN"] = np.asarray(C.tsda_gain, float)
    head.update(NB=nb, N=tm.n, NE=len(k["ei"]), M=len(ri), ND=len(di))

    # the compiled rows (constraints.evaluate)
    nrows = C.n_rows
    irows, drows = [None] * nrows, [None] * nrows

    def put(row, kind, ps, i, w0=(0.0, 0.0), off=0.0, drive=-1):
        irows[int(row)] = [_R[kind], int(ps.p[i]), int(ps.c[i]), drive]
        drows[int(row)] = [*ps.sp[i], *ps.sc[i], *w0, float(off)]

    for i, rows in enumerate(C.pd_rows):
        put(rows[0], "px", C.pd, i)
        put(rows[1], "py", C.pd, i)
    for i, row in enumerate(C.ang_rows):
        put(row, "ang", C.ang, i, off=C.ang_offset[i])
    for i, row in enumerate(C.prj_rows):
        put(row, "prj", C.prj, i, w0=C.prj_w0[i])
    for i, row in enumerate(C.dst_rows):
        put(row, "dst", C.dst, i, off=C.dst_length[i])
    for d, (row, kind, ps, extra, _) in enumerate(C.drives):
        if kind == "angle":
            put(row, "dang", ps, 0, off=float(extra), drive=d)
        else:
            put(row, "dprj", ps, 0, w0=np.asarray(extra, float).reshape(-1)[:2], drive=d)
    if any(r is None for r in irows):
        raise InputError(f"model '{model.name}': the engine data miss constraint rows")
    arrays.update(IROWS=irows, DROWS=drows, IDROW=[int(r) for r, *_ in C.drives])

    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = nb
    cpos = {kk: i for i, kk in enumerate(C.coord_joints)}
    ij, dj = [], []
    for kk, (j, rows) in enumerate(zip(model.joints, C.joint_rows)):
        rows = [int(r) for r in rows]
        if rows != list(range(rows[0], rows[0] + len(rows))):
            raise InputError(f"model '{model.name}': joint '{j.name}' has non-contiguous rows")
        ij.append([_JK[j.kind], idx[j.parent], idx[j.child], cpos.get(kk, -1), rows[0],
                   len(rows)])
        dj.append([*j.parent_point, *j.child_point, float(j.angle0), *j.axis])
    arrays.update(IJOINT=ij, DJOINT=dj)
    qpos = {kk: i for i, kk in enumerate(tm.joints)}
    arrays["ICOORD"] = [[kk, qpos.get(kk, -1)] for kk in C.coord_joints]

    ie, de = [], []
    tsda_row = {}
    for r, e in enumerate(x for x in model.elements if x.kind in ("tsda", "cylinder")):
        tsda_row[e.name] = r
    n_tsda, n_rsda = len(tsda_row), len(C.rsda)
    order = {"rsda": iter(range(n_tsda, n_tsda + n_rsda)),
             "force": iter(range(n_tsda + n_rsda, n_tsda + n_rsda + len(C.frc_body))),
             "torque": iter(range(n_tsda + n_rsda + len(C.frc_body), len(k["ei"])))}
    for e in model.elements:
        row = tsda_row[e.name] if e.kind in ("tsda", "cylinder") else next(order[e.kind])
        ie.append([_EK[e.kind], row])
        de.append(float(e.free_value) if e.kind == "cylinder" else 0.0)
    arrays.update(IELEM=ie, DELEM=de)
    arrays.update(IMARK=[int(b) for b in C.markers.p], DMARK=np.asarray(C.markers.sp, float))

    # the initial state's recipe (fmu_mb.mechanics.assembly.assemble)
    arrays["IPLACE"] = place = _placement(model, idx)
    arrays["DBODY0"] = [[*b.position, float(b.angle), *b.velocity, float(b.angular_velocity)]
                        for b in model.bodies]
    arrays.update(_initial_conditions(model, C.coord_joints, place))
    arrays["DMINV"] = np.asarray(C.inv_mass_diag, float)
    arrays["IQSRC"] = ([[0, cpos[kk]] for kk in tm.joints]
                       + [[1, 3 * b + c] for b in tm.free for c in range(3)])
    head.update(NJ=len(model.joints), NROWS=nrows, NCJ=len(C.coord_joints),
                NEL=len(model.elements), NMARK=len(C.markers.p), NPLACE=len(place))


def _contacts(model, arrays, head):
    """The contacts of a planar model (the event loop of native/events.c): their gap rows in
    the kernel's row format (kernel.contact_rows; a shape pair's row holds the index of its
    record in DPAIR, kernel.pair_data), Newton's restitution coefficients e, Coulomb's mu
    (DCMU, at point-line contacts and shape pairs; with it ICPT, 1 at the point-line contacts:
    their slip is an output, frictionless too), the
    event settings (Settings' contact_tol, contact_velocity, event_tol: the Python FMU's
    defaults) and, per element, the contacts of a cylinder's lower and upper end stop
    (contacts named '<cylinder>_lower' and '<cylinder>_upper'; -1: none)."""
    from .kernel import contact_friction, contact_points, contact_rows, pair_data

    nc = len(model.contacts)
    arrays["DCSET"] = list(EVENT_SETTINGS)
    names = {c.name: i for i, c in enumerate(model.contacts)}
    arrays["IEND"] = [[names.get(f"{e.name}_{end}", -1) if e.kind == "cylinder" else -1
                       for end in ("lower", "upper")] for e in model.elements]
    head["NCON"] = nc
    if not nc:
        return
    ci, cd = contact_rows(model, tuple(range(nc)))
    arrays.update(ICON=ci, DCON=cd,
                  DREST=np.asarray(model.compiled.contacts.restitution, float).reshape(-1))
    mu = contact_friction(model)
    if mu.any():
        arrays["DCMU"] = mu
        arrays["ICPT"] = contact_points(model)
    pd = pair_data(model)
    if pd is not None:                   # shape pairs: the records of their R_PAIR rows
        arrays["DPAIR"] = pd


def _joint_friction(model, arrays):
    """DJFRIC: per joint (model order) its Coulomb friction bound [N.m or N], when a joint
    has one (else empty); with it IJLIM (per contact the frictional joint it limits) and, in
    a spatial model, ISJF (per joint its tree row, -1 for a cut joint) and the event settings
    DCSET (the joints' stick/slip events read them, contacts or not)."""
    bound = [float(getattr(j, "friction", 0.0)) for j in model.joints]
    if any(b > 0.0 for b in bound):
        arrays["DJFRIC"] = bound
        # IJLIM: per contact the frictional joint (model order) whose limit it is, else -1
        jidx = {j.name: k for k, j in enumerate(model.joints)}
        arrays["IJLIM"] = [jidx[c.joint] if c.kind == "joint_limit" and
                           bound[jidx[c.joint]] > 0.0 else -1
                           for c in getattr(model, "contacts", ()) or ()]
        if model.spatial:
            from ..mechanics.spatial import tree as st

            tj = list(st.tree_map(model).joints)
            arrays["ISJF"] = [tj.index(k) if k in tj else -1 for k in range(len(bound))]
            arrays["DCSET"] = list(EVENT_SETTINGS)


def _spatial_contacts(model, arrays, head):
    """The contacts of a spatial model (the event loop of native/spatial_events.c): the
    spatial kernel's contact arrays (spatial_kernel._contacts: kind, bodies; points, frames,
    normal, offset, side), Newton's restitution coefficients e and the event settings."""
    from .spatial_kernel import _contacts as spatial_contact_arrays

    nc = len(getattr(model, "contacts", ()) or ())
    head["NCON"] = nc
    if not nc:
        return
    ki, kd = spatial_contact_arrays(model)
    arrays.update(ICON=ki, DCON=kd, DCSET=list(EVENT_SETTINGS),
                  DREST=np.asarray(model.compiled.contacts.restitution, float).reshape(-1))


def _spatial(model, arrays, head):
    from . import spatial_kernel as sk
    from ..mechanics.spatial import tree as st

    C = model.compiled
    tm = st.tree_map(model)
    nb, n = tm.nb, tm.n
    ri, rd, nv = sk._tree_rows(model, tm)
    ei, ed = sk._elements(model)
    ci, cd = sk._cut_joints(model)
    rq = np.array([np.concatenate([row[6], row[7], [row[10]]]) for row in tm.rows],
                  float).reshape(-1, 9)
    arm = sk.row_armature(model, tm)
    if arm.any():
        arrays["DSARM"] = arm
    arrays.update(ISRI=ri, DSRD=rd, DSMASS=np.asarray(C.mass, float),
                  DSJ=np.asarray(C.inertia, float).reshape(-1, 9), ISEI=ei, DSED=ed, ISCI=ci,
                  DSCD=cd, DSRQ=rq)
    idx = {b.name: b.index for b in model.bodies}
    idx["ground"] = nb
    cfirst = {}
    for pos, kk in enumerate(C.coord_joints):
        cfirst.setdefault(kk, pos)
    ij, dj = [], []
    for kk, (j, rows) in enumerate(zip(model.joints, C.joint_rows)):
        rows = [int(r) for r in rows]
        if rows != list(range(rows[0], rows[0] + len(rows))):
            raise InputError(f"model '{model.name}': joint '{j.name}' has non-contiguous rows")
        ij.append([_SJK[j.kind], idx[j.parent], idx[j.child], cfirst.get(kk, -1), rows[0],
                   len(rows)])
        dj.append([*j.parent_point, *j.child_point,
                   *np.asarray(j.frame_p, float).reshape(-1),
                   *np.asarray(j.frame_c, float).reshape(-1), float(j.length or 0.0)])
    arrays.update(IJOINT=ij, DJOINT=dj)
    ckind = [None] * len(C.coord_joints)
    for g in C.coord_groups:
        for pos in g.rows[:, 0]:
            ckind[int(pos)] = _SCK[g.kind]
    arrays["ICOORD"] = [[kk, ckind[i]] for i, kk in enumerate(C.coord_joints)]
    if list(C.norm_rows) != list(range(C.n_rows - nb, C.n_rows)):
        raise InputError(f"model '{model.name}': the normalisation rows are not the last rows")
    # model.elements -> (kind, row of the kernel's element arrays)
    order = ([g for g in (C.tsda.names, C.rsda.names, C.bushing.names)]
             + [C.frc_names, C.trq_names])
    row = {name: i for i, name in enumerate(x for names in order for x in names)}
    arrays["IELEM"] = [[_EK[e.kind], row[e.name]] for e in model.elements]
    arrays["DELEM"] = [float(e.free_value) if e.kind == "cylinder" else 0.0
                       for e in model.elements]
    _spatial_drives(model, arrays, head)
    _spatial_couplers(model, arrays, head)
    arrays.update(IMARK=[int(b) for b in C.markers.p],
                  DMARK=np.asarray(C.marker_points, float).reshape(-1, 3),
                  DMINV=np.asarray(C.inv_mass_diag, float))
    # the initial state's recipe (fmu_mb.mechanics.assembly.assemble, spatial): the declared
    # body poses and velocities, the tree placement order, the initial values, rates and
    # guesses; mbe_initialize assembles in C.
    arrays["IPLACE"] = _placement(model, idx)
    arrays["DBODY0"] = [[*b.position, *b.orientation, *b.velocity, *b.angular_velocity]
                        for b in model.bodies]
    arrays.update(_initial_conditions(model, C.coord_joints))
    head.update(NB=nb, N=n, NV=nv, NE=len(ei), NC=len(ci), NJ=len(model.joints),
                NROWS=C.n_rows, NCJ=len(C.coord_joints), NEL=len(model.elements),
                NMARK=len(C.markers.p), NPLACE=len(arrays["IPLACE"]))


def _spatial_drives(model, arrays, head):
    """The drives of a spatial model (version 3): the spatial kernel's sk_set_drives arrays
    (spatial_kernel._drives: ISDI kind, parent, child, law, offset, count; DSDD the joint's
    points and frames; DSDP the laws' numbers), and ISDJ per drive its joint and its
    compiled row (the outputs' multiplier row, joint rows < drive rows < normalisations).
    Per cylinder element, IEND: its end stops' contacts (model.contacts '<name>_lower',
    '<name>_upper'; -1: none)."""
    from . import spatial_kernel as sk

    names = {c.name: i for i, c in enumerate(getattr(model, "contacts", ()) or ())}
    arrays["IEND"] = [[names.get(f"{e.name}_{end}", -1) if e.kind == "cylinder" else -1
                       for end in ("lower", "upper")] for e in model.elements]
    head["ND"] = nd = len(model.drives)
    if not nd:
        return
    di, dd, dp = sk._drives(model)
    jpos = {j.name: k for k, j in enumerate(model.joints)}
    arrays.update(ISDI=di, DSDD=dd, DSDP=dp,
                  ISDJ=[[jpos[d.joint], int(row)]
                        for d, (row, *_) in zip(model.drives, model.compiled.drives)])


def _spatial_couplers(model, arrays, head):
    """The couplers of a spatial model: the spatial kernel's sk_set_couplers arrays
    (spatial_kernel._couplers: ISCP kinds, parents, children; DSCP points, frames, ratio,
    offset) and ISCJ per coupler its joint, its master joint and its compiled row."""
    from . import spatial_kernel as sk

    couplers = getattr(model, "couplers", ())
    head["NCP"] = len(couplers)
    if not couplers:
        return
    ci, cd = sk._couplers(model)
    jpos = {j.name: k for k, j in enumerate(model.joints)}
    arrays.update(ISCP=ci, DSCP=cd,
                  ISCJ=[[jpos[c.joint], jpos[c.master], int(row)]
                        for c, (row, *_) in zip(couplers, model.compiled.couplers)])


def _placement(model, idx):
    """[joint index, 1 when its parent is placed] of the tree joints in the order the
    assembly places them (the builder's breadth-first spanning tree)."""
    placed, place = {"ground"}, []
    jpos = {j.name: k for k, j in enumerate(model.joints)}
    for name in model.topology.tree_joints:
        j = model.joint(name)
        if j.parent in placed:
            side = 1
        elif j.child in placed:
            side = 0
        else:      # the first joint of a floating subtree: its root is the first body
            side = 1 if idx[j.parent] < idx[j.child] else 0
        placed.update((j.parent, j.child))
        place.append([jpos[name], side])
    return place


def _initial_conditions(model, coord_joints, place=None):
    """IINIT (value, rate, guess given) and DINIT (their values) per joint coordinate. The
    guess column of a planar tree joint whose coordinate the placement takes from a declared
    body pose holds its seed code instead (assembly.placement_seeds: 2, 3, or 4 with the cut
    joint's index in DINIT's guess column)."""
    given = {ic.joint: ic for ic in model.initial}
    seeds = {}
    if place is not None:
        tree = [(model.joints[k].name, model.joints[k].parent if side else model.joints[k].child)
                for k, side in place]
        seeds = placement_seeds(model, tree)
    ii, dd = [], []
    for kk in coord_joints:
        name = model.joints[kk].name
        ic = given.get(name)
        vals = (None, None, None) if ic is None else (ic.value, ic.rate, ic.guess)
        ii.append([int(v is not None) for v in vals])
        dd.append([0.0 if v is None else float(v) for v in vals])
        if name in seeds:
            ii[-1][2], k = seeds[name]
            dd[-1][2] = float(max(k, 0))        # SEED_AIM: the cut joint's index
    return {"IINIT": ii, "DINIT": dd}
