"""What Opacus's ``PrivacyEngine`` is doing when it calls the plda accountant.

Opacus hands its accountant neither the data loader nor the calibration target, so the Opacus
adapter reads them from the frames of the ``PrivacyEngine`` call that asks (best effort; the
names are Opacus 1.6's): ``make_private_with_epsilon`` asks ``accountant.mechanism()`` before it
prepares anything (:func:`calibration_loader`), ``make_private`` asks
``accountant.get_optimizer_hook_fn(sample_rate)`` once it prepared the module, the loader and
the optimizer (:func:`make_private_call`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CalibrationRequest", "MakePrivateCall", "calibration_loader", "make_private_call"]

#: how many frames above the accountant's method the search for Opacus's caller goes
FRAME_DEPTH = 4
MAKE_PRIVATE = "make_private"
WITH_EPSILON = "make_private_with_epsilon"


@dataclass(frozen=True)
class CalibrationRequest:
    """The budget ``make_private_with_epsilon`` calibrates the noise for.

    Attributes
    ----------
    target_epsilon, target_delta
        The target ``(epsilon, delta)``.
    epochs
        Passes over the data the noise is calibrated for.
    """

    target_epsilon: float
    target_delta: float
    epochs: float


@dataclass(frozen=True)
class MakePrivateCall:
    """What ``make_private`` prepared when it asked for the optimizer hook.

    Attributes
    ----------
    data_loader
        The loader training will iterate (Opacus's ``DPDataLoader``, or the user's own).
    optimizer
        The ``DPOptimizer``: its ``noise_multiplier`` is the noise every step adds.
    module
        The module as prepared (a ``GradSampleModule``, or the hooks of ``wrap_model=False``).
    wrapped_here
        Whether this ``make_private`` created that wrapper (so a refusal must remove its hooks
        from the user's model, which the user will pass again).
    calibration
        The target of ``make_private_with_epsilon`` when it is the caller, else ``None``.
    """

    data_loader: object
    optimizer: object
    module: object
    wrapped_here: bool
    calibration: CalibrationRequest | None


def _opacus_frame(frame, name: str):
    """The frame of Opacus's function ``name`` within :data:`FRAME_DEPTH` frames of ``frame``."""
    for _ in range(FRAME_DEPTH):
        if frame is None:
            return None
        if frame.f_code.co_name == name and "opacus" in frame.f_code.co_filename:
            return frame
        frame = frame.f_back
    return None


def calibration_loader(frame) -> tuple[object, bool] | None:
    """The loader of the ``make_private_with_epsilon`` call above ``frame``, if any.

    Parameters
    ----------
    frame : frame
        The frame that called the accountant's ``mechanism()``.

    Returns
    -------
    tuple of (object, bool) or None
        ``(data_loader, poisson_sampling)`` of that call; None if Opacus is not the caller.
    """
    found = _opacus_frame(frame, WITH_EPSILON)
    if found is None:
        return None
    local = found.f_locals
    return local.get("data_loader"), bool(local.get("poisson_sampling", True))


def make_private_call(frame) -> MakePrivateCall | None:
    """What the ``make_private`` call above ``frame`` prepared, if any.

    Parameters
    ----------
    frame : frame
        The frame that called the accountant's ``get_optimizer_hook_fn``.

    Returns
    -------
    MakePrivateCall or None
        The loader, optimizer and module it prepared, and the calibration target when
        ``make_private_with_epsilon`` called it; None if Opacus is not the caller.
    """
    found = _opacus_frame(frame, MAKE_PRIVATE)
    if found is None:
        return None
    local = found.f_locals
    caller = found.f_back
    request, passed = None, []
    if caller is not None and _opacus_frame(caller, WITH_EPSILON) is caller:
        outer = caller.f_locals
        request = CalibrationRequest(
            target_epsilon=outer.get("target_epsilon"),
            target_delta=outer.get("target_delta"),
            epochs=outer.get("epochs"),
        )
        passed.append(outer.get("module"))
        caller = caller.f_back
    if caller is not None:  # the user's frame: a module it holds was passed in, not made here
        passed.extend(caller.f_locals.values())
    module = local.get("module")
    wrapped_here = hasattr(module, "cleanup") and not any(value is module for value in passed)
    return MakePrivateCall(
        data_loader=local.get("data_loader"),
        optimizer=local.get("optimizer"),
        module=module,
        wrapped_here=wrapped_here,
        calibration=request,
    )
