# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Calibration of stored reference timings
#
# Can timings from one run stand in for another? Two comparisons: a **stored campaign against a fresh
# one** in the same environment (do yesterday's reference timings still match today's service?), and
# **one environment against another** in the same campaign (can a quiet local sandbox stand in for a
# busy worker?). Each is paired per (problem, test, solution) on median durations and fitted with every
# family (multiplicative, affine, power, polynomial, Deming); validity is leave-one-problem-out R²
# pooled over all held-out problems (DESIGN.md, "Calibration").

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
stored_run = ["quiet", "quiet-a"]  # [environment, campaign] of the stored reference timings (None: skip) ...
fresh_run = ["quiet", "quiet-b"]  # ... calibrated onto this fresh run (direction kept: stored -> fresh)
source_run = ["quiet", "quiet-a"]  # [environment, campaign] of a run of one environment (None: skip) ...
target_run = ["busy", "busy-a"]  # ... against a run of another
pair_rules = {}  # the rule that chose each pair, {"stored": RULE, "across": RULE} (docs/calibration.md; filled by speedaudit report for the pairs it chooses; absent: "named")
calibration_family = None  # the map used for calibrated ranks and Bland-Altman (None: chosen by held-out log error)
n_boot_rank = None  # bootstrap resamples for the Spearman rank-agreement CIs, each re-ranks every solution (None: the calibration audit's)
calibration_thresholds = {}  # overrides of audits.checks.calibration.CalibrationThresholds, e.g. {"lopo_r2.fail": 0.8}
results_path = None  # audit results computed once by `speedaudit report` (None: this page computes them)

# %%
from audits.report import narrative
from audits.report.page import open_page
from audits.report.plots.calibration import bland_altman_plot, calibration_scatter
from audits.report.inputs import run_label

# %%
results = open_page(results_path, corpora, globals(), profile=profile)

# %% [markdown]
# ## Stored campaign → fresh campaign

# %%
stored = results.stored
narrative.show_findings(stored.findings, audit="calibration",
                        title=f"{run_label(stored_run)} → {run_label(fresh_run)}")

# %%
narrative.Markdown(narrative.describe_calibration(stored))

# %%
narrative.calibration_fit_table(stored)

# %% [markdown]
# Every fitted family on the paired medians (log-log), against the identity:

# %%
narrative.show_plot(calibration_scatter, stored, seed=seed)

# %% [markdown]
# Bland-Altman on the log scale: the ratio of the two runs against their size, with the bias and the 95 % limits of agreement (shaded: bootstrap CIs over problems):

# %%
narrative.show_plot(bland_altman_plot, stored, seed=seed)

# %% [markdown]
# ## One environment → another

# %%
across = results.across
narrative.show_findings(across.findings, audit="calibration",
                        title=f"{run_label(source_run)} → {run_label(target_run)}")

# %%
narrative.Markdown(narrative.describe_calibration(across))

# %%
narrative.calibration_fit_table(across)

# %%
narrative.show_plot(calibration_scatter, across, seed=seed)

# %%
narrative.show_plot(bland_altman_plot, across, seed=seed)
