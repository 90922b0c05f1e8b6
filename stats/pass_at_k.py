"""pass@k without bias: one function that :mod:`stats.rewards` (p_tau) and :mod:`stats.noise` (the noise-aware
p_tau) both use, in a module of its own so that neither imports the other."""

from __future__ import annotations

import numpy as np

__all__ = ["pass_at_k"]


def pass_at_k(n, m, k: int) -> np.ndarray:
    """Unbiased pass@k from n samples of which m succeed: 1 - C(n-m, k) / C(n, k).

    Evaluated in the numerically stable product form
    C(n-m, k)/C(n, k) = prod_{i=0}^{k-1} (n - m - i)/(n - i), which never forms a
    binomial coefficient. Entries with n < k are undefined (NaN).

    Examples
    --------
    >>> pass_at_k([10, 10, 3], [3, 0, 3], 2).round(4).tolist()
    [0.5333, 0.0, 1.0]
    """
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    n = np.asarray(n, dtype=float)
    m = np.asarray(m, dtype=float)
    if np.any(m < 0) or np.any(m > n):
        raise ValueError("need 0 <= m <= n for every problem")
    ratio = np.ones(np.broadcast(n, m).shape)
    for i in range(k):  # a loop over k (small), vectorised over problems
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = ratio * np.clip((n - m - i) / (n - i), 0.0, None)
    out = 1.0 - ratio
    return np.where(n >= k, out, np.nan)
