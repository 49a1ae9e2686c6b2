"""The range of shift / sigma over which plda accounts mixtures of Gaussians.

A mixture with two or more distinct shifts (:class:`~plda.GaussianMixture`, a Poisson-sampled
Gaussian) has losses from about 0 to ``mu^2 / 2``; a single shift is the Gaussian law, whose
range (``MU_RANGE``, up to 1e15) is its own.
"""

from __future__ import annotations

from plda._internal.errors import UncoveredParametersError
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import MU_RANGE, Gaussian
from plda.mechanisms.imported import GaussianDP

#: largest shift / sigma of a mixture with two or more distinct shifts (a Poisson-sampled
#: Gaussian included): its losses span from about 0 to ``mu^2 / 2``, and the grid cells that
#: cover that span, each integrated by quadrature, grow with ``mu`` beyond it (at ``mu = 1e10``,
#: minutes for one query; 10 GiB per array before the quadrature was blocked). A single shift
#: (the Gaussian law itself) keeps the Gaussian range, up to 1e15
MIXTURE_MU_MAX = 1e8


def check_mixture_mu(name: str, mu: float) -> float:
    """``mu`` (the largest shift over sigma of a mixture) at most :data:`MIXTURE_MU_MAX`.

    Parameters
    ----------
    name : str
        The public arguments ``mu`` is made of, for the message.
    mu : float
        The value.

    Returns
    -------
    float
        ``mu``.

    Raises
    ------
    UncoveredParametersError
        (a ``ValueError``) If ``mu`` exceeds :data:`MIXTURE_MU_MAX`.
    """
    if mu > MIXTURE_MU_MAX:
        raise UncoveredParametersError(
            f"{name} must be at most {MIXTURE_MU_MAX:g} for a mixture of Gaussians (a "
            f"Poisson-sampled Gaussian included; its losses span 0 to mu^2 / 2, too wide for "
            f"the grid beyond; in DP-SGD, sensitivity / sigma is 1 / noise_multiplier), got "
            f"{mu:g}; a Gaussian run on every record takes up to {MU_RANGE[1]:g}"
        )
    return mu


def check_sampled_mu(mechanism: Mechanism, sample_rate: float, group_size: int,
                     factor: int = 1) -> None:
    """:func:`check_mixture_mu` for a sampled Gaussian (or GaussianDP) base.

    With ``sample_rate < 1`` the pair is a mixture of the shifts ``0..factor K mu``; the
    message names the sampler's arguments (not those of the mixture it builds).

    Parameters
    ----------
    mechanism : Mechanism
        The base; other bases than a Gaussian or GaussianDP pass.
    sample_rate : float
        The sampling probability; 1 passes (the base itself).
    group_size : int
        Records of the protected unit ``K``.
    factor : int, optional
        2 for a sampler whose removal is a substitution (a fixed-size batch: the sensitivity
        doubles).

    Raises
    ------
    UncoveredParametersError
        (a ``ValueError``) If ``K mu`` exceeds :data:`MIXTURE_MU_MAX`.
    """
    if sample_rate < 1 and type(mechanism) in (Gaussian, GaussianDP):
        name = "sensitivity / sigma" if type(mechanism) is Gaussian else "mu"
        prefix = (f"{factor} * " if factor > 1 else "") + ("group_size * " if group_size > 1
                                                           else "")
        check_mixture_mu(prefix + name, factor * group_size * mechanism.mu)
