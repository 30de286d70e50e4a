"""Models whose contacts come from collision shapes (docs/shapes.md), against closed forms:
the block on an incline as a Box shape on a Plane shape (sticks for mu > tan alpha, slides
with g (sin alpha - mu cos alpha) otherwise), and the tumbling box with friction coming to
rest on a face."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from fmu_mb import simulate
from fmu_mb.mechanics.spatial import rotations as rot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
import incline_block  # noqa: E402
import tumbling_box  # noqa: E402

G = 9.81


def _slope(row, alpha, c=0.05):
    """(distance down the slope, sideways drift) of the block's centre from its start."""
    x0, z0 = c / 2 * math.sin(alpha), c / 2 * math.cos(alpha)
    return ((row["block.x"] - x0) * math.cos(alpha) - (row["block.z"] - z0) * math.sin(alpha),
            row["block.y"])


def test_incline_block_is_a_box_shape_on_a_plane_shape():
    m = incline_block.build()
    assert [(s.name, s.kind) for s in m.shapes] == [("slope", "plane"), ("hull", "box")]
    assert [c.name for c in m.contacts] == [f"slope_hull_{k}" for k in range(8)]
    assert all(c.friction == 0.5 for c in m.contacts)


def test_incline_box_sticks_when_mu_exceeds_tan_alpha():
    alpha, mu = 0.3, 0.5                      # tan(0.3) = 0.309
    res = simulate(incline_block.build(alpha=alpha, mu=mu), 2.0, 1.0)
    d, y = _slope(res[-1], alpha)
    assert abs(d) < 1e-9 and abs(y) < 1e-9
    for k in (0, 2, 4, 6):                    # the bottom corners touch, the top ones do not
        assert abs(res[-1][f"slope_hull_{k}.gap"]) < 1e-12
        assert res[-1][f"slope_hull_{k + 1}.gap"] == pytest.approx(0.05, abs=1e-12)


def test_incline_box_slides_with_the_closed_form_acceleration():
    alpha, mu = 0.3, 0.2
    res = simulate(incline_block.build(alpha=alpha, mu=mu), 1.0, 0.5)
    a = G * (math.sin(alpha) - mu * math.cos(alpha))
    for row in res[1:]:
        d, y = _slope(row, alpha)
        assert abs(d - a * row["time"] ** 2 / 2) <= 1e-8 * a * row["time"] ** 2 / 2
        assert abs(y) < 1e-12


@pytest.mark.slow
def test_tumbling_box_with_friction_ends_at_rest_on_a_face():
    """The box (Box shape, mu = 0.5, e = 0.6) thrown spinning comes to rest within 1.5 s:
    no velocity, its centre c/2 above the floor, a body axis vertical, four corners on the
    floor (20 s in the Python event loop)."""
    m = tumbling_box.build(shape="box", mu=0.5)
    a, b, c = (m.parameter(k).value for k in "abc")
    res = simulate(m, 1.5, 0.5)
    end = res[-1]
    v = [end[f"box.{k}"] for k in ("vx", "vy", "vz", "wx", "wy", "wz")]
    assert np.abs(v).max() < 1e-9
    R = rot.matrix(np.array([[end[f"box.e{k}"] for k in range(4)]]))[0]
    k = int(np.argmax(np.abs(R[2])))          # the body axis along the vertical
    assert abs(abs(R[2, k]) - 1.0) < 1e-9
    assert end["box.z"] == pytest.approx((a, b, c)[k] / 2, abs=1e-9)
    gaps = sorted(end[f"floor_hull_{i}.gap"] for i in range(8))
    assert np.abs(gaps[:4]).max() < 1e-9 and min(gaps[4:]) > 0.1


def test_gripper_lifts_the_block_by_friction():
    """Squeezed with 20 N the fingers close on the block (an inelastic impact); lifted from
    t = 0.1 s with F = 5 N beyond the carriage's and fingers' weight (2 mu grip = 32 N, far
    above the block's weight and inertia) the pads stick: carriage, fingers and block rise as
    one with a = (F - m g) / M, M the mass of all four bodies."""
    import gripper
    model = gripper.build()
    F, grip, t1 = 5.0, 20.0, 0.1
    res = simulate(model, 0.3, 0.02,
                   inputs={"grip.h": grip, "lift.h": lambda t: F if t >= t1 - 1e-12 else 0.0})
    p = model.parameter_values
    m, M = p["m"], p["m"] + p["m_carriage"] + 2 * p["m_finger"]
    a = (F - m * G) / M
    assert 2 * p["mu"] * grip > m * (G + a)
    for row in res:
        t = row["time"]
        z = a * max(t - t1, 0.0) ** 2 / 2
        assert row["block.z"] - p["c"] / 2 == pytest.approx(z, rel=1e-9, abs=1e-15)
        assert row["carriage.z"] - p["c"] / 2 == pytest.approx(z, rel=1e-9, abs=1e-15)
        assert abs(row["block.x"]) < 1e-12
        if t > 0.05:                               # closed: the pads on the block's sides
            assert row["finger_r.x"] - row["finger_l.x"] == pytest.approx(p["a"], abs=1e-12)
    assert res[-1]["table_part_0.gap"] == pytest.approx(res[-1]["block.z"] - p["c"] / 2,
                                                        abs=1e-12)


def test_gripper_at_rest_without_inputs():
    import gripper
    res = simulate(gripper.build(), 0.2, 0.1)
    for k in ("block.z", "carriage.z", "finger_l.x", "finger_r.x"):
        assert np.ptp(res[k]) < 1e-12, k
