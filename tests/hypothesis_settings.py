"""Hypothesis settings shared by the property tests.

Two profiles (registered in ``conftest.py``):

- ``ci`` (the default): derandomized, so every machine draws the same examples and the suite
  passes or fails the same way everywhere;
- ``dev`` (``HYPOTHESIS_PROFILE=dev``): random seeds and ten times the examples, for exploring.
  Every counterexample it finds is kept in the test as an ``@example``.

A test asks for ``@examples(n)``: ``n`` examples under ``ci``, ``10 n`` under ``dev``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
SCALE = 10 if PROFILE == "dev" else 1

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True, database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev", derandomize=False, deadline=None, print_blob=True, max_examples=1000,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(PROFILE)


def examples(n: int) -> settings:
    """Settings for a property test: ``n`` examples under ``ci``, ``10 n`` under ``dev``."""
    return settings(max_examples=n * SCALE)
