"""The report templates and the helpers they call (no kernel is started here; see test_report.py).

Checks: the templates (jupytext percent-format sources notebooks/*.py) are exactly the known reports,
read into valid notebooks without outputs, have one `parameters` cell whose defaults point at files that
exist, hold no logic; the
narrative helpers say what the numbers say (hand-worked examples); the index reads findings back.
"""

from __future__ import annotations

import ast
import json
import sys
import subprocess
from pathlib import Path

import nbformat
import numpy as np
import pytest

from audits.report import narrative
from audits.errors import UserError
from audits.corpus.io import CorpusError, save_corpus
from audits.protocol.findings import Finding, worst_level
from audits.report.render import REPORTS, RenderedReport, check_kernel, default_audits, notebook_dir, notebook_findings, parse_parameter, read_template, template_parameters, template_path, write_index
from audits.report.inputs import calibrate_runs, load_corpora, repo_root, resolve_corpora, select_pair, suggest_runs
from audits.corpus.synthetic import synthesize

NOTEBOOKS = sorted(p for p in notebook_dir().glob("*.py") if not p.name.startswith("_"))


def test_every_report_has_a_template_and_every_template_is_a_report():
    assert {p.stem for p in NOTEBOOKS} == set(REPORTS)
    assert all(template_path(name) in NOTEBOOKS for name in REPORTS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_template_source_is_percent_format(path):
    # Every cell of the source starts with a "# %%" marker, so jupytext and JupyterLab read the cells the
    # file shows; text before the first marker would become a cell of its own.
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# ---\n# jupyter:\n"), "the jupytext header (kernelspec) comes first"
    header_end = text.index("# ---\n", 1) + len("# ---\n")
    assert text[header_end:].lstrip("\n").startswith("# %% [markdown]\n")
    nb = read_template(path)
    markers = sum(line.startswith("# %%") for line in text.splitlines())
    assert markers == len(nb.cells)
    assert [c.id for c in nb.cells] == [f"{path.stem}-{i:02d}" for i in range(len(nb.cells))]
    assert nb.metadata.get("jupytext") is None and nb.metadata.language_info == {"name": "python"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_template_shape(path):
    nb = read_template(path)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec["name"] == "python3"
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [c for c in code_cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    assert all(not c.outputs and c.execution_count is None for c in code_cells), "commit templates without outputs"
    # The markdown title comes first, the parameters next: what a reader edits is at the top.
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    assert code_cells[0] is tagged[0]
    for cell in code_cells:
        tree = ast.parse(cell.source)
        loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While, ast.FunctionDef, ast.ClassDef,
                                                                ast.If, ast.IfExp, ast.ListComp, ast.Lambda))]
        assert not loops, f"{path.name}: logic in a notebook cell ({type(loops[0]).__name__}); move it to audits/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_default_parameters_point_at_shipped_files(path):
    params = template_parameters(path)
    assert {"corpora", "n_boot", "seed"} <= set(params)
    corpora = ast.literal_eval(params["corpora"]["default"])
    assert corpora and all(c.startswith("fixtures/corpora/") for c in corpora)
    for resolved in resolve_corpora(corpora):
        assert resolved.is_file() and resolved.is_relative_to(repo_root() / "fixtures" / "corpora")


def test_default_audits_are_existing_templates():
    names = default_audits()
    assert "overview" in names
    assert all(template_path(n).exists() for n in names)


# --- narrative helpers ---------------------------------------------------------------------------

FINDINGS = [
    Finding("pass", "median_repeat_cv", 0.021, "<= 0.05 pass", "Repeats agree.", "quiet"),
    Finding("fail", "median_repeat_cv", 0.31, "<= 0.05 pass, > 0.2 fail", "Busy worker: rerun quieter.", "busy"),
    Finding("warn", "floor_share", 0.4, 0.25, "Many tests near the floor."),
]


def test_verdict_sentence_counts_and_worst():
    text = narrative.verdict_sentence(FINDINGS)
    assert text.startswith("Verdict: FAIL (1 fail, 1 warn, 1 pass).")
    assert "[busy] median_repeat_cv = 0.31 - Busy worker: rerun quieter." in text
    assert narrative.verdict_sentence([]).startswith("Verdict: no findings")


def test_rank_findings_is_stable_worst_first():
    ranked = narrative.rank_findings(FINDINGS + [Finding("fail", "x", 1.0, 0.5, "second fail")])
    assert [f.level for f in ranked] == ["fail", "fail", "warn", "pass"]
    assert ranked[1].metric == "x"  # audit order kept within a level


def test_findings_frame_and_display_round_trip():
    frame = narrative.findings_frame(FINDINGS, audit="reliability")
    assert list(frame["level"]) == ["fail", "warn", "pass"]
    assert set(frame["audit"]) == {"reliability"}
    display = narrative.show_findings(FINDINGS, audit="reliability", title="Reliability")
    bundle = display._repr_mimebundle_()
    payload = bundle[narrative.FINDINGS_MIMETYPE]
    assert payload["worst"] == worst_level(FINDINGS) == "fail"
    assert [f["metric"] for f in payload["findings"]] == ["median_repeat_cv", "floor_share", "median_repeat_cv"]
    assert "FAIL" in bundle["text/html"] and "Busy worker: rerun quieter." in bundle["text/html"]
    json.dumps(payload)  # plain JSON, as it is stored in the executed notebook
    # The index reads the same payload back from an executed notebook's outputs.
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("show")
    cell.outputs = [nbformat.v4.new_output("display_data", data={narrative.FINDINGS_MIMETYPE: payload,
                                                                  "text/plain": "x"})]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), cell]
    assert notebook_findings(nb) == [payload]


@pytest.mark.parametrize("value, text", [(0.123456, "0.123"), (float("nan"), "-"), (None, "-"), (3, "3"),
                                         (12000, "12,000"), (np.float64(2.5e-5), "2.5e-05"), ("x", "x")])
def test_format_value(value, text):
    assert narrative.format_value(value) == text


def test_format_interval_from_object_and_dict():
    from stats.bootstrap import Interval, bootstrap_ci

    ci = bootstrap_ci(np.array([0.01, 0.02, 0.03, 0.04]), n_boot=200, seed=0)
    text = narrative.format_interval(ci)
    assert text.startswith("0.025 [") and text.endswith("(n=4)")
    assert narrative.format_interval(ci.to_dict()) == text
    assert narrative.format_interval(Interval(0.5, 0.25, 0.75, 9), scale=100, unit="%") == "50% [25%, 75%] (n=9)"


def test_describe_corpus_and_overview_count_the_corpus():
    synth = synthesize(n_problems=3, n_tests=2, n_correctness_tests=1, n_solutions=3, n_incorrect=1,
                       n_candidates=1, n_repeats=2, busy=True, seed=3)
    corpus = synth.corpus
    text = narrative.describe_corpus(corpus, ["/x/a.parquet"])
    assert f"{len(corpus):,} executions" in text and "3 problems" in text and "15 (problem, solution)" in text
    assert "quiet · c0 (2 repeats)" in text and "busy · c0 (2 repeats)" in text and "`a.parquet`" in text
    table = narrative.corpus_overview(corpus).reset_index().set_index("environment")
    body = corpus[corpus["role"] != "floor"]
    for env in ("quiet", "busy"):
        sub = body[body["environment"] == env]
        assert table.loc[env, "rows"] == len(sub)
        assert table.loc[env, "solutions"] == 15 and table.loc[env, "repeats"] == 2
        assert table.loc[env, "ok_share"] == pytest.approx((sub["status"] == "ok").mean())


# --- inputs --------------------------------------------------------------------------------------

def test_parse_parameter_reads_yaml_values():
    assert parse_parameter("n_boot=200") == ("n_boot", 200)
    assert parse_parameter("pairs=[[quiet/a, quiet/b]]") == ("pairs", [["quiet/a", "quiet/b"]])
    assert parse_parameter("tau=12.5") == ("tau", 12.5)
    assert parse_parameter("campaign=") == ("campaign", None)
    for bad in ("n_boot", "=3", "2x=1", "a=[1,"):
        with pytest.raises(UserError):
            parse_parameter(bad)


def test_load_corpora_stacks_and_refuses_overlap(tmp_path):
    a = synthesize(n_problems=2, n_tests=2, n_solutions=3, n_repeats=2, n_incorrect=0, n_candidates=0,
                   campaigns=(("a", 1.0, 0.0),), seed=1).corpus
    b = synthesize(n_problems=3, n_tests=2, n_solutions=3, n_repeats=2, n_incorrect=0, n_candidates=0,
                   campaigns=(("b", 1.0, 0.0),), seed=2).corpus
    save_corpus(a, tmp_path / "a.parquet")
    save_corpus(b, tmp_path / "b.parquet")
    both = load_corpora([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert len(both) == len(a) + len(b)
    assert sorted(both["campaign"].cat.categories) == ["a", "b"]
    assert list(both["status"].cat.categories) == list(a["status"].cat.categories)
    counts = both.groupby("campaign", observed=True).size()
    assert counts["a"] == len(a) and counts["b"] == len(b)
    save_corpus(a, tmp_path / "a2.parquet")
    with pytest.raises(CorpusError, match="campaign 'a' is also in"):
        load_corpora([tmp_path / "a.parquet", tmp_path / "a2.parquet"])
    with pytest.raises(UserError, match="not found"):
        resolve_corpora([tmp_path / "missing.parquet"])


def test_select_pair_picks_the_rows_and_the_column_that_differs():
    corpus = synthesize(n_problems=2, n_tests=2, n_solutions=3, n_repeats=2, n_incorrect=0, n_candidates=0,
                        busy=True, campaigns=(("a", 1.0, 0.0), ("b", 0.5, 0.0)), seed=4).corpus
    runs = corpus["environment"].astype(str) + "/" + corpus["campaign"].astype(str)
    pair = select_pair(corpus, ["quiet", "a"], ["quiet", "b"])
    assert (pair.key, pair.source, pair.target) == ("campaign", "a", "b")
    assert len(pair.frame) == int(runs.isin(["quiet/a", "quiet/b"]).sum())
    pair = select_pair(corpus, {"environment": "quiet", "campaign": "a"}, "busy/b")  # campaigns may differ
    assert (pair.key, pair.source, pair.target) == ("environment", "quiet", "busy")
    assert sorted(set(pair.frame["campaign"].astype(str) + pair.frame["environment"].astype(str))) == ["aquiet",
                                                                                                       "bbusy"]
    for bad, match in (("quiet", "not in the corpus"), (["quiet", "zz"], "no campaign 'zz'"),
                       (["quiet", "a"], "same run")):
        with pytest.raises(UserError, match=match):
            select_pair(corpus, ["quiet", "a"], bad) if bad == ["quiet", "a"] else select_pair(corpus, bad, "quiet/a")


def test_suggest_runs_names_runs_that_exist():
    two = synthesize(n_problems=2, n_tests=2, n_solutions=3, n_repeats=2, n_incorrect=0, n_candidates=0,
                     busy=True, campaigns=(("a", 1.0, 0.0), ("b", 0.5, 0.0)), seed=4).corpus
    runs = suggest_runs(two)
    # No timestamps and one file: which campaign is the stored one is not known, so none is guessed.
    assert runs["stored_run"] is runs["fresh_run"] is None
    # The busy environment (planted noise) against the quietest, in the first shared campaign by name
    # (audits.corpus.selection; tests/corpus/test_selection.py checks the rule against an independent one).
    assert (runs["source_run"], runs["target_run"]) == (["busy", "a"], ["quiet", "a"])
    assert runs["simulation_environment"] == runs["aggregation_environment"] == "quiet"
    # An explicit order (the corpus files as given) or timestamps decide it.
    ordered = suggest_runs(two, order=[["quiet", "b"], ["quiet", "a"]])
    assert (ordered["stored_run"], ordered["fresh_run"]) == (["quiet", "b"], ["quiet", "a"])
    for source, target in (("stored_run", "fresh_run"), ("source_run", "target_run")):
        select_pair(two, ordered[source], ordered[target])  # both pairs are valid
    one = synthesize(n_problems=2, n_tests=2, n_solutions=3, n_repeats=2, n_incorrect=0, n_candidates=0,
                     environments=("lab",), seed=5).corpus
    runs = suggest_runs(one)
    assert runs["stored_run"] is runs["source_run"] is None and runs["simulation_environment"] == "lab"


def test_skipped_calibration_is_not_available_and_a_note():
    one = synthesize(n_problems=2, n_tests=2, n_solutions=3, n_repeats=2, n_incorrect=0, n_candidates=0,
                     seed=5).corpus
    skipped = calibrate_runs(one, None, None, n_boot=10)
    assert [f.level for f in skipped.findings] == ["n/a"] and "quiet · c0" in skipped.findings[0].message
    assert narrative.describe_calibration(skipped).startswith("**Not measured**")
    assert narrative.calibration_fit_table(skipped).empty
    with pytest.raises(UserError, match="no campaign 'c9'"):
        calibrate_runs(one, ["quiet", "c0"], ["quiet", "c9"], n_boot=10)  # a named run that is missing is an error


def test_kernel_is_this_environment():
    assert check_kernel("python3").resolve() == Path(sys.executable).resolve()
    with pytest.raises(UserError, match="ipykernel install"):
        check_kernel("no-such-kernel-speedaudit")


def test_kernel_of_another_virtual_environment_is_refused(tmp_path, monkeypatch):
    # Another venv's python is a symlink to the same base interpreter as this one's: a kernel spec pointing
    # there resolves to the same file, yet runs without this environment's speedaudit (seen: the wheel test's
    # kernels imported the checkout). The environment, not the interpreter file, must match.
    other = tmp_path / "other-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other)], check=True)
    assert (other / "bin" / "python").resolve() == Path(sys.executable).resolve() or sys.prefix == sys.base_prefix
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": [str(other / "bin" / "python"), "-m", "ipykernel_launcher",
                                                           "-f", "{connection_file}"],
                                                  "display_name": "other", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    with pytest.raises(UserError, match="not this environment's"):
        check_kernel("python3")


def test_index_page_links_and_orders_findings(tmp_path):
    (tmp_path / "reliability.html").write_text("<html></html>")
    ok = RenderedReport("reliability", "Reliability", tmp_path / "reliability.html", tmp_path / "reliability.ipynb",
                        findings=tuple(f.to_dict() for f in FINDINGS))
    broken = RenderedReport("calibration", "Calibration", None, None, error="report 'calibration' failed at cell 4")
    path = write_index([ok, broken], tmp_path, corpora=["/data/x.parquet"], parameters={"n_boot": 10})
    page = path.read_text()
    assert "href='reliability.html'" in page and "href='reliability.ipynb'" in page
    assert "calibration.html" not in page and "failed at cell 4" in page
    # Top findings worst first: the busy fail before the floor warn before the quiet pass.
    assert page.index("Busy worker") < page.index("Many tests near") < page.index("Repeats agree")
    assert "1 fail, 1 warn, 1 pass" in page and "/data/x.parquet" in page and "n_boot = 10" in page
    assert ok.worst == "fail" and broken.worst == "error"


def test_verdict_overview_orders_audits_worst_first():
    verdicts = {
        "aggregation": [Finding("pass", "a", 1.0, 1, "fine")],
        "reliability": FINDINGS,
        "calibration": [Finding("warn", "c", 2.0, 1, "check it"), Finding("pass", "d", 0.0, 1, "ok")],
        "empty": [],
    }
    table = narrative.verdict_overview(verdicts)
    assert list(table.index) == ["reliability", "calibration", "aggregation", "empty"]
    assert table.loc["reliability", ["verdict", "fail", "warn", "pass"]].tolist() == ["FAIL", 1, 1, 1]
    assert table.loc["calibration", "worst finding"] == "c = 2 - check it"
    assert table.loc["empty", "verdict"] == "NONE"
    text = narrative.describe_overview(verdicts)
    assert text.startswith("**4 audits**: 1 fail, 1 warn, 1 pass.") and "Start with **reliability**" in text
    html_table = narrative.show_verdicts(verdicts)._repr_html_()
    assert html_table.index("reliability") < html_table.index("calibration") < html_table.index("aggregation")


# --- the overview repeats the other templates: they must not drift apart --------------------------

def _assignments(path) -> dict[str, str]:
    """Target name -> ast.dump of every top-level ``name = ...`` statement of a template's code cells."""
    out = {}
    for cell in read_template(path).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.parse(cell.source).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                out[node.targets[0].id] = ast.dump(node.value)
    return out


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem != "overview"], ids=lambda p: p.stem)
def test_overview_repeats_each_template_exactly(path):
    # The overview is the union of the other templates (parameters and audit calls, written again in
    # its file since the builder is gone): a default or a call changed in one place only fails here.
    overview, specific = template_parameters(template_path("overview")), template_parameters(path)
    shared = set(overview) & set(specific)
    assert {"corpora", "n_boot", "seed"} <= shared
    assert set(specific) <= set(overview), "every parameter of a template is one of the overview's"
    for name in shared:
        assert overview[name]["default"] == specific[name]["default"], f"{name}: default differs from the overview's"
    calls, mine = _assignments(template_path("overview")), _assignments(path)
    audits = [n for n in mine if n in calls and n not in specific and n not in ("corpus", "results")]  # open_page: each page its own header
    assert audits, f"{path.stem} shares no audit call with the overview"
    for name in audits:
        assert calls[name] == mine[name], f"{name} = ... differs between overview.py and {path.name}"
