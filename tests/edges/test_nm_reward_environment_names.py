"""The simulation page shows the reward environments' names as written.

A reward environment's name is the ``name:`` of a file a user wrote. ``describe_simulation`` pasted it into its
Markdown as it was: an environment named ``*top*`` was shown in italics (bold lost its stars), one named
``[l](y.html)`` was a link. Checked on nbconvert's own Markdown renderer, with the shipped files renamed.
"""

from __future__ import annotations

import yaml
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from audits.checks.reward_environments import load_reward_environment, shipped_environments_dir
from audits.checks.simulation import run_simulation_audit
from audits.corpus.synthetic import synthesize
from audits.report.narrative import Markdown, describe_simulation
from tests.edges.test_nm_audit_text import ISOLATES, _Page

#: Shipped reward environment files, each given a name Markdown reads as more than text.
RENAMED = {"graded.yaml": "*graded*", "length_filter_1k.yaml": "[l](y.html)", "noise_aware.yaml": "`na` _n_",
           "duration_filter_q10.yaml": "**q10**"}


def test_reward_environment_names_are_shown_as_written(tmp_path):
    files = []
    for file, name in RENAMED.items():
        spec = yaml.safe_load((shipped_environments_dir() / file).read_text(encoding="utf-8"))
        path = tmp_path / file
        path.write_text(yaml.safe_dump({**spec, "name": name}), encoding="utf-8")
        files.append(path)
    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=5, n_repeats=3, seed=3).corpus
    audit = run_simulation_audit(corpus, reward_environments=[load_reward_environment(p) for p in files], n_boot=20)
    d = audit.diagnostics
    best, failing = d["reward_environment"].iloc[0], d.loc[d["level"] == "fail", "reward_environment"].tolist()
    page = _Page(markdown2html_mistune(Markdown(describe_simulation(audit))._repr_markdown_()))
    assert f"The best reward environment is {best} (" in page.text
    if failing:
        assert f"Degenerate (fail): {', '.join(failing)}; " in page.text
    # the narrative's own bold only: the run and the best environment, each whole
    assert {tag for tag, _, _ in page.elements} == {"p", "strong"}, page.elements
    assert [text for tag, _, text in page.elements if tag == "strong"][1].translate(ISOLATES) == best
