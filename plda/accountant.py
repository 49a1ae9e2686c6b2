"""Deprecated (removed in plda 0.2.0): the accountant is ``plda.PLDAccountant`` (defined in
:mod:`plda.accounting.accountant`). Reading ``plda.accountant.PLDAccountant`` warns."""

from __future__ import annotations

from plda._internal.deprecation import moved_names
from plda.accounting import accountant

__all__: list[str] = []  # nothing here is public any more

__getattr__, __dir__ = moved_names(
    __name__, {"PLDAccountant": ("plda.PLDAccountant", lambda: accountant.PLDAccountant)}
)
