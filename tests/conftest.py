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
