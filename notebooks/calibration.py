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
# Can timings from one run stand in for another? Every pair the calibration audit chose: the pairs named
# (`--pair`, `-p pairs=...`), else the default pairs, a **stored campaign against each fresh one** in one
# environment (do yesterday's reference timings still match today's service?) and **each environment against
# the quietest** in one campaign (can a busy worker's timings be mapped onto a quiet sandbox's?). Each pair is
# paired per (problem, test, solution) on median durations and fitted with every family (multiplicative,
# affine, power, polynomial, Deming); validity is leave-one-problem-out R² pooled over all held-out problems
# (DESIGN.md, "Calibration"). One section per pair below.

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
pairs = None  # calibration pairs [[[ENV, CAMPAIGN], [ENV, CAMPAIGN]], ...], source mapped onto target (speedaudit report --pair; the calibration audit's pairs option); none named here or below: every default pair (docs/calibration.md)
stored_run = None  # one more named pair: [environment, campaign] of stored reference timings ...
fresh_run = None  # ... calibrated onto this fresh run (direction kept: stored -> fresh)
source_run = None  # one more named pair: [environment, campaign] of a run of one environment ...
target_run = None  # ... against a run of another
calibration_family = None  # the map used for calibrated ranks and Bland-Altman (None: chosen by held-out log error)
n_boot_rank = None  # bootstrap resamples for the Spearman rank-agreement CIs, each re-ranks every solution (None: the calibration audit's)
calibration_thresholds = {}  # overrides of audits.checks.calibration.CalibrationThresholds, e.g. {"lopo_r2.fail": 0.8}
results_path = None  # audit results computed once by `speedaudit report` (None: this page computes them)

# %%
from audits.report import narrative
from audits.report.page import open_page
from audits.report.plots.calibration import bland_altman_plot, calibration_scatter

# %%
results = open_page(results_path, corpora, globals(), profile=profile)
calibrations = results.pairs  # every pair: the named ones, else the default ones, each with the rule that chose it

# %%
narrative.Markdown(narrative.describe_calibration_pairs(calibrations))

# %%
narrative.show_calibration_pairs(calibrations, calibration_scatter, bland_altman_plot, seed=seed)  # one section per pair
