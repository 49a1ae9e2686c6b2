"""Which sampler does a PyTorch data loader run? Read duck-typed (torch is never imported).

:func:`describe_loader` names the scheme and says whether plda can account for it; the
messages of :class:`~plda.SamplerMismatchWarning` (the text of :func:`mismatch_message`) say
what the user must do when the accounting assumption does not match the loader.
"""

from __future__ import annotations

from dataclasses import dataclass

from plda._internal.errors import SamplerMismatchWarning, warn

__all__ = [
    "LoaderSampler",
    "check_sampler",
    "describe_loader",
    "mismatch_message",
    "not_certified_message",
    "refusal_message",
]

#: Opacus's batch samplers that draw each record independently with probability sample_rate
POISSON_SAMPLERS = ("UniformWithReplacementSampler", "DistributedUniformWithReplacementSampler")
#: kinds of loader in which every record is in exactly one batch per pass (an epoch)
ONE_PASS_KINDS = ("shuffled", "sequential")


@dataclass(frozen=True)
class LoaderSampler:
    """What a data loader draws.

    Attributes
    ----------
    kind
        ``"poisson"`` (Opacus's ``DPDataLoader``), ``"shuffled"`` (``shuffle=True``: consecutive
        chunks of a random permutation), ``"sequential"`` (``shuffle=False``),
        ``"with_replacement"`` (``RandomSampler(replacement=True)``), ``"weighted"``
        (``WeightedRandomSampler``) or ``"unknown"``.
    description
        ``"BatchSampler over RandomSampler"`` and the like, for messages.
    num_batches
        Batches per pass over the loader (``len(loader)``), ``None`` when unknown.
    every_record_once
        For the one-pass kinds: whether every record is in exactly one batch of each pass
        (not so with ``drop_last=True`` and a partial last batch, or a sampler that draws fewer
        records than the dataset holds). What :class:`~plda.Shuffled` accounting needs.
    """

    kind: str
    description: str
    num_batches: int | None = None
    every_record_once: bool = False


def _length(obj) -> int | None:
    try:
        return len(obj)
    except TypeError:
        return None


def describe_loader(data_loader) -> LoaderSampler:
    """The sampler a ``torch.utils.data.DataLoader`` runs.

    Parameters
    ----------
    data_loader : torch.utils.data.DataLoader
        The loader, read duck-typed through ``batch_sampler``, its ``sampler``, ``drop_last``
        and ``batch_size``.

    Returns
    -------
    LoaderSampler
        Its kind (``"unknown"`` for anything else), description, batches per pass and whether
        every record is in exactly one batch of each pass.
    """
    batch_sampler = getattr(data_loader, "batch_sampler", None)
    name = type(batch_sampler).__name__
    if name in POISSON_SAMPLERS and type(batch_sampler).__module__.startswith("opacus"):
        return LoaderSampler(kind="poisson", description=name,
                             num_batches=_length(data_loader))
    sampler = getattr(batch_sampler, "sampler", None) or getattr(data_loader, "sampler", None)
    inner = type(sampler).__name__
    description = f"{name} over {inner}"
    size = _length(getattr(data_loader, "dataset", None))
    drawn = _length(sampler)
    if inner == "RandomSampler" and getattr(sampler, "replacement", False):
        kind = "with_replacement"
    elif inner == "RandomSampler":
        kind = "shuffled"
    elif inner == "SequentialSampler":
        kind = "sequential"
    elif inner == "WeightedRandomSampler":
        kind = "weighted"
    else:
        kind = "unknown"
    once = False
    if kind in ONE_PASS_KINDS and name == "BatchSampler" and size is not None and size == drawn:
        batch = getattr(batch_sampler, "batch_size", None)
        drop = getattr(batch_sampler, "drop_last", True)
        once = isinstance(batch, int) and batch >= 1 and (not drop or size % batch == 0)
        if getattr(batch_sampler, "drop_last", False) and not once:
            description += " with drop_last=True (a partial last batch is dropped)"
    elif kind in ONE_PASS_KINDS and drawn is not None and size is not None and drawn != size:
        description += f" drawing {drawn} of {size} records per pass"
    return LoaderSampler(kind=kind, description=description, num_batches=_length(data_loader),
                         every_record_once=once)


def mismatch_message(found: LoaderSampler, relation: str) -> str:
    """What is wrong with accounting ``found`` as Poisson subsampling, and what to do.

    Parameters
    ----------
    found : LoaderSampler
        What the loader draws.
    relation : str
        The relation accounted under (the advice depends on it).

    Returns
    -------
    str
        The message of the :class:`~plda.SamplerMismatchWarning`.
    """
    head = (
        f"the data loader draws {found.kind} batches ({found.description}), but the accountant "
        "assumes Poisson subsampling: its epsilon is not a bound for this training (it can be "
        "far too small: Lebeda et al. 2024, Chua et al. 2024). "
    )
    poisson = "use Opacus's make_private(..., poisson_sampling=True) (or DPDataLoader)"
    if found.kind in ONE_PASS_KINDS and found.every_record_once:
        if relation == "replace_one":  # PLDOpacusAccountant does this itself in make_private
            return head + (
                "Every record is used once per epoch: account each pass as one plda.Shuffled "
                f"epoch (PLDOpacusAccountant.account_one_pass), or {poisson}."
            )
        return head + (
            "Every record is used once per epoch: plda accounts this as one plda.Shuffled epoch "
            "per len(loader) steps, which is sound under the replace-one relation only (when "
            "a record is removed, the later batches of a chunked permutation shift). Set "
            "engine.accountant = PLDOpacusAccountant(relation='replace_one') before "
            f"make_private, or {poisson}."
        )
    if found.kind in ONE_PASS_KINDS:
        return head + (
            "Not every record is in a batch of every pass, so plda's shuffled accounting does "
            f"not cover it either: use drop_last=False and the whole dataset, or {poisson}."
        )
    if found.kind == "with_replacement":
        return head + (
            "A record can be drawn several times into one batch, and plda has no sound "
            f"analysis of sampling with replacement: {poisson}."
        )
    if found.kind == "weighted":
        return head + (
            "WeightedRandomSampler draws with replacement and unequal probabilities, so a "
            "heavy record is in a batch far more often than sample_rate says; plda has no "
            f"sound analysis of it: {poisson} (it samples every record at the same rate)."
        )
    return head + (
        f"plda cannot tell how this loader draws its batches: {poisson}, or account the "
        "sampler that ran (plda.sampled_mechanism builds its mechanism "
        "for plda.PLDAccountant.compose)."
    )


def refusal_message(found: LoaderSampler, relation: str) -> str:
    """Why a strict Opacus accountant refuses ``found`` under ``relation``, and what to do.

    Parameters
    ----------
    found : LoaderSampler
        What the loader draws.
    relation : str
        The relation accounted under.

    Returns
    -------
    str
        The message of the ``ValueError``.
    """
    return (
        "PLDOpacusAccountant(strict=True) refuses this loader before training: "
        f"{mismatch_message(found, relation)} PLDOpacusAccountant(strict=False) would account "
        "the steps as Poisson anyway, with an epsilon that is not certified for this training."
    )


def not_certified_message(found: LoaderSampler, relation: str) -> str:
    """The warning of a non-strict Opacus accountant that accounts ``found`` as Poisson.

    Parameters
    ----------
    found : LoaderSampler
        What the loader draws.
    relation : str
        The relation accounted under.

    Returns
    -------
    str
        The message of the :class:`~plda.SamplerMismatchWarning`.
    """
    return (
        f"{mismatch_message(found, relation)} Accounted as Poisson anyway (strict=False): the "
        "reported epsilon is NOT certified for this training."
    )


def check_sampler(data_loader, relation: str = "add_remove") -> str:
    """Name the sampling scheme of a PyTorch data loader; warn unless it is Poisson.

    Poisson subsampling (Opacus's ``DPDataLoader``, whose batch sampler is
    ``UniformWithReplacementSampler``) is what DP-SGD accounting with a ``sample_rate`` assumes.
    Fixed-size batches from a shuffled or sequential loader are a different mechanism, for which
    the Poisson epsilon can be far too small (Lebeda, Regehr, Kamath & Steinke 2024; Chua et al.
    2024).

    Parameters
    ----------
    data_loader : torch.utils.data.DataLoader
        The loader (read duck-typed: ``batch_sampler`` and its ``sampler``).
    relation : str, optional
        The relation you account under: the warning's advice depends on it.

    Returns
    -------
    str
        ``"poisson"``, ``"shuffled"`` (``shuffle=True``), ``"sequential"``,
        ``"with_replacement"`` (``RandomSampler(replacement=True)``), ``"weighted"``
        (``WeightedRandomSampler``) or ``"unknown"``.

    Warns
    -----
    SamplerMismatchWarning
        For every result but ``"poisson"``, saying what to do.
    """
    found = describe_loader(data_loader)
    if found.kind != "poisson":
        warn(mismatch_message(found, relation), SamplerMismatchWarning)
    return found.kind
