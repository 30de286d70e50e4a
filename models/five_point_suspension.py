"""Five-point (five-link) wheel suspension, one corner (seed 001, ch. 3.2): the wheel carrier
guided by five massless links with ball joints at both ends, a coil-over spring-damper and a
tyre spring to the road; the chassis is the ground.

Seed 001 treats the five-point suspension (the multilink rear axle of the Daimler-Benz W201
"190") as a system with f = 1 degree of freedom, m(s) s'' + b(s, s') = Q(s, s', t). Here each
link is a distance constraint (one row, a massless rod between two ball joints), so n_B = 1,
n_G = 5 and f = 6 n_B - sum(6 - f_G) = 6 - 5 = 1, the seed's count; the rank-based count is 1
too. Modelled with the links as bodies with two spherical joints each, the count would be
6 * 6 - 10 * 3 = 6: the same spring compression plus the five isolated spins of the links
about their own axes.

Geometry and masses: derived, not a measured multilink. No public hardpoint table of a real
five-link (multilink) axle was found (Project Chrono's MultiLink data, data/vehicle/generic/,
sedan/ and audi/json/audi_MultiLink.json, are all its "Generic Multi-Link"). The five links are
therefore the BMW E90 rear corner of models/double_wishbone.py (Project Chrono,
src/chrono_models/vehicle/bmw/BMW_E90_DoubleWishbone.cpp, after SAE Paper 2007-01-0818;
metres, left corner) with each wishbone split into its two arms (as the W201's upper and lower
link pairs act as wishbones) and the tie (toe) rod as the fifth link, its inner end fixed to
the chassis; wheel carrier = upright + spindle + wheel (BMW_E90_RearWheel) + tyre
(BMW_E90_TMeasyTireRear), wheel load and tyre as in models/double_wishbone.py.
Frame x forward, y left, z up; gravity along -z. The outer ends of each arm pair coincide (one
ball joint per wishbone), so this linkage has the kinematics of the double wishbone with
its rack held (tests/test_suspensions.py compares the carrier's velocity at the design pose).

    upper_front  chassis UCA_F  -- carrier UCA_U       lower_front  chassis LCA_F -- carrier LCA_U
    upper_rear   chassis UCA_B  -- carrier UCA_U       lower_rear   chassis LCA_B -- carrier LCA_U
    track_rod    chassis TIEROD_C -- carrier TIEROD_U
    coil_over    TSDA chassis SHOCK_C -- carrier LCA_U (the links are massless, so the spring
                 acts on the carrier at the lower ball joint); stiffness chosen for the same
                 wheel rate as the double wishbone's coil-over (bench/suspension_statics.py),
                 damping likewise; input coil_over.h
    tyre         vertical TSDA wheel centre -- road point r_t below it, as in double_wishbone;
                 a road displacement z_r enters as tyre.h = -tyre_stiffness * z_r
The design pose is the static equilibrium under the wheel load F0 (free length of coil_over
from virtual work, bench/suspension_statics.py). Output: wheel_centre.x, .y, .z.
"""
import numpy as np

from fmu_mb import ModelBuilder

DEFAULT_EXPERIMENT = {"stop_time": 1.0, "step_size": 0.005}

HARDPOINTS = {k: np.array(v, dtype=float) for k, v in {     # Chrono's E90, metres
    "SPINDLE": (0.0, 0.7493, 0.0), "UPRIGHT": (0.0, 0.6493, 0.0),
    "UCA_F": (0.14986, 0.4572, 0.0635), "UCA_B": (-0.0508, 0.40132, 0.11684),
    "UCA_U": (0.01397, 0.65024, 0.08636), "LCA_F": (0.22352, 0.41148, -0.07874),
    "LCA_B": (-0.1778, 0.25908, -0.12446), "LCA_U": (-0.01778, 0.64389, -0.127),
    "SHOCK_C": (-0.09906, 0.508, 0.36576),
    "TIEROD_C": (-0.2235, 0.25781, -0.04064), "TIEROD_U": (-0.1524, 0.65786, -0.04572),
}.items()}
LINKS = {"upper_front": ("UCA_F", "UCA_U"), "upper_rear": ("UCA_B", "UCA_U"),
         "lower_front": ("LCA_F", "LCA_U"), "lower_rear": ("LCA_B", "LCA_U"),
         "track_rod": ("TIEROD_C", "TIEROD_U")}
TYRE_RADIUS = 0.31785          # Chrono's TMeasy rear tyre
TYRE_STIFFNESS = 357859.232809  # Chrono's TMeasy rear tyre [N/m]
# static wheel load [N], as models/double_wishbone.py derives it from Chrono's E90 chassis
WHEEL_LOAD = 9.81 * (1442.1 * 1.371 / 2.75717 / 2 + 122.933)

# Coil-over at the design pose, from bench/suspension_statics.py with the default masses:
# compressive force S0 = SPRING_PRELOAD_GRAVITY + SPRING_PRELOAD_PER_LOAD * F0 [N], and the
# stiffness and damping that give the double wishbone's wheel rate and wheel damping.
SPRING_PRELOAD_GRAVITY = -872.248985
SPRING_PRELOAD_PER_LOAD = 1.022319
SPRING_STIFFNESS = 12537.134023
DAMPER_DAMPING = 1961.911218


def carrier_properties():
    """Mass, centre and inertia (global axes) of upright + spindle + wheel + tyre (Chrono's
    E90 values; principal moments along x, y, z, the spin axis y)."""
    parts = [(19.450, HARDPOINTS["UPRIGHT"], (0.1656, 0.1934, 0.04367)),
             (14.705, HARDPOINTS["SPINDLE"], (0.04117, 0.07352, 0.04117)),
             (15.4, HARDPOINTS["SPINDLE"], (0.673602, 1.180307, 0.673602)),
             (37.6, HARDPOINTS["SPINDLE"], (3.84, 6.69, 3.84))]
    m = sum(p[0] for p in parts)
    c = sum(p[0] * p[1] for p in parts) / m
    J = sum(np.diag(p[2]) + p[0] * ((p[1] - c) @ (p[1] - c) * np.eye(3)
                                    - np.outer(p[1] - c, p[1] - c)) for p in parts)
    return m, c, J


def build(**overrides):
    mb = ModelBuilder("five_point_suspension", overrides, gravity=(0.0, 0.0, -9.81),
                      description=__doc__.split("\n")[0])
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -z", min=0.0)
    k_s = mb.param("spring_stiffness", SPRING_STIFFNESS, "N/m", "coil spring stiffness",
                   min=0.0)
    c_s = mb.param("damper_damping", DAMPER_DAMPING, "N.s/m", "damper coefficient", min=0.0)
    k_t = mb.param("tyre_stiffness", TYRE_STIFFNESS, "N/m", "tyre vertical stiffness", min=1.0)
    c_t = mb.param("tyre_damping", 0.0, "N.s/m", "tyre vertical damping", min=0.0)
    F0 = mb.param("wheel_load", WHEEL_LOAD, "N", "static wheel load at the design pose", min=0.0)
    mb.gravity = (0.0, 0.0, -g)

    P = HARDPOINTS
    m_c, c_c, J_c = carrier_properties()
    ca = mb.body("carrier", mass=m_c, inertia=J_c, position=c_c)
    for name, (chassis, carrier) in LINKS.items():
        mb.distance(name, mb.ground, ca, parent_point=P[chassis],
                    child_point=P[carrier] - c_c)
    l_s = np.linalg.norm(P["LCA_U"] - P["SHOCK_C"])
    S0 = SPRING_PRELOAD_GRAVITY * g / 9.81 + SPRING_PRELOAD_PER_LOAD * F0
    mb.tsda("coil_over", mb.ground, ca, a_point=P["SHOCK_C"], b_point=P["LCA_U"] - c_c,
            stiffness=k_s, damping=c_s, free_length=l_s + (S0 / k_s if k_s > 0 else 0.0))
    wc = P["SPINDLE"]
    mb.tsda("tyre", mb.ground, ca, a_point=wc - np.array([0.0, 0.0, TYRE_RADIUS]),
            b_point=wc - c_c, stiffness=k_t, damping=c_t,
            free_length=TYRE_RADIUS + F0 / k_t)
    mb.point("wheel_centre", ca, at=wc)
    return mb.build()
