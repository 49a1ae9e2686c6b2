"""The privacy accountant of a training loop (:class:`PLDAccountant`).

The code lives in :mod:`plda.accounting` (:mod:`~plda.accounting.accountant`, the public class;
:mod:`~plda.accounting.composition`, its composition path; :mod:`~plda.accounting.history`,
horizons and checkpoints; :mod:`~plda.accounting.state`, saved states); this module keeps the
name importable from ``plda.accountant``.
"""

from __future__ import annotations

from plda.accounting.accountant import PLDAccountant
from plda.accounting.history import checkpoint as _checkpoint
from plda.accounting.history import dominating as _dominating
from plda.accounting.history import horizon as _horizon

__all__ = ["PLDAccountant"]
# documented, pickled and shown as plda.accountant.PLDAccountant, its public home
PLDAccountant.__module__ = __name__
# the history helpers under their former names (the tests of horizons import them from here)
_HISTORY_HELPERS = (_checkpoint, _dominating, _horizon)
