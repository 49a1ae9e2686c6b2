"""Make docs/figures/composition_comparison.png: the composition theorems for k-fold
(0.1, 0.001)-DP steps, k = 1..30, at total delta = k * 0.001 + 0.001.

Run from the repository root: ``python docs/figures/make_composition_figure.py``.
"""

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from plda.plot.composition import composition_comparison  # noqa: E402

# PLDA_FIGURES_DIR: the docs build draws into its own folder (tracked files stay untouched)
FIGURES_DIR = Path(os.environ.get("PLDA_FIGURES_DIR", Path(__file__).resolve().parent))
OUTPUT = FIGURES_DIR / "composition_comparison.png"


def main() -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    composition_comparison(
        epsilon=0.1,
        delta=0.001,
        max_steps=30,
        delta_slack=0.001,
        pld_steps=[5, 10, 15, 20, 25, 30],
        ax=ax,
    )
    fig.tight_layout()
    fig.savefig(OUTPUT, dpi=150)
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
