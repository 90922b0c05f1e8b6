"""A finding's interval on a corpus with one problem reads ``(no CI)``, not ``[undefined, undefined]``.

Found on a real archive (BAPCtools' test problems, collected by `speedaudit collect`): with one problem that
ranks solutions, the reliability finding said "moves by sd 13 points between repeats [undefined, undefined]".
Every audit's message writes its interval with audits.protocol.findings.interval_text.
"""

import numpy as np
import pandas as pd

from audits.engine.whole_audit import run_audits


def _one_problem() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame([
        {"environment": "e", "campaign": "c", "problem": "p", "test": t, "solution": f"s{s}", "repeat": r,
         "status": "ok", "role": "reference", "correct": True, "test_kind": "optimization",
         "duration_s": 0.01 * (1 + s) * size * (1 + 0.3 * rng.random())}
        for s in range(6) for t, size in (("t1", 1.0), ("t2", 4.0), ("t3", 9.0)) for r in range(3)])


def test_one_problem_findings_say_no_ci():
    audit = run_audits(_one_problem(), ["reliability", "discriminability"])
    messages = [f.message for result in audit.results.values() for f in result.findings]
    rank_sd = [m for m in messages if "moves by sd" in m]
    assert rank_sd and all("(no CI)" in m for m in rank_sd)  # the premise: the figure is measured, its CI is not
    for message in messages:
        assert "undefined, undefined" not in message and "[nan" not in message, message
