"""Adapters to other libraries' interfaces (none of them is imported by ``import plda``).

- :mod:`plda.adapters.opacus`: :class:`PLDOpacusAccountant`, an Opacus accountant; importing the
  module registers it in Opacus (when installed) as ``PrivacyEngine(accountant="plda")``.
- :mod:`plda.adapters.dp_accounting`: :func:`from_dp_event`, dp_accounting events to a PLD;
  :mod:`plda.adapters.dp_privacy_accountant`: ``PLDPrivacyAccountant``, a
  ``dp_accounting.PrivacyAccountant`` built on it (needs dp_accounting).
- :mod:`plda.adapters.loaders`: which sampler a PyTorch data loader runs;
  :mod:`plda.adapters.epochs`: one-pass (shuffled) epochs of DP-SGD steps;
  :mod:`plda.adapters.certified`: two-sided certified bounds when a history holds samplers
  whose lower bound comes from a separate realized pair.
"""

from importlib import import_module

from plda.adapters.dp_accounting import from_dp_event

__all__ = ["PLDOpacusAccountant", "PLDPrivacyAccountant", "from_dp_event"]


def __getattr__(name: str):
    # the Opacus adapter imports Opacus (and torch) when they are installed, the dp_accounting
    # one dp_accounting: load them on first use
    if name == "PLDOpacusAccountant":
        return import_module("plda.adapters.opacus").PLDOpacusAccountant
    if name == "PLDPrivacyAccountant":
        return import_module("plda.adapters.dp_privacy_accountant").PLDPrivacyAccountant
    raise AttributeError(f"module 'plda.adapters' has no attribute {name!r}")
