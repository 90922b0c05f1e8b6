"""Write the report templates notebooks/*.ipynb from the cell lists below.

The notebooks are generated so that they stay thin and diff-able: edit this file, run
``python notebooks/build_notebooks.py`` and commit both. The .ipynb files carry no outputs.

Rules every template follows (tests/test_notebooks.py checks them):

* exactly one code cell tagged ``parameters`` (papermill injects values after it);
* defaults point at the shipped corpora (``fixtures/corpora``), resolved from the working directory
  or the repository root, so the template runs as it is in JupyterLab (``make lab``);
* every other code cell only calls ``audits``/``stats`` functions and displays what they return;
  prose that depends on numbers comes from :mod:`audits.report.narrative`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

#: The shipped corpora (fixtures/corpora/MANIFEST.json): the speedbench suite on a 2-core machine, quiet
#: (1 worker) in two campaigns and busy (2 workers + CPU and memory load).
SHIPPED = ["fixtures/corpora/quiet-a.parquet", "fixtures/corpora/quiet-b.parquet", "fixtures/corpora/busy-a.parquet"]

COMMON_PARAMETERS = f'''# Parameters (papermill / `speedaudit report -p key=value` override them).
# Paths are relative to the working directory or to the repository root.
corpora = [
{chr(10).join(f'    "{p}",' for p in SHIPPED)}
]  # timing corpora, stacked into one
n_boot = 1000  # bootstrap resamples over problems for every interval
seed = 0  # seed of the bootstrap and of the simulator
'''

IMPORTS = '''import warnings

import pandas as pd
from IPython.display import display

from audits.report import narrative
from audits.report.render import load_corpora

warnings.filterwarnings("ignore", category=FutureWarning)
pd.set_option("display.precision", 4)
pd.set_option("display.max_colwidth", None)'''

LOAD = '''corpus = load_corpora(corpora)
display(narrative.Markdown(narrative.describe_corpus(corpus, corpora)))
narrative.corpus_overview(corpus)'''

RELIABILITY_PARAMETERS = '''campaign = None  # campaign whose pool is used for rank drift, ICC, robust CV (None: each environment's first)
floor_s = None  # the sandbox floor in seconds (None: median of the corpus's floor rows)
reliability_thresholds = {}  # overrides of audits.reliability.ReliabilityThresholds, e.g. {"repeat_cv_warn": 0.1}
discriminability_thresholds = {}  # overrides of audits.discriminability.DiscriminabilityThresholds'''

CALIBRATION_PARAMETERS = '''stored_run = "quiet/quiet-a"  # "environment/campaign" of the stored reference timings (None: skip) ...
fresh_run = "quiet/quiet-b"  # ... calibrated onto this fresh run
source_run = "quiet/quiet-a"  # a run of one environment (None: skip) ...
target_run = "busy/busy-a"  # ... against a run of another
calibration_family = "affine"  # the map used for calibrated ranks and Bland-Altman
n_boot_rank = 200  # bootstrap resamples for the Spearman rank-agreement CIs (each re-ranks every solution)
calibration_thresholds = {}  # overrides of audits.calibration.DEFAULT_THRESHOLDS, e.g. {"lopo_r2.fail": 0.8}'''

AGGREGATION_PARAMETERS = '''aggregation_environment = "quiet"  # sandbox environment to compare the aggregators on (None: every one)
aggregation_campaign = None  # campaign (None: every campaign of that environment)
aggregation_thresholds = {}  # overrides of audits.aggregation.AggregationThresholds, e.g. {"stability_warn": 4}'''

SIMULATION_PARAMETERS = '''simulation_environment = "quiet"  # sandbox environment whose timings stand in for rollouts
simulation_campaign = None  # campaign (None: the environment's first)
environment_files = [
    "fixtures/environments/top30.yaml",
    "fixtures/environments/uniform_timeout.yaml",
    "fixtures/environments/ranked_worst_p80.yaml",
    "fixtures/environments/duration_filter_2s.yaml",
    "fixtures/environments/duration_filter_0.5s.yaml",
    "fixtures/environments/duration_filter_0.1s.yaml",
    "fixtures/environments/length_filter_1k.yaml",
]  # reward environments to screen (audits/environments.py format)
grid_files = []  # grid files, e.g. ["fixtures/environments/grid.yaml"]
group_sizes = [2, 4, 8, 16, 32]  # GRPO group sizes
simulation_thresholds = {}  # overrides of stats.simulator.DegeneracyThresholds'''

RUN_RELIABILITY = '''reliability = run_reliability_audit(corpus, campaign=campaign, n_boot=n_boot, seed=seed,
                                    thresholds=ReliabilityThresholds(**reliability_thresholds))'''

RUN_DISCRIMINABILITY = '''discriminability = run_discriminability_audit(
    corpus, floor_s=floor_s, campaign=campaign, n_boot=n_boot, seed=seed,
    thresholds=DiscriminabilityThresholds(**discriminability_thresholds))'''

RUN_STORED = '''stored = calibrate_runs(corpus, stored_run, fresh_run, calibration_family=calibration_family, n_boot=n_boot,
                        n_boot_rank=n_boot_rank, seed=seed, thresholds=calibration_thresholds)'''

RUN_ACROSS = '''across = calibrate_runs(corpus, source_run, target_run, calibration_family=calibration_family, n_boot=n_boot,
                        n_boot_rank=n_boot_rank, seed=seed, thresholds=calibration_thresholds)'''

RUN_AGGREGATION = '''aggregation = run_aggregation_audit(corpus, environment=aggregation_environment, campaign=aggregation_campaign,
                                    n_boot=n_boot, seed=seed, thresholds=aggregation_thresholds)'''

RUN_SIMULATION = '''reward_environments = load_environments(resolve_files(environment_files), resolve_files(grid_files))
simulation = run_simulation_audit(corpus, environments=reward_environments, environment=simulation_environment,
                                  campaign=simulation_campaign, group_sizes=group_sizes, seed=seed,
                                  thresholds=simulation_thresholds, n_boot=n_boot)'''


def md(text: str) -> dict:
    return {"cell_type": "markdown", "source": text.strip("\n")}


def code(text: str, *tags: str) -> dict:
    return {"cell_type": "code", "source": text.strip("\n"), "tags": list(tags)}


NOTEBOOKS: dict[str, list[dict]] = {}

NOTEBOOKS["overview"] = [
    md("""
# speedaudit overview

The verdicts of every audit on this corpus, worst first. Each line is a finding: what was measured,
the value, the threshold it was held to, and what to do. The other reports hold the figures and
the details behind each verdict; the parameters below are the union of theirs.
"""),
    code("\n".join([COMMON_PARAMETERS, RELIABILITY_PARAMETERS, CALIBRATION_PARAMETERS, AGGREGATION_PARAMETERS,
                     SIMULATION_PARAMETERS]), "parameters"),
    code(IMPORTS + '''

from audits.aggregation import run_aggregation_audit
from audits.discriminability import DiscriminabilityThresholds, run_discriminability_audit
from audits.reward_environments import load_environments
from audits.reliability import ReliabilityThresholds, run_reliability_audit
from audits.report.render import calibrate_runs, resolve_files
from audits.simulation import run_simulation_audit'''),
    code("corpus = load_corpora(corpora)"),
    code(RUN_RELIABILITY + "\n" + RUN_DISCRIMINABILITY),
    code(RUN_STORED + "\n" + RUN_ACROSS),
    code(RUN_AGGREGATION),
    code(RUN_SIMULATION),
    md("## Verdicts"),
    code('''verdicts = {
    "sandbox reliability": reliability.findings,
    "discriminability": discriminability.findings,
    f"calibration, stored → fresh ({stored_run} → {fresh_run})": stored.findings,
    f"calibration, environment → environment ({source_run} → {target_run})": across.findings,
    "aggregation": aggregation.findings,
    "reward simulation": simulation.findings,
}
narrative.show_verdicts(verdicts)'''),
    code("narrative.Markdown(narrative.describe_overview(verdicts))"),
    md("## Findings per audit"),
    code('narrative.show_findings(reliability.findings, audit="reliability", title="Sandbox reliability")'),
    code('narrative.show_findings(discriminability.findings, audit="discriminability", title="Discriminability")'),
    code('''narrative.show_findings(stored.findings, audit="calibration",
                        title=f"Calibration {stored_run} → {fresh_run}")'''),
    code('''narrative.show_findings(across.findings, audit="calibration",
                        title=f"Calibration {source_run} → {target_run}")'''),
    code('narrative.show_findings(aggregation.findings, audit="aggregation", title="Aggregation")'),
    code('narrative.show_findings(simulation.findings, audit="simulation", title="Reward environments")'),
    md("## The corpus"),
    code("""display(narrative.Markdown(narrative.describe_corpus(corpus, corpora)))
narrative.corpus_overview(corpus)"""),
]

NOTEBOOKS["reliability"] = [
    md("""
# Sandbox reliability and discriminability

Is this sandbox's timing repeatable, does it rank programs the same way twice, and do the tests
separate fast from slow solutions? Every environment of the corpus is audited side by side
(DESIGN.md, "Repeat CV", "Rank drift", "Robust CV"); intervals are bootstrap CIs over problems.
"""),
    code(COMMON_PARAMETERS + RELIABILITY_PARAMETERS, "parameters"),
    code(IMPORTS + '''

from audits.discriminability import DiscriminabilityThresholds, run_discriminability_audit
from audits.report.plots.reliability import (near_floor_shares, rank_drift_ranges, repeat_cv_distributions,
                                      robust_cv_per_problem)
from audits.reliability import ReliabilityThresholds, run_reliability_audit'''),
    code(LOAD),
    md("## Repeatability"),
    code(RUN_RELIABILITY + '''
narrative.show_findings(reliability.findings, audit="reliability", title="Sandbox reliability")'''),
    code("narrative.Markdown(narrative.describe_reliability(reliability))"),
    code("narrative.reliability_table(reliability)"),
    md("Repeat CV (sd/mean of a cell's `ok` repeats) of every (problem, test, solution) cell, per "
       "environment, with the warn and fail thresholds:"),
    code("narrative.show_figure(repeat_cv_distributions(reliability, seed=seed))"),
    md("Rank drift: each solution is scored once per repeat against a fixed pool; the peak-to-peak "
       "range of its score (100·q) across repeats, per environment and per problem:"),
    code("narrative.show_figure(rank_drift_ranges(reliability, seed=seed))"),
    md("## Discriminability"),
    code(RUN_DISCRIMINABILITY + '''
narrative.show_findings(discriminability.findings, audit="discriminability", title="Discriminability")'''),
    code("narrative.Markdown(narrative.describe_discriminability(discriminability))"),
    code("narrative.discriminability_table(discriminability)"),
    md("Robust CV (IQR / median of a problem's optimization-test reference medians) of every problem, "
       "sorted, with the 0.3 line above which a problem is duration-filterable:"),
    code("narrative.show_figure(robust_cv_per_problem(discriminability))"),
    md("Share of each problem's optimization tests whose reference median is within 2× the sandbox floor "
       "(the empty program): their ranks are start-up noise."),
    code("narrative.show_figure(near_floor_shares(discriminability))"),
]

NOTEBOOKS["calibration"] = [
    md("""
# Calibration of stored reference timings

Can timings from one run stand in for another? Two comparisons: a **stored campaign against a fresh
one** in the same environment (do yesterday's reference timings still match today's service?), and
**one environment against another** in the same campaign (can a quiet local sandbox stand in for a
busy worker?). Each is paired per (problem, test, solution) on median durations and fitted with every
family (multiplicative, affine, power, polynomial, Deming); validity is leave-one-problem-out R²
pooled over all held-out problems (DESIGN.md, "Calibration").
"""),
    code(COMMON_PARAMETERS + CALIBRATION_PARAMETERS, "parameters"),
    code(IMPORTS + '''

from audits.report.plots.calibration import bland_altman_plot, calibration_scatter
from audits.report.render import calibrate_runs'''),
    code(LOAD),
    md("## Stored campaign → fresh campaign"),
    code(RUN_STORED + '''
narrative.show_findings(stored.findings, audit="calibration", title=f"{stored_run} → {fresh_run}")'''),
    code("narrative.Markdown(narrative.describe_calibration(stored))"),
    code("narrative.calibration_fit_table(stored)"),
    md("Every fitted family on the paired medians (log-log), against the identity:"),
    code("narrative.show_plot(calibration_scatter, stored, seed=seed)"),
    md("Bland-Altman on the log scale: the ratio of the two runs against their size, with the bias and "
       "the 95 % limits of agreement (shaded: bootstrap CIs over problems):"),
    code("narrative.show_plot(bland_altman_plot, stored, seed=seed)"),
    md("## One environment → another"),
    code(RUN_ACROSS + '''
narrative.show_findings(across.findings, audit="calibration",
                        title=f"{source_run} → {target_run}")'''),
    code("narrative.Markdown(narrative.describe_calibration(across))"),
    code("narrative.calibration_fit_table(across)"),
    code("narrative.show_plot(calibration_scatter, across, seed=seed)"),
    code("narrative.show_plot(bland_altman_plot, across, seed=seed)"),
]

NOTEBOOKS["aggregation"] = [
    md("""
# Aggregation of per-test timings

Which way of turning a solution's per-test timings into one score should this sandbox use? Every
aggregator is scored per repeat against the fixed reference pool and turned into a within-problem
percentile among the references (0-100), then compared on **stability** (mean |score(repeat i) −
score(repeat j)|, lower is better) and **dynamic range** (slowest minus fastest reference quartile,
quartiles from an independent repeat, higher is better). An aggregator is on the **Pareto front**
when no other is at least as stable and at least as separating (DESIGN.md, "Aggregators").
"""),
    code(COMMON_PARAMETERS + AGGREGATION_PARAMETERS,
         "parameters"),
    code(IMPORTS + '''

from audits.aggregation import run_aggregation_audit
from audits.report.plots.aggregation import stability_range_figure'''),
    code(LOAD),
    code(RUN_AGGREGATION + '''
narrative.show_findings(aggregation.findings, audit="aggregation", title="Aggregation")'''),
    code("narrative.Markdown(narrative.describe_aggregation(aggregation))"),
    md("Stability against dynamic range, one panel per run, with bootstrap CIs; the step line is the "
       "Pareto front, the square the default (`mean_pct`), the star the recommendation. Below: every "
       "aggregator's stability / range ratio, best first."),
    code("narrative.show_figure(stability_range_figure(aggregation.table))"),
    code("narrative.aggregation_table(aggregation)"),
]

NOTEBOOKS["simulation"] = [
    md("""
# Reward learnability (offline simulator)

Is a reward environment learnable before anyone trains with it? Human reference solutions stand in
for rollouts: each one's quality u (0 = fastest) is measured from one repeat and its reward from
another. Per quality bin the mean reward, rescaled to [0, 1], gives the reward-vs-quality curve; the
ideal is the diagonal 1 − u. Diagnostics: AUC (near 0 = sparse, near 1 = saturated), monotonicity,
steepness, deviation from the diagonal, curve noise, and the share of GRPO groups whose rewards are
all equal (zero advantage) per group size (DESIGN.md, "Offline simulator").
"""),
    code(COMMON_PARAMETERS + SIMULATION_PARAMETERS, "parameters"),
    code(IMPORTS + '''

from audits.reward_environments import load_environments
from audits.report.plots.simulation import reward_curves, zero_advantage_by_group_size
from audits.report.render import resolve_files
from audits.simulation import run_simulation_audit'''),
    code(LOAD),
    code(RUN_SIMULATION + '''
narrative.show_findings(simulation.findings, audit="simulation", title="Reward environments")'''),
    code("narrative.Markdown(narrative.describe_simulation(simulation))"),
    code("narrative.simulation_table(simulation)"),
    md("Reward against measured quality, one line per environment (best first), against the ideal "
       "diagonal 1 − u; the band is ±1 sd across repeat pairs:"),
    code("narrative.show_figure(reward_curves(simulation))"),
    md("Share of GRPO groups whose rewards are all equal (no advantage, no gradient) against the group size:"),
    code("narrative.show_figure(zero_advantage_by_group_size(simulation))"),
]


def build(name: str, cells: list[dict]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            node = nbformat.v4.new_markdown_cell(cell["source"])
        else:
            node = nbformat.v4.new_code_cell(cell["source"])
            if cell["tags"]:
                node.metadata["tags"] = cell["tags"]
        node["id"] = f"{name}-{i:02d}"
        nb.cells.append(node)
    nbformat.validate(nb)
    return nb


def main(argv: list[str] | None = None) -> int:
    out = Path(argv[0]) if argv else HERE
    for name, cells in NOTEBOOKS.items():
        path = out / f"{name}.ipynb"
        nbformat.write(build(name, cells), path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
