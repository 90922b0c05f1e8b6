"""Where a benchmark's results go: one time-stamped JSON file per run in benchmarks/results/ (git-ignored)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def write_results(name: str, results: dict, *, out_dir: str | Path | None = None) -> Path:
    """Write ``results`` as ``<out_dir>/<name>-<UTC time>.json`` (folder made if needed), print and return its path."""
    folder = Path(out_dir) if out_dir is not None else RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {path}")
    return path
