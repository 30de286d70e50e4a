"""newton_euler, tmt and lagrange (and recursive where it runs) give the same accelerations,
reaction forces and outputs at random consistent states, and the same trajectories to the
integration tolerance."""
import numpy as np
import pytest

from fmu_mb import FORMULATIONS, DriftError, State, output_names, output_values, simulate
from fmu_mb.mechanics import constraints
from fmu_mb.dynamics.formulations import get_formulation, newton_euler, tmt
from fmu_mb.engine.kernel import supported
from fmu_mb.mechanics.tree import tree_map

from conftest import model, zoo
from test_tmt import reversed_tree

RNG = np.random.default_rng(2026)
MINIMAL = ("tmt", "lagrange")
CASES = {"double_pendulum": lambda: model("double_pendulum"),
         "hinged_body_spring": lambda: model("hinged_body_spring"),
         "slider_crank": lambda: model("slider_crank"),
         "four_bar": lambda: model("four_bar"),
         "n_four_bar": lambda: model("n_four_bar", N=3),
         "container_crane": lambda: model("container_crane"),
         "container_crane_driven": lambda: model("container_crane_driven"),
         "zoo": zoo, "reversed_tree": reversed_tree}


def random_state(m):
    """A random state on the constraint manifold, in joint coordinates, and inputs."""
    s0 = tmt.initial_state(m)
    n = s0.q.shape[0]
    t = RNG.uniform(0.0, 2.0)
    for scale in (0.3, 0.1, 0.03, 0.01):        # far perturbations may not close the loops
        y = np.concatenate([s0.q + RNG.normal(scale=scale, size=n), RNG.normal(size=n)])
        try:
            y = tmt.project(m, y, t, 1e-15)
            break
        except DriftError:
            continue
    else:
        raise AssertionError(f"no consistent random state found for {m.name}")
    return t, y[:n], y[n:], RNG.normal(size=len(m.inputs))


def joint_accelerations(m, x, xd, xdd):
    """qdd of the tree coordinates from absolute accelerations (independent of tree.py)."""
    tm = tree_map(m)
    _, _, Jq, conv = constraints.joint_coordinates(m, x, xd)
    pos = {k: i for i, k in enumerate(m.compiled.coord_joints)}
    qdd = (Jq @ xdd + conv)[[pos[k] for k in tm.joints]]
    return np.concatenate([qdd] + [xdd[3 * b:3 * b + 3] for b in tm.free])


def close(a, b, tol=1e-10):
    scale = max(1.0, np.abs(b).max(initial=0.0))
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


@pytest.mark.parametrize("name", CASES)
def test_accelerations_and_reactions_agree_at_random_states(name):
    m = CASES[name]()
    worst = 0.0
    for _ in range(4):
        t, q, qd, u = random_state(m)
        x, xd = tmt.absolute(m, q, qd)
        ne = newton_euler.accelerations(m, x, xd, t, u)
        out_ne = output_values(m, State(t, x, xd), u, "newton_euler")
        qdd_ne = joint_accelerations(m, x, xd, ne.qdd)
        for f in MINIMAL + (("recursive",) if supported(m) is None else ()):
            form = get_formulation(f)
            dyn = form.accelerations(m, q, qd, t, u)
            close(dyn.xdd, ne.qdd)
            close(dyn.qdd, qdd_ne)
            close(form.lam(m, dyn), ne.lam)
            out = output_values(m, State(t, q, qd, coords="joint"), u, f)
            close(out, out_ne)
            worst = max(worst, np.abs(out - out_ne).max() / max(1, np.abs(out_ne).max()))
    assert worst < 1e-10


@pytest.mark.parametrize("name", ["double_pendulum", "hinged_body_spring", "slider_crank",
                                  "four_bar", "container_crane_driven"])
def test_trajectories_agree_to_the_integration_tolerance(name):
    m = CASES[name]()
    forms = [f for f in FORMULATIONS if f != "recursive" or supported(m) is None]
    runs = {f: simulate(m, 0.5, 0.05, formulation=f) for f in forms}
    names = output_names(m)
    ref = runs["newton_euler"]
    for f in forms[1:]:
        for col in names:
            scale = max(1.0, np.abs(ref[col]).max())
            np.testing.assert_allclose(runs[f][col], ref[col], rtol=0, atol=1e-6 * scale,
                                       err_msg=f"{f}: {col}")
        assert runs[f]["constraint.residual"].max() < 1e-10


@pytest.mark.parametrize("formulation", MINIMAL)
def test_baumgarte_stabilisation_keeps_the_loop_closed(formulation):
    m = model("four_bar")
    r = simulate(m, 0.5, 0.05, formulation=formulation, stabilization="baumgarte")
    assert r["constraint.residual"].max() < 1e-6
