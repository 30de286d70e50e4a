"""Excavator front attachment (seed 003's project): boom, stick and bucket of a 20 t class
crawler excavator on three revolute pins, each driven by a hydraulic cylinder with stroke
end stops; a digging load on the bucket tip; the upper structure is the ground.

Frame: x forward, y up [m]; the ground origin is at ground level on the swing axis; the boom
foot pin is 2.0 m above it. Joint angles: boom_pin.angle = boom angle from the horizontal
(the boom's x axis runs from the boom foot to the stick pin), stick_pin.angle = stick
relative to the boom, bucket_pin.angle = bucket (x axis from the bucket pin to the tip)
relative to the stick; counter-clockwise positive, so curling the stick or the bucket in
towards the machine makes its angle more negative.

Sources and what is estimated:
- Principal dimensions as manufacturers' data sheets of the 20-22 t class publish them
  (the Caterpillar 320, Komatsu PC200 and Volvo EC210 sheets list a 5.7 m reach boom, a
  2.9 m stick and a 0.9-1.2 m3 bucket): boom 5.7 m and stick 2.9 m pin to pin; the bucket's
  pin-to-tip radius 1.45 m and the boom foot height 2.0 m are read off such sheets' working
  range drawings (by proportion, so to about +-0.1 m).
- Link masses are class-typical estimates (boom 1.8 t, stick 0.95 t, 1 m3 general-purpose
  bucket 0.8 t; front attachment about 17 % of the operating weight), not data-sheet values;
  inertias are those of uniform boxes of the links' outer size (box_inertia).
- Cylinder pins were placed by proportion on the side-view drawing of such data sheets and
  then adjusted so that each cylinder is monotonic over its joint's working range
  (boom -19 to +52 deg, stick -145 to -32 deg, bucket -150 to -15 deg); bores and rods are
  class-typical (boom: two 120/85 mm cylinders, stick 135/95 mm, bucket 115/80 mm). The
  bucket cylinder acts on a lever of the bucket directly (the real machine's four-bar
  bucket linkage is left out) and the cylinders are massless.

Inputs: `<cyl>.h` (cylinder force, pushing positive) [N], `<cyl>.p_head`, `<cyl>.p_rod` [Pa]
(hydraulic force p_head A_piston - p_rod A_rod), `dig_x.h`, `dig_y.h` [N] (load on the
bucket tip, global frame). Outputs include the reactions at every pin (`boom_pin.fx`, ...,
and the cylinders' pin forces `<cyl>.fx`, `<cyl>.fy`), strokes, stroke rates, cylinder
forces, end-stop events and the tip position `tip.x`, `tip.y`.
"""
import math

from fmu_mb import ModelBuilder, box_inertia, deg

DEFAULT_EXPERIMENT = {"stop_time": 10.0, "step_size": 0.01}

# pin-frame geometry [m]: each link's frame at its proximal pin, x towards its distal pin
BOOM_FOOT = (0.0, 2.0)            # ground (upper structure)
BOOM_CYL_FOOT = (0.55, 0.95)      # ground
BOOM_LENGTH, STICK_LENGTH, BUCKET_TIP = 5.7, 2.9, 1.45
BOOM_CG = (2.5, 0.25)
BOOM_CYL_EYE = (2.3, -0.5)        # boom, underside
STICK_CYL_FOOT = (1.9, 0.8)       # boom, top
STICK_CG = (1.1, 0.1)
STICK_CYL_EYE = (-0.6, 0.2)       # stick, tail behind the boom-stick pin
BUCKET_CYL_FOOT = (0.45, 0.4)     # stick
BUCKET_CG = (0.55, 0.25)
BUCKET_LEVER = (-0.45, 0.1)       # bucket


def _area(bore, rod=0.0, n=1):
    return n * math.pi / 4.0 * (bore ** 2 - rod ** 2)


def build(**overrides):
    mb = ModelBuilder("excavator", overrides)
    m_boom = mb.param("m_boom", 1800.0, "kg", "boom mass", min=1e-9)
    m_stick = mb.param("m_stick", 950.0, "kg", "stick mass", min=1e-9)
    m_bucket = mb.param("m_bucket", 800.0, "kg", "bucket mass (empty, 1 m3)", min=1e-9)
    friction = mb.param("friction", 2.0e4, "N.s/m", "viscous friction of each cylinder",
                        min=0.0)
    e = mb.param("e", 0.2, "1", "restitution at the cylinders' end stops", min=0.0, max=1.0)
    g = mb.param("g", 9.81, "m/s2", "gravity acceleration along -y")
    a_boom = mb.param("boom0", deg(30.0), "rad", "initial boom angle")
    a_stick = mb.param("stick0", deg(-100.0), "rad", "initial stick angle (rel. boom)")
    a_bucket = mb.param("bucket0", deg(-60.0), "rad", "initial bucket angle (rel. stick)")
    mb.gravity = (0.0, -g)

    def cg(p, c):
        return (p[0] - c[0], p[1] - c[1])

    boom = mb.body("boom", mass=m_boom, inertia=box_inertia(m_boom, 5.9, 0.6))
    stick = mb.body("stick", mass=m_stick, inertia=box_inertia(m_stick, 3.4, 0.45))
    bucket = mb.body("bucket", mass=m_bucket, inertia=box_inertia(m_bucket, 1.5, 1.1))
    mb.revolute("boom_pin", mb.ground, boom, parent_point=BOOM_FOOT,
                child_point=cg((0.0, 0.0), BOOM_CG))
    mb.revolute("stick_pin", boom, stick, parent_point=cg((BOOM_LENGTH, 0.0), BOOM_CG),
                child_point=cg((0.0, 0.0), STICK_CG))
    mb.revolute("bucket_pin", stick, bucket, parent_point=cg((STICK_LENGTH, 0.0), STICK_CG),
                child_point=cg((0.0, 0.0), BUCKET_CG))

    mb.cylinder("boom_cyl", mb.ground, boom, a_point=BOOM_CYL_FOOT,
                b_point=cg(BOOM_CYL_EYE, BOOM_CG), min_length=1.45, max_length=2.85,
                friction=friction, restitution=e, piston_area=_area(0.120, n=2),
                rod_area=_area(0.120, 0.085, n=2))
    mb.cylinder("stick_cyl", boom, stick, a_point=cg(STICK_CYL_FOOT, BOOM_CG),
                b_point=cg(STICK_CYL_EYE, STICK_CG), min_length=3.40, max_length=4.45,
                friction=friction, restitution=e, piston_area=_area(0.135),
                rod_area=_area(0.135, 0.095))
    mb.cylinder("bucket_cyl", stick, bucket, a_point=cg(BUCKET_CYL_FOOT, STICK_CG),
                b_point=cg(BUCKET_LEVER, BUCKET_CG), min_length=2.05, max_length=2.90,
                friction=friction, restitution=e, piston_area=_area(0.115),
                rod_area=_area(0.115, 0.080))

    tip = cg((BUCKET_TIP, 0.0), BUCKET_CG)
    mb.point("tip", bucket, tip)
    mb.force("dig_x", bucket, point=tip, direction=(1.0, 0.0))
    mb.force("dig_y", bucket, point=tip, direction=(0.0, 1.0))
    mb.initial("boom_pin", value=a_boom, rate=0.0)
    mb.initial("stick_pin", value=a_stick, rate=0.0)
    mb.initial("bucket_pin", value=a_bucket, rate=0.0)
    return mb.build()
