"""Shared numerics of the exact references in :mod:`plda.testing` (a private package: its
modules are for plda.testing only, with public names so they may be shared)."""
