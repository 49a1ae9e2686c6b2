"""Progress of long commands on stderr, only when stderr is a terminal."""

from __future__ import annotations

import math
import sys

__all__ = ["StderrProgress", "progress_printer"]


class StderrProgress:
    """A ``progress(fraction, message)`` callback that redraws one line on stderr.

    Meant for the calibration functions' ``progress=`` argument; :func:`progress_printer`
    returns one only when stderr is a terminal, so pipes and logs stay clean.

    Parameters
    ----------
    stream : file-like, optional
        Where to write (default: ``sys.stderr``).
    """

    def __init__(self, stream=None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = 0

    def __call__(self, fraction: float, message: str) -> None:
        percent = 100.0 * min(max(float(fraction), 0.0), 1.0) if math.isfinite(fraction) else 0.0
        line = f"plda: {percent:5.1f}% {' '.join(str(message).split())}"
        # pad with blanks so a shorter line fully covers the previous one
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def close(self) -> None:
        """End the progress line (call once the work is done)."""
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def progress_printer(stream=None) -> StderrProgress | None:
    """A :class:`StderrProgress` when ``stream`` is a terminal, else ``None``.

    Parameters
    ----------
    stream : file-like, optional
        Where to write (default: ``sys.stderr``).

    Returns
    -------
    StderrProgress or None
        None when ``stream`` is not a terminal (pipes and logs stay clean).
    """
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return StderrProgress(stream) if isatty is not None and isatty() else None
