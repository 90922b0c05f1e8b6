# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Reward learnability (offline simulator)
#
# Is a reward environment learnable before anyone trains with it? Human reference solutions stand in
# for rollouts: each one's quality u (0 = fastest) is measured from one repeat and its reward from
# another. Per quality bin the mean reward, rescaled to [0, 1], gives the reward-vs-quality curve; the
# ideal is the diagonal 1 − u. Diagnostics: AUC (near 0 = sparse, near 1 = saturated), monotonicity,
# steepness, deviation from the diagonal, curve noise, and the share of GRPO groups whose rewards are
# all equal (zero advantage) per group size (DESIGN.md, "Offline simulator").

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
results_path = None  # audit results computed once by `speedaudit report` (None: this page computes them)

# %%
from audits.report import narrative
from audits.report.page import open_page
from audits.report.plots.simulation import reward_curves, zero_advantage_by_group_size

# %%
results = open_page(results_path, corpora, globals(), profile=profile)

# %%
simulation = results.simulation
narrative.show_findings(simulation.findings, audit="simulation", title="Reward environments")

# %%
narrative.Markdown(narrative.describe_run_rule(simulation))

# %%
narrative.Markdown(narrative.describe_simulation(simulation))

# %%
narrative.simulation_table(simulation)

# %% [markdown]
# Reward against measured quality, one panel per reward environment (best first), against the ideal diagonal 1 − u; the band is ±1 sd across repeat pairs:

# %%
narrative.show_plot(reward_curves, simulation)

# %% [markdown]
# Share of GRPO groups whose rewards are all equal (no advantage, no gradient) against the group size:

# %%
narrative.show_plot(zero_advantage_by_group_size, simulation)
