"""The digging path of the excavator example and its inverse kinematics (models/excavator.py).

The bucket tip follows straight segments between WAYPOINTS (time [s], tip x [m], tip y [m],
bucket angle from the horizontal psi [deg]) with a smooth (minimum-jerk) time law on each
segment: it starts at the model's initial pose, penetrates the ground (y = 0) ahead of the
machine, drags the bucket towards the machine 1 m deep while curling it, and lifts it out.
`joint_path(t)` gives the joint-space set-points by inverse kinematics: the bucket pin is at
tip - L_bucket (cos psi, sin psi); the boom and stick angles put it there (two-link inverse
kinematics, the branch with the stick below the boom: stick angle < 0); the bucket angle is
psi minus the boom and stick angles.

    python examples/excavator_path.py     # prints the path and the cylinder strokes on it
"""
import math
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:           # this checkout's fmu_mb (as python -m does)
    sys.path.insert(0, str(ROOT))
MODEL = ROOT / "models" / "excavator.py"

WAYPOINTS = [          # t [s], tip x [m], tip y [m], psi [deg]
    (0.0, None, None, None),        # the model's initial pose (filled in by _waypoints)
    (1.0, None, None, None),        # held for 1 s
    (3.0, 7.0, -0.6, -120.0),       # reach out and penetrate 0.6 m
    (6.0, 4.6, -1.0, -175.0),       # drag towards the machine 1 m deep, curling the bucket
    (8.0, 5.0, 0.8, -215.0),        # lift out with the bucket curled
    (10.0, 5.0, 0.8, -215.0),       # hold
]
SAMPLE = 0.05                       # set-point tables: one point every SAMPLE seconds


def _geometry():
    from fmu_mb import load_module
    mod = load_module(MODEL)
    return mod


def forward(theta, geo=None):
    """Tip (x, y) and bucket angle psi [rad] of joint angles theta = (boom, stick, bucket)."""
    g = geo or _geometry()
    a1 = theta[0]
    a2 = a1 + theta[1]
    a3 = a2 + theta[2]
    x = g.BOOM_FOOT[0] + g.BOOM_LENGTH * math.cos(a1) + g.STICK_LENGTH * math.cos(a2) \
        + g.BUCKET_TIP * math.cos(a3)
    y = g.BOOM_FOOT[1] + g.BOOM_LENGTH * math.sin(a1) + g.STICK_LENGTH * math.sin(a2) \
        + g.BUCKET_TIP * math.sin(a3)
    return np.array([x, y]), a3


def inverse(tip, psi, geo=None):
    """Joint angles (boom, stick, bucket) [rad] that put the tip at `tip` with the bucket at
    absolute angle psi [rad]; the stick-below-boom branch (stick angle < 0)."""
    g = geo or _geometry()
    c = np.asarray(tip, float) - g.BUCKET_TIP * np.array([math.cos(psi), math.sin(psi)])
    d = c - np.array(g.BOOM_FOOT)
    r2 = float(d @ d)
    l1, l2 = g.BOOM_LENGTH, g.STICK_LENGTH
    cos2 = (r2 - l1 ** 2 - l2 ** 2) / (2 * l1 * l2)
    if not -1.0 <= cos2 <= 1.0:
        raise ValueError(f"tip {tuple(tip)} with psi {math.degrees(psi):.1f} deg is out of reach")
    t2 = -math.acos(cos2)
    t1 = math.atan2(d[1], d[0]) - math.atan2(l2 * math.sin(t2), l1 + l2 * math.cos(t2))
    return np.array([t1, t2, psi - t1 - t2])


def _waypoints(geo):
    m = _model_defaults(geo)
    tip0, psi0 = forward(m, geo)
    out = []
    for t, x, y, psi in WAYPOINTS:
        if x is None:
            out.append((t, tip0[0], tip0[1], psi0))
        else:
            out.append((t, x, y, math.radians(psi)))
    return out


def _model_defaults(geo):
    return np.array(_initial_angles())


@lru_cache(maxsize=1)
def _initial_angles():
    """The model's initial joint angles (boom0, stick0, bucket0) [rad], loaded once."""
    from fmu_mb import load_model
    m = load_model(MODEL)
    return tuple(m.parameter(n).value for n in ("boom0", "stick0", "bucket0"))


def tip_path(t, geo=None):
    """Desired tip (x, y) [m] and bucket angle psi [rad] at time t (arrays broadcast)."""
    g = geo or _geometry()
    wp = _waypoints(g)
    t = float(t)
    for (t0, x0, y0, p0), (t1, x1, y1, p1) in zip(wp, wp[1:]):
        if t <= t1 or (t1, x1) == wp[-1][:2]:
            s = min(max((t - t0) / (t1 - t0), 0.0), 1.0)
            s = s ** 3 * (10 - 15 * s + 6 * s * s)          # minimum-jerk time law
            return np.array([x0 + s * (x1 - x0), y0 + s * (y1 - y0)]), p0 + s * (p1 - p0)
    return np.array(wp[-1][1:3]), wp[-1][3]


def joint_path(t, geo=None):
    """Joint-space set-points (boom, stick, bucket) [rad] at time t."""
    g = geo or _geometry()
    tip, psi = tip_path(t, g)
    return inverse(tip, psi, g)


@lru_cache(maxsize=4)
def setpoint_tables(stop_time=10.0, sample=SAMPLE):
    """Per joint a tuple of (t, angle) pairs for the PID FMUs' set-point tables (computed
    once per arguments: each controller file asks for all three joints' tables)."""
    g = _geometry()
    ts = np.round(np.arange(0.0, stop_time + 0.5 * sample, sample), 10)
    q = np.array([joint_path(t, g) for t in ts])
    return tuple(tuple((float(t), float(v)) for t, v in zip(ts, q[:, k])) for k in range(3))


if __name__ == "__main__":
    from fmu_mb import load_model
    geo = _geometry()
    for t in np.arange(0.0, 10.01, 0.5):
        tip, psi = tip_path(t, geo)
        q = joint_path(t, geo)
        over = {n: p for n, p in zip(("boom0", "stick0", "bucket0"), q)}
        m = load_model(MODEL, **over)
        from fmu_mb import initial_state, output_names, output_values
        vals = dict(zip(output_names(m), output_values(m, initial_state(m),
                                                        m.input_vector())))
        strokes = [vals[f"{c}.stroke"] for c in ("boom_cyl", "stick_cyl", "bucket_cyl")]
        print(f"t={t:5.2f} tip=({tip[0]:6.3f},{tip[1]:6.3f}) psi={math.degrees(psi):7.1f} "
              f"q={np.degrees(q).round(1)} strokes={np.round(strokes, 3)} "
              f"model tip=({vals['tip.x']:.3f},{vals['tip.y']:.3f})")
