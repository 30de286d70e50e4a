"""IFToMM benchmark A03: Andrews' squeezing mechanism (seven bodies, three loops closed at
point E), driven by a constant torque on the crank and loaded by a spring, no gravity
(Hairer and Wanner, Solving ODEs II, sec. VII.7; the Test Set for IVP Solvers' 'andrews')."""
import math

from fmu_mb import ModelBuilder

DEFAULT_EXPERIMENT = {"stop_time": 0.03, "step_size": 0.001}

#: the mechanism's data (Hairer and Wanner): masses [kg], inertias about the centres of
#: mass [kg.m2], lengths [m], fixed points A, B, C [m], spring c0 [N/m], l0 [m], torque [N.m]
M = (0.04325, 0.00365, 0.02373, 0.00706, 0.07050, 0.00706, 0.05498)
I = (2.194e-6, 4.410e-7, 5.255e-6, 5.667e-7, 1.169e-5, 5.667e-7, 1.912e-5)
XA, YA, XB, YB, XC, YC = -0.06934, -0.00227, -0.03635, 0.03273, 0.014, 0.072
D, DA, E, EA, RR, RA = 28e-3, 115e-4, 2e-2, 1421e-5, 7e-3, 92e-5
SS, SA, SB, SC, SD = 35e-3, 1874e-5, 1043e-5, 18e-3, 2e-2
TA, TB, U, UA, UB = 2308e-5, 916e-5, 4e-2, 1228e-5, 449e-5
ZF, ZT, FA = 2e-2, 4e-2, 1421e-5

#: the consistent initial angles (beta, Theta, gamma, Phi, delta, Omega, epsilon) [rad], at
#: rest: the Test Set's initial values
Q0 = (-0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
      0.222668390165885884674473185609, 0.487364979543842550225598953530,
      -0.222668390165885884674473185609, 1.23054744454982119249735015568)


def _rot(a, p):
    return (math.cos(a) * p[0] - math.sin(a) * p[1], math.sin(a) * p[0] + math.cos(a) * p[1])


def _add(*ps):
    return (sum(p[0] for p in ps), sum(p[1] for p in ps))


def absolute_angles(q):
    """The seven bodies' angles from Hairer and Wanner's coordinates (beta, Theta, gamma,
    Phi, delta, Omega, epsilon): Theta, Phi and Omega are relative angles."""
    be, th, ga, ph, de, om, ep = q
    return (be, be + th, ga, ph + de, de, om + ep, ep)


def build(**overrides):
    mb = ModelBuilder("andrews_squeezer", overrides, description=__doc__)
    mom = mb.param("torque", 0.033, "N.m", "driving torque on the crank")
    c0 = mb.param("c0", 4530.0, "N/m", "spring stiffness")
    l0 = mb.param("l0", 0.07785, "m", "spring free length")
    mb.gravity = (0.0, 0.0)
    A, B, C = (XA, YA), (XB, YB), (XC, YC)
    a = absolute_angles(Q0)
    # points in body axes, from each body's centre of mass. Bodies 3, 5 and 7 turn about a
    # fixed point: the equations fix only their centres' distances from it (sqrt(sa^2 + sb^2),
    # sqrt(ta^2 + tb^2), sqrt(ua^2 + ub^2)), placed here at (sa, sb), (ta, tb), (ua, ub).
    local = {
        1: {"com": (RA, 0.0), "O": (0.0, 0.0), "F": (RR, 0.0)},          # from O along x
        2: {"com": (-DA, 0.0), "F": (0.0, 0.0), "E": (-D, 0.0)},         # from F
        3: {"com": (SA, SB), "B": (0.0, 0.0), "E": (0.0, -SS), "D": (SD, -SC)},   # from B
        4: {"com": (0.0, -(E - EA)), "G": (0.0, 0.0), "E": (0.0, -E)},   # from G
        5: {"com": (TA, TB), "A": (0.0, 0.0), "G": (ZT, 0.0)},           # from A
        6: {"com": (ZF - FA, 0.0), "H": (0.0, 0.0), "E": (ZF, 0.0)},     # from H
        7: {"com": (UA, UB), "A": (0.0, 0.0), "H": (0.0, -U)},           # from A
    }
    origin = {1: (0.0, 0.0), 3: B, 5: A, 7: A}
    origin[2] = _add(origin[1], _rot(a[0], local[1]["F"]))
    origin[4] = _add(origin[5], _rot(a[4], local[5]["G"]))
    origin[6] = _add(origin[7], _rot(a[6], local[7]["H"]))

    def pt(k, name):
        """Point `name` of body k in its centre-of-mass axes."""
        p, c = local[k][name], local[k]["com"]
        return (p[0] - c[0], p[1] - c[1])

    b = {k: mb.body(f"body{k}", mass=M[k - 1], inertia=I[k - 1],
                    position=_add(origin[k], _rot(a[k - 1], local[k]["com"])),
                    angle=a[k - 1]) for k in range(1, 8)}
    mb.revolute("O", mb.ground, b[1], parent_point=(0.0, 0.0), child_point=pt(1, "O"))
    mb.revolute("F", b[1], b[2], parent_point=pt(1, "F"), child_point=pt(2, "F"))
    mb.revolute("B", mb.ground, b[3], parent_point=B, child_point=pt(3, "B"))
    mb.revolute("A5", mb.ground, b[5], parent_point=A, child_point=pt(5, "A"))
    mb.revolute("G", b[5], b[4], parent_point=pt(5, "G"), child_point=pt(4, "G"))
    mb.revolute("A7", mb.ground, b[7], parent_point=A, child_point=pt(7, "A"))
    mb.revolute("H", b[7], b[6], parent_point=pt(7, "H"), child_point=pt(6, "H"))
    mb.revolute("E3", b[2], b[3], parent_point=pt(2, "E"), child_point=pt(3, "E"))
    mb.revolute("E4", b[2], b[4], parent_point=pt(2, "E"), child_point=pt(4, "E"))
    mb.revolute("E6", b[2], b[6], parent_point=pt(2, "E"), child_point=pt(6, "E"))
    mb.torque("drive", b[1], value=mom, input=False)
    mb.tsda("spring", mb.ground, b[3], a_point=C, b_point=pt(3, "D"), stiffness=c0,
            free_length=l0, input=False)
    mb.point("E", b[2], pt(2, "E"))
    return mb.build()
