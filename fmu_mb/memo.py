"""per_object: a function of one object (a Model) cached for as long as that object lives.

functools.lru_cache(maxsize=128) keyed by models kept the last 128 models (and everything
they hold) alive after their last use; this cache holds its keys weakly. A lookup is one
dict access by id() and a weak reference's call (about lru_cache's cost); the entry goes
when the object dies. The cached value must not refer to the object (else it never dies).
"""
import functools
import weakref


def per_object(fn):
    """fn(obj) computed once per live obj (identity), held weakly; objects that cannot be
    weakly referenced are not cached. wrapper.cache_clear() empties the cache."""
    cache = {}                                  # id(obj) -> (weak reference, value)

    @functools.wraps(fn)
    def wrapper(obj):
        key = id(obj)
        hit = cache.get(key)
        if hit is not None and hit[0]() is obj:
            return hit[1]
        value = fn(obj)
        try:
            ref = weakref.ref(obj, functools.partial(_forget, cache, key))
        except TypeError:                       # not weakly referenceable: not cached
            return value
        cache[key] = (ref, value)
        return value

    wrapper.cache_clear = cache.clear
    wrapper._cache = cache
    return wrapper


def _forget(cache, key, ref):
    """The object behind `ref` died: drop its entry (unless the id is another's by now)."""
    hit = cache.get(key)
    if hit is not None and hit[0] is ref:
        del cache[key]
