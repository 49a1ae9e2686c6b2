"""The accountant: a history of mechanisms, its composition path and its saved state."""

from plda.accounting.accountant import PLDAccountant

__all__ = ["PLDAccountant"]
