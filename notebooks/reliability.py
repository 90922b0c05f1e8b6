# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Sandbox reliability and discriminability
#
# Is this sandbox's timing repeatable, does it rank programs the same way twice, and do the tests
# separate fast from slow solutions? Every environment of the corpus is audited side by side
# (DESIGN.md, "Repeat CV", "Rank drift", "Robust CV"); intervals are bootstrap CIs over problems.

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
results_path = None  # audit results computed once by `speedaudit report` (None: this page computes them)

# %%
from audits.report import narrative
from audits.report.page import open_page
from audits.report.plots.reliability import (near_floor_shares, rank_drift_ranges, repeat_cv_distributions,
                                      robust_cv_per_problem)

# %%
results = open_page(results_path, corpora, globals(), profile=profile)

# %% [markdown]
# ## Repeatability

# %%
reliability = results.reliability
narrative.show_findings(reliability.findings, audit="reliability", title="Sandbox reliability")

# %%
narrative.Markdown(narrative.describe_run_rule(reliability))

# %%
narrative.Markdown(narrative.describe_reliability(reliability))

# %%
narrative.reliability_table(reliability)

# %% [markdown]
# ### Contention
#
# Was each run collected on a machine that left its programs a core? The median wall/CPU ratio of single-threaded `ok` executions and the load average recorded during collection (the `contention` finding above); the [choice of clock](clocks.html) page compares the audit under wall and CPU time.

# %%
narrative.Markdown(narrative.describe_contention(reliability))

# %%
narrative.contention_table(reliability)

# %% [markdown]
# Repeat CV (sd/mean of a cell's `ok` repeats) of every (problem, test, solution) cell, per environment, with the warn and fail thresholds:

# %%
narrative.show_plot(repeat_cv_distributions, reliability, metric="median_repeat_cv", seed=seed)

# %% [markdown]
# Rank drift: each solution is scored once per repeat against a fixed pool; the peak-to-peak range of its score (100·q) across repeats, per environment and per problem:

# %%
narrative.show_plot(rank_drift_ranges, reliability, metric="mean_rank_range", seed=seed)

# %% [markdown]
# ## Discriminability

# %%
discriminability = results.discriminability
narrative.show_findings(discriminability.findings, audit="discriminability", title="Discriminability")

# %%
narrative.Markdown(narrative.describe_run_rule(discriminability))

# %%
narrative.Markdown(narrative.describe_discriminability(discriminability))

# %%
narrative.discriminability_table(discriminability)

# %% [markdown]
# Robust CV (IQR / median of a problem's optimization-test reference medians) of every problem, sorted, with the 0.3 line above which a problem is duration-filterable:

# %%
narrative.show_plot(robust_cv_per_problem, discriminability, metric="filterable_share")

# %% [markdown]
# Share of each problem's optimization tests whose reference median is within 2× the sandbox floor (the empty program): their ranks are start-up noise.

# %%
narrative.show_plot(near_floor_shares, discriminability, metric="near_floor_test_share")
