"""Shared test fixtures; loads the hypothesis profile (see ``hypothesis_settings.py``)."""

import hypothesis_settings  # noqa: F401  (registers and loads the ci / dev profiles)
import mpmath
import pytest


@pytest.fixture(autouse=True)
def _restore_mpmath_precision():
    """Tests that raise mpmath's global precision must not change it for the next test."""
    dps = mpmath.mp.dps
    yield
    mpmath.mp.dps = dps


@pytest.fixture
def small_transforms(monkeypatch):
    """``guard(module)``: ``module.split_convolve`` fails on a transform of 1e5 points or more
    (lattices that must stay small at tiny sensitivity / scale)."""

    def guard(module):
        convolve = module.split_convolve

        def small(a, b, n):
            assert n < 10**5, f"a transform of {n} points"
            return convolve(a, b, n)

        monkeypatch.setattr(module, "split_convolve", small)

    return guard
