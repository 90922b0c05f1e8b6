"""Fixtures shared by test modules of several layers: corpora, real pyperf files, a loopback Dask cluster.

A fixture that hands out a mutable object (a corpus frame) is module-scoped: every module gets its own
copy, so a test that modifies a corpus cannot leak into another module. A fixture that is expensive to
make and read-only for its users (files pyperf wrote, a running cluster) is session-scoped: made once per
pytest process (once per xdist worker under `make test`), which is also why each makes its own
temporary folder and binds port 0, never a fixed path or port. The installed wheel (``installed_wheel``)
is made once per session for all workers: in the session's folder they share, under a lock
(tests/installed_wheel.py).

Parallel by default: `make test` runs every test not marked ``serial`` in parallel (pytest-xdist, one
worker per core, a whole test file per worker), then the ``serial`` ones alone. Mark a test ``serial``
only when what it asserts depends on the machine being otherwise idle of tests (it reads the load, a
clock ratio or a timing margin), and say why beside the mark.
"""

from __future__ import annotations

import math
import os
import resource
import subprocess
import sys
import time

import pytest

from audits.corpus.synthetic import synthesize
from audits.report.render import _without_iri_grammars

# The product's first import of jsonschema, before a test module imports nbformat at its top (test_any_corpus
# does): without it, collecting the tests compiled jsonschema's 39 IRI grammars in every pytest process (1.3-2.8 s
# of CPU each, measured 2026-12-07), which no report does (tests/report/test_notebook_imports.py checks the
# product's own processes, each in a fresh interpreter).
_without_iri_grammars()


def pytest_collection_modifyitems(config, items):
    """Test files longest first: by the previous run's seconds per file where this checkout has them, else the
    files holding a ``slow`` test first; the order is otherwise unchanged (stable sort).

    ``make test`` hands whole files to its xdist workers in collection order (``--dist loadfile
    --no-loadscope-reorder``); a file of several minutes handed out last keeps one worker busy after the
    other has finished (longest first is the classic remedy for that tail). The previous run's seconds per
    file are pytest's cache (:func:`pytest_sessionfinish`); a file without a record (all of them on a fresh
    clone) that is marked ``slow`` comes before every recorded one, an unmarked one after them. Mark a test
    ``slow`` when its file takes a minute or more under ``make test`` (the run's ``--durations`` ends with the
    slowest files, each flagged when it is marked; see :func:`pytest_terminal_summary`).
    """
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    before = _cached_file_seconds(config)

    def seconds(item) -> float:
        recorded = before.get(_file_of(item.nodeid))
        if recorded is not None:
            return recorded
        return math.inf if item.path in slow_files else -1.0

    items.sort(key=lambda item: -seconds(item))


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _cache_key(config) -> str:
    """One record per ``-m`` expression: ``make test``'s serial pass (``-m serial``) runs a few tests of
    files whose other tests its parallel pass ran, and must not overwrite that pass's seconds with its own."""
    return f"speedaudit/file_seconds/{config.getoption('markexpr', '') or 'all'}"


_SECONDS_BEFORE = pytest.StashKey[dict]()


def _cached_file_seconds(config) -> dict:
    """The previous runs' seconds per file, read once per session: by the controller, from pytest's cache, and
    handed to every xdist worker (:func:`pytest_configure_node`), so all workers sort alike (xdist refuses
    workers whose collections differ) even if another run in this checkout writes the cache meanwhile."""
    if hasattr(config, "workerinput"):
        return config.workerinput.get("speedaudit_file_seconds", {})
    if _SECONDS_BEFORE not in config.stash:
        cache = getattr(config, "cache", None)  # None with -p no:cacheprovider
        config.stash[_SECONDS_BEFORE] = cache.get(_cache_key(config), {}) if cache is not None else {}
    return config.stash[_SECONDS_BEFORE]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(pytest-xdist, in the controller) Every worker gets the controller's one reading of the cache."""
    node.workerinput["speedaudit_file_seconds"] = _cached_file_seconds(node.config)


#: Seconds (setup + call + teardown of its tests) per test file, summed as the reports arrive (under xdist,
#: in the controller, from every worker's reports), for :func:`pytest_terminal_summary`.
_FILE_SECONDS: dict[str, list] = {}


#: CPU seconds (user + system) of each test file: its process's and its waited-for children's (a kernel, a CLI
#: subprocess), summed like :data:`_FILE_SECONDS`; the summary compares the two to say whether the run waited or
#: computed. Not counted: a process left running (a session cluster's worker) and whatever the sandbox's
#: launcher runs (a long-lived process of its own that forks the programs), so a collection file's figure is a
#: lower bound (test_instructions.py: 35 s here against 86 s from /usr/bin/time, helper-18, 2026-12-07).
_FILE_CPU: dict[str, float] = {}
_CPU_KEY = "speedaudit_cpu_s"
_cpu_mark = [0.0]
_session_start = [time.perf_counter()]


def _cpu_now() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_machine_start: list = [None]


def _machine_cpu() -> tuple[int, int] | None:
    """(busy, total) jiffies of every core since boot, from /proc/stat (None where it does not exist): every
    process of the machine counted, the sandboxed programs too."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def pytest_sessionstart(session):
    _session_start[0] = time.perf_counter()
    _machine_start[0] = _machine_cpu()


def pytest_runtest_logstart(nodeid, location):
    _cpu_mark[0] = _cpu_now()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report carries the CPU seconds spent since the phase before (in the process that ran it:
    an xdist worker sends it to the controller with the report)."""
    outcome = yield
    now = _cpu_now()
    report = outcome.get_result()
    report.user_properties = [*report.user_properties, (_CPU_KEY, now - _cpu_mark[0])]
    _cpu_mark[0] = now


def pytest_runtest_logreport(report):
    entry = _FILE_SECONDS.setdefault(_file_of(report.nodeid), [0.0, False])  # [seconds, marked slow]
    entry[0] += report.duration
    entry[1] = entry[1] or "slow" in report.keywords
    cpu = sum(value for key, value in report.user_properties if key == _CPU_KEY)
    _FILE_CPU[_file_of(report.nodeid)] = _FILE_CPU.get(_file_of(report.nodeid), 0.0) + cpu


def pytest_terminal_summary(terminalreporter, config):
    """With ``--durations=N``: the N slowest test files too, each flagged when it is marked ``slow``.

    A file of minutes that is not marked ``slow`` is handed out in collection order, possibly last, and keeps
    one worker busy after the other has finished: this list says which files to mark.
    """
    count = config.getoption("durations", None)
    if not count or hasattr(config, "workerinput") or not _FILE_SECONDS:
        return
    terminalreporter.write_sep("=", f"slowest {count} test files (setup + call + teardown; CPU: user + system "
                                     f"of the test's process and its waited-for children; sandboxed programs not counted)")
    for path, (seconds, slow) in sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1][0])[:count]:
        terminalreporter.write_line(f"{seconds:8.1f}s {_FILE_CPU.get(path, 0.0):8.1f}s CPU "
                                    f"{'slow' if slow else '    '} {path}")
    wall = time.perf_counter() - _session_start[0]
    busy, cpu = sum(s for s, _ in _FILE_SECONDS.values()), sum(_FILE_CPU.values())
    workers = getattr(config.option, "numprocesses", None) or 1
    terminalreporter.write_line(
        f"all files: {busy:,.0f} s of tests on {workers} worker(s) in {wall:,.0f} s, {cpu:,.0f} s of CPU: the cores "
        f"({os.cpu_count()}) were computing at least {cpu / (wall * (os.cpu_count() or 1)):.0%} of the time, and a test "
        f"computed for at least {cpu / busy if busy else math.nan:.0%} of its duration (the rest it waited: for a timeout, a "
        f"socket, a process it did not wait for, or a core busy with something else)")
    end = _machine_cpu()
    if _machine_start[0] is not None and end is not None and end[1] > _machine_start[0][1]:
        busy_share = (end[0] - _machine_start[0][0]) / (end[1] - _machine_start[0][1])
        terminalreporter.write_line(f"the machine's cores were busy {busy_share:.0%} of the run (/proc/stat, every "
                                    f"process): idle cores are what another worker could use")


def pytest_sessionfinish(session, exitstatus):
    """This run's seconds per test file into pytest's cache (in the controller, merged into the record of the
    runs before: a run of some files keeps the others' seconds), for :func:`pytest_collection_modifyitems`."""
    config = session.config
    cache = getattr(config, "cache", None)
    if cache is None or hasattr(config, "workerinput") or not _FILE_SECONDS:
        return
    record = {**_cached_file_seconds(config),
              **{path: round(seconds, 1) for path, (seconds, _slow) in _FILE_SECONDS.items()}}
    cache.set(_cache_key(config), record)


@pytest.fixture(autouse=True)
def _aggregator_registry_restored():
    """Every test leaves the aggregator registry (``stats.aggregation``, process-global) as it found it.

    A test or docstring example that registers an aggregator (e.g. ``register_aggregator``'s own example)
    would otherwise leak it into every later test of the same process, which then asks Dask workers
    (other processes, without it) for it; which tests share a process depends on how xdist distributes them.
    """
    from stats import aggregation

    before = dict(aggregation._REGISTRY)
    yield
    if aggregation._REGISTRY != before:
        aggregation._REGISTRY.clear()
        aggregation._REGISTRY.update(before)


@pytest.fixture(scope="module")
def drifted():
    """The issue's drifted corpus: the default spec (20 problems, seed 0) in two campaigns, c1 = 0.63·c0 + 53 ms.

    Used by the estimator tests (tests/stats/test_calibration.py) and the audit tests
    (tests/audits/test_audit_calibration.py) alike.
    """
    return synthesize(campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053))).corpus


def _timeit(path, stmt, *extra):
    cmd = [sys.executable, "-m", "pyperf", "timeit", "--quiet", "-p", "3", "-n", "3", "-w", "1", *extra,
           "-o", str(path), stmt]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return path


@pytest.fixture(scope="session")
def pyperf_files(tmp_path_factory):
    """Files the real pyperf writes: two timeit runs (fixed loops; calibrated) and a Runner-API suite.

    Returns ``(folder, main.json, patched.json, suite.json)``; used by the pyperf importer's tests
    (tests/corpus/test_pyperf_import.py) and the README's example (tests/cli/test_examples.py).
    Session-scoped (four pyperf processes): its users only read the files (copy them to change them).
    """
    root = tmp_path_factory.mktemp("pyperf")
    fixed = _timeit(root / "main.json", "sum(range(50))", "-l", "20")        # fixed loops: no calibration
    calibrated = _timeit(root / "patched.json", "sum(range(200))")           # pyperf calibrates the loop count
    # The Runner API (what pyperformance uses) writing a suite with two benchmarks.
    script = root / "bench.py"
    script.write_text(
        "import pyperf\n"
        "runner = pyperf.Runner()\n"
        "runner.timeit('sort', stmt='sorted(x)', setup='x=list(range(300,0,-1))')\n"
        "runner.timeit('join', stmt=\"','.join(x)\", setup='x=[str(i) for i in range(300)]')\n")
    suite = root / "suite.json"
    subprocess.run([sys.executable, str(script), "--quiet", "-p", "2", "-n", "2", "-w", "1", "-l", "5",
                    "-o", str(suite)], check=True, capture_output=True, timeout=120)
    return root, fixed, calibrated, suite


@pytest.fixture(scope="session")
def cluster():
    """``(address, security)`` of a real dask.distributed LocalCluster over TLS on loopback.

    Certificates made for it (``Security.temporary()``, which needs the ``cryptography`` package).
    processes=False keeps it quick (workers are threads of this process) while the client still talks
    to the scheduler over a real TLS socket. Used by tests/collect/test_dask_campaign.py and the
    ``collect --help`` example (tests/cli/test_help_examples.py). Session-scoped: one cluster per pytest
    process; its users submit jobs and read results, none changes the cluster.
    """
    import dask
    from distributed import LocalCluster
    from distributed.security import Security

    from audits.engine.partitioned._common import LOCAL_CLUSTER_CONFIG

    security = Security.temporary()
    # the project's cluster settings (the slow health tick and system monitor: it idles for most of the session)
    with dask.config.set(LOCAL_CLUSTER_CONFIG), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tls", host="127.0.0.1",
                         dashboard_address=None, security=security) as c:
        assert c.scheduler_address.startswith("tls://127.0.0.1:")
        yield c.scheduler_address, security


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory):
    """``(venv, site-packages, env)``: the wheel of this checkout installed (not editable) into a fresh venv, made
    once per test session and shared by the xdist workers (tests/installed_wheel.py). Used by
    tests/report/test_wheel_install.py and README's examples (tests/cli/test_examples.py); its users run the
    installed commands and change nothing in the venv."""
    from tests.installed_wheel import installed_wheel as make

    return make(tmp_path_factory)


#: The machines of :func:`pyperf_machines`: (hostname, speed factor, power-law exponent, log-sd of the
#: machine x benchmark interaction). The first is the reference; the others differ from it by a scale,
#: a curvature and benchmark-specific noise small (pass), middling (warn) or large (fail) on the
#: calibration's held-out log-error thresholds (0.10 / 0.25).
PYPERF_MACHINES = (("bench-a", 1.00, 1.00, 0.000), ("bench-b", 0.80, 1.00, 0.030), ("bench-c", 1.30, 0.98, 0.150),
                   ("bench-d", 0.65, 1.02, 0.450), ("bench-e", 1.10, 1.00, 0.060), ("bench-f", 2.00, 0.97, 0.180))


def write_pyperf_machines(folder, *, n_benchmarks: int = 30, processes: int = 4, values: int = 3,
                          lo_s: float = 40e-9, hi_s: float = 10.0, seed: int = 0) -> list:
    """Write one pyperf suite file per machine of :data:`PYPERF_MACHINES` WITH pyperf itself.

    One build (one ``commit_id``) on six machines; benchmark true durations log-uniform from ``lo_s``
    (40 ns, pyperf's unpack_sequence) to ``hi_s`` (10 s); machine m times benchmark b at
    speed_m * t_b ** exponent_m * exp(interaction) with per-value noise of 1 %; each run (process) has
    one warmup and ``values`` values and real run metadata (hostname, platform, CPU, compiler, date).
    Returns the file paths.
    """
    import datetime as _dt

    import numpy as _np
    import pyperf

    rng = _np.random.default_rng(seed)
    truth = _np.exp(_np.linspace(_np.log(lo_s), _np.log(hi_s), n_benchmarks))
    names = [f"bm_{i:02d}" for i in range(n_benchmarks)]
    paths = []
    for k, (host, speed, exponent, sd) in enumerate(PYPERF_MACHINES):
        interaction = rng.normal(0.0, sd, n_benchmarks) if sd else _np.zeros(n_benchmarks)
        benchmarks = []
        for name, t, eps in zip(names, truth, interaction):
            base = speed * t ** exponent * _np.exp(eps)
            runs = []
            for p in range(processes):
                date = _dt.datetime(2024, 6, 24, 10, 0, 0) + _dt.timedelta(minutes=p)
                meta = {"name": name, "hostname": host, "platform": "Linux-6.1.0-x86_64-with-glibc2.36",
                        "cpu_model_name": f"Synthetic CPU {k}", "cpu_count": 8, "commit_id": "2e91dba437fe5c56c6f8",
                        "python_compiler": "GCC 12.2.0", "python_implementation": "cpython",
                        "date": date.isoformat(sep=" "), "loops": 1, "duration": float(base * values * 1.1)}
                vals = base * _np.exp(rng.normal(0.0, 0.01, values))
                runs.append(pyperf.Run([float(v) for v in vals], warmups=[(1, float(base * 1.2))],
                                       metadata=meta, collect_metadata=False))
            benchmarks.append(pyperf.Benchmark(runs))
        path = folder / f"{host}.json"
        pyperf.BenchmarkSuite(benchmarks).dump(str(path), replace=True)
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def pyperf_machines(tmp_path_factory):
    """``(folder, corpus.parquet, files)``: :func:`write_pyperf_machines`' six files (written by pyperf) imported
    with ``speedaudit import pyperf`` (a real subprocess)."""
    root = tmp_path_factory.mktemp("pyperf_machines")
    files = write_pyperf_machines(root)
    corpus = root / "corpus.parquet"
    subprocess.run([sys.executable, "-m", "audits.cli", "import", "pyperf", *map(str, files), "--out", str(corpus)],
                   check=True, capture_output=True, timeout=300)
    return root, corpus, files


def _dump_pyperf(path, benchmarks, *, metadata, start="2024-06-23 10:00:00", calibration=True):
    """Write one pyperf result file with pyperf's own API (``pyperf.Benchmark`` / ``BenchmarkSuite.dump``).

    ``benchmarks`` maps a benchmark name to its process runs, each a list of values (seconds); every
    process run gets one warmup and a ``date`` 30 s after the previous one; with ``calibration`` each
    benchmark starts with a calibration run (no values), as pyperf writes when it calibrates the loops.
    ``metadata`` (hostname, platform, python_compiler, commit_id, ...) goes into every run.
    """
    import pandas as pd
    import pyperf

    clock = pd.Timestamp(start)
    out = []
    for name, processes in benchmarks.items():
        runs = []
        if calibration:
            runs.append(pyperf.Run([], warmups=[(1, processes[0][0] * 1.3)], collect_metadata=False,
                                   metadata={"name": name, "date": clock.isoformat(sep=" "), "calibrate_loops": 1,
                                             "loops": 1, **metadata}))
        for values in processes:
            clock += pd.Timedelta(seconds=30)
            runs.append(pyperf.Run([float(v) for v in values], warmups=[(1, float(values[0]) * 1.2)],
                                   collect_metadata=False,
                                   metadata={"name": name, "date": clock.isoformat(sep=" "), "loops": 1, **metadata}))
        out.append(pyperf.Benchmark(runs))
    path.parent.mkdir(parents=True, exist_ok=True)
    pyperf.BenchmarkSuite(out).dump(str(path), replace=True)
    return path


@pytest.fixture(scope="session")
def write_pyperf():
    """:func:`_dump_pyperf`: a pyperf result file written by pyperf itself, from planted process runs."""
    return _dump_pyperf
