# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The choice of clock
#
# Which clock should rank the programs: the wall time (`duration_s`), which carries whatever else the
# machine was doing, or the CPU time (`cpu_s`), which does not but hides what a program waits for? Every
# run is audited once per clock the corpus records (`speedaudit audit clocks`): the same repeat CV, rank
# drift, ICC, strong-weak gap and filterable share side by side, and on the quietest run whether the
# clocks order the solutions of each problem alike (docs/reliability.md).

# %% tags=["parameters"]
# Parameters (papermill / `speedaudit report -p key=value` override them).
# Paths are relative to the working directory or to the repository root.
corpora = [
    "fixtures/corpora/quiet-a.parquet",
    "fixtures/corpora/quiet-b.parquet",
    "fixtures/corpora/busy-a.parquet",
]  # timing corpora, stacked into one
n_boot = None  # bootstrap resamples over problems for every interval (None: each audit's own, as `speedaudit audit AUDIT --help` says)
seed = 0  # seed of the bootstrap and of the simulator
campaign = None  # only the runs of this campaign (None: every run, each (environment, campaign) on its own)
clocks_measures = None  # corpus columns to compare, the first the base of the rank agreement (None: duration_s, then cpu_s and instructions where the corpus has them)
results_path = None  # audit results computed once by `speedaudit report` (None: this page computes them)

# %%
from audits.report import narrative
from audits.report.page import open_page
from audits.report.plots.clocks import clock_figures, rank_agreement_figure

# %%
results = open_page(results_path, corpora, globals())
corpus = results  # the rows are read only where a reason needs them (one clock): saved results render alone

# %% [markdown]
# ## What the clocks say

# %%
clocks = results.clocks
narrative.show_findings(clocks.findings, audit="clocks", title="Which clock to trust")

# %%
narrative.Markdown(narrative.describe_run_rule(clocks))

# %%
narrative.Markdown(narrative.describe_clocks(clocks, corpus))

# %% [markdown]
# ## The figures of each run under each clock
#
# One row per run and clock, as `speedaudit audit clocks` computes them; `-` where a figure is not measurable (e.g. rank drift with one repeat).

# %%
narrative.clocks_table(clocks)

# %% [markdown]
# Each figure in its own panel, one bar per clock within each run: a clock that suits the reward has the shorter bars in the first two panels and the longer ones in the next two; the filterable share describes the workloads and should not depend on the clock.

# %%
narrative.show_clocks_plot(clock_figures, clocks, corpus)

# %% [markdown]
# ## Do the clocks order the solutions alike?
#
# On the quietest run, Kendall's tau-b between the solutions' scores under each clock and under the first, per problem (1: the same order, -1: reversed).

# %%
narrative.clock_agreement_table(clocks, corpus)

# %%
narrative.show_clocks_plot(rank_agreement_figure, clocks, corpus)
