"""The optimization-test probe builds the references where the campaign will (issue 22's leftover): each C++
program is compiled once per `collect`, through the command line and through `speedaudit.collect` alike
(audits.collect.campaign.WorkDir and probe_tests). Counted, not timed: the real compiler runs in the real build
box; the count wraps the one function that starts it when the content-hashed cache has no build."""

from __future__ import annotations

import pytest

import audits.collect.languages as languages
import speedaudit
from audits.cli import main
from audits.corpus.io import load_corpus
from tests.collect.package_files import write

ECHO_CPP = "#include <iostream>\nint main(){ long long x; std::cin >> x; std::cout << x << std::endl; }\n"


@pytest.fixture
def tied_package(tmp_path):
    """Eight secret inputs of one size, more than the 6 largest the loader takes by default (so the probe runs),
    and one C++ reference."""
    files = {"problem.yaml": "name: Echo\n", "submissions/accepted/echo.cpp": ECHO_CPP}
    for i in range(1, 9):
        files[f"data/secret/{i}.in"] = f"{i}\n"
        files[f"data/secret/{i}.ans"] = f"{i}\n"
    write(tmp_path / "suite" / "echo", files)
    return tmp_path / "suite"


@pytest.fixture
def compiler_runs(monkeypatch):
    runs = []
    real = languages._build_in_box

    def counted(argv, **kwargs):  # the reference's builds (the empty floor program is built once more, on purpose)
        if any(str(a).endswith("echo.cpp") for a in argv):
            runs.append(argv)
        return real(argv, **kwargs)

    monkeypatch.setattr(languages, "_build_in_box", counted)
    return runs


def _probed(path) -> bool:
    return path.with_name(path.name + ".probe.json").is_file()


def test_the_command_line_compiles_each_reference_once(tied_package, compiler_runs, tmp_path):
    out = tmp_path / "c.parquet"
    code = main(["collect", str(tied_package), "--out", str(out), "--repeats", "1", "--timeout", "5",
                 "--no-progress"])
    assert code == 0 and _probed(out)  # the probe ran
    assert len(compiler_runs) == 1, compiler_runs
    assert set(load_corpus(out)["solution"].astype(str)) >= {"accepted/echo.cpp"}


def test_the_api_probes_and_compiles_once_too(tied_package, compiler_runs, tmp_path):
    out = tmp_path / "api.parquet"
    result = speedaudit.collect(tied_package, out=out, repeats=1)
    assert result.out is not None and _probed(out)
    assert len(compiler_runs) == 1, compiler_runs
    out2 = tmp_path / "no-probe.parquet"
    speedaudit.collect(tied_package, out=out2, repeats=1, probe=False)
    assert not _probed(out2)
