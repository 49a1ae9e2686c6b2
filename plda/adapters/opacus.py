"""An Opacus-compatible accountant backed by :class:`~plda.PLDAccountant`.

``PLDOpacusAccountant`` has the interface of Opacus's accountants (``step(*, noise_multiplier,
sample_rate)``, ``get_epsilon(delta)``, ``__len__``, ``mechanism()``, ``history``,
``state_dict``/``load_state_dict``, ``get_optimizer_hook_fn(sample_rate)``), duck-typed so
Opacus need not be installed. In a ``PrivacyEngine``::

    engine = opacus.PrivacyEngine()
    engine.accountant = PLDOpacusAccountant()
    model, optimizer, loader = engine.make_private(module=..., optimizer=..., data_loader=...,
                                                   noise_multiplier=1.1, max_grad_norm=1.0)
    ...
    engine.get_epsilon(1e-5)          # certified upper bound

``make_private_with_epsilon`` asks Opacus's own calibration for the accountant's mechanism name,
which Opacus does not know: calibrate with :func:`plda.calibrate_noise_multiplier` instead.
"""

from __future__ import annotations

from collections import OrderedDict

from plda.accountant import PLDAccountant
from plda.mechanisms import Gaussian, PoissonSampled
from plda.pld import DEFAULT_ACCURACY

__all__ = ["PLDOpacusAccountant"]


class PLDOpacusAccountant:
    """Opacus-style accountant: certified PLD bounds for DP-SGD steps.

    Parameters
    ----------
    relation, accuracy
        As for :class:`~plda.PLDAccountant`.
    """

    def __init__(self, relation: str = "add_remove", accuracy: float = DEFAULT_ACCURACY):
        self.accountant = PLDAccountant(relation=relation, accuracy=accuracy)

    @classmethod
    def mechanism(cls) -> str:
        """Accounting mechanism name."""
        return "plda-pld"

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one DP-SGD step (noise multiplier sigma, Poisson sample rate q)."""
        self.accountant.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate)

    def get_epsilon(self, delta: float, **kwargs) -> float:
        """Certified upper bound on epsilon at ``delta``; 0 before the first step."""
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)} (plda takes only delta)")
        return float(self.accountant.epsilon(delta))

    def get_epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """Certified ``(lower, upper)`` epsilon bounds at ``delta``."""
        lower, upper = self.accountant.epsilon_bounds(delta)
        return float(lower), float(upper)

    def __len__(self) -> int:
        return len(self.accountant)

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """Opacus-style history ``[(noise_multiplier, sample_rate, steps), ...]`` of the DP-SGD
        steps (other mechanisms composed on :attr:`accountant` are not listed)."""
        out = []
        for mechanism, count in self.accountant.history:
            if isinstance(mechanism, PoissonSampled) and type(mechanism.mechanism) is Gaussian:
                inner = mechanism.mechanism
                if inner.sensitivity == 1.0:
                    out.append((inner.sigma, mechanism.sample_rate, count))
        return out

    def get_optimizer_hook_fn(self, sample_rate: float):
        """Callback for Opacus's ``DPOptimizer.attach_step_hook``: records a step with the
        optimizer's noise multiplier and ``sample_rate`` times its accumulated iterations."""

        def hook_fn(optimizer) -> None:
            self.step(
                noise_multiplier=optimizer.noise_multiplier,
                sample_rate=sample_rate * getattr(optimizer, "accumulated_iterations", 1),
            )

        return hook_fn

    def state_dict(self, destination: dict | None = None) -> dict:
        """Opacus-style state: ``history`` and ``mechanism`` plus the full plda state under
        ``"plda"`` (JSON-serializable)."""
        if destination is None:
            destination = OrderedDict()
        destination["history"] = self.history
        destination["mechanism"] = self.mechanism()
        destination["plda"] = self.accountant.state_dict()
        return destination

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore from :meth:`state_dict` (``ValueError`` and no change on a bad state)."""
        if not isinstance(state_dict, dict) or not state_dict:
            raise ValueError("state_dict must be a non-empty dict from state_dict()")
        if state_dict.get("mechanism") != self.mechanism():
            raise ValueError(
                f"state_dict is from the accountant {state_dict.get('mechanism')!r}, not "
                f"{self.mechanism()!r}"
            )
        if "plda" not in state_dict:
            raise ValueError("state_dict has no 'plda' entry")
        self.accountant.load_state_dict(state_dict["plda"])
