"""The demo's report parameters name whole calibration pairs, with and without a stored run.

``make demo`` compares today's quiet run with a stored one when the checkout ships one; without it (an
incomplete checkout) it must skip that pair, not name its fresh half alone, which the report refuses
(``audits.report.inputs.named_pairs``).
"""

from audits.corpus.runs import Run
from audits.report.demo import CAMPAIGN, demo_parameters
from audits.report.inputs import named_pairs


def _pairs(parameters):
    keys = ("pairs", "stored_run", "fresh_run", "source_run", "target_run")
    return named_pairs(**{k: parameters.get(k) for k in keys})


def test_with_a_stored_run_the_demo_names_stored_to_fresh_and_quiet_to_busy():
    pairs = _pairs(demo_parameters(n_boot=10, stored_run=("quiet", "quiet-a")))
    assert [(Run.coerce(s), Run.coerce(t)) for s, t in pairs] == [
        (Run("quiet", "quiet-a"), Run("quiet", CAMPAIGN)), (Run("quiet", CAMPAIGN), Run("busy", CAMPAIGN))]


def test_without_a_stored_run_the_demo_names_only_quiet_to_busy():
    pairs = _pairs(demo_parameters(n_boot=10, stored_run=None))
    assert [(Run.coerce(s), Run.coerce(t)) for s, t in pairs] == [(Run("quiet", CAMPAIGN), Run("busy", CAMPAIGN))]
