"""An Opacus accountant backed by :class:`~plda.PLDAccountant`, registered as ``"plda"``.

``PLDOpacusAccountant`` has the interface of Opacus's accountants (``step(*, noise_multiplier,
sample_rate)``, ``get_epsilon(delta)``, ``__len__``, ``mechanism()``, ``history``,
``state_dict``/``load_state_dict``, ``get_optimizer_hook_fn(sample_rate)``). Importing this
module registers it in Opacus's accountant registry under ``"plda"`` when Opacus is installed
(``pip install torch opacus``; without them the class still works on its own)::

    import plda.adapters.opacus  # registers "plda"
    engine = opacus.PrivacyEngine(accountant="plda")
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=..., optimizer=..., data_loader=..., target_epsilon=1.0, target_delta=1e-5,
        epochs=5, max_grad_norm=1.0)
    ...
    engine.get_epsilon(1e-5)                          # certified upper bound
    engine.accountant.get_epsilon_bounds(1e-5)        # Bounds(lower=..., upper=...)

The accountant assumes Poisson subsampling (Opacus's ``DPDataLoader``). When Opacus's
``make_private`` attaches it to an optimizer, it inspects the data loader actually used and
warns with :class:`~plda.SamplerMismatchWarning` if the batches are not Poisson-sampled
(``poisson_sampling=False``: fixed-size shuffled or sequential batches); call
:func:`check_sampler` yourself on any other loader.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections import OrderedDict

from plda._internal.errors import SamplerMismatchWarning
from plda.accountant import PLDAccountant
from plda.mechanisms import Gaussian, PoissonSampled
from plda.pld import DEFAULT_ACCURACY, Bounds

try:  # optional: register in Opacus's registry when it is installed
    from opacus.accountants import IAccountant as OpacusAccountant
    from opacus.accountants import register_accountant
except ImportError:  # Opacus (or torch) missing: the class works on its own
    OpacusAccountant = register_accountant = None

__all__ = ["MECHANISM", "PLDOpacusAccountant", "check_sampler"]

#: the name under which the accountant is registered in Opacus (``PrivacyEngine(accountant=...)``)
MECHANISM = "plda"
#: names of earlier versions' state dicts, still loadable
_OLD_MECHANISMS = ("plda-pld",)
#: Opacus's batch samplers that draw each record independently with probability sample_rate
_POISSON_SAMPLERS = ("UniformWithReplacementSampler", "DistributedUniformWithReplacementSampler")
#: how many frames up the optimizer-hook request looks for Opacus's ``make_private``
_FRAME_DEPTH = 4


def check_sampler(data_loader) -> str:
    """Name the sampling scheme of a PyTorch data loader; warn unless it is Poisson.

    Poisson subsampling (Opacus's ``DPDataLoader``, whose batch sampler is
    ``UniformWithReplacementSampler``) is what DP-SGD accounting with a ``sample_rate`` assumes.
    Fixed-size batches from a shuffled or sequential loader are a different mechanism, for which
    the Poisson epsilon can be far too small (Lebeda, Regehr, Kamath & Steinke 2024; Chua et al.
    2024).

    Parameters
    ----------
    data_loader
        A ``torch.utils.data.DataLoader`` (read duck-typed: ``batch_sampler`` and its
        ``sampler``).

    Returns
    -------
    str
        ``"poisson"``, ``"shuffled"`` (``shuffle=True``), ``"sequential"``,
        ``"with_replacement"`` (``RandomSampler(replacement=True)``), ``"weighted"``
        (``WeightedRandomSampler``) or ``"unknown"``.

    Warns
    -----
    SamplerMismatchWarning
        For every result but ``"poisson"``.
    """
    kind, description = _classify(data_loader)
    if kind != "poisson":
        _warn(kind, description, stacklevel=2)
    return kind


def _classify(data_loader) -> tuple[str, str]:
    """``(kind, "BatchSampler over Sampler")`` of a data loader (see :func:`check_sampler`)."""
    batch_sampler = getattr(data_loader, "batch_sampler", None)
    name = type(batch_sampler).__name__
    if name in _POISSON_SAMPLERS and type(batch_sampler).__module__.startswith("opacus"):
        return "poisson", name
    sampler = getattr(batch_sampler, "sampler", None) or getattr(data_loader, "sampler", None)
    inner = type(sampler).__name__
    if inner == "RandomSampler":
        kind = "with_replacement" if getattr(sampler, "replacement", False) else "shuffled"
    elif inner == "SequentialSampler":
        kind = "sequential"
    elif inner == "WeightedRandomSampler":
        kind = "weighted"
    else:
        kind = "unknown"
    return kind, f"{name} over {inner}"


def _warn(kind: str, description: str, stacklevel: int) -> None:
    """Warn with :class:`SamplerMismatchWarning`; ``stacklevel`` as seen from the caller."""
    warnings.warn(
        f"the data loader draws {kind} batches ({description}), but the accountant assumes "
        "Poisson subsampling: its epsilon is not a bound for this training. Use Opacus's "
        "make_private(..., poisson_sampling=True) (or DPDataLoader.from_data_loader), or account "
        "with the sampler that ran (e.g. plda.PLDAccountant.compose with a fixed-size or "
        "shuffled sampler mechanism).",
        SamplerMismatchWarning,
        stacklevel=stacklevel + 1,
    )


def _check_caller_loader() -> None:
    """If Opacus's ``PrivacyEngine.make_private`` is asking for the optimizer hook, check the
    data loader it prepared (best effort: reads the caller's local ``data_loader``; silent when
    the call comes from elsewhere)."""
    frame = sys._getframe(2)  # 0: here, 1: get_optimizer_hook_fn, 2: its caller
    for depth in range(_FRAME_DEPTH):
        if frame is None:
            return
        code = frame.f_code
        if code.co_name == "make_private" and "opacus" in code.co_filename:
            loader = frame.f_locals.get("data_loader")
            kind, description = _classify(loader)
            if kind != "poisson":
                # point the warning at the user's call of make_private (its caller's frame)
                _warn(kind, description, stacklevel=4 + depth)
            return
        frame = frame.f_back


class PLDOpacusAccountant:
    """Opacus accountant: certified PLD bounds for DP-SGD steps.

    Parameters
    ----------
    relation, accuracy
        As for :class:`~plda.PLDAccountant`.

    Examples
    --------
    >>> from plda.adapters.opacus import PLDOpacusAccountant
    >>> acct = PLDOpacusAccountant()
    >>> for _ in range(10):
    ...     acct.step(noise_multiplier=1.1, sample_rate=0.01)
    >>> acct.history, acct.get_epsilon(1e-5) < 1
    ([(1.1, 0.01, 10)], True)
    """

    def __init__(self, relation: str = "add_remove", accuracy: float = DEFAULT_ACCURACY):
        self.accountant = PLDAccountant(relation=relation, accuracy=accuracy)

    @classmethod
    def mechanism(cls) -> str:
        """Accounting mechanism name (the key in Opacus's registry)."""
        return MECHANISM

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one DP-SGD step (noise multiplier sigma, Poisson sample rate q)."""
        self.accountant.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate)

    def get_epsilon(self, delta: float, **kwargs) -> float:
        """Certified upper bound on epsilon at ``delta``; 0 before the first step."""
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)} (plda takes only delta)")
        return float(self.accountant.epsilon(delta))

    def get_epsilon_bounds(self, delta: float) -> Bounds:
        """Certified ``Bounds(lower=..., upper=...)`` on epsilon at ``delta``."""
        bounds = self.accountant.epsilon_bounds(delta)
        return Bounds(lower=float(bounds.lower), upper=float(bounds.upper))

    def __len__(self) -> int:
        return len(self.accountant)

    def __repr__(self) -> str:
        return (
            f"PLDOpacusAccountant(relation={self.accountant.relation!r}, "
            f"accuracy={self.accountant.accuracy!r}, steps={len(self)})"
        )

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """Opacus-style history ``[(noise_multiplier, sample_rate, steps), ...]`` of the DP-SGD
        steps (other mechanisms composed on :attr:`accountant` are not listed).

        Assigning a list of such triples replaces everything recorded (Opacus's
        ``get_noise_multiplier`` does this); on a bad entry nothing changes.
        """
        out = []
        for mechanism, count in self.accountant.history:
            if isinstance(mechanism, PoissonSampled) and type(mechanism.mechanism) is Gaussian:
                inner = mechanism.mechanism
                if inner.sensitivity == 1.0:
                    out.append((inner.sigma, mechanism.sample_rate, count))
        return out

    @history.setter
    def history(self, entries) -> None:
        fresh = PLDAccountant(relation=self.accountant.relation, accuracy=self.accountant.accuracy)
        for entry in entries:
            try:
                noise_multiplier, sample_rate, steps = entry
            except (TypeError, ValueError):
                raise ValueError(
                    f"history entries must be (noise_multiplier, sample_rate, steps), got {entry!r}"
                ) from None
            if isinstance(noise_multiplier, (int, float)) and math.isinf(noise_multiplier):
                continue  # infinite noise: the step reveals nothing
            if steps != 0:
                fresh.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate, count=steps)
        self.accountant = fresh

    def get_optimizer_hook_fn(self, sample_rate: float):
        """Callback for Opacus's ``DPOptimizer.attach_step_hook``: records a step with the
        optimizer's noise multiplier and ``sample_rate`` times its accumulated iterations.

        Called from Opacus's ``make_private``, it first checks the data loader that
        ``make_private`` prepared (:func:`check_sampler`)."""
        _check_caller_loader()

        def hook_fn(optimizer) -> None:
            self.step(
                noise_multiplier=optimizer.noise_multiplier,
                sample_rate=sample_rate * getattr(optimizer, "accumulated_iterations", 1),
            )

        return hook_fn

    def state_dict(self, destination: dict | None = None) -> dict:
        """Opacus-style state: ``history`` and ``mechanism`` plus the full plda state under
        ``"plda"`` (JSON-serializable; saved by Opacus's ``PrivacyEngine.save_checkpoint``)."""
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
        name = state_dict.get("mechanism")
        if name != self.mechanism() and name not in _OLD_MECHANISMS:
            raise ValueError(f"state_dict is from the accountant {name!r}, not {MECHANISM!r}")
        if "plda" not in state_dict:
            raise ValueError("state_dict has no 'plda' entry")
        self.accountant.load_state_dict(state_dict["plda"])


if OpacusAccountant is not None:
    # a virtual subclass: isinstance(acct, IAccountant) holds without Opacus at class definition
    OpacusAccountant.register(PLDOpacusAccountant)
    register_accountant(MECHANISM, PLDOpacusAccountant, force=True)
