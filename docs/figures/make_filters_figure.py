"""Write docs/figures/filter_comparison.png and print the comparison table (docs/filters.md).

Run from the repository root: ``python docs/figures/make_filters_figure.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from plda.filters import compare_filters  # noqa: E402
from plda.plot.filters import filter_comparison  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> None:
    # the table of docs/filters.md
    print(compare_filters(1.0, 1e-6))
    # a finer grid for the figure
    grid = tuple(float(f"{x:.3g}") for x in np.logspace(-3, np.log10(0.5), 19))
    comparison = compare_filters(1.0, 1e-6, grid)
    fig, ax = plt.subplots(figsize=(8, 5))
    filter_comparison(comparison, ax=ax)
    fig.tight_layout()
    # PLDA_FIGURES_DIR: the docs build draws into its own folder (tracked files stay untouched)
    out = Path(os.environ.get("PLDA_FIGURES_DIR", HERE)) / "filter_comparison.png"
    fig.savefig(out, dpi=130)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
