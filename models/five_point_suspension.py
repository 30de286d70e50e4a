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

Geometry and masses: the W201's link coordinates were not at hand. The five links are the
HMMWV front corner of models/double_wishbone.py with each wishbone split into its two arms (as
the W201's upper and lower link pairs act as wishbones) and the tie rod as the fifth link, its
inner end fixed to the chassis: hardpoints from Project Chrono,
src/chrono_models/vehicle/hmmwv/suspension/HMMWV_DoubleWishbone.cpp (HMMWV_DoubleWishboneFront,
inches), wheel carrier = upright + spindle + wheel (HMMWV_Wheel) + tyre (HMMWV_TMeasyTire).
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

IN = 0.0254
HARDPOINTS = {k: np.array(v) * IN for k, v in {
    "SPINDLE": (-1.59, 35.815, -1.035), "UPRIGHT": (-1.59, 29.5675, -1.035),
    "UCA_F": (-1.8864, 17.5575, 9.6308), "UCA_B": (-10.5596, 18.8085, 7.6992),
    "UCA_U": (-2.088, 28.17, 8.484), "LCA_F": (8.79, 12.09, 0.0), "LCA_B": (-8.79, 12.09, 0.0),
    "LCA_U": (-1.40, 30.965, -4.65), "SHOCK_C": (4.095, 19.598, 12.722),
    "TIEROD_C": (-9.855, 17.655, 2.135), "TIEROD_U": (-6.922, 32.327, -0.643),
}.items()}
LINKS = {"upper_front": ("UCA_F", "UCA_U"), "upper_rear": ("UCA_B", "UCA_U"),
         "lower_front": ("LCA_F", "LCA_U"), "lower_rear": ("LCA_B", "LCA_U"),
         "track_rod": ("TIEROD_C", "TIEROD_U")}
TYRE_RADIUS = IN * 37.0 / 2

# Coil-over at the design pose, from bench/suspension_statics.py with the default masses:
# compressive force S0 = SPRING_PRELOAD_GRAVITY + SPRING_PRELOAD_PER_LOAD * F0 [N], and the
# stiffness and damping that give the double wishbone's wheel rate and wheel damping.
SPRING_PRELOAD_GRAVITY = -1356.008489
SPRING_PRELOAD_PER_LOAD = 1.548268
SPRING_STIFFNESS = 88772.686
DAMPER_DAMPING = 8554.647


def carrier_properties():
    """Mass, centre and inertia (global axes) of upright + spindle + wheel + tyre (Chrono's
    HMMWV values; principal moments along x, y, z, the spin axis y)."""
    parts = [(19.450, HARDPOINTS["UPRIGHT"], (0.1656, 0.1934, 0.04367)),
             (14.705, HARDPOINTS["SPINDLE"], (0.04117, 0.07352, 0.04117)),
             (18.8, HARDPOINTS["SPINDLE"], (0.4634, 0.6243, 0.4634)),
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
    k_t = mb.param("tyre_stiffness", 4.0e5, "N/m", "tyre vertical stiffness", min=1.0)
    c_t = mb.param("tyre_damping", 0.0, "N.s/m", "tyre vertical damping", min=0.0)
    F0 = mb.param("wheel_load", 1.0e4, "N", "static wheel load at the design pose", min=0.0)
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
