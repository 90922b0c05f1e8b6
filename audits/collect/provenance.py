"""Where a measurement was taken: the machine's CPU, cores, memory and system (no hostname).

Recorded beside collected corpora (``fixtures/corpora/MANIFEST.json``) and benchmark results, so
that every stored number says what it was measured on.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

__all__ = ["machine_info"]


def _first_field(path: str, prefix: str) -> str | None:
    """The value after ``prefix ... :`` on the first matching line of a /proc file (None if absent)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine_info() -> dict:
    """CPU model, logical cores, memory (GB), kernel and platform of this machine.

    Examples
    --------
    >>> sorted(machine_info())
    ['cores', 'cpu', 'kernel', 'memory_gb', 'platform', 'python']
    """
    memory_kb = _first_field("/proc/meminfo", "MemTotal")
    return {
        "cpu": _first_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "memory_gb": round(int(memory_kb.split()[0]) / 2**20, 1) if memory_kb else None,
        "kernel": platform.release(),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
    }
