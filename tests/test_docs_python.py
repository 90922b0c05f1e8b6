"""Every fenced ``python`` block of README.md and docs/*.md runs as written.

Each block runs on its own, as a fresh Python process (a block names everything it uses, and a block that
registers something, an aggregator, cannot change what another block or test sees) in a fresh temporary
directory that holds a link to the shipped ``fixtures/`` (read only), so that the paths a reader copies
(``fixtures/corpora/quiet-a.parquet``) mean what they mean from the checkout's root; figures are drawn with
matplotlib's non-interactive backend. A block that is not Python code belongs in another fence language.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the opening fence, source with the block's indentation removed) of every ```python block."""
    blocks = []
    for match in FENCE.finditer(text):
        indent = len(match.group("indent"))
        source = "".join(line[indent:] if line.strip() else "\n"
                         for line in match.group("body").splitlines(keepends=True))
        blocks.append((text.count("\n", 0, match.start()) + 1, source))
    return blocks


BLOCKS = [(path, line, source) for path in DOCUMENTS
          for line, source in python_blocks(path.read_text(encoding="utf-8"))]


def test_the_blocks_are_found():
    # Hand-checked: README's public-API example and the docs' API sections (an indented one among them).
    assert [line for path, line, _ in BLOCKS if path.name == "README.md"]
    assert {path.name for path, _, _ in BLOCKS} >= {"README.md", "aggregation.md", "reliability.md", "suites.md"}
    assert python_blocks("x\n  ```python\n  a = 1\n\n  b = a\n  ```\n") == [(2, "a = 1\n\nb = a\n")]


@pytest.mark.slow
@pytest.mark.parametrize("path, line, source", BLOCKS,
                         ids=[f"{path.relative_to(ROOT)}:{line}" for path, line, _ in BLOCKS])
def test_python_block_runs(path, line, source, tmp_path):
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures", target_is_directory=True)
    where = f"{path.relative_to(ROOT)}:{line}"
    script = tmp_path / "block.py"
    script.write_text(source, encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=900, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"{where} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
