"""The shortcuts of the spatial tree map that a build repeats for every probe of the
parameter compiler: the Euler parameters of T(q) from the quaternion chain alone
(tree._orientations, for _fix_signs) against the jet transform, rotation matrices computed
for many quaternions at once against one at a time (bit for bit), and the signs chosen at
initial angles of +-pi, where a rounding of the angle's sign would flip them."""
import glob
import importlib.metadata
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from fmu_mb.mechanics.loader import load_model
from fmu_mb.mechanics.spatial import rotations as rot
from fmu_mb.mechanics.spatial import tree as st

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPATIAL = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for _path in sorted(glob.glob(os.path.join(ROOT, "models", "*.py"))):
        _m = load_model(_path)
        if _m.spatial:
            SPATIAL.append((os.path.basename(_path)[:-3], _m))


@pytest.mark.parametrize("name,model", SPATIAL, ids=[n for n, _ in SPATIAL])
def test_orientations_are_the_euler_parameters_of_the_jet_transform(name, model):
    """At q0 and at random q, _orientations gives the Euler parameters of _transform's x."""
    tm = st.tree_map(model)
    rng = np.random.default_rng(7)
    q0 = st.initial_coordinates(model, tm)
    for q in [q0] + [q0 + rng.normal(scale=0.7, size=tm.n) for _ in range(5)]:
        x = st._transform(tm, q, np.zeros(tm.n))[0].reshape(tm.nb, st.NQ)
        np.testing.assert_allclose(st._orientations(tm, q), x[:, 3:], rtol=0, atol=1e-14)


def test_rotation_matrices_at_once_equal_one_at_a_time_bit_for_bit():
    """rotations.matrix of a stack of quaternions (what initial_coordinates and
    tree_placement compute) gives, row for row, the bytes of one call per quaternion, signed
    zeros included (the sign of a zero entry decides arctan2 at +-pi)."""
    rng = np.random.default_rng(3)
    P = rng.normal(size=(400, 4))
    P /= np.linalg.norm(P, axis=1)[:, None]
    P[rng.random(P.shape) < 0.15] = 0.0
    P[rng.random(P.shape) < 0.1] = -0.0
    P[:8] = [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, -1], [-0.0, 0, 0, 1],
             [math.sqrt(0.5), 0, 0, math.sqrt(0.5)], [0, 1, 0, 0], [0, -0.0, 1, 0],
             [0.5, 0.5, 0.5, 0.5]]
    A = rot.matrix(P)
    for k in range(len(P)):
        assert A[k].tobytes() == rot.matrix(P[k:k + 1])[0].tobytes()


def _panda():
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("pip example-robot-data is not installed")
    pytest.importorskip("yourdfpy", reason="URDF import needs yourdfpy (the import extra)")
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots/"
                                 "panda_description/urdf/panda.urdf"))
    if not path.is_file():
        pytest.skip("example-robot-data has no panda.urdf")
    return path


@pytest.mark.parametrize("angle", [math.pi, -math.pi, 0.5 * math.pi, 2.5])
def test_signs_reproduce_the_assembled_pose_at_half_turns(angle):
    """The Panda (limits off) with every revolute joint at `angle`: T(q0) with the rows'
    signs gives the assembled Euler parameters themselves (not their negatives)."""
    from fmu_mb.importers import load
    path = _panda()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load(path, {f"panda_joint{i}.q0": angle for i in range(1, 8)}, limits=False)
    tm = st.tree_map(model)
    q0 = st.initial_coordinates(model, tm)
    x = st._transform(tm, q0, np.zeros(tm.n))[0]
    np.testing.assert_allclose(x, model.x0, rtol=0, atol=1e-12)
    st.check_assembly(model, q0)


def _placement_by_passes(tree, bodies):
    """The tree map's row order by its definition: passes over the tree joints until one
    places nothing, from the ground, then from each body not placed yet."""
    order, placed = [], {"ground"}
    for root in ["ground"] + list(bodies):
        if root not in placed:                 # a floating root: a free row, then its subtree
            placed.add(root)
            order.append((None, "ground", root, True))
        elif root != "ground":
            continue
        grown = True
        while grown:
            grown = False
            for j in tree:
                if any(o[0] is j for o in order):
                    continue
                row = st._row(j, placed)          # (the rule of which body is placed)
                if row is not None:
                    order.append(row)
                    placed.add(row[2])
                    grown = True
    return order


@pytest.mark.parametrize("seed", range(40))
def test_placement_order_equals_the_passes_on_branched_forests(seed):
    """tree._placement_order (a heap over the joints' first placeable moment) gives the rows
    in the order of the passes it replaces, on random forests: several children per body,
    subtrees hanging from the ground and floating ones, joints declared in random order and
    pointing either way, and joints that close loops (never placed)."""
    from types import SimpleNamespace
    rng = np.random.default_rng(seed)
    nb = int(rng.integers(1, 40))
    bodies = [f"b{k}" for k in range(nb)]
    joints = []
    for k in range(nb):
        if rng.random() < 0.15:
            continue                                   # a floating root
        up = "ground" if k == 0 or rng.random() < 0.2 else bodies[int(rng.integers(0, k))]
        ends = (up, bodies[k]) if rng.random() < 0.6 else (bodies[k], up)
        joints.append(SimpleNamespace(parent=ends[0], child=ends[1]))
    for _ in range(int(rng.integers(0, 4))):          # loop-closing joints
        a, b = rng.choice(["ground"] + bodies, 2, replace=False)
        joints.append(SimpleNamespace(parent=str(a), child=str(b)))
    joints = [joints[k] for k in rng.permutation(len(joints))]
    order = [bodies[k] for k in rng.permutation(nb)]
    got = st._placement_order(joints, order)
    want = _placement_by_passes(joints, order)
    assert [(id(j), x, y, f) for j, x, y, f in got] == [(id(j), x, y, f) for j, x, y, f in want]
    assert len(got) == len({y for _, _, y, _ in got}) <= nb
