"""The probe's summary names one figure when one test is chosen.

On a real archive (oj-lab/problem-packages, ``mole-fish``: one slot left for four inputs of one size), the
summary read "chosen secret/03 (2.7 ms to 2.7 ms CPU)": the range of the chosen tests' CPU times printed both
ends of a range of one. It now reads "(2.7 ms CPU)"; two or more chosen tests keep "low to high".
"""

from __future__ import annotations

import re

from audits.collect.suite import load_suite, probe_optimization_tests
from tests.collect.test_archives import workload_problem

FIGURE = r"[\d,]+\.\d ms"


def test_one_chosen_test_is_one_figure_and_several_a_range(tmp_path):
    workload_problem(tmp_path / "one" / "loop", heavy={5})
    (problem,) = probe_optimization_tests(load_suite(tmp_path / "one", n_largest_optimization=1)).problems
    assert [t.name for t in problem.tests_of_kind("optimization")] == ["secret/05"]
    assert re.search(rf"chosen secret/05 \({FIGURE} CPU\), left out {FIGURE} to {FIGURE}",
                     problem.optimization_choice), problem.optimization_choice

    workload_problem(tmp_path / "two" / "loop", heavy={2, 5})
    (problem,) = probe_optimization_tests(load_suite(tmp_path / "two", n_largest_optimization=2)).problems
    seconds = dict(problem.probe_seconds)
    low, high = (f"{seconds[name] * 1000:,.1f} ms" for name in ("secret/05", "secret/02"))
    low, high = sorted((low, high), key=lambda text: float(text[:-3].replace(",", "")))
    shown = low if low == high else f"{low} to {high}"  # two tests of equal CPU time read as one figure
    assert f"({shown} CPU)" in problem.optimization_choice, problem.optimization_choice
