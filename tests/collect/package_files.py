"""Writing a problem package's files for the archive and link tests (one helper, imported by each)."""

from __future__ import annotations

from pathlib import Path


def write(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path relative to ``root`` -> text) under ``root``, making folders; return ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def shadow_lines() -> list[str]:
    """The host's /etc/shadow lines (empty where it cannot be read): what no build or check may leak."""
    try:
        return [line for line in Path("/etc/shadow").read_text().splitlines() if line.strip()]
    except OSError:
        return []
