# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # speedaudit overview
#
# The verdicts of every audit on this corpus, worst first. Each line is a finding: what was measured,
# the value, the threshold it was held to, and what to do. The other reports hold the figures and
# the details behind each verdict; the parameters below are the union of theirs.

# %% tags=["parameters"]
# Parameters (papermill / `speedaudit report -p key=value` override them).
# Paths are relative to the working directory or to the repository root.
corpora = [
    "fixtures/corpora/quiet-a.parquet",
    "fixtures/corpora/quiet-b.parquet",
    "fixtures/corpora/busy-a.parquet",
]  # timing corpora, stacked into one
n_boot = None  # bootstrap resamples over problems for every interval (None: each audit's own, as `speedaudit audit AUDIT --help` says)
profile = "reward"  # verdict profile: "reward" (the study's reward sandbox) or "benchmark" (a benchmark machine)
seed = 0  # seed of the bootstrap and of the simulator

campaign = None  # only the runs of this campaign (None: every run, each (environment, campaign) on its own)
floor_s = None  # the sandbox floor in seconds (None: median of the corpus's floor rows)
reliability_thresholds = {}  # overrides of audits.checks.reliability.ReliabilityThresholds, e.g. {"repeat_cv": 0.1}
discriminability_thresholds = {}  # overrides of audits.checks.discriminability.DiscriminabilityThresholds
pairs = None  # calibration pairs [[[ENV, CAMPAIGN], [ENV, CAMPAIGN]], ...], source mapped onto target (speedaudit report --pair; the calibration audit's pairs option); none named here or below: every default pair (docs/calibration.md)
stored_run = None  # one more named pair: [environment, campaign] of stored reference timings ...
fresh_run = None  # ... calibrated onto this fresh run (direction kept: stored -> fresh)
source_run = None  # one more named pair: [environment, campaign] of a run of one environment ...
target_run = None  # ... against a run of another
calibration_family = None  # the map used for calibrated ranks and Bland-Altman (None: chosen by held-out log error)
n_boot_rank = None  # bootstrap resamples for the Spearman rank-agreement CIs, each re-ranks every solution (None: the calibration audit's)
calibration_thresholds = {}  # overrides of audits.checks.calibration.CalibrationThresholds, e.g. {"lopo_r2.fail": 0.8}
aggregation_environment = "quiet"  # sandbox environment to compare the aggregators on (None: every one)
aggregation_campaign = None  # campaign (None: every campaign of that environment, each on its own)
aggregation_thresholds = {}  # overrides of audits.checks.aggregation.AggregationThresholds, e.g. {"stability.warn": 4}
simulation_environment = "quiet"  # sandbox environment whose timings stand in for rollouts
simulation_campaign = None  # campaign (None: the environment's only, else earliest by timestamp, else first by name)
reward_environment_files = [
    "fixtures/environments/top30.yaml",
    "fixtures/environments/uniform_timeout_2x.yaml",
    "fixtures/environments/ranked_worst_p80.yaml",
    "fixtures/environments/duration_filter_q90.yaml",
    "fixtures/environments/duration_filter_q50.yaml",
    "fixtures/environments/duration_filter_q10.yaml",
    "fixtures/environments/length_filter_1k.yaml",
]  # reward environments to screen (audits/checks/reward_environments.py format)
grid_files = []  # grid files of reward environments, e.g. ["fixtures/environments/grid.yaml"]
group_sizes = None  # GRPO group sizes (None: the simulation audit's)
simulation_thresholds = {}  # overrides of audits.checks.simulation.SimulationThresholds, e.g. {"auc_sparse.fail": 0.02}
clocks_measures = None  # corpus columns to compare, the first the base of the rank agreement (None: duration_s, then cpu_s and instructions where the corpus has them)
compare_a = None  # set A: a value of compare_by, or @FILE of solution ids (None: the comparison's default)
compare_b = None  # set B, as compare_a (None: the comparison's default)
compare_by = None  # the column naming the sets (prefix: the solution id up to its first '/') (None: the comparison's default)
compare_confidence = None  # confidence c: a comparison is decided when P(A faster) is at least c or at most 1 - c (None: the comparison's default)
results_path = None  # audit results computed once by `speedaudit report` (None: this page computes them)

# %%
from IPython.display import display

from audits.report import narrative
from audits.report.compare_page import compare_findings, page_comparison, show_compare_findings
from audits.report.page import open_page

# %%
results = open_page(results_path, corpora, globals(), header=False)

# %%
reliability = results.reliability
discriminability = results.discriminability

# %%
calibrations = results.pairs  # every pair: the named ones, else the default ones, each with the rule that chose it

# %%
aggregation = results.aggregation

# %%
simulation = results.simulation

# %%
clocks = results.clocks

# %%
comparison = page_comparison(results)  # computed with compare_a, compare_b, compare_by, compare_confidence

# %% [markdown]
# ## Verdicts

# %%
verdicts = {
    "sandbox reliability": reliability.findings,
    "discriminability": discriminability.findings,
    **narrative.calibration_verdicts(calibrations),
    "aggregation": aggregation.findings,
    "reward simulation": simulation.findings,
    "choice of clock": clocks.findings,
    "paired comparison": compare_findings(comparison),
}
narrative.show_verdicts(verdicts)

# %%
narrative.Markdown(narrative.describe_overview(verdicts, profile=profile))

# %%
narrative.Markdown(narrative.clocks_headline(clocks, results))  # the clock recommendation reads the rows

# %%
narrative.Markdown(narrative.describe_not_measured(verdicts))

# %% [markdown]
# ## Findings per audit

# %%
narrative.show_findings(reliability.findings, audit="reliability", title="Sandbox reliability")

# %%
narrative.show_findings(discriminability.findings, audit="discriminability", title="Discriminability")

# %%
narrative.show_calibration_findings(calibrations)

# %%
narrative.show_findings(aggregation.findings, audit="aggregation", title="Aggregation")

# %%
narrative.show_findings(simulation.findings, audit="simulation", title="Reward environments")

# %%
narrative.show_findings(clocks.findings, audit="clocks", title="Choice of clock")

# %%
show_compare_findings(comparison)

# %% [markdown]
# ## The corpus

# %%
display(narrative.Markdown(results.corpus_summary.description))
display(narrative.Markdown(narrative.describe_profile(profile)))
display(results.corpus_summary.overview)
