"""Adapters to other libraries' interfaces (none of them is imported at runtime).

- :mod:`plda.adapters.opacus`: :class:`PLDOpacusAccountant`, an Opacus-style accountant.
- :mod:`plda.adapters.dp_accounting`: :func:`from_dp_event`, dp_accounting events to a PLD.
"""

from plda.adapters.dp_accounting import from_dp_event
from plda.adapters.opacus import PLDOpacusAccountant

__all__ = ["PLDOpacusAccountant", "from_dp_event"]
