# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Paired comparison of two candidate sets
#
# Which of two sets of programs for the same problems (e.g. two models' programs) is faster, when both
# were timed in one campaign (`collect --candidates A=DIR --candidates B=DIR`, shuffled together with the
# references)? Per run: the paired speed win rate of A over B with its bootstrap CI over problems, ties by
# the noise model (a comparison is decided only when P(A faster) passes the confidence), the share of
# undecided comparisons, and each set's pass rate (`speedaudit compare`, docs/noise.md). On the shipped
# corpora the default compares their accepted submissions with their time-limit-exceeded ones.

# %% tags=["parameters"]
# Parameters (papermill / `speedaudit report -p key=value` override them).
# Paths are relative to the working directory or to the repository root.
corpora = [
    "fixtures/corpora/quiet-a.parquet",
    "fixtures/corpora/quiet-b.parquet",
    "fixtures/corpora/busy-a.parquet",
]  # timing corpora, stacked into one
compare_a = None  # set A: a value of compare_by, or @FILE of solution ids (None: the comparison's default)
compare_b = None  # set B, as compare_a (None: the comparison's default)
compare_by = None  # the column naming the sets (prefix: the solution id up to its first '/') (None: the comparison's default)
compare_confidence = None  # confidence c: a comparison is decided when P(A faster) is at least c or at most 1 - c (None: the comparison's default)
n_boot = None  # bootstrap resamples over problems for every interval (None: each audit's own, as `speedaudit audit AUDIT --help` says)
seed = 0  # seed of the bootstrap
results_path = None  # audit results computed once by `speedaudit report` (None: this page computes them)

# %%
from audits.report.compare_page import (compare_problems_table, compare_runs_table, describe_compare,
                                        page_comparison, show_compare_figure, show_compare_findings)
from audits.report.narrative import Markdown, describe_run_rule
from audits.report.page import open_page

# %%
results = open_page(results_path, corpora, globals())
comparison = page_comparison(results)  # computed with compare_a, compare_b, compare_by, compare_confidence

# %% [markdown]
# ## Verdicts

# %%
show_compare_findings(comparison)

# %%
Markdown(describe_run_rule(comparison))

# %% [markdown]
# ## What the comparison says

# %%
describe_compare(comparison)

# %% [markdown]
# ## Per run
#
# Each figure with its 95 % bootstrap CI over problems: the win rate (undecided comparisons count ½), the expected win rate (the mean P(A faster), no threshold), the decided win rate (A's share of the decided comparisons), the pass rates; the share of undecided comparisons; and P(an A execution ran before a B one), ½ when the sets were interleaved.

# %%
compare_runs_table(comparison)

# %% [markdown]
# Every problem's win rate of A (dots, sorted), the headline win rate and its CI (line and band), and ½ (dashed).

# %%
show_compare_figure(comparison)

# %% [markdown]
# ## Per problem

# %%
compare_problems_table(comparison)
