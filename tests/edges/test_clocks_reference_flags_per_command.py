"""The clocks audit's advice about its reference run names flags the command that printed it accepts.

``audit clocks`` spells them ``--reference-environment`` / ``--reference-campaign``; ``audit all`` gives each audit's
own options its name (``--clocks-reference-campaign``). The note and the error come from one place
(audits.checks.clocks.reference_run) for both commands. Before, ``audit all`` advised ``--reference-campaign``,
which it refuses. Checked by running each command with the flags its own message names.
"""

from __future__ import annotations

import json
import re

import pytest

from audits.corpus.io import save_corpus
from tests.cli_process import speedaudit
from tests.edges.test_cc_clocks_reference_environment_alone import _corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("clocks flags") / "two campaigns.parquet"
    save_corpus(_corpus(), path)
    return path


def _flags(text: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z-]*", text))


def _whole(corpus, tmp_path, name, *extra):
    out = tmp_path / f"{name}.json"
    done = speedaudit("audit", "all", corpus, "--n-boot", "5", "--json", out, *extra)
    assert "Traceback" not in done.stderr, done.stderr
    return done, (json.loads(out.read_text()) if out.exists() else None)


def test_audit_all_advises_its_own_flags_and_accepts_them(corpus, tmp_path):
    done, result = _whole(corpus, tmp_path, "alone", "--clocks-reference-environment", "quiet")
    assert done.returncode in (0, 1), done.stderr  # 1: a failed verdict, not an error
    note = result["clocks"]["reference_note"]
    assert "z-early" in note and "a-late" in note, note
    assert "--clocks-reference-campaign" in note, note
    # the flags it names for audit all, used as named: accepted, and they choose the other campaign
    done, chosen = _whole(corpus, tmp_path, "chosen", "--clocks-reference-environment", "quiet",
                          "--clocks-reference-campaign", "a-late")
    assert done.returncode in (0, 1), done.stderr
    assert chosen["clocks"]["reference"] == ["quiet", "a-late"] and chosen["clocks"]["reference_note"] == ""


def test_every_flag_a_reference_message_names_is_one_of_the_two_commands(corpus, tmp_path):
    clocks_help = speedaudit("audit", "clocks", "--help").stdout
    all_help = speedaudit("audit", "all", "--help").stdout
    done = speedaudit("audit", "clocks", corpus, "--n-boot", "5", "--reference-environment", "quiet",
                      "--reference-campaign", "missing")
    assert done.returncode != 0 and "error:" in done.stderr and "Traceback" not in done.stderr, done.stderr
    out = tmp_path / "note.json"
    speedaudit("audit", "clocks", corpus, "--n-boot", "5", "--reference-environment", "quiet", "--json", out)
    for text in (done.stderr, json.loads(out.read_text())["reference_note"]):
        flags = _flags(text)
        assert flags, text
        for flag in flags:
            assert flag in clocks_help or flag in all_help, (flag, text)
        assert any(f.startswith("--clocks-") for f in flags) and any(f.startswith("--reference-") for f in flags)
