"""Campaigns: time every (submission x test x repeat) job of a suite in a sandbox.

A campaign turns a suite (:func:`audits.collect.suite.load_suite`) into a list of jobs,
runs them with N parallel workers (threads that drive sandboxed processes) or on
a Dask cluster, appends every result to a journal as it arrives, and converts the
journal into a timing corpus (Parquet) at the end.

Jobs and order
    A *unit* is one program on one test; a *job* is a unit and a repeat index.
    Jobs run in rounds: round r holds every unit once, in a permutation drawn
    from ``numpy.random.default_rng([seed, r])``; when a round would start with
    the unit that ended the previous one, that unit is swapped with another, so
    no two repeats of one unit are ever adjacent (given two units or more).
    Every campaign also times the sandbox's *floor*: the empty program of each
    language present (``audits.collect.languages.floor_program``), recorded with role
    ``floor``, problem ``_floor``, test ``empty`` and solution = the language.
    There are ``max(repeats, ceil(real jobs / floor_every))`` floor jobs per
    language (default ``floor_every=20``, about 5 % of the runs), inserted at
    seeded random positions among the real jobs.
Job ids
    ``job_id(problem, test, solution, repeat)``: the first 16 hex digits of the
    SHA-256 of those four values. The journal is keyed by it.
Journal and resume
    ``<out>.journal.jsonl``: a header line (the campaign's fingerprint: suite,
    environment, campaign, sandbox, limits, seed, interpreter, floor settings
    and the ordered job ids) and one JSON line per finished job, each written
    with a single ``write`` on an ``O_APPEND`` descriptor (so a SIGKILL loses
    at most the jobs in flight; a half-written last line is dropped on resume)
    and ``fsync``-ed at least once a second. Started again with the same
    arguments, a campaign skips the jobs in the journal and runs only the rest:
    exactly one row per job. A journal from different arguments is refused.
Statuses
    The sandbox's status (:mod:`audits.collect.sandbox`); an ``ok`` run whose output the
    suite's checker rejects becomes ``wrong_answer``. ``duration_s`` is the
    measured wall time, except for a timeout, where it is the limit (DESIGN.md);
    the measured wall time is kept in ``wall_s``.
Adaptive repeats (``CampaignSpec(adaptive=True)``, ``collect --adaptive``)
    The plan holds ``max_repeats`` rounds, but only round 0 (``repeats`` of every
    unit) is run unconditionally. Then, round by round, the decision rule of
    :func:`stats.noise.adaptive_plan` (noise model on log durations, docs/noise.md)
    is fitted to every journaled execution, and only the cells it still finds
    ambiguous at ``confidence`` (each unit's gate at ``tau``, or with
    ``adaptive_target="rank"`` each cell's order against its pool, plus the pool
    members it cannot yet be ordered against) get their next repeat, until nothing
    is ambiguous or the ambiguous cells have ``max_repeats``. Job ids, journal and
    resume are those of a fixed campaign (the parameters are in the fingerprint): a
    resumed campaign refits the rule to what the journal holds and goes on.
Instruction counts (``CampaignSpec(measure="instructions")``, ``collect --measure instructions``)
    Every execution runs counted: under valgrind (cachegrind without the cache simulation,
    :mod:`audits.collect.counters`), whose report reaches the runner on the sandbox's report
    channel (``Sandbox.run(report=True)``: out of the program's reach), and the row's
    ``instructions`` is the count; ``None`` (NaN in the corpus) with the reason appended to
    ``reason`` where there is none (killed at the limit, a fork or exec the count cannot follow),
    never 0. Before the jobs, each language's floor program is run natively and counted
    (:data:`CALIBRATION_RUNS` each); the slowdown (:func:`audits.collect.counters.counted_wall_limit`)
    scales that language's wall (and CPU) limit, so a program that fits ``--timeout`` natively
    fits it counted (kept in the journal's header: a resumed campaign reuses it, and refuses a
    changed valgrind version). ``duration_s``, ``wall_s``, ``cpu_s`` and ``max_rss_kb`` are then the
    counted run's (valgrind's wall time, its memory with the program's); the manifest records
    the tool, its version, the command, the floors, the slowdowns and limits, and
    ``PYTHONHASHSEED``. perf is not used: the sandboxes' seccomp filter refuses ``perf_event_open``.
Failures of the harness
    A submission that does not compile is skipped with its reason (the campaign
    goes on). A job whose *sandbox* fails (a judge error, not the program's
    fault) is not journaled; the campaign finishes the other jobs, reports the
    errors and writes no corpus, so that running it again retries exactly those
    jobs. A job whose package's *output validator* fails (crash, time-out, an
    exit code that is neither 42 nor 43) is deterministic: its row has status
    ``checker_error`` (a status of the corpus schema: no timing, not correct)
    with the validator's message, it is journaled like any row (a resumed
    campaign does not retry it), counted and listed as not transient.

Example
-------
>>> from audits.collect.suite import load_suite
>>> suite = load_suite("fixtures/suites/mini")                      # doctest: +SKIP
>>> plan = plan_campaign(suite, CampaignSpec(repeats=3))            # doctest: +SKIP
>>> result = run_campaign(plan, out="corpus.parquet")               # doctest: +SKIP
>>> print(result.summary())                                         # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import dataclasses
import fcntl
import hashlib
import json
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from audits.collect.background_load import BackgroundLoad, LoadSpec
from audits.collect.checker import CheckerError
from audits.collect.counters import (
    FIXED_ENVIRONMENT,
    counted_wall_limit,
    parse_valgrind_log,
    resolved_binary,
    valgrind_argv,
)
from audits.collect.languages import BuildError, check_python_copies, cxx_flags, floor_program, prepare
from audits.collect.provenance import machine_info
from audits.collect.sandbox import Limits, SandboxError, accounting, make_sandbox, scratch_root, strongest_sandbox
from audits.collect.suite import probe_optimization_tests
from audits.corpus.io import normalize, save_corpus
from audits.corpus.schema import OPTIONAL_DEFAULTS, TEST_KINDS
from audits.corpus.table import id_defect
from audits.dask_connection import CONNECT_TIMEOUT_S, connect
from audits.errors import UserError
from stats.noise import adaptive_plan

__all__ = ["CampaignError", "CampaignSpec", "Unit", "Job", "Skip", "Plan", "CampaignResult", "interleave",
           "plan_campaign", "run_campaign", "WorkDir", "probe_tests"]

FLOOR_PROBLEM = "_floor"
FLOOR_TEST = "empty"
JOURNAL_VERSION = 1
#: What ``--measure`` can add to the clock (docs/collecting.md "Instruction counts").
MEASURES = ("instructions",)
#: Native and counted runs of each floor program before a counted campaign (medians taken: the
#: slowdown that scales the limits; three keep one slow run from setting it).
CALIBRATION_RUNS = 3
#: Start of a ``checker_error`` row's reason: the validator's failure is the harness's, and it repeats.
CHECKER_ERROR_NOTE = "output validator failed (NOT transient: running again gives the same; fix the validator)"


class CampaignError(UserError, RuntimeError):
    """A campaign that cannot start or finish (bad journal, unusable sandbox, harness errors)."""


@dataclass(frozen=True)
class CampaignSpec:
    """How to run a campaign.

    Parameters
    ----------
    environment, campaign : str
        Names written into every row (the sandbox/machine and the session).
    sandbox : str
        ``auto`` (default: the strongest sandbox this machine has, resolved when the spec is
        made, see :func:`audits.collect.sandbox.strongest_sandbox`), ``local``, ``bwrap`` or
        ``cmd:TEMPLATE`` (:func:`audits.collect.sandbox.make_sandbox`).
    repeats : int
        Repeats of every (submission, test) unit.
    workers : int
        Parallel jobs (threads, each driving one sandboxed process). Ignored with a scheduler.
    limits : Limits
        Wall time, memory, ... of every run.
    seed : int
        Seed of the interleaved order.
    floor_every : int
        About one floor job per this many real jobs (at least ``repeats`` per language).
    load : LoadSpec
        Background load while the campaign runs (on this machine).
    python : str
        Interpreter for Python submissions and the Python floor.
    test_kinds : tuple of str
        Which test kinds to run (``correctness``, ``optimization``).
    scheduler : str or None
        ``tls://HOST:PORT`` of a Dask scheduler; None runs locally. Plain ``tcp://`` is
        refused: anyone who reaches an unauthenticated scheduler can run code on its
        workers (``Client.run``), as root when they run as root.
    security : distributed.security.Security or None
        The TLS certificates of that cluster (``Security(tls_ca_file=..., tls_client_cert=...,
        tls_client_key=..., require_encryption=True)``, or ``Security.temporary()`` for a
        cluster made for this campaign). Not part of the campaign's identity.
    connect_timeout_s : float
        Seconds to try reaching ``scheduler`` before giving up (``--connect-timeout``; default
        :data:`audits.dask_connection.CONNECT_TIMEOUT_S`). Not part of the campaign's identity.
    pin_cpus : None, "auto" or sequence of int
        Pin each local worker to one core: worker i runs every program on ``pin_cpus[i]``
        (``"auto"``: the last ``workers`` cores this process may use), and the background
        load runs on the other cores. Resolved to a tuple when the spec is made; recorded
        per row (``cpu``) and in the campaign manifest. Not with a scheduler.
    adaptive : bool
        Adaptive repeats (see "Adaptive repeats" in the module docstring): ``repeats`` is the
        first round's count, and cells whose gate decision (or rank) is still ambiguous at
        ``confidence`` are re-executed round by round, up to ``max_repeats``.
    max_repeats : int or None
        With ``adaptive``: the most executions of one cell (default 15).
    confidence, tau : float
        With ``adaptive``: the decision rule's confidence and gate threshold
        (:func:`stats.noise.adaptive_plan`).
    adaptive_target : {"gate", "rank"}
        With ``adaptive``: what must be decided, each unit's gate or each cell's order against its pool.
    measure : {None, "instructions"}
        ``instructions``: every execution counted (see "Instruction counts" in the module docstring);
        ``local`` or ``bwrap`` only (a ``cmd:`` sandbox has no report channel).
    """

    environment: str = OPTIONAL_DEFAULTS["environment"]
    campaign: str = OPTIONAL_DEFAULTS["campaign"]
    sandbox: str = "auto"
    repeats: int = 5
    workers: int = 1
    limits: Limits = field(default_factory=Limits)
    seed: int = 0
    floor_every: int = 20
    load: LoadSpec = field(default_factory=LoadSpec)
    python: str = "/usr/bin/python3"
    #: C++ standard of every C++ build (e.g. ``c++20``); None: the newest the compiler supports
    cxx_std: str | None = None
    test_kinds: tuple[str, ...] = TEST_KINDS
    scheduler: str | None = None
    security: object | None = field(default=None, compare=False, repr=False)
    connect_timeout_s: float = field(default=CONNECT_TIMEOUT_S, compare=False)
    pin_cpus: tuple[int, ...] | str | None = None
    adaptive: bool = False
    max_repeats: int | None = None
    confidence: float = 0.95
    tau: float = 30.0
    adaptive_target: str = "gate"
    measure: str | None = None

    @property
    def planned_repeats(self) -> int:
        """Repeats planned per unit: ``max_repeats`` for an adaptive campaign, else ``repeats``."""
        return self.max_repeats if self.adaptive else self.repeats

    def __post_init__(self):
        if self.sandbox == "auto":
            object.__setattr__(self, "sandbox", strongest_sandbox())
        if self.pin_cpus is not None:
            object.__setattr__(self, "pin_cpus", _resolve_pins(self.pin_cpus, self.workers, self.scheduler))
        for name in ("environment", "campaign"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise CampaignError(f"--{name} must be a non-empty name, got {value!r}")
            if (defect := id_defect(value)) is not None:  # refused now, not by the corpus after the campaign ran
                raise CampaignError(f"--{name} {value!r}: a run's name cannot hold {defect} (the corpus refuses "
                                    f"such ids)\n  -> give the name without them")
        for name, low in (("repeats", 1), ("workers", 1), ("floor_every", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise CampaignError(f"--{name.replace('_', '-')} must be a whole number >= {low}, got {value!r}")
        if self.adaptive:
            if self.max_repeats is None:
                object.__setattr__(self, "max_repeats", max(15, self.repeats))
            if isinstance(self.max_repeats, bool) or not isinstance(self.max_repeats, int) \
                    or self.max_repeats < self.repeats:
                raise CampaignError(f"--max-repeats must be a whole number >= the first round's --repeats "
                                    f"({self.repeats}), got {self.max_repeats!r}")
            if self.repeats < 2:
                raise CampaignError("--adaptive needs --repeats >= 2 (the first round must give each cell a variance)")
            if not 0.5 < float(self.confidence) < 1:
                raise CampaignError(f"--confidence must lie strictly between 0.5 and 1, got {self.confidence!r}")
            if not 0 <= float(self.tau) <= 100:
                raise CampaignError(f"--tau must be a percentile in [0, 100], got {self.tau!r}")
            if self.adaptive_target not in ("gate", "rank"):
                raise CampaignError(f"--adaptive-target must be gate or rank, got {self.adaptive_target!r}")
        if self.measure is not None and self.measure not in MEASURES:
            raise CampaignError(f"--measure {self.measure!r}: give one of {', '.join(MEASURES)}")
        if self.measure is not None and self.sandbox not in ("local", "bwrap"):
            raise CampaignError(f"--measure {self.measure} needs --sandbox local or bwrap (auto picks one of them); "
                                f"{self.sandbox} has no report channel for the counter")
        if not self.test_kinds or any(k not in TEST_KINDS for k in self.test_kinds):
            raise CampaignError(f"--tests must name correctness and/or optimization, got {','.join(self.test_kinds)!r}")
        if self.scheduler is not None:
            if str(self.scheduler).startswith("tcp://"):
                raise CampaignError(
                    f"--scheduler {self.scheduler}: a plain TCP scheduler accepts work from anyone who reaches "
                    f"it (Client.run executes code on every worker)\n  -> start the cluster with TLS "
                    f"(dask scheduler --tls-ca-file ... --tls-cert ... --tls-key ...) and pass tls://HOST:PORT "
                    f"with --tls-ca-file, --tls-cert and --tls-key")
            if not str(self.scheduler).startswith(("tls://", "inproc://")):
                raise CampaignError(f"--scheduler {self.scheduler!r}: give the scheduler address as tls://HOST:PORT")
            if str(self.scheduler).startswith("tls://") and self.security is None:
                raise CampaignError(f"--scheduler {self.scheduler}: a TLS scheduler needs the cluster's "
                                    f"certificates\n  -> pass --tls-ca-file, --tls-cert and --tls-key")

    def fingerprint_fields(self) -> dict:
        fields = {"environment": self.environment, "campaign": self.campaign, "sandbox": self.sandbox,
                  "repeats": self.repeats, "limits": self.limits.to_dict(), "seed": self.seed,
                  "floor_every": self.floor_every, "python": self.python, "test_kinds": list(self.test_kinds)}
        if self.cxx_std is not None:  # absent by default: older journals keep their fingerprint
            fields["cxx_std"] = self.cxx_std
        if self.pin_cpus is not None:  # absent when unpinned: older journals keep their fingerprint
            fields["pin_cpus"] = list(self.pin_cpus)
        if self.measure is not None:  # absent when not counted: older journals keep their fingerprint
            fields["measure"] = self.measure
        if self.adaptive:
            fields["adaptive"] = {"max_repeats": self.max_repeats, "confidence": float(self.confidence),
                                  "tau": float(self.tau), "target": self.adaptive_target}
        return fields

    def describe_pinning(self) -> str:
        """``unpinned``, or which core each worker ran on and where the background load went."""
        if self.pin_cpus is None:
            return "unpinned"
        others = sorted(set(os.sched_getaffinity(0)) - set(self.pin_cpus))
        load = "" if self.load.empty else (f"; background load on cores {_cores(others)}" if others
                                           else "; background load unpinned (no core left for it)")
        return (", ".join(f"worker {i} on core {c}" for i, c in enumerate(self.pin_cpus)) + load)


def _cores(cpus: Iterable[int]) -> str:
    return ",".join(str(c) for c in cpus)


def _resolve_pins(pins, workers: int, scheduler: str | None) -> tuple[int, ...]:
    """``--pin-cpus``: one core per worker, among the cores this process may run on."""
    if scheduler is not None:
        raise CampaignError("--pin-cpus pins local workers; with --scheduler pin the Dask workers themselves "
                            "(e.g. taskset -c N dask worker ... --nthreads 1)")
    allowed = sorted(os.sched_getaffinity(0))
    if isinstance(pins, str):
        if pins != "auto":
            raise CampaignError(f"--pin-cpus {pins!r}: give 'auto' or core numbers such as 0,1")
        if workers > len(allowed):
            raise CampaignError(f"--pin-cpus: {workers} workers need {workers} cores, this process may use "
                                f"{len(allowed)} ({_cores(allowed)})\n  -> pass --workers {len(allowed)} or fewer")
        return tuple(allowed[-workers:])
    try:
        pins = tuple(int(c) for c in pins)
    except (TypeError, ValueError):
        raise CampaignError(f"--pin-cpus {pins!r}: give core numbers such as 0,1") from None
    bad = [c for c in pins if c not in allowed]
    if bad or len(set(pins)) != len(pins) or len(pins) != workers:
        raise CampaignError(f"--pin-cpus {_cores(pins)}: give {workers} distinct cores (one per worker) among "
                            f"those this process may use ({_cores(allowed)})")
    return pins


@dataclass(frozen=True)
class Unit:
    """One program on one test: everything a worker needs to run and judge it."""

    problem: str
    test: str
    solution: str
    role: str
    correct: bool
    test_kind: str
    language: str
    argv: tuple[str, ...]
    input_path: str
    answer_path: str | None
    input_bytes: int
    checker: object | None = None


@dataclass(frozen=True)
class Job:
    """A unit, a repeat index, its position in the order and its limits (and what else it measures)."""

    job_id: str
    order: int
    repeat: int
    unit: Unit
    limits: Limits
    #: ``instructions``: run counted (CampaignSpec.measure); None: timed only
    measure: str | None = None


@dataclass(frozen=True)
class Skip:
    """Something left out of the campaign (a submission that does not compile, a package) and why."""

    name: str
    reason: str

    def to_dict(self) -> dict:
        return {"name": self.name, "reason": self.reason}


@dataclass(frozen=True)
class Plan:
    """The ordered jobs of a campaign, what was skipped, and the fingerprint of the whole."""

    spec: CampaignSpec
    jobs: tuple[Job, ...]
    skipped: tuple[Skip, ...]
    fingerprint: str
    work_dir: Path
    owns_work_dir: bool = False
    #: removes an owned work dir if this process dies before run_campaign does (see _Janitor)
    janitor: object | None = field(default=None, compare=False, repr=False)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"order": j.order, "job": j.job_id, "problem": j.unit.problem, "test": j.unit.test,
                              "solution": j.unit.solution, "repeat": j.repeat, "role": j.unit.role}
                             for j in self.jobs])


def job_id(problem: str, test: str, solution: str, repeat: int) -> str:
    """Deterministic id of one job: 16 hex digits of SHA-256 over its four key values.

    >>> job_id("p", "t", "accepted/a.py", 0) == job_id("p", "t", "accepted/a.py", 0)
    True
    """
    text = json.dumps([str(problem), str(test), str(solution), int(repeat)], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def interleave(n_units: int, repeats: int, *, seed: int, n_floor_units: int = 0, floor_repeats: int = 0
               ) -> list[tuple[bool, int, int]]:
    """The seeded interleaved order: a list of ``(is_floor, unit_index, repeat)``.

    Real jobs run in ``repeats`` rounds, each a permutation of the units from
    ``default_rng([seed, round])``; a round that would start with the unit that ended
    the previous round has its first unit swapped with a random other one, so two
    repeats of a unit are never adjacent (for two units or more). Floor jobs
    (``n_floor_units`` x ``floor_repeats``, in rounds of their own) are inserted at
    seeded random positions.

    >>> order = interleave(3, 2, seed=0)
    >>> sorted(order) == [(False, u, r) for u in range(3) for r in range(2)]
    True
    """
    if n_units < 0 or repeats < 1:
        raise ValueError("interleave needs n_units >= 0 and repeats >= 1")
    real: list[tuple[bool, int, int]] = []
    previous = None
    for r in range(repeats):
        rng = np.random.default_rng([seed, r])
        perm = rng.permutation(n_units)
        if n_units > 1 and perm[0] == previous:
            k = int(rng.integers(1, n_units))
            perm[0], perm[k] = perm[k], perm[0]
        real.extend((False, int(u), r) for u in perm)
        if n_units:
            previous = perm[-1]
    floors: list[tuple[bool, int, int]] = []
    for r in range(floor_repeats):
        rng = np.random.default_rng([seed, 1_000_003, r])
        floors.extend((True, int(u), r) for u in rng.permutation(n_floor_units))
    if not floors:
        return real
    total = len(real) + len(floors)
    rng = np.random.default_rng([seed, 2_000_003])
    is_floor = np.zeros(total, dtype=bool)
    is_floor[rng.choice(total, size=len(floors), replace=False)] = True
    out, fi, ri = [], iter(floors), iter(real)
    for flag in is_floor:
        out.append(next(fi) if flag else next(ri))
    return out


def plan_units(units: Sequence[Unit], floor_units: Sequence[Unit], spec: CampaignSpec, *,
               skipped: Sequence[Skip] = (), work_dir: Path | None = None, extra_fingerprint: dict | None = None
               ) -> Plan:
    """Order units into jobs (see :func:`interleave`) and fingerprint the campaign.

    The lower-level entry point; :func:`plan_campaign` builds the units from a suite.
    """
    keys = [(u.problem, u.test, u.solution) for u in [*units, *floor_units]]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise CampaignError(f"two units share problem/test/solution {dup}; ids must be unique")
    n_real = len(units) * spec.planned_repeats
    floor_repeats = 0
    if floor_units:
        floor_repeats = max(spec.planned_repeats, math.ceil(n_real / spec.floor_every))
    order = interleave(len(units), spec.planned_repeats, seed=spec.seed, n_floor_units=len(floor_units),
                       floor_repeats=floor_repeats)
    jobs = []
    for position, (is_floor, index, repeat) in enumerate(order):
        unit = floor_units[index] if is_floor else units[index]
        jobs.append(Job(job_id(unit.problem, unit.test, unit.solution, repeat), position, repeat, unit, spec.limits,
                        spec.measure))
    digest = hashlib.sha256()
    digest.update(json.dumps({"version": JOURNAL_VERSION, **spec.fingerprint_fields(), **(extra_fingerprint or {})},
                             sort_keys=True).encode())
    for job in jobs:
        digest.update(job.job_id.encode())
    owns = work_dir is None
    janitor = None
    if work_dir is None:
        work_dir = scratch_root(f"speedaudit-collect-{os.getpid()}-")
        janitor = _Janitor([work_dir])
    return Plan(spec, tuple(jobs), tuple(skipped), digest.hexdigest()[:24], Path(work_dir), owns, janitor)


@dataclasses.dataclass
class WorkDir:
    """Where a campaign builds its programs (``build/``) and runs them: the user's folder (kept), or a fresh 0711
    scratch folder the campaign owns, removed when the campaign ends (by a janitor process if this one is killed,
    and when this process exits if the campaign never runs).

    Made once, before the optimization-test probe (:func:`probe_tests`), so that the probe's builds are the
    campaign's: each reference is compiled once (C++ builds are cached by content hash, a Python copy's check by a
    marker beside it)."""

    path: Path
    owned: bool
    janitor: object | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def make(cls, work_dir: str | os.PathLike | None = None) -> "WorkDir":
        if work_dir is None:  # made here: removed by the janitor even if this process is killed while building
            path = scratch_root(f"speedaudit-collect-{os.getpid()}-")
            return cls(path, True, _Janitor([path]))
        path = Path(work_dir).resolve()
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o711)
        return cls(path, False)

    def discard(self) -> None:
        """Remove an owned folder now (its campaign failed before running) and let its janitor go."""
        if self.owned:
            shutil.rmtree(self.path, ignore_errors=True)
            self.janitor.dismiss()


def probe_tests(suite, spec: CampaignSpec, *, out: str | os.PathLike, work: WorkDir, progress: bool = False):
    """``collect``'s probe of optimization tests of indistinguishable size
    (:func:`audits.collect.suite.probe_optimization_tests`) with the campaign's sandbox, interpreter and memory limit,
    under its wall limit up to 5 s; the choice is kept beside ``out`` (``<out>.probe.json``: a resumed campaign times
    the same tests) and the references are built in ``work`` (the campaign's builds). The command line and
    :func:`speedaudit.collect` both probe through here."""
    return probe_optimization_tests(suite, sandbox=spec.sandbox, python=spec.python,
                                    wall_s=min(spec.limits.wall_s, 5.0), memory_bytes=spec.limits.memory_bytes,
                                    record=f"{out}.probe.json", build_dir=work.path / "build", progress=progress)


def plan_campaign(suite, spec: CampaignSpec, *, work_dir: str | os.PathLike | WorkDir | None = None,
                  candidates=None, progress: bool = False) -> Plan:
    """Prepare every submission of a suite and plan its jobs.

    Submissions are prepared (C++ compiled once) into ``work_dir/build``; one that
    fails to build is skipped with its reason. ``work_dir`` must be reachable by the
    sandbox's unprivileged uid (default: a fresh 0711 folder under the temp dir; a
    :class:`WorkDir` made before, e.g. for the probe, is taken as it is).
    ``candidates`` (:class:`audits.collect.candidates.CandidateSets`, ``collect --candidates``):
    programs timed as role ``candidate`` on their problem's tests, interleaved with the references.
    ``progress``: a tqdm bar of the builds (count, ETA) on stderr.
    """
    work = work_dir if isinstance(work_dir, WorkDir) else WorkDir.make(work_dir)
    try:
        plan = _plan_suite(suite, spec, work.path, candidates, progress=progress)
    except BaseException:
        work.discard()
        raise
    return dataclasses.replace(plan, owns_work_dir=work.owned, janitor=work.janitor)


def _plan_suite(suite, spec: CampaignSpec, work_dir: Path, candidates=None, *, progress: bool = False) -> Plan:
    # deferred: tqdm only draws the progress bar (an optional feature)
    from tqdm.auto import tqdm

    build_dir = work_dir / "build"
    skipped = [Skip(str(s.path), s.reason) for s in getattr(suite, "skipped", ())]
    skipped += [Skip(name, reason) for name, reason in (candidates.skipped if candidates else ())]
    extra: dict[str, list] = {}
    for c in (candidates.candidates if candidates else ()):
        extra.setdefault(c.problem, []).append((c.solution, c.path, "candidate", True))
    units: list[Unit] = []
    languages: set[str] = set()
    bar = tqdm(total=sum(len(p.submissions) + len(extra.get(p.id, [])) for p in suite.problems), desc="build",
               unit="program", disable=not progress, file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
    for problem in suite.problems:
        tests = [t for t in problem.tests if t.kind in spec.test_kinds]
        programs = [(s.name, s, "reference", bool(s.correct)) for s in problem.submissions]
        # the problem's Python copies byte-compiled in one box run (prepare then finds them checked)
        check_python_copies([sub for _, sub, *_ in programs + extra.get(problem.id, [])], build_dir,
                            python=spec.python, sandbox=spec.sandbox)
        for name, submission, role, correct in programs + extra.get(problem.id, []):
            bar.update(1)
            try:
                program = prepare(submission, build_dir, python=spec.python, sandbox=spec.sandbox,
                                  cxxflags=cxx_flags(spec.cxx_std))
            except BuildError as exc:
                skipped.append(Skip(f"{problem.id}/{name}", f"build failed: {exc}"))
                continue
            languages.add(program.language)
            for test in tests:
                units.append(Unit(problem.id, test.name, name, role, correct,
                                  test.kind, program.language, tuple(program.argv), str(test.input_path),
                                  str(test.answer_path), int(test.input_bytes), problem.checker_for(test)))
    bar.close()
    empty = work_dir / "empty.in"
    empty.write_bytes(b"")
    floor_units = []
    for language in sorted(languages):
        try:
            program = floor_program(language, build_dir, python=spec.python, sandbox=spec.sandbox,
                                    cxxflags=cxx_flags(spec.cxx_std))
        except BuildError as exc:
            raise CampaignError(f"cannot build the {language} floor program: {exc}") from exc
        floor_units.append(Unit(FLOOR_PROBLEM, FLOOR_TEST, language, "floor", True, "optimization", language,
                                tuple(program.argv), str(empty), None, 0, None))
    if not units:
        raise CampaignError(f"{getattr(suite, 'root', 'suite')}: nothing to run: no submission x test pairs "
                            f"(test kinds {', '.join(spec.test_kinds)}; {len(skipped)} skipped)"
                            + "".join(f"\n    {s.name}: {s.reason}" for s in skipped[:10])
                            + (f"\n    ... and {len(skipped) - 10} more" if len(skipped) > 10 else ""))
    extra = {"suite": str(getattr(suite, "root", ""))}
    return plan_units(units, floor_units, spec, skipped=skipped, work_dir=work_dir, extra_fingerprint=extra)


# --------------------------------------------------------------------------------------------
# Executing one job (runs in a worker thread, or on a Dask worker)

_SANDBOXES: dict[str, object] = {}
_SCRATCH: dict[str, Path] = {}
_CACHE_LOCK = threading.Lock()


def _worker_sandbox(spec: str):
    with _CACHE_LOCK:
        if spec not in _SANDBOXES:
            _SANDBOXES[spec] = make_sandbox(spec)
        return _SANDBOXES[spec]


def _worker_scratch(scratch: str | None) -> Path:
    if scratch and os.path.isdir(scratch):
        return Path(scratch)
    with _CACHE_LOCK:  # a worker on another machine: its own scratch folder
        if "own" not in _SCRATCH:
            _SCRATCH["own"] = scratch_root("speedaudit-worker-")
            atexit.register(shutil.rmtree, _SCRATCH["own"], True)
        return _SCRATCH["own"]


def execute_job(job: Job, sandbox_spec: str, scratch: str | None = None, *, cpu: int | None = None) -> dict:
    """Run one job in the sandbox, check its output, and return its measurement.

    Returns a dict with ``job`` and either the measurement (``status``, ``wall_s``,
    ``cpu_s``, ``max_rss_kb``, ``exit_code``, ``signal``, ``stdout_truncated``,
    ``reason``, ``timestamp``, ``load_1m``: the 1-minute load average just before the
    program started, and ``cpu``: the core the calling worker thread is pinned to, or
    None) or ``error`` (a harness failure: sandbox or checker). A counted job
    (``job.measure == "instructions"``) also returns ``instructions`` (int, or None with the
    reason appended to ``reason``).
    Self-contained so that it can run on a Dask worker.
    """
    unit = job.unit
    try:
        sandbox = _worker_sandbox(sandbox_spec)
        workdir = Path(tempfile.mkdtemp(prefix="job-", dir=_worker_scratch(scratch)))
    except Exception as exc:  # noqa: BLE001 - reported as a harness error
        return {"job": job.job_id, "error": f"{type(exc).__name__}: {exc}"}
    try:
        load_1m = os.getloadavg()[0]
        counted = job.measure == "instructions"
        argv = valgrind_argv(unit.argv, inherited_fd=3) if counted else unit.argv
        ex = sandbox.run(argv, stdin_path=unit.input_path, workdir=workdir, limits=job.limits, report=counted)
        status, reason = ex.status, ex.reason
        count, count_note = _instructions(ex) if counted else (None, "")
        if status == "ok" and unit.checker is not None and unit.answer_path:
            try:
                accepted, why = unit.checker.check(ex.stdout_path, input_path=Path(unit.input_path),
                                                   answer_path=Path(unit.answer_path), workdir=workdir / "check")
            except CheckerError as exc:  # the archive's validator failed: running it again gives the same
                accepted, status, reason = True, "checker_error", f"{CHECKER_ERROR_NOTE}: {exc}"
            if not accepted:
                status, reason = "wrong_answer", why
        return {"job": job.job_id, "status": status, "wall_s": ex.wall_s, "cpu_s": ex.cpu_s,
                "max_rss_kb": ex.max_rss_kb, "exit_code": ex.exit_code, "signal": ex.signal,
                "stdout_truncated": ex.stdout_truncated, "reason": reason[:max(0, 500 - len(count_note))] + count_note,
                "timestamp": datetime.now(timezone.utc).isoformat(), "load_1m": load_1m, "cpu": cpu,
                **({"instructions": count} if counted else {})}
    except Exception as exc:  # noqa: BLE001 - a checker/sandbox failure is the harness's, not the program's
        return {"job": job.job_id, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _instructions(ex) -> tuple[int | None, str]:
    """The count of a counted execution, and ``""`` or ``"; instructions n/a: WHY"`` for its reason."""
    if ex.report_truncated:
        count, why = None, "valgrind's report was longer than the sandbox keeps"
    else:
        count, why = parse_valgrind_log(ex.report or b"")
    return count, ("" if count is not None else f"; instructions n/a: {why}")


def _row(job: Job, result: dict, spec: CampaignSpec) -> dict:
    unit = job.unit
    duration = job.limits.wall_s if result["status"] == "timeout" else result["wall_s"]
    return {"job": job.job_id, "environment": spec.environment, "campaign": spec.campaign, "problem": unit.problem,
            "test": unit.test, "solution": unit.solution, "repeat": job.repeat, "duration_s": duration,
            "status": result["status"], "role": unit.role, "correct": unit.correct, "test_kind": unit.test_kind,
            "cpu_s": result["cpu_s"], "max_rss_kb": result["max_rss_kb"], "input_bytes": unit.input_bytes,
            "timeout_s": job.limits.wall_s, "timestamp": result["timestamp"], "wall_s": result["wall_s"],
            "language": unit.language, "exit_code": result["exit_code"], "signal": result["signal"],
            "stdout_truncated": result["stdout_truncated"], "reason": result["reason"], "order": job.order,
            **({"instructions": result.get("instructions")} if job.measure == "instructions" else {}),
            **({"load_1m": result["load_1m"]} if result.get("load_1m") is not None else {}),
            **({"cpu": result["cpu"]} if result.get("cpu") is not None else {})}


# --------------------------------------------------------------------------------------------
# The journal


def journal_path_for(out: str | os.PathLike) -> Path:
    """``corpus.parquet`` -> ``corpus.parquet.journal.jsonl`` (beside the output)."""
    out = Path(out)
    return out.with_name(out.name + ".journal.jsonl")


class Journal:
    """Append-only JSON-lines record of finished jobs, keyed by job id.

    ``open()`` reads what an earlier run left (dropping a half-written last line),
    checks the header's fingerprint, and returns the rows already done.
    """

    def __init__(self, path: str | os.PathLike, fingerprint: str, *, header: dict | None = None,
                 fsync_every_s: float = 1.0):
        self.path = Path(path)
        self.fingerprint = fingerprint
        self.header = {"type": "header", "version": JOURNAL_VERSION, "fingerprint": fingerprint, **(header or {})}
        self.fsync_every_s = fsync_every_s
        self._fd: int | None = None
        self._last_sync = 0.0

    def stored_header(self) -> dict:
        """The header already on disk when it is this campaign's (same fingerprint), else ``{}``."""
        try:
            with open(self.path, "rb") as handle:
                head = json.loads(handle.readline())
        except (OSError, ValueError):
            return {}
        ours = isinstance(head, dict) and head.get("type") == "header" and head.get("fingerprint") == self.fingerprint
        return head if ours else {}

    def read(self) -> dict[str, dict]:
        """Rows already in the journal ({job id: row}); validates the header."""
        if not self.path.exists():
            return {}
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1  # everything after the last newline is a half-written line
        lines = data[:end].splitlines()
        if not lines:
            return {}
        try:
            head = json.loads(lines[0])
        except json.JSONDecodeError:
            head = None
        if not isinstance(head, dict) or head.get("type") != "header":
            raise CampaignError(f"{self.path}: not a speedaudit campaign journal (no header line)\n"
                                f"  -> move it away, or choose another --out")
        if head.get("fingerprint") != self.fingerprint:
            raise CampaignError(
                f"{self.path}: this journal belongs to a campaign with other arguments or another suite "
                f"(journal {head.get('campaign')!r}/{head.get('environment')!r}, fingerprint "
                f"{head.get('fingerprint')}; now {self.fingerprint})\n"
                f"  -> resume with exactly the same arguments, or pass --restart to discard it")
        rows: dict[str, dict] = {}
        for number, line in enumerate(lines[1:], start=2):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CampaignError(f"{self.path}: line {number} is corrupt ({exc})\n"
                                    f"  -> remove that line (the job will run again) or pass --restart") from None
            if row.get("type") == "row":
                rows.setdefault(row["job"], row)
        return rows

    def open(self) -> dict[str, dict]:
        rows = self.read()
        if self.path.exists():
            data = self.path.read_bytes()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                os.truncate(self.path, end)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(self._fd, 0o600)  # only root reads what ran, how, and the suite's paths
        if fresh:
            self._write(self.header)
            os.fsync(self._fd)
        return rows

    def _write(self, obj: dict) -> None:
        line = (json.dumps(obj, separators=(",", ":"), default=str) + "\n").encode()
        os.write(self._fd, line)

    def append(self, row: dict) -> None:
        self._write({"type": "row", **row})
        now = time.monotonic()
        if now - self._last_sync >= self.fsync_every_s:
            os.fsync(self._fd)
            self._last_sync = now

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


# --------------------------------------------------------------------------------------------
# Executors: local threads, or a Dask cluster. Both call handle(result) in the calling thread.


_PINNED = threading.local()


def _pin_worker(cores) -> None:
    """Thread-pool initializer: pin this worker thread to the next free core.

    ``sched_setaffinity(0, ...)`` sets the calling thread's mask; the thread's own launcher
    (``audits.collect.sandbox`` keeps one per thread, started on first use, so after this)
    and every program it forks inherit it.
    """
    core = cores.get_nowait()
    os.sched_setaffinity(0, {core})
    _PINNED.cpu = core


def _execute_pinned(job: Job, sandbox: str, scratch: str) -> dict:
    return execute_job(job, sandbox, scratch, cpu=getattr(_PINNED, "cpu", None))


def _run_local(jobs: Sequence[Job], handle: Callable[[dict], None], *, sandbox: str, scratch: str,
               workers: int, pin_cpus: Sequence[int] | None = None) -> None:
    window = max(2 * workers, 2)
    it = iter(jobs)
    pool_args: dict = {}
    if pin_cpus is not None:
        cores: queue.Queue = queue.Queue()
        for core in pin_cpus[:workers]:
            cores.put(core)
        pool_args = {"initializer": _pin_worker, "initargs": (cores,)}
    with cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="speedaudit-job", **pool_args) as pool:
        running: set[cf.Future] = set()

        def fill():
            while len(running) < window:
                job = next(it, None)
                if job is None:
                    return
                running.add(pool.submit(_execute_pinned, job, sandbox, scratch))

        try:
            fill()
            while running:
                done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    running.discard(future)
                    handle(future.result())
                fill()
        except BaseException:
            # Ctrl-C / crash: stop handing out jobs, let the running ones finish (their
            # limits bound the wait) and record them, then re-raise.
            for future in running:
                future.cancel()
            for future in cf.as_completed([f for f in running if not f.cancelled()]):
                try:
                    handle(future.result())
                except Exception:  # noqa: BLE001 - already unwinding
                    pass
            raise


def _run_dask(jobs: Sequence[Job], handle: Callable[[dict], None], *, sandbox: str, scratch: str,
              scheduler: str, tag: str, security=None,
              connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    # deferred: distributed is the optional Dask engine's (--scheduler)
    from distributed import as_completed

    client = connect(scheduler, security=security, timeout_s=connect_timeout_s, error=CampaignError,
                     advice=f"start one with 'dask scheduler --tls-ca-file CA --tls-cert CERT --tls-key KEY' and "
                            f"'dask worker {scheduler}' with the same options")
    try:
        threads = sum(client.nthreads().values()) or 1
        window = max(2 * threads, 4)
        it = iter(jobs)
        completed = as_completed()
        in_flight = 0

        def submit(job: Job):
            nonlocal in_flight
            completed.add(client.submit(execute_job, job, sandbox, scratch, key=f"speedaudit-{tag}-{job.job_id}",
                                        pure=False, retries=0))
            in_flight += 1

        for _ in range(window):
            job = next(it, None)
            if job is None:
                break
            submit(job)
        try:
            for future in completed:
                in_flight -= 1
                try:
                    result = future.result()
                except Exception as exc:  # noqa: BLE001 - a worker died: harness error for that job
                    result = {"job": future.key.rsplit("-", 1)[-1], "error": f"dask: {type(exc).__name__}: {exc}"}
                future.release()
                handle(result)
                job = next(it, None)
                if job is not None:
                    submit(job)
        except BaseException:
            completed.clear()
            raise
    finally:
        client.close()


# --------------------------------------------------------------------------------------------
# Running a campaign


@dataclass(frozen=True)
class CampaignResult:
    """What a campaign did."""

    out: Path | None
    journal: Path
    n_jobs: int
    resumed: int
    ran: int
    statuses: dict
    skipped: tuple[Skip, ...]
    errors: tuple[tuple[str, str], ...]
    elapsed_s: float
    load: str
    pinning: str = "unpinned"
    manifest: Path | None = None
    #: adaptive campaigns: rounds this invocation ran (round 0 counts even when resumed) and the planned maximum
    rounds: int | None = None
    max_jobs: int | None = None
    #: jobs whose output validator failed (a deterministic harness error): rows of status
    #: ``checker_error`` in the journal and the corpus, not retried
    checker_errors: tuple[tuple[str, str], ...] = ()
    #: a counted campaign (``measure="instructions"``): the counter as the manifest records it
    instructions: dict | None = None

    def summary(self) -> str:
        lines = [f"jobs {self.n_jobs:,}: {self.resumed:,} from the journal, {self.ran:,} run now "
                 f"in {self.elapsed_s:.1f} s (background load: {self.load}; cores: {self.pinning})",
                 *([f"adaptive: {self.rounds} rounds, {self.n_jobs:,} of at most {self.max_jobs:,} jobs "
                    f"({self.n_jobs / self.max_jobs:.0%})"] if self.rounds is not None else []),
                 "status  " + ", ".join(f"{k} {v:,}" for k, v in sorted(self.statuses.items()))]
        if self.instructions is not None:
            info = self.instructions
            lines.append(f"instructions counted by {info['version']} ({info['command']}); slowdown "
                         + ", ".join(f"{lang} {x:.1f}x (wall limit {info['wall_limit_s'][lang]:g} s)"
                                     for lang, x in info["slowdown"].items()))
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)}:")
            lines += [f"    {s.name}: {_short(s.reason)}" for s in self.skipped]
        if self.checker_errors:
            lines.append(f"checker errors {len(self.checker_errors)} (status checker_error: the package's output "
                         f"validator failed on these jobs; this is NOT transient, running again gives the same; "
                         f"the corpus has these rows with status checker_error, neither timed nor correct; "
                         f"fix the validator and collect them again with --restart):")
            lines += [f"    job {j}: {_short(e)}" for j, e in self.checker_errors[:10]]
            lines += [f"    ... and {len(self.checker_errors) - 10} more"] if len(self.checker_errors) > 10 else []
        if self.errors:
            lines.append(f"harness errors {len(self.errors)} (not recorded; run the same command again to retry):")
            lines += [f"    job {j}: {e}" for j, e in self.errors[:10]]
            lines += [f"    ... and {len(self.errors) - 10} more"] if len(self.errors) > 10 else []
        if self.out is not None:
            lines.append(f"wrote {self.out}")
        else:
            lines.append(f"no corpus written; the journal {self.journal} keeps what finished")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["out"] = None if self.out is None else str(self.out)
        out["journal"] = str(self.journal)
        out["manifest"] = None if self.manifest is None else str(self.manifest)
        return out


def _short(reason: str, limit: int = 300) -> str:
    """A reason on one line: its first line, plus the first line that says 'error' (compiler output)."""
    lines = [line.strip() for line in (reason or "").splitlines() if line.strip()]
    if not lines:
        return ""
    text = lines[0]
    detail = next((line for line in lines[1:] if "error" in line.lower()), None)
    if detail:
        text += " " + detail
    return text if len(text) <= limit else text[:limit] + "..."


def journal_to_corpus(rows: Iterable[dict], *, source: str = "<journal>") -> pd.DataFrame:
    """Journal rows -> a validated corpus (``audits.corpus.io.normalize``), sorted by execution order."""
    frame = pd.DataFrame(list(rows))
    if frame.empty:
        raise CampaignError(f"{source}: no finished jobs to write")
    frame = frame.drop(columns=[c for c in ("type", "job") if c in frame.columns])
    frame = frame.sort_values("order", kind="stable").reset_index(drop=True)
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601")
    for column in ("exit_code", "signal"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    return normalize(frame, source=source)


def _lock_holder(path: Path) -> int | None:
    """The pid holding a ``flock`` on ``path``, from /proc/locks (None if unknown)."""
    try:
        st = os.stat(path)
        for line in Path("/proc/locks").read_text().splitlines():
            parts = line.split()
            if len(parts) > 5 and parts[1] == "FLOCK" and parts[5].endswith(f":{st.st_ino}"):
                major, minor = (int(x, 16) for x in parts[5].split(":")[:2])
                if (major, minor) == (os.major(st.st_dev), os.minor(st.st_dev)):
                    return int(parts[4])
    except (OSError, ValueError):
        pass
    return None


class _CampaignLock:
    """An exclusive ``flock`` on the journal for as long as one campaign writes to ``out``.

    A second ``collect`` on the same ``--out`` stops at once with the pid of the holder.
    The kernel drops the lock when the holder dies, so a killed campaign never blocks
    the next one.
    """

    def __init__(self, out: Path, journal_path: Path):
        self.journal_path = journal_path
        journal_path.parent.mkdir(parents=True, exist_ok=True)
        existed = journal_path.exists()
        self.fd = os.open(journal_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self.created = not existed
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            holder = _lock_holder(journal_path)
            who = f"pid {holder}" if holder is not None else "another process"
            raise CampaignError(f"{out}: another campaign ({who}) is collecting into it now (its journal "
                                f"{journal_path} is locked)\n  -> wait for it to finish, stop it, or choose "
                                f"another --out") from None

    def release(self, *, remove_if_empty: bool = True) -> None:
        try:
            ours = os.fstat(self.fd)
            if remove_if_empty and ours.st_size == 0 and ours.st_nlink > 0:
                self.journal_path.unlink()  # nothing was journaled: leave nothing behind
        finally:
            os.close(self.fd)


def _stale_temporaries(out: Path) -> list[Path]:
    """Temporary files of an interrupted final write of ``out`` (named as ``audits.corpus.io.save_corpus`` names them)."""
    if not out.parent.is_dir():
        return []
    prefix = f".{out.name}."
    return [p for p in out.parent.iterdir() if p.name.startswith(prefix) and p.name.endswith(".tmp")]


# Removes the work dir when the campaign dies without cleaning up (SIGKILL): it reads the
# campaign's pipe until EOF; "done" first means the campaign cleaned up itself.
_JANITOR = (
    "import shutil, sys\n"
    "said = sys.stdin.buffer.read()\n"
    "if not said.startswith(b'done'):\n"
    "    for path in sys.argv[1:]:\n"
    "        shutil.rmtree(path, ignore_errors=True)\n"
)


class _Janitor:
    """A tiny process that removes the campaign's own work dir if the campaign is killed.

    Started when the work dir is made (planning builds programs there, which takes a while);
    :meth:`dismiss` (run_campaign's end, or a failed plan) lets it go without removing anything.
    A plan that is never run has its work dir removed when this process exits.
    """

    def __init__(self, paths: Sequence[Path]):
        self.proc = subprocess.Popen([sys.executable, "-c", _JANITOR, *map(str, paths)], stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def dismiss(self) -> None:
        if self.proc.returncode is not None:
            return
        try:
            self.proc.stdin.write(b"done")
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass
        self.proc.wait()


class _TermAsInterrupt:
    """SIGTERM behaves like Ctrl-C while a campaign runs (in the main thread only)."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            def raise_interrupt(signum, frame):
                raise KeyboardInterrupt(f"signal {signum}")
            self.previous = signal.signal(signal.SIGTERM, raise_interrupt)
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
        return False


def run_campaign(plan: Plan, *, out: str | os.PathLike, progress: bool = True, keep_journal: bool = False,
                 restart: bool = False, overwrite: bool = False, keep_work_dir: bool = False,
                 stop_after: int | None = None) -> CampaignResult:
    """Run (or resume) a planned campaign and write its corpus.

    Parameters
    ----------
    plan : Plan
        From :func:`plan_campaign` or :func:`plan_units`.
    out : path
        The corpus Parquet. The journal is ``<out>.journal.jsonl`` (mode 0600), locked for
        the whole campaign: a second campaign on the same ``out`` stops at once naming
        the pid that holds it.
    progress : bool
        Show a tqdm bar (ETA, running count by status) on stderr.
    keep_journal : bool
        Keep the journal after the Parquet is written (default: remove it).
    restart : bool
        Discard an existing journal instead of resuming it.
    overwrite : bool
        Allow collecting again into an existing ``out`` that has no journal.
    stop_after : int, optional
        Stop (without writing the corpus) after this many new jobs; for tests and dry runs.

    SIGTERM is handled like Ctrl-C: the jobs in flight finish (their limits bound the
    wait) and are journaled, the sandbox's processes are swept, the work dir is removed,
    and KeyboardInterrupt is raised. After a SIGKILL a small janitor process removes the
    work dir the campaign made; a resumed campaign removes a half-written corpus file.
    """
    out = Path(out)
    journal_path = journal_path_for(out)
    janitor = plan.janitor
    if janitor is None and plan.owns_work_dir and not keep_work_dir:
        janitor = _Janitor([plan.work_dir])
    lock = None
    try:
        with _TermAsInterrupt():
            lock = _CampaignLock(out, journal_path)
            for stale in _stale_temporaries(out):  # a final write killed half-way (we hold the lock)
                stale.unlink()
            if restart:
                os.ftruncate(lock.fd, 0)
            if out.exists() and (lock.created or restart) and not overwrite:
                raise CampaignError(f"{out} exists and there is no journal to resume\n"
                                    f"  -> pass --overwrite to collect again into it, or choose another --out")
            return _run_campaign(plan, out, journal_path, progress=progress, keep_journal=keep_journal,
                                 stop_after=stop_after)
    finally:
        if lock is not None:
            lock.release()
        # the work dir (built programs, scratch) is rebuilt by every run; ours goes in any case
        if plan.owns_work_dir and not keep_work_dir:
            shutil.rmtree(plan.work_dir, ignore_errors=True)
        if janitor is not None:
            janitor.dismiss()


def _run_campaign(plan: Plan, out: Path, journal_path: Path, *, progress: bool, keep_journal: bool,
                  stop_after: int | None) -> CampaignResult:
    # deferred: tqdm only draws the progress bar (an optional feature)
    from tqdm.auto import tqdm

    spec = plan.spec
    sandbox = make_sandbox(spec.sandbox)
    try:
        sandbox.check()
    except SandboxError as exc:
        raise CampaignError(str(exc)) from exc
    scratch = plan.work_dir / "runs"
    scratch.mkdir(exist_ok=True)
    os.chmod(scratch, 0o711)
    journal = Journal(journal_path, plan.fingerprint,
                      header={"campaign": spec.campaign, "environment": spec.environment, "n_jobs": len(plan.jobs),
                              "created": datetime.now(timezone.utc).isoformat(),
                              "pinning": spec.describe_pinning()})
    counter = None
    if spec.measure == "instructions":  # a resumed campaign keeps the limits its journal started with
        plan, counter = _counted_plan(plan, sandbox, scratch, kept=journal.stored_header().get("instructions"))
        journal.header["instructions"] = counter
    done = journal.open()
    by_id = {job.job_id: job for job in plan.jobs}
    stale = [j for j in done if j not in by_id]
    if stale:
        journal.close()
        raise CampaignError(f"{journal_path}: {len(stale)} rows are not jobs of this campaign\n"
                            f"  -> pass --restart to discard the journal")
    pending = [job for job in plan.jobs if job.job_id not in done]
    if stop_after is not None:
        pending = pending[:stop_after]
    statuses = Counter(row["status"] for row in done.values())
    errors: list[tuple[str, str]] = []
    ran = 0
    started = time.monotonic()
    bar = tqdm(total=len(plan.jobs), initial=len(done), desc=f"{spec.environment}/{spec.campaign}", unit="run",
               disable=not progress, file=sys.stderr, dynamic_ncols=True, mininterval=0.5)

    def handle(result: dict) -> None:
        nonlocal ran
        job = by_id[result["job"]]
        if "error" in result:
            errors.append((f"{job.unit.problem}/{job.unit.test}/{job.unit.solution}#{job.repeat}", result["error"]))
            statuses["harness_error"] += 1
        else:
            row = _row(job, result, spec)
            journal.append(row)
            done[job.job_id] = row
            statuses[row["status"]] += 1
            ran += 1
        bar.update(1)
        bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(statuses.items())), refresh=False)

    def execute(jobs: Sequence[Job]) -> None:
        if spec.scheduler:
            _run_dask(jobs, handle, sandbox=spec.sandbox, scratch=str(scratch), scheduler=spec.scheduler,
                      tag=plan.fingerprint[:10], security=spec.security,
                      connect_timeout_s=spec.connect_timeout_s)
        else:
            _run_local(jobs, handle, sandbox=spec.sandbox, scratch=str(scratch), workers=spec.workers,
                       pin_cpus=spec.pin_cpus)

    load = BackgroundLoad(spec.load)
    rounds = None
    try:
        with load:
            _pin_load(load, spec)
            if not spec.adaptive:
                execute(pending)
                complete = len(done) == len(plan.jobs)
            else:
                bar.reset(total=None)
                bar.update(len(done))
                complete, rounds = _adaptive_rounds(plan, done, execute, errors, budget=stop_after)
    finally:
        bar.close()
        journal.close()
        sandbox.sweep()
    elapsed = time.monotonic() - started
    statuses.pop("harness_error", None)
    checker_errors = [(f"{r['problem']}/{r['test']}/{r['solution']}#{r['repeat']}", r["reason"])
                      for r in sorted(done.values(), key=lambda r: r["order"]) if r["status"] == "checker_error"]
    written = None
    if complete and not errors:
        corpus = journal_to_corpus(done.values(), source=str(journal_path))
        written = save_corpus(corpus, out)
        manifest = _write_manifest(out, spec, corpus, instructions=counter)
        if not keep_journal:
            journal_path.unlink()
    return CampaignResult(written, journal_path, len(done) if spec.adaptive else len(plan.jobs), len(done) - ran,
                          ran, dict(statuses), plan.skipped, tuple(errors), elapsed, spec.load.describe(),
                          spec.describe_pinning(), manifest if written is not None else None,
                          rounds, len(plan.jobs) if spec.adaptive else None, tuple(checker_errors), counter)


def _median_wall(sandbox, argv, stdin: Path, scratch: Path, limits: Limits, *, counted: bool, what: str) -> float:
    """Median wall seconds of :data:`CALIBRATION_RUNS` ok runs of ``argv`` (a floor program)."""
    walls = []
    for _ in range(CALIBRATION_RUNS):
        workdir = Path(tempfile.mkdtemp(prefix="job-", dir=scratch))
        try:
            ex = sandbox.run(valgrind_argv(argv, inherited_fd=3) if counted else list(argv), stdin_path=stdin,
                             workdir=workdir, limits=limits, report=counted)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        count = parse_valgrind_log(ex.report or b"")[0] if counted else 0
        if ex.status != "ok" or count is None:
            raise CampaignError(f"--measure instructions: the {what} floor program did not run "
                                f"{'counted' if counted else 'natively'} ({ex.reason}): "
                                f"{ex.stderr_tail.strip()[-300:]}{(ex.report or b'').decode(errors='replace')[-300:]}")
        walls.append(ex.wall_s)
    return float(np.median(walls))


def _counted_plan(plan: Plan, sandbox, scratch: Path, *, kept: dict | None = None) -> tuple[Plan, dict]:
    """A counted campaign's jobs with each language's limits scaled by its floor's slowdown, and the record.

    ``kept``: the record of the journal's header (a resumed campaign): its slowdowns are reused, so that
    every job of the campaign runs under the same limits; a different valgrind version is refused.
    """
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise CampaignError("--measure instructions needs valgrind (perf cannot count inside the sandboxes: their "
                            "seccomp filter refuses perf_event_open)\n  -> apt-get install valgrind")
    spec = plan.spec
    floors = {j.unit.language: j.unit for j in plan.jobs if j.unit.role == "floor"}
    version = subprocess.run([valgrind, "--version"], capture_output=True, text=True).stdout.strip()
    if kept and set(kept.get("slowdown", {})) == set(floors):
        if kept.get("version") != version:
            raise CampaignError(f"--measure instructions: this campaign's journal was counted by {kept.get('version')}, "
                                f"valgrind is now {version}: the counts would mix versions\n  -> pass --restart")
        limits = {lang: dataclasses.replace(spec.limits, wall_s=kept["wall_limit_s"][lang],
                                            cpu_s=kept["cpu_limit_s"][lang]) for lang in floors}
        jobs = tuple(dataclasses.replace(j, limits=limits.get(j.unit.language, j.limits)) for j in plan.jobs)
        return dataclasses.replace(plan, jobs=jobs), kept
    if "python" in floors:
        try:
            resolved_binary(floors["python"].argv[0])
        except ValueError as exc:
            raise CampaignError(f"--measure instructions: {exc}") from None
    # generous limits for the calibration itself: the counted floor is what tells the slowdown
    probe = dataclasses.replace(spec.limits, wall_s=max(spec.limits.wall_s, 60.0), cpu_s=None)
    floor_s, slowdown, limits = {}, {}, {}
    for language, unit in sorted(floors.items()):
        native = _median_wall(sandbox, unit.argv, Path(unit.input_path), scratch, probe, counted=False, what=language)
        counted = _median_wall(sandbox, unit.argv, Path(unit.input_path), scratch, probe, counted=True, what=language)
        wall, slowdown[language] = counted_wall_limit(spec.limits.wall_s, native_floor_s=native,
                                                      counted_floor_s=counted)
        cpu = None if spec.limits.cpu_s is None else spec.limits.cpu_s * slowdown[language]
        limits[language] = dataclasses.replace(spec.limits, wall_s=wall, cpu_s=cpu)
        floor_s[language] = {"native_median_s": native, "counted_median_s": counted, "runs": CALIBRATION_RUNS}
    jobs = tuple(dataclasses.replace(j, limits=limits.get(j.unit.language, j.limits)) for j in plan.jobs)
    info = {"tool": "valgrind", "calibrated": datetime.now(timezone.utc).isoformat(), "path": os.path.realpath(valgrind), "version": version,
            "command": "cachegrind --cache-sim=no --trace-children=yes --vgdb=no",
            "report": "the sandbox's report channel (fd 3, moved to valgrind's reserved fd 1020)",
            "environment": dict(FIXED_ENVIRONMENT), "floor_s": floor_s, "slowdown": slowdown,
            "wall_limit_s": {lang: lim.wall_s for lang, lim in limits.items()},
            "cpu_limit_s": {lang: lim.cpu_s for lang, lim in limits.items()},
            "measured_columns": "duration_s, wall_s, cpu_s and max_rss_kb are the counted runs' (under valgrind)",
            "perf": "not used: the sandboxes' seccomp filter refuses perf_event_open"}
    return dataclasses.replace(plan, jobs=jobs), info


def _adaptive_rounds(plan: Plan, done: dict, execute: Callable[[Sequence[Job]], None], errors: list, *,
                     budget: int | None) -> tuple[bool, int]:
    """Run an adaptive campaign's rounds; returns (finished, rounds run).

    Round 0 runs every unit ``repeats`` times. Each later round fits the decision rule
    (:func:`stats.noise.adaptive_plan`) to *every* journaled execution of the campaign's
    real units, and runs the next repeat of each proposed cell (once per round, in the
    plan's seeded order). Floor jobs keep pace: ``max(repeats, ceil(real runs /
    floor_every))`` per language. A resumed campaign redoes this from the journal: the
    rule depends only on the executions (as a set), so it continues where it was killed.
    Gate target: an ambiguous unit that ``max_repeats`` cannot decide stops as ``futile``
    after one round beyond the first (``futility_from = repeats + 1``: every ambiguous unit is
    re-executed at least once); pool members stay proposed. Chosen by replaying rule variants
    on a 20-repeat campaign (``benchmarks.bench_adaptive --replay``, docs/noise.md): the futility
    stop cut executions from 81 % to 65 % of fixed-5 (52 % when it acts from the first round,
    but then a coin-flip unit may get no second look, which the issue's test forbids);
    proposing only the units' own cells cut more but lost agreement, so it is not used.
    It stops when nothing is ambiguous below ``max_repeats``, on a harness error (the
    missing jobs are retried when the command is run again), or after ``budget`` new jobs.
    """
    spec = plan.spec
    by_key = {(j.unit.problem, j.unit.test, j.unit.solution, j.repeat): j for j in plan.jobs}
    floors = [j for j in plan.jobs if j.unit.role == "floor"]
    max_floor = max((j.repeat for j in floors), default=-1) + 1
    spent = 0

    def floor_jobs() -> list[Job]:
        n_real = sum(1 for row in done.values() if row["role"] != "floor")
        need = min(max_floor, max(spec.repeats, math.ceil(n_real / spec.floor_every)))
        return [j for j in floors if j.repeat < need and j.job_id not in done]

    def run(jobs: list[Job]) -> bool:
        nonlocal spent
        jobs = sorted((j for j in jobs if j.job_id not in done), key=lambda j: j.order)
        if budget is not None:
            jobs = jobs[:max(budget - spent, 0)]
        before = len(done)
        execute(jobs)
        spent += len(done) - before
        return not errors and (budget is None or spent < budget)

    first = [j for j in plan.jobs if j.unit.role != "floor" and j.repeat < spec.repeats]
    if not run(first + floor_jobs()):
        return False, 1
    rounds = 1
    while True:
        real = [row for row in done.values() if row["role"] != "floor"]
        decision = adaptive_plan(journal_to_corpus(real, source="the journal"), tau=spec.tau,
                                 confidence=spec.confidence, max_repeats=spec.max_repeats,
                                 target=spec.adaptive_target, futility_from=spec.repeats + 1)
        proposed = []
        for cell in decision.cells[["problem", "test", "solution"]].astype(str).itertuples(index=False):
            key = tuple(cell)
            # the lowest repeat index not yet journaled (a harness error leaves a gap that is retried first)
            nxt = next((r for r in range(spec.max_repeats) if (*key, r) in by_key
                        and by_key[(*key, r)].job_id not in done), None)
            if nxt is not None:
                proposed.append(by_key[(*key, nxt)])
        if not proposed:
            return run(floor_jobs()), rounds
        rounds += 1
        ok = run(proposed)
        ok = ok and run(floor_jobs())
        if not ok:
            return False, rounds


def _pin_load(load: BackgroundLoad, spec: CampaignSpec) -> None:
    """With pinned workers, move the background load onto the cores the workers do not use."""
    if spec.pin_cpus is None:
        return
    others = set(os.sched_getaffinity(0)) - set(spec.pin_cpus)
    if not others:
        return
    for pid in load.pids:
        try:
            os.sched_setaffinity(pid, others)
        except ProcessLookupError:
            pass


def manifest_path_for(out: str | os.PathLike) -> Path:
    """``corpus.parquet`` -> ``corpus.parquet.campaign.json`` (the campaign manifest, beside the output)."""
    out = Path(out)
    return out.with_name(out.name + ".campaign.json")


def _write_manifest(out: Path, spec: CampaignSpec, corpus: pd.DataFrame, *, instructions: dict | None = None
                    ) -> Path:
    """The conditions of collection beside the corpus: machine, sandbox, load, pinning, load averages
    (and for a counted campaign the counter: tool, version, slowdowns, limits, PYTHONHASHSEED)."""
    load = corpus["load_1m"].to_numpy(dtype=float) if "load_1m" in corpus.columns else np.array([])
    load = load[np.isfinite(load)]
    info = {"environment": spec.environment, "campaign": spec.campaign, "sandbox": spec.sandbox,
            "workers": spec.workers, "repeats": spec.repeats, "background_load": spec.load.describe(),
            "pin_cpus": None if spec.pin_cpus is None else list(spec.pin_cpus), "pinning": spec.describe_pinning(),
            "load_1m": None if not len(load) else {"min": float(load.min()), "median": float(np.median(load)),
                                                   "max": float(load.max())},
            "machine": machine_info(), "rows": int(len(corpus)), "accounting": accounting(spec.sandbox)}
    if instructions is not None:
        counts = corpus["instructions"].to_numpy(dtype=float)
        info["instructions"] = {**instructions, "rows_counted": int(np.isfinite(counts).sum()),
                                "rows_not_counted": int((~np.isfinite(counts)).sum())}
    path = manifest_path_for(out)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(info, indent=2) + "\n")
    os.replace(tmp, path)
    return path
