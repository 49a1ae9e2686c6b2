"""Chernoff orders shared by the grid, the discretization and the tradeoff queries.

The tail of a privacy-loss law below the FFT's resolution is bounded by Chernoff's inequality
``P[L > x] <= min_t E[exp(t L)] exp(-t x)``; every module that computes or uses those moments
must use the same orders, so they are defined once here.
"""

import numpy as np

#: tilts t for the Chernoff bound (geometric from 1e-3 to 2e3: small t for light tails near the
#: mean, large t for the far tail that decides delta at large epsilon)
CHERNOFF_ORDERS = np.geomspace(1e-3, 2e3, 48)
#: log of the Chernoff constant c(t) = t^t / (t+1)^(t+1) at those orders
#: (log1p keeps small t accurate)
CHERNOFF_LOG_C = CHERNOFF_ORDERS * np.log(CHERNOFF_ORDERS) - (CHERNOFF_ORDERS + 1) * np.log1p(
    CHERNOFF_ORDERS
)
