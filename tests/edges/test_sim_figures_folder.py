"""`speedaudit simulate --figures DIR` refuses a DIR that cannot be a folder before simulating, without a traceback.

Before: `--figures afile` (an existing file) simulated every reward environment, printed the table and then ended in
FileExistsError from pathlib's mkdir; `--figures afile/sub` in NotADirectoryError. A folder still gets both figures
(real PNG files).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli_process import synth_corpus

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("figures") / "synth.parquet"
    return synth_corpus(path)


def _simulate(corpus, figures):
    return subprocess.run([sys.executable, "-m", "audits.cli", "simulate", str(corpus), "--environment", "quiet",
                           "--reward-env", str(ROOT / "fixtures" / "environments" / "top30.yaml"), "--n-boot", "0",
                           "--figures", str(figures)], capture_output=True, text=True, timeout=300)


def test_a_file_is_refused_before_the_simulation(corpus, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    for figures, said in ((afile, "this is a file: give a folder"), (afile / "sub", "cannot make the --figures folder")):
        proc = _simulate(corpus, figures)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
        assert f"{figures}: " in proc.stderr and said in proc.stderr
        assert "rank" not in proc.stdout  # refused before anything was simulated


def test_a_folder_gets_both_figures(corpus, tmp_path):
    out = tmp_path / "new" / "figs"
    proc = _simulate(corpus, out)
    assert proc.returncode == 0, proc.stderr
    for name in ("reward_curves.png", "zero_advantage.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
