"""Property test of the parameter compiler: small random model files whose
parameters flow through branches and library calls (np.sign, abs, min/max, np.clip,
math.isclose, np.where, floor, round, copysign, trig, powers...), compiled as a native FMU
compiles them; at random parameter sets inside the declared ranges (their ends, zero and
sign changes included), the engine with the compiled program either refuses the set or runs
the model data of build(**set) (equal to 1e-12), never other numbers with an OK status.

The engine in process (fmu_mb.engine.engine.Engine over the blob with its program) runs the
native FMU's own code path: mbe_set_parameters -> mbp_run (fmi2ExitInitializationMode calls
the same function); a few models also go through real native FMUs in fmpy. The models of
models/ are checked the same way. Seeded: the same models and sets on every run."""
import math
from pathlib import Path

import numpy as np
import pytest

from fmu_mb.engine.kernel import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler for the engine")

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


# ---------------------------------------------------------------------- random model files
class Gen:
    """Random expressions over the parameters p0..pn (source text), each of them finite for
    finite parameters (no division by a value that may be 0, no log of a negative)."""

    def __init__(self, rng, n):
        self.rng, self.n = rng, n

    def leaf(self):
        r = self.rng
        if r.uniform() < 0.75:
            return f"p{r.integers(self.n)}"
        return repr(round(float(r.uniform(-2.0, 2.0)), 3))

    def expr(self, depth=2):
        r = self.rng
        if depth == 0:
            return self.leaf()
        a, b = self.expr(depth - 1), self.expr(depth - 1)
        c = repr(round(float(r.uniform(-0.5, 0.5)), 2))
        forms = [
            f"np.sign({a})", f"abs({a})", f"np.abs({a})", f"max({a}, {b})",
            f"min({a}, {b})", f"np.maximum({a}, {b})", f"np.minimum({a}, {b})",
            f"np.clip({a}, -0.5, 0.8)",
            f"({a} if math.isclose({b}, {c}, abs_tol=0.2) else {b})",
            f"({a} if np.isclose({b}, {c}, atol=0.1) else 0.5 * {a})",
            f"math.copysign(1.0, {a})", f"math.floor({a})", f"round({a})",
            f"np.where({a} > {c}, {a}, {b})", f"math.sin({a})", f"np.cos({b})",
            f"({a}) ** 2", f"math.sqrt(abs({a}) + 0.1)", f"np.hypot({a}, {b})",
            f"math.atan2({a}, 1.0 + ({b}) ** 2)", f"({a} if {b} > {c} else -{a})",
            f"({a} + {b})", f"({a} * {b})", f"np.tanh({a})", f"int({a})",
            f"math.trunc({a})", f"np.floor({a})", f"np.rint({a})",
        ]
        return forms[int(r.integers(len(forms)))]


PARAM_KINDS = [  # (default, min, max): straddling 0, one-sided, wide positive, unbounded
    (0.4, -1.0, 1.0), (1.0, -2.0, 2.0), (0.3, 0.0, 1.0), (2.0, 1e-3, 1e3),
    (-0.7, None, None), (0.5, None, 1.5), (1.5, 0.1, None),
]


def model_text(seed):
    """A random model file (source text): a planar chain of one or two rods, or a spatial
    body on a spherical joint, its masses, lengths, angles, springs, restitution and gravity
    made of random expressions in 2-4 parameters."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    g = Gen(rng, n)
    params = []
    for k in range(n):
        d, lo, hi = PARAM_KINDS[int(rng.integers(len(PARAM_KINDS)))]
        params.append(f"    p{k} = mb.param('p{k}', {d!r}, '1', 'parameter {k}', "
                      f"min={lo!r}, max={hi!r})")
    e = lambda: g.expr(int(rng.integers(1, 3)))      # noqa: E731
    spatial = rng.uniform() < 0.3
    if spatial:
        body = f"""
    m = 0.5 + ({e()}) ** 2
    A = 0.01 + 0.01 * ({e()}) ** 2
    C = A * (1.0 + 0.5 * math.tanh({e()}))
    l = 0.2 + 0.1 * abs({e()})
    th = 0.3 + 0.2 * math.sin({e()})
    r = (0.0, -l * math.sin(th), l * math.cos(th))
    top = mb.body("top", mass=m, inertia=(A, A, C), position=r,
                  orientation=cardan(th, 0.0, 0.0),
                  angular_velocity=(0.0, 0.0, 5.0 + {e()}))
    mb.spherical("pivot", mb.ground, top, at=(0.0, 0.0, 0.0))
    mb.point("tip", top, (0.0, 0.0, 2 * l))
"""
        head = "mb = ModelBuilder('prop', overrides, gravity=(0.0, 0.0, -9.81))"
    else:
        two = rng.uniform() < 0.5
        body = f"""
    l1 = 0.3 + abs({e()})
    m1 = 0.5 + ({e()}) ** 2
    rod1 = mb.body("rod1", mass=m1, inertia=rod_inertia(m1, l1))
    mb.revolute("O", mb.ground, rod1, child_point=(-l1 / 2, 0.0), angle0=-math.pi / 2)
    mb.initial("O", value=0.3 * np.tanh({e()}), rate={e()})
    mb.rsda("s1", joint="O", stiffness=abs({e()}), damping=0.1 * ({e()}) ** 2)
    mb.point("tip1", rod1, (l1 / 2, 0.0))
"""
        if two:
            body += f"""
    l2 = 0.2 + 0.5 * ({e()}) ** 2
    m2 = 1.0 + abs({e()})
    rod2 = mb.body("rod2", mass=m2, inertia=rod_inertia(m2, l2))
    mb.revolute("A", rod1, rod2, parent_point=(l1 / 2, 0.0), child_point=(-l2 / 2, 0.0))
    mb.initial("A", value=0.5 * math.sin({e()}), rate=0.0)
"""
        if rng.uniform() < 0.5:
            body += f"""
    side = np.sign({e()})
    mb.contact("wall", rod1, (l1 / 2, 0.0), line_point=(2.0 * l1 * (side or 1.0), 0.0),
               normal=(-(side or 1.0), 0.0), restitution=np.clip(abs({e()}), 0, 1))
"""
        head = "mb = ModelBuilder('prop', overrides)"
        body = f"    mb.gravity = (0.0, -9.81 - abs({e()}))\n" + body
    return ('"""Random model {seed} of the parameter compiler\'s property test."""\n'
            "import math\n\nimport numpy as np\n\n"
            "from fmu_mb import ModelBuilder, cardan, rod_inertia\n\n\n"
            "def build(**overrides):\n"
            f"    {head}\n" + "\n".join(params) + "\n" + body + "    return mb.build()\n"
            ).replace("{seed}", str(seed))


# ---------------------------------------------------------------------- the property
def in_range_sets(model, rng, k):
    """k parameter sets inside the declared ranges: each parameter alone at an end of its
    range, at 0, at -default; then random sets of all of them."""
    ps = [p for p in model.parameters if isinstance(p.default, float) and not p.structural]
    out = []
    for p in ps:
        for v in (p.min, p.max, 0.0, -p.default):
            if v is not None and (p.min is None or v >= p.min) and \
                    (p.max is None or v <= p.max) and v != p.default:
                out.append({p.name: float(v)})
    rng.shuffle(out)
    out = out[:k // 2]
    while len(out) < k:
        s = {}
        for p in ps:
            lo = p.min if p.min is not None else p.default - 3 * (abs(p.default) + 1)
            hi = p.max if p.max is not None else p.default + 3 * (abs(p.default) + 1)
            s[p.name] = float(rng.uniform(lo, hi))
        out.append(s)
    return out


def close(a, b, scale):
    """Elementwise equal to 1e-12 relative to the slot, or to the numbers its expression is
    computed from (prog.scale: a zero computed as a difference of numbers near 0.1 is 1e-18
    in one order of operations, 7e-18 in another); equal infinities (the parameter table's
    bounds) are equal."""
    from fmu_mb.engine.params import _close
    return _close(a, b, rtol=1e-12, scale=scale)


def check_model(module, rng, n_sets):
    """(accepted, refused) counts over n_sets in-range sets; fails when the engine accepts a
    set whose model data differ from build(**set)'s."""
    from fmu_mb.engine.data import model_data, supported
    from fmu_mb.engine.engine import Engine
    from fmu_mb.engine.params import program_for
    from fmu_mb.errors import FmuMbError
    model = module.build()
    if supported(model) is not None:
        return None
    data, prog = program_for(module)
    blob = data.to_bytes(program=prog)
    table = {p.name: p for p in model.parameters}
    accepted = refused = 0
    for vals in in_range_sets(model, rng, n_sets):
        pv = [vals.get(n, table[n].value) if isinstance(table[n].value, float)
              else data.doubles[data.slots["DPARAM"][0] + 3 * k]
              for k, n in enumerate(data.parameter_names)]
        try:
            ref = model_data(module.build(**vals)).doubles
        except Exception:          # noqa: BLE001 - build() refuses: the engine must too
            ref = None
        eng = Engine(blob=blob, name=model.name)
        try:
            eng.set_parameters(pv)
        except FmuMbError:
            refused += 1
            continue
        if ref is None:
            # an assembly that does not close fails at the engine's initialisation too;
            # anything else build() refuses, the program must refuse
            try:
                module.build(**vals)
            except Exception as exc:     # noqa: BLE001
                from fmu_mb.errors import AssemblyError, DriftError, SingularSystemError
                assert isinstance(exc, (AssemblyError, DriftError, SingularSystemError)), (
                    f"{vals}: build() raises {type(exc).__name__}: {exc}; the compiled "
                    f"program accepted the set")
            continue
        got = eng.model_doubles()
        assert got.shape == ref.shape
        same = close(got, ref, prog.scale)
        assert np.all(same), (vals, np.flatnonzero(~same), got[~same], ref[~same],
                              "the compiled program accepted a set and gave other model "
                              "data than build()")
        accepted += 1
    return accepted, refused


def load_text(tmp_path, name, text):
    from fmu_mb.mechanics.loader import load_module
    path = Path(tmp_path) / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    return path, load_module(path)


def run_property(tmp_path, seeds, n_sets):
    totals = [0, 0]
    for seed in seeds:
        path, module = load_text(tmp_path, f"prop_{seed}", model_text(seed))
        try:
            module.build()
        except Exception:          # noqa: BLE001 - a random model that does not build
            continue
        got = check_model(module, np.random.default_rng(seed), n_sets)
        if got is None:
            continue
        totals[0] += got[0]
        totals[1] += got[1]
    return totals


def test_random_models_equal_or_refused(tmp_path):
    """20 random models x 10 in-range sets: equal or refused (both occur)."""
    accepted, refused = run_property(tmp_path, range(20), 10)
    assert accepted >= 20 and refused >= 10, (accepted, refused)


@pytest.mark.slow
def test_random_models_equal_or_refused_many(tmp_path):
    accepted, refused = run_property(tmp_path, range(100, 220), 16)
    assert accepted >= 100 and refused >= 50, (accepted, refused)


def test_random_models_through_native_fmus(tmp_path):
    """A few random models as real native FMUs in fmpy: each set refused (fmi2Error) or the
    outputs of build(**set) run in process (test_params_sound.refused_or_equal)."""
    pytest.importorskip("fmpy")
    from fmu_mb.fmi.native_build import build_native_fmu
    from test_params_sound import refused_or_equal
    seen = set()
    for seed in (3, 7):
        path, module = load_text(tmp_path, f"fmu_{seed}", model_text(seed))
        model = module.build()
        fmu = build_native_fmu(path, tmp_path / f"out_{seed}", platforms="linux64")
        rng = np.random.default_rng(seed)
        near = {p.name: p.default + 0.01 * (abs(p.default) + 0.1) for p in model.parameters
                if isinstance(p.default, float) and (p.max is None or p.default + 0.1 <= p.max)}
        for vals in [near] + in_range_sets(model, rng, 3):
            got, _ = refused_or_equal(fmu, path, vals, stop=0.05)
            seen.add(got)
    assert seen == {"equal", "refused"}, seen


#: the models whose compilation takes several seconds: their check runs with the slow tests
SLOW_MODELS = {"four_bar", "double_wishbone", "driven_arm", "container_crane_driven",
               "spatial_chain", "n_four_bar", "five_point_suspension", "excavator"}


@pytest.mark.parametrize("name", [pytest.param(p.stem, marks=pytest.mark.slow)
                                  if p.stem in SLOW_MODELS else p.stem
                                  for p in sorted(MODELS.glob("*.py"))])
def test_models_equal_or_refused(name):
    """Every model of models/ that the engine runs, at in-range sets: equal or refused."""
    from fmu_mb.mechanics.loader import load_module
    module = load_module(MODELS / f"{name}.py")
    got = check_model(module, np.random.default_rng(hash(name) % 1000), 6)
    if got is None:
        pytest.skip("the compiled engine does not run this model")
