"""The accountant: a history of mechanisms, its composition path and its saved state."""

from plda.accounting.accountant import PLDAccountant
from plda.accounting.matrix import MatrixAccountant

__all__ = ["MatrixAccountant", "PLDAccountant"]
