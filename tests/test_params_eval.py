"""The parameter compiler's tape evaluation (fmu_mb.engine.params): the op list a tape keeps
(_Tape.ops, _run), the guards' nodes evaluated alone (_cone_ops), the magnitudes and the
parameter sets per node kept by the tape, against their node-by-node definitions, bit for bit
(non-finite values, signed zeros and every libm function included); and a draw that does not
build the sets its guards refuse gives the draws of the one that builds them."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

from fmu_mb.engine import params as P


def _plain_values(nodes, params):
    """Every node's value by the definition: node by node, each function on the floats of
    its children, stored as float64."""
    out = np.empty(len(nodes))
    for i, nd in enumerate(nodes):
        if nd[0] == "p":
            out[i] = params[nd[1]]
        elif nd[0] == "c":
            out[i] = nd[1]
        else:
            out[i] = P._FN[nd[0]](*[float(out[c]) for c in nd[1:]])
    return out


def _plain_magnitudes(nodes, ev):
    out = np.abs(np.asarray(ev, float))
    for i, nd in enumerate(nodes):
        if nd[0] not in ("p", "c"):
            out[i] = max(out[i], *[out[c] for c in nd[1:]])
    return out


def _plain_deps(nodes):
    """Per node, the parameters among the leaves reached from it (a search per node)."""
    out = []
    for i in range(len(nodes)):
        seen, todo, found = set(), [i], set()
        while todo:
            k = todo.pop()
            if k not in seen:
                seen.add(k)
                if nodes[k][0] == "p":
                    found.add(nodes[k][1])
                elif nodes[k][0] != "c":
                    todo.extend(nodes[k][1:])
        out.append(frozenset(found))
    return out


def _random_tape(rng, npar, n):
    fns = [f for f in P.UNARY + P.BINARY if P._FN[f] is not None]
    tape = P._Tape(npar)
    ids = [tape.node(("p", k)) for k in range(npar)]
    ids += [tape.const(v) for v in (0.5, -2.0, 0.0, -0.0, 1e300, 3.0)]
    for _ in range(n):
        f = fns[int(rng.integers(len(fns)))]
        near = ids[-10:] if rng.random() < 0.7 else ids
        kids = [near[int(rng.integers(len(near)))] for _ in range(2 if f in P.BINARY else 1)]
        ids.append(tape.node((f, *kids)))
    return tape


def _same(a, b):
    return np.asarray(a, float).tobytes() == np.asarray(b, float).tobytes()


@pytest.mark.parametrize("seed", range(6))
def test_tape_ops_evaluate_as_the_nodes_one_by_one(seed):
    """_eval_nodes through the tape's op list, the magnitudes and the parameter sets per node
    equal their definitions bit for bit, also after nodes are added to a tape whose ops and
    parameter sets were already made (extended, not rebuilt); the guards' nodes evaluated
    alone (_cone_ops) give the values of the whole evaluation."""
    rng = np.random.default_rng(seed)
    npar = 3
    tape = _random_tape(rng, npar, 150)
    sets = [rng.normal(size=npar), np.array([0.0, -0.0, 2.5]), np.array([-1.0, 1e200, 1e-300]),
            np.array([math.inf, -3.0, math.nan])]
    for grow in range(2):
        if grow:                      # more nodes after the first ops and deps
            fns = ["add", "mul", "div", "log", "sqrt", "atan2", "pow"]
            for _ in range(60):
                f = fns[int(rng.integers(len(fns)))]
                kids = [int(rng.integers(len(tape.nodes)))
                        for _ in range(2 if f in P.BINARY else 1)]
                tape.node((f, *kids))
        nodes, ops = tape.nodes, tape.ops()
        assert len(ops) == len(nodes)
        assert tape.deps() == _plain_deps(nodes)
        roots = sorted({int(r) for r in rng.integers(len(nodes), size=7)})
        sub, pos = P._cone_ops(ops, roots)
        assert len(sub) < len(nodes)
        with np.errstate(all="ignore"):
            for pv in sets:
                want = _plain_values(nodes, pv)
                got = P._eval_nodes(nodes, pv, ops)
                assert _same(got, want)
                assert _same(P._eval_nodes(nodes, pv), want)            # ops made here
                assert _same(P._magnitudes(nodes, got, ops), _plain_magnitudes(nodes, want))
                part = P._run(sub, pv)
                assert _same([part[pos[r]] for r in roots], want[roots])


def test_draw_skips_the_builds_of_sets_its_guards_refuse():
    """_draw with refused= (the sets whose guards are broken) draws the same sets and returns
    the same one as without it, building only the sets that are not refused; with hits to
    record (the probes: a refused set that changes the structure counts), it builds them."""
    pmap = {n: SimpleNamespace(default=v, min=None, max=None) for n, v in (("a", 1.0),
                                                                           ("b", 2.0))}
    bvals = {"a": 1.0, "b": 2.0}

    def refused(vals):
        return vals["a"] > 1.01            # a guard: another branch above 1.01

    def check(vals, D):
        return "guard" if refused(vals) else "ok"

    def run(**kw):
        built = []

        def data_of(values):
            built.append(dict(values))
            return np.array([values.get("a", 1.0), values.get("b", 2.0)])
        rng = np.random.default_rng(4)
        got = P._draw(["a", "b"], pmap, bvals, rng, 0.1, None, {}, data_of, check, **kw)
        return got, built, rng.uniform()

    (vals, D), built, after = run()
    (vals2, D2), built2, after2 = run(refused=refused)
    assert vals == vals2 and _same(D, D2) and after == after2     # the same draws follow
    assert 1 <= len(built2) < len(built)
    assert all(not refused(v) for v in built2)
    (vals3, _), built3, _ = run(refused=refused, hits=[])
    assert vals3 == vals and built3 == built
