"""``speedaudit audit calibration --figures DIR``: a path that cannot be a folder is refused with a message.

The folder was created after the whole audit had run, with a bare ``mkdir``: a path naming a file (or lying
under one) ended the command in a FileExistsError / NotADirectoryError traceback, after the audit's work. It is
now checked before the corpus is read, named with what to do; a refused command creates no folder.
"""

from __future__ import annotations

import pytest

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from tests.cli_process import speedaudit


def _cli(*args):
    return speedaudit(*args)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("figures") / "two campaigns.parquet"
    save_corpus(synthesize(n_problems=4, n_tests=3, n_solutions=4, n_repeats=2,
                           campaigns=(("stored", 1.0, 0.0), ("fresh", 1.1, 0.002)), seed=2).corpus, path)
    return path


PAIR = ("--environment", "quiet", "--source-campaign", "stored", "--target-campaign", "fresh", "--n-boot", "10",
        "--n-boot-rank", "10")


@pytest.mark.parametrize("under", ["", "sub"])
def test_a_file_is_not_a_folder(corpus, tmp_path, under):
    blocker = tmp_path / "figures.png"
    blocker.write_text("not a folder")
    target = blocker / under if under else blocker
    done = _cli("audit", "calibration", corpus, *PAIR, "--figures", target)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert "--figures" in done.stderr and str(blocker) in done.stderr and "folder" in done.stderr, done.stderr
    assert "Findings" not in done.stdout  # refused before the audit ran


def test_refused_command_creates_nothing(corpus, tmp_path):
    target = tmp_path / "new" / "figures"
    done = _cli("audit", "calibration", corpus, "--environment", "quiet", "--source-campaign", "no such",
                "--target-campaign", "fresh", "--figures", target)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "new").exists()


def test_figures_are_written(corpus, tmp_path):
    target = tmp_path / "a" / "b"
    done = _cli("audit", "calibration", corpus, *PAIR, "--figures", target)
    assert done.returncode == 0, done.stderr
    assert {"calibration_scatter.png", "bland_altman.png"} <= {p.name for p in target.iterdir()}
