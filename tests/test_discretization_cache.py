"""The discretization cache: bounded by bytes, lower versions computed only when asked for."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np

import plda
from plda._internal.caches import ByteBoundedCache
from plda.discretization.discretize import discretize


def _version(n: int) -> SimpleNamespace:
    return SimpleNamespace(probs=np.zeros(n))


class _Counting:
    """A stand-in discretizer recording each call's ``lower`` flag."""

    def __init__(self, n: int = 100):
        self.calls: list[tuple] = []
        self.n = n

    def __call__(self, law, step, lower):
        self.calls.append((law, step, lower))
        return _version(self.n), (_version(self.n) if lower else None)


def test_upper_only_then_both_keeps_the_upper_object():
    function = _Counting()
    cache = ByteBoundedCache(function, max_bytes=1 << 20)
    upper, lower = cache("law", 0.1, lower=False)
    assert lower is None
    assert cache("law", 0.1, lower=False)[0] is upper  # a hit
    both = cache("law", 0.1)
    assert both[0] is upper and both[1] is not None
    assert cache("law", 0.1) is both and cache("law", 0.1, lower=False) is both
    assert [call[2] for call in function.calls] == [False, True]
    # the bytes count the lower version once it is held, and the first entry is not counted twice
    assert cache.bytes == 2 * 800 + 1024


def test_bytes_bound_evicts_least_recently_used():
    cache = ByteBoundedCache(_Counting(1000), max_bytes=3 * (8000 + 1024))
    for name in "abcd":
        cache(name, 0.1, lower=False)
    assert list(key[0] for key in cache.entries) == ["b", "c", "d"]
    cache("b", 0.1)  # upgraded: now twice the bytes, so "c" goes
    assert list(key[0] for key in cache.entries) == ["d", "b"]
    assert cache.bytes == sum(size for _, size in cache.entries.values())


def test_real_discretization_lazy_lower_matches_the_full_one():
    law = plda.PoissonSampled(plda.Gaussian(0.93), sample_rate=0.013).privacy_loss("remove")
    plda.clear_caches()
    upper, lower = discretize(law, 1e-3, lower=False)
    assert lower is None
    same_upper, lower = discretize(law, 1e-3)
    assert same_upper is upper
    plda.clear_caches()
    fresh_upper, fresh_lower = discretize(law, 1e-3)
    assert fresh_upper is not upper
    np.testing.assert_array_equal(fresh_upper.probs, upper.probs)
    np.testing.assert_array_equal(fresh_lower.probs, lower.probs)
    assert fresh_lower.offset == lower.offset
    # the optimistic version really is below the pessimistic one
    eps = np.array([0.0, 0.5, 1.0])
    assert np.all(lower.delta(eps) <= upper.delta(eps))


def test_threads_mixing_upper_only_and_full_requests_agree():
    law = plda.PoissonSampled(plda.Gaussian(1.1), sample_rate=0.02).privacy_loss("remove")
    plda.clear_caches()
    results: list = [None] * 16
    barrier = threading.Barrier(16)

    def work(i: int) -> None:
        barrier.wait()
        pair = discretize(law, 2e-3, lower=i % 2 == 0)
        results[i] = (pair[0], discretize(law, 2e-3)[1])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    first_upper, first_lower = results[0]
    for upper, lower in results:
        np.testing.assert_array_equal(upper.probs, first_upper.probs)
        np.testing.assert_array_equal(lower.probs, first_lower.probs)
    # once settled, every caller gets the one held pair
    held = discretize(law, 2e-3)
    assert discretize(law, 2e-3, lower=False) is held
