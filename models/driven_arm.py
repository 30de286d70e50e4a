"""A spatial three-joint arm driven along a prescribed trajectory (gravity along -z): a base
turning about the vertical (waist), an upper arm on a horizontal shoulder hinge and a forearm
on a parallel elbow hinge, with a payload at the tool point `tool`. The three joints follow
prescribed laws the compiled kernel evaluates itself: the waist turns at a constant rate, the
shoulder and the elbow swing harmonically. Outputs of interest: the drive efforts
(`waist_drive.effort`, `shoulder_drive.effort` [N.m], `elbow_drive.effort`: the torques the
motors must give), the joint reactions and the tool point. Masses and lengths are those of a
small industrial arm (assumed: uniform rods of 1.2 m class, 10 kg payload)."""
from fmu_mb import ModelBuilder, constant_rate, harmonic

DEFAULT_EXPERIMENT = {"stop_time": 2.0, "step_size": 0.01}


def build(**overrides):
    mb = ModelBuilder("driven_arm", overrides, gravity=(0.0, 0.0, -9.81), description=__doc__)
    h0 = mb.param("base_height", 0.5, "m", "height of the shoulder above the waist", min=0.01)
    l1 = mb.param("upper_length", 0.9, "m", "length of the upper arm", min=0.01)
    l2 = mb.param("fore_length", 0.8, "m", "length of the forearm", min=0.01)
    m0 = mb.param("base_mass", 30.0, "kg", "mass of the turning base", min=1e-6)
    m1 = mb.param("upper_mass", 20.0, "kg", "mass of the upper arm", min=1e-6)
    m2 = mb.param("fore_mass", 12.0, "kg", "mass of the forearm", min=1e-6)
    mp = mb.param("payload", 10.0, "kg", "payload at the tool point", min=0.0)
    w_waist = mb.param("waist_rate", 0.6, "rad/s", "turning rate of the waist")
    a_sh = mb.param("shoulder_amplitude", 0.5, "rad", "amplitude of the shoulder swing")
    a_el = mb.param("elbow_amplitude", 0.7, "rad", "amplitude of the elbow swing")
    f = mb.param("swing_frequency", 0.3, "Hz", "frequency of the swings", min=0.0)

    base = mb.body("base", mass=m0, inertia=(0.4, 0.4, 0.6), position=(0.0, 0.0, h0 / 2))
    upper = mb.body("upper", mass=m1, inertia=(0.05, m1 * l1 ** 2 / 12, m1 * l1 ** 2 / 12),
                    position=(l1 / 2, 0.0, h0))
    # forearm with the payload at its tip: centre of mass and inertia of both
    mf = m2 + mp
    xc = (m2 * l2 / 2 + mp * l2) / mf
    Jt = m2 * l2 ** 2 / 12 + m2 * (l2 / 2 - xc) ** 2 + mp * (l2 - xc) ** 2
    fore = mb.body("fore", mass=mf, inertia=(0.03, Jt, Jt), position=(l1 + xc, 0.0, h0))
    mb.revolute("waist", mb.ground, base, at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    mb.revolute("shoulder", base, upper, at=(0.0, 0.0, h0), axis=(0.0, -1.0, 0.0))
    mb.revolute("elbow", upper, fore, at=(l1, 0.0, h0), axis=(0.0, -1.0, 0.0))
    mb.drive("waist_drive", "waist", constant_rate(w_waist))
    mb.drive("shoulder_drive", "shoulder", harmonic(a_sh, f))
    mb.drive("elbow_drive", "elbow", harmonic(a_el, f, phase=1.0, offset=-0.3))
    mb.point("tool", fore, at=(l1 + l2, 0.0, h0))
    return mb.build()


if __name__ == "__main__":
    from fmu_mb import simulate

    print(simulate(build(), 2.0)[-1])
