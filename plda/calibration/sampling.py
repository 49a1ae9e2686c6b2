"""The sampler of a DP-SGD calibration: a registry name with its sizes, or a callable.

The calibration functions take ``sampler`` as :meth:`plda.PLDAccountant.step` and
:func:`plda.sampled_mechanism` do -- a name of :data:`plda.samplers.STEP_SAMPLERS` with its
sizes, built through :class:`plda.samplers.SamplerStep` (the one registry) -- or as a callable
``(noise_multiplier, sample_rate) -> Mechanism``.
"""

from __future__ import annotations

from collections.abc import Mapping

from plda.samplers import (
    SAMPLERS,
    SIZES,
    STEP_SAMPLERS,
    Sampler,
    SamplerStep,
    fixed_batch_size,
)

__all__ = ["SIZE_ARGUMENTS", "step_sampler"]

#: the sizes a calibration takes besides the sample rate: those of the samplers drawn at a rate
SIZE_ARGUMENTS = tuple(
    size for size in SIZES
    if size != "sample_rate" and any(size in SAMPLERS[name].takes for name in STEP_SAMPLERS)
)


def step_sampler(
    sampler, sizes: Mapping, sample_rate, calibrated: str
) -> tuple[Sampler | None, object]:
    """The step of a calibration's ``sampler`` and the sample rate it runs at.

    Parameters
    ----------
    sampler : str or callable or None
        None (Poisson sampling), a name of :data:`~plda.samplers.STEP_SAMPLERS` or a callable
        ``(noise_multiplier, sample_rate) -> Mechanism``.
    sizes : Mapping
        The sizes of :data:`SIZE_ARGUMENTS` given (None: not given).
    sample_rate : float or None
        The ``sample_rate`` argument (None when it is calibrated, or given as ``batch_size``).
    calibrated : str
        ``"noise_multiplier"``, ``"sample_rate"`` or ``"steps"``: what is searched.

    Returns
    -------
    tuple
        ``(step, sample_rate)``: ``step`` None for Poisson sampling (``"poisson"`` included,
        the accountant's own step), else a callable; ``sample_rate`` as given, or
        ``batch_size / dataset_size`` for fixed-size batches given by ``batch_size``.

    Raises
    ------
    ValueError
        An unknown sampler or an epoch sampler (whole epochs, no sample rate), a size the
        sampler does not take or a missing one, a batch size that disagrees with
        ``sample_rate``, or fixed-size batches with the sample rate calibrated.
    TypeError
        A ``sampler`` that is neither, or a size that is not a number.
    """
    given = {size: value for size, value in sizes.items() if value is not None}
    fixed = sampler == "without-replacement" or (
        isinstance(sampler, SamplerStep) and sampler.sampler == "without-replacement")
    if fixed and calibrated == "sample_rate":
        raise ValueError(
            "sampler='without-replacement' (fixed-size batches) has the sample rate "
            "batch_size / dataset_size: calibrate the noise multiplier or the steps instead"
        )
    if sampler is None or (callable(sampler) and not isinstance(sampler, str)):
        if given:
            raise ValueError(
                f"{next(iter(given))} applies to a sampler given by name (e.g. sampler="
                f"'without-replacement'), got sampler={sampler!r}"
            )
        return sampler, sample_rate
    if not isinstance(sampler, str):
        raise TypeError(
            f"sampler must be None (Poisson sampling), one of {STEP_SAMPLERS} or a callable "
            f"(noise_multiplier, sample_rate) -> plda mechanism, got {type(sampler).__name__}"
        )
    if sampler in SAMPLERS and sampler not in STEP_SAMPLERS:
        raise ValueError(
            f"sampler={sampler!r} draws whole epochs, not batches at a sample rate: calibrate it "
            f"with the command line (plda calibrate --sampler {sampler}); the calibration "
            f"functions take sampler in {STEP_SAMPLERS}"
        )
    if sampler not in STEP_SAMPLERS:
        raise ValueError(
            f"sampler must be one of {STEP_SAMPLERS} or a callable (noise_multiplier, "
            f"sample_rate) -> plda mechanism, got {sampler!r}"
        )
    spec = SAMPLERS[sampler]
    for size in given:
        if size not in spec.takes:
            takes = [s for s in spec.takes if s != "sample_rate"] or "only sample_rate"
            raise ValueError(f"{size} does not apply to sampler={sampler!r} (it takes {takes})")
    batch_size = given.pop("batch_size", None)
    step = SamplerStep(sampler, given)  # a missing size: ValueError naming it
    if sampler == "without-replacement":
        if sample_rate is None and batch_size is None:
            raise ValueError("sampler='without-replacement' needs batch_size or sample_rate")
        batch = fixed_batch_size(sample_rate, batch_size, given["dataset_size"])
        sample_rate = batch / given["dataset_size"]
    return (None if sampler == "poisson" else step), sample_rate
