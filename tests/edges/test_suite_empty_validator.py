"""A custom output validator that cannot be used says the problem is skipped, and an output_validator/ folder that
holds only a placeholder (BAPCtools' testproblemconfig: output_validator/.gitkeep) says how to fix it.

Found on the real BAPCtools test problems: the problem vanished from `speedaudit suite`'s list while its only skip
line read "custom output validator ... is neither Python, C++ nor C (found .gitkeep)", without saying that the whole
problem was left out.
"""

from audits.collect.suite import load_suite
from tests.collect.package_files import write

SUM_PY = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"


def _package(root, extra):
    return write(root, {"problem.yaml": "problem_format_version: 2025-09\nname: Sum\n",
                        "data/secret/1.in": "1 2\n", "data/secret/1.ans": "3\n",
                        "submissions/accepted/sum.py": SUM_PY, **extra})


def test_placeholder_and_foreign_validators_skip_their_problem_and_say_so(tmp_path):
    _package(tmp_path / "placeholder", {"output_validator/.gitkeep": ""})
    _package(tmp_path / "perl", {"output_validator/check.pl": "print 'ok';\n"})
    _package(tmp_path / "fine", {})
    suite = load_suite(tmp_path, build_dir=tmp_path / "build")
    assert [p.id for p in suite.problems] == ["fine"]
    reasons = {s.path.parent.name: s.reason for s in suite.skipped if s.path.name == "output_validator"}
    assert "holds no program (found .gitkeep), problem skipped: remove the folder" in reasons["placeholder"]
    assert "is neither Python, C++ nor C (found .pl), problem skipped" in reasons["perl"]
    text = suite.summary()
    assert all(reason in text for reason in reasons.values())
