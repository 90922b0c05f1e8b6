# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Aggregation of per-test timings
#
# Which way of turning a solution's per-test timings into one score should this sandbox use? Every
# aggregator is scored per repeat against the fixed reference pool and turned into a within-problem
# percentile among the references (0-100), then compared on **stability** (mean |score(repeat i) −
# score(repeat j)|, lower is better) and **dynamic range** (slowest minus fastest reference quartile,
# quartiles from an independent repeat, higher is better). An aggregator is on the **Pareto front**
# when no other is at least as stable and at least as separating (DESIGN.md, "Aggregators").

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
aggregation_environment = "quiet"  # sandbox environment to compare the aggregators on (None: every one)
aggregation_campaign = None  # campaign (None: every campaign of that environment, each on its own)
aggregation_thresholds = {}  # overrides of audits.checks.aggregation.AggregationThresholds, e.g. {"stability.warn": 4}
results_path = None  # audit results computed once by `speedaudit report` (None: this page computes them)

# %%
from audits.report import narrative
from audits.report.page import open_page
from audits.report.plots.aggregation import stability_range_figure

# %%
results = open_page(results_path, corpora, globals(), profile=profile)

# %%
aggregation = results.aggregation
narrative.show_findings(aggregation.findings, audit="aggregation", title="Aggregation")

# %%
narrative.Markdown(narrative.describe_run_rule(aggregation))

# %%
narrative.Markdown(narrative.describe_aggregation(aggregation))

# %% [markdown]
# Stability against dynamic range, one panel per run, with bootstrap CIs; the step line is the Pareto front, the square the default (`mean_pct`), the star the recommendation. Below: every aggregator's stability / range ratio, best first.

# %%
narrative.show_plot(stability_range_figure, aggregation)

# %%
narrative.aggregation_table(aggregation)
