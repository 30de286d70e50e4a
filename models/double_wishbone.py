"""Double-wishbone suspension, one corner (seed 001, ch. 3.1): upper and lower wishbone,
wheel carrier, tie (toe) rod and seed 001's steering rack, with a coil-over spring-damper, a
tyre spring to the road and a rack spring; the chassis is the ground.

Geometry and masses: the rear double-wishbone corner of the BMW E90 (3 series, 2005-2011) in
Project Chrono's vehicle model library, src/chrono_models/vehicle/bmw/BMW_E90_DoubleWishbone.cpp
(parameters there "taken from SAE Paper 2007-01-0818"; Chrono models the E90's rear axle as a
double A-arm "replacement for multilink"): hardpoints SPINDLE, UPRIGHT, UCA_F/B/U/CM,
LCA_F/B/U/CM, SPRING_C/A, TIEROD_C/U in metres, masses of the upper arm (5.813 kg), lower arm
(23.965 kg), upright (19.450 kg), spindle (14.705 kg) and tie rod (6.0 kg), spring k = 37130
N/m, damper c = 5810.4 N.s/m; wheel from BMW_E90_RearWheel.cpp (15.4 kg, moments 0.673602,
1.180307, 0.673602 kg.m2) and tyre from BMW_E90_TMeasyTireRear.cpp (37.6 kg, moments 3.84, 6.69,
3.84 kg.m2, unloaded radius 0.31785 m, vertical stiffness 357859.23 N/m). Chrono's tyre mass
and inertia equal its HMMWV tyre's (37.6 kg is heavy for a 255-wide car tyre); they are kept
as published. Frame (Chrono's suspension frame): x forward, y to the left, z up, origin midway
between the lower arm's chassis pivots; the hardpoints are Chrono's, given for the left corner;
gravity 9.81 m/s2 along -z.

Derived, not in Chrono: the moments of inertia Chrono marks "TODO: Fix these values" are used
as given except the arms' z moments (0.06276 and 0.8938 kg.m2 exceed Ixx + Iyy, which no rigid
body can have): they are taken as Ixx + Iyy (a flat plate), 0.06 and 0.8; the wheel load
F0 = WHEEL_LOAD is the static rear-corner load from Chrono's E90 chassis (BMW_E90_Chassis.cpp:
1442.1 kg, centre of mass 1.371 m behind the front axle; rear axle 2.75717 m behind it,
BMW_E90_Vehicle.cpp) plus this corner's unsprung parts: g (1442.1 * 1.371 / 2.75717 / 2 +
122.933) = 4723.2 N. Chrono puts the damper on its own points (SHOCK_C/A); here it acts along
the spring (a coil-over, SPRING_C/A) with Chrono's c. The E90's rear tie (toe) rod ends at the
subframe; here its inner end TIEROD_C sits on seed 001's steering rack (prismatic along y, held
by a stiff spring), which keeps the seed's structure and counts; with the rack held it is a
toe link to the chassis.

Bodies (n_B = 5) and joints (n_G = 7), as in seed 001's double wishbone:
    upper_arm  -- revolute uca_pivot (axis UCA_F-UCA_B) to the chassis
    lower_arm  -- revolute lca_pivot (axis LCA_F-LCA_B) to the chassis
    carrier    -- spherical upper_ball (UCA_U), spherical lower_ball (LCA_U); the wheel carrier
                  is upright + spindle + wheel + tyre as one rigid body (wheel spin not modelled)
    tie_rod    -- spherical outer_tie_rod (TIEROD_U) to the carrier, spherical inner_tie_rod
                  (TIEROD_C) to the rack; a uniform cylinder of radius 0.01 m (Chrono's)
    rack       -- prismatic rack_guide along y to the chassis (seed 001's steering rack,
                  displacement s; mass assumed 5 kg)
Grubler-Kutzbach: f = 6 n_B - sum(6 - f_G) = 30 - (3*5 + 4*3) = 3, the seed's count: spring
compression (angle beta), steering (rack displacement s), and the isolated spin of the tie rod
about its own axis (the seed's "isolated degree of freedom"). The constraint Jacobian has full
rank 27, so the rank-based count is 3 as well; `python -m fmu_mb info` shows both.

Force elements:
    coil_over  -- TSDA chassis SPRING_C to lower arm SPRING_A: k = spring_stiffness (Chrono's
                  37130 N/m), c = damper_damping (Chrono's 5810.4 N.s/m), free length from the
                  static equilibrium below; input coil_over.h (active force, tension positive)
    tyre       -- vertical TSDA from the wheel centre to the contact point r_t below it (the
                  road); k = tyre_stiffness (Chrono's TMeasy vertical stiffness), free length
                  r_t + F0 / k_t; input tyre.h. A road displacement z_r (up) enters as
                  tyre.h = -tyre_stiffness * z_r; the geometric lateral stiffness F0 / r_t
                  stands in for the tyre's lateral stiffness. The spring is bilateral: it pulls
                  the wheel down once the tyre would lift off (tyre.force > 0), which a road
                  drop beyond F0 / k_t (13 mm) makes happen
    steering   -- TSDA chassis to rack along y (toe-link mount, assumed 2e5 N/m, 2e3 N.s/m);
                  input steering.h = rack force (tension positive)
At the design pose the corner carries the static wheel load F0 = wheel_load and is in static
equilibrium: the free lengths of coil_over and steering were found by virtual work on the
mechanism's velocity Jacobian at the design pose (bench/suspension_statics.py prints them;
tests/test_suspensions.py checks the equilibrium). The coil-over then carries 6570 N (Chrono's
spring preload: 7600 N). Changing masses or F0 moves the equilibrium, as on a car.

Bump and rebound stops (parameter stops = "on"; "off" by default, so that the model keeps
running in every formulation and the compiled kernel): two frictionless point-point contacts
on the coil-over's stroke between SPRING_C and SPRING_A, bump_stop (length >= l_s - travel)
and rebound_stop (length <= l_s + travel), with Newton's restitution stop_restitution. The
travel comes from Chrono's E90: BMW_E90_DoubleWishbone.cpp enables the spring's stops at its
rest length -/+ 0.05 m, and that rest length (0.275364585 m) is the design length l_s of
SPRING_C-SPRING_A here. Chrono's stops are elastic (stiffness 2 k); here they are rigid
impacts, their restitution 0.3 an assumption. The stops' outputs: bump_stop.impacts,
.last_time, .last_impulse, .active, .force, .gap (and rebound_stop.*). With stops "on" the
model runs in newton_euler (spatial contacts are not in tmt, lagrange and the compiled kernel
yet).

Output of interest: the marker wheel_centre (SPINDLE) -> wheel_centre.x, .y, .z.
"""
import numpy as np

from fmu_mb import ModelBuilder

DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.005}

HARDPOINTS = {k: tuple(np.array(v, dtype=float)) for k, v in {   # Chrono's, metres
    "SPINDLE": (0.0, 0.7493, 0.0),             # wheel centre
    "UPRIGHT": (0.0, 0.6493, 0.0),             # upright centre of mass
    "UCA_F": (0.14986, 0.4572, 0.0635),
    "UCA_B": (-0.0508, 0.40132, 0.11684),
    "UCA_U": (0.01397, 0.65024, 0.08636),
    "UCA_CM": (0.037676667, 0.50292, 0.0889),
    "LCA_F": (0.22352, 0.41148, -0.07874),
    "LCA_B": (-0.1778, 0.25908, -0.12446),
    "LCA_U": (-0.01778, 0.64389, -0.127),
    "LCA_CM": (0.009313333, 0.43815, -0.110066667),
    "SPRING_C": (-0.12446, 0.44704, 0.09906),
    "SPRING_A": (-0.11176, 0.46736, -0.17526),
    "TIEROD_C": (-0.2235, 0.25781, -0.04064),
    "TIEROD_U": (-0.1524, 0.65786, -0.04572),
}.items()}

# Chrono's values (kg, kg.m2 as principal moments along x, y, z); the wheel's and tyre's y axis
# is the spin axis; the rack's mass is assumed. The arms' z moments are Ixx + Iyy (see above).
MASSES = {"upper_arm": 5.813, "lower_arm": 23.965, "upright": 19.450, "spindle": 14.705,
          "wheel": 15.4, "tyre": 37.6, "tie_rod": 6.0, "rack": 5.0}
INERTIAS = {"upper_arm": (0.03, 0.03, 0.06), "lower_arm": (0.4, 0.4, 0.8),
            "upright": (0.1656, 0.1934, 0.04367), "spindle": (0.04117, 0.07352, 0.04117),
            "wheel": (0.673602, 1.180307, 0.673602), "tyre": (3.84, 6.69, 3.84)}
SPRING_STIFFNESS = 37130.0       # Chrono's m_springConstant [N/m]
DAMPER_DAMPING = 5810.4          # Chrono's m_damperConstant [N.s/m]
TYRE_STIFFNESS = 357859.232809   # Chrono's TMeasy rear tyre, SetVerticalStiffness [N/m]
# static rear-corner load [N]: half the E90 chassis' rear axle share plus the unsprung parts
WHEEL_LOAD = 9.81 * (1442.1 * 1.371 / 2.75717 / 2
                     + sum(MASSES[k] for k in MASSES if k != "rack"))
STEERING_STIFFNESS = 2.0e5       # assumed toe-link mount [N/m]
STEERING_DAMPING = 2.0e3         # assumed [N.s/m]
TIE_ROD_RADIUS = 0.01            # Chrono's m_tierodRadius
TYRE_RADIUS = 0.31785           # Chrono's TMeasy rear tyre, m_unloaded_radius
STOP_TRAVEL = 0.05               # Chrono's E90 spring stops: rest length -/+ 0.05 m
STOP_RESTITUTION = 0.3           # assumed (Chrono's stops are elastic, 2 k)
RACK_SPRING_LENGTH = 0.3         # length of the steering TSDA at the design pose [m]

# The design pose is the static equilibrium (python bench/suspension_statics.py, default
# masses): coil-over compression S0 = SPRING_PRELOAD_GRAVITY g / 9.81 + SPRING_PRELOAD_PER_LOAD
# F0 and steering TSDA tension R0 likewise [N]; the free lengths follow from S0, R0.
SPRING_PRELOAD_GRAVITY = -1739.85707
SPRING_PRELOAD_PER_LOAD = 1.759341
RACK_PRELOAD_GRAVITY = 69.190569
RACK_PRELOAD_PER_LOAD = -0.101829


def hp(name):
    return np.array(HARDPOINTS[name])


def parallel_axis(parts):
    """Mass, centre of mass and inertia about it (global axes) of rigidly joined parts
    [(mass, centre, 3 x 3 inertia about its own centre)]."""
    m = sum(p[0] for p in parts)
    c = sum(p[0] * np.asarray(p[1]) for p in parts) / m
    J = np.zeros((3, 3))
    for mi, ci, Ji in parts:
        d = np.asarray(ci) - c
        J += np.asarray(Ji) + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, J


def rod_tensor(mass, radius, a, b):
    """Inertia about the centre (global axes) of a uniform cylinder from point a to point b."""
    u = np.asarray(b) - np.asarray(a)
    length = np.linalg.norm(u)
    u = u / length
    axial = mass * radius ** 2 / 2
    transverse = mass * (3 * radius ** 2 + length ** 2) / 12
    return transverse * (np.eye(3) - np.outer(u, u)) + axial * np.outer(u, u)


def carrier_properties(m_upright, m_spindle, m_wheel, m_tyre):
    """The wheel carrier: upright + spindle + wheel + tyre as one rigid body."""
    return parallel_axis([
        (m_upright, hp("UPRIGHT"), np.diag(INERTIAS["upright"])),
        (m_spindle, hp("SPINDLE"), np.diag(INERTIAS["spindle"])),
        (m_wheel, hp("SPINDLE"), np.diag(INERTIAS["wheel"])),
        (m_tyre, hp("SPINDLE"), np.diag(INERTIAS["tyre"]))])


def rack_centre():
    """Centre of mass of the (half) steering rack: on the car's centre plane, level with the
    inner tie-rod joint."""
    c = hp("TIEROD_C")
    return np.array([c[0], 0.0, c[2]])


def build(**overrides):
    mb = ModelBuilder("double_wishbone", overrides, gravity=(0.0, 0.0, -9.81),
                      description=__doc__.split("\n")[0])
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -z", min=0.0)
    m_ua = mb.param("upper_arm_mass", MASSES["upper_arm"], "kg", "upper wishbone mass", min=1e-6)
    m_la = mb.param("lower_arm_mass", MASSES["lower_arm"], "kg", "lower wishbone mass", min=1e-6)
    m_up = mb.param("upright_mass", MASSES["upright"], "kg", "upright mass", min=0.0)
    m_sp = mb.param("spindle_mass", MASSES["spindle"], "kg", "spindle and hub mass", min=0.0)
    m_wh = mb.param("wheel_mass", MASSES["wheel"], "kg", "wheel (rim) mass", min=0.0)
    m_ty = mb.param("tyre_mass", MASSES["tyre"], "kg", "tyre mass", min=0.0)
    m_tr = mb.param("tie_rod_mass", MASSES["tie_rod"], "kg", "tie rod mass", min=1e-6)
    m_ra = mb.param("rack_mass", MASSES["rack"], "kg", "steering rack mass (half)", min=1e-6)
    k_s = mb.param("spring_stiffness", SPRING_STIFFNESS, "N/m", "coil spring stiffness", min=0.0)
    c_s = mb.param("damper_damping", DAMPER_DAMPING, "N.s/m", "damper coefficient", min=0.0)
    k_t = mb.param("tyre_stiffness", TYRE_STIFFNESS, "N/m", "tyre vertical stiffness", min=1.0)
    c_t = mb.param("tyre_damping", 0.0, "N.s/m", "tyre vertical damping", min=0.0)
    F0 = mb.param("wheel_load", WHEEL_LOAD, "N", "static wheel load at the design pose "
                  "(sets the tyre's free length)", min=0.0)
    k_r = mb.param("steering_stiffness", STEERING_STIFFNESS, "N/m", "steering stiffness at the rack",
                   min=1.0)
    c_r = mb.param("steering_damping", STEERING_DAMPING, "N.s/m", "steering damping at the rack",
                   min=0.0)
    stops = mb.param("stops", "off", "1", "bump and rebound stops on the coil-over stroke",
                     choices=("off", "on"), structural=True)
    travel = mb.param("stop_travel", STOP_TRAVEL, "m", "coil-over travel from the design "
                      "length to either stop", min=1e-6)
    e_stop = mb.param("stop_restitution", STOP_RESTITUTION, "1", "restitution of the stops",
                      min=0.0, max=1.0)
    mb.gravity = (0.0, 0.0, -g)

    P = hp
    # ---- bodies at the design pose (orientation: body axes = global axes)
    ua = mb.body("upper_arm", mass=m_ua, inertia=INERTIAS["upper_arm"], position=P("UCA_CM"))
    la = mb.body("lower_arm", mass=m_la, inertia=INERTIAS["lower_arm"], position=P("LCA_CM"))
    m_c, c_c, J_c = carrier_properties(m_up, m_sp, m_wh, m_ty)
    ca = mb.body("carrier", mass=m_c, inertia=J_c, position=c_c)
    c_tr = 0.5 * (P("TIEROD_C") + P("TIEROD_U"))
    tr = mb.body("tie_rod", mass=m_tr, position=c_tr,
                 inertia=rod_tensor(m_tr, TIE_ROD_RADIUS, P("TIEROD_C"), P("TIEROD_U")))
    half = 2 * P("TIEROD_C")[1]
    ra = mb.body("rack", mass=m_ra, position=rack_centre(),
                 inertia=(m_ra * half ** 2 / 12, m_ra * 0.02 ** 2 / 2, m_ra * half ** 2 / 12))

    # ---- joints (seed 001: 3 with f_G = 1, 4 with f_G = 3)
    G = mb.ground
    mb.revolute("uca_pivot", G, ua, at=P("UCA_F"), axis=P("UCA_F") - P("UCA_B"))
    mb.revolute("lca_pivot", G, la, at=P("LCA_F"), axis=P("LCA_F") - P("LCA_B"))
    mb.spherical("upper_ball", ua, ca, at=P("UCA_U"))
    mb.spherical("lower_ball", la, ca, at=P("LCA_U"))
    mb.spherical("outer_tie_rod", ca, tr, at=P("TIEROD_U"))
    mb.spherical("inner_tie_rod", ra, tr, at=P("TIEROD_C"))
    mb.prismatic("rack_guide", G, ra, at=rack_centre(), axis=(0.0, 1.0, 0.0))

    # ---- force elements (points in body axes = global offsets from the centres)
    S0 = SPRING_PRELOAD_GRAVITY * g / 9.81 + SPRING_PRELOAD_PER_LOAD * F0
    R0 = RACK_PRELOAD_GRAVITY * g / 9.81 + RACK_PRELOAD_PER_LOAD * F0
    l_s = np.linalg.norm(P("SPRING_A") - P("SPRING_C"))
    mb.tsda("coil_over", G, la, a_point=P("SPRING_C"), b_point=P("SPRING_A") - P("LCA_CM"),
            stiffness=k_s, damping=c_s, free_length=l_s + (S0 / k_s if k_s > 0 else 0.0))
    wc = P("SPINDLE")
    road = wc - np.array([0.0, 0.0, TYRE_RADIUS])
    mb.tsda("tyre", G, ca, a_point=road, b_point=wc - c_c, stiffness=k_t, damping=c_t,
            free_length=TYRE_RADIUS + F0 / k_t)
    rc = rack_centre()
    mb.tsda("steering", G, ra, a_point=rc - np.array([0.0, RACK_SPRING_LENGTH, 0.0]),
            b_point=(0.0, 0.0, 0.0), stiffness=k_r, damping=c_r,
            free_length=RACK_SPRING_LENGTH - R0 / k_r)
    mb.point("wheel_centre", ca, at=wc)
    if stops == "on":
        mb.contact_points("bump_stop", G, la, a_at=P("SPRING_C"), b_at=P("SPRING_A"),
                          distance=l_s - travel, side="apart", restitution=e_stop)
        mb.contact_points("rebound_stop", G, la, a_at=P("SPRING_C"), b_at=P("SPRING_A"),
                          distance=l_s + travel, side="within", restitution=e_stop)
    return mb.build()
