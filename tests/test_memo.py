"""Caches keyed by models hold them weakly (fmu_mb.memo.per_object): a model no longer used
is freed, not kept by up to 128 lru_cache entries per cached function."""
import gc
import weakref

import pytest

from fmu_mb import simulate
from fmu_mb.memo import per_object

from conftest import model


@pytest.mark.parametrize("name,formulation", [("double_wishbone", None),
                                              ("double_wishbone", "tmt"),
                                              ("slider_crank", None),
                                              ("slider_crank", "lagrange")])
def test_a_simulated_model_is_freed_after_its_last_use(name, formulation):
    m = model(name)
    kw = {"formulation": formulation} if formulation else {}
    r = simulate(m, 0.03, 0.01, **kw)
    assert len(r["time"]) == 4
    dead = weakref.ref(m)
    del m
    gc.collect()
    assert dead() is None, [type(o).__name__ for o in gc.get_referrers(dead())]


def test_per_object_caches_per_identity_and_forgets_the_dead():
    calls = []

    class Thing:
        pass

    @per_object
    def f(obj):
        calls.append(type(obj).__name__)      # (not obj: that would keep it)
        return len(calls)

    a, b = Thing(), Thing()
    assert (f(a), f(a), f(b), f(a)) == (1, 1, 2, 1)
    assert len(f._cache) == 2
    del a
    gc.collect()
    assert len(f._cache) == 1                       # a's entry went with it
    c = Thing()                                     # (may take a's id: not a's value)
    assert f(c) == 3 and f(b) == 2
    assert f(1.5) == 4 and f(1.5) == 5              # not weakly referenceable: not cached
    f.cache_clear()
    assert f(b) == 6
