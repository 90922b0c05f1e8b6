"""audits.corpus.memory.small_pages: numpy's huge-page advice is off while speedaudit loads or audits and is
restored after (the measured reason is in the module's docstring); a user's NUMPY_MADVISE_HUGEPAGE wins."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import speedaudit
from audits.corpus import memory
from audits.corpus.io import load_corpus, save_corpus
from audits.corpus.synthetic import synthesize
from audits.engine.whole_audit import run_audits
from audits.protocol import registry


def _advice() -> bool:
    """numpy's current setting, read through its own switch (which returns the previous one)."""
    setter = memory._setter()
    previous = setter(False)
    setter(previous)
    return previous


@pytest.mark.parametrize("before", [True, False])
def test_small_pages_turns_numpy_advice_off_and_restores_it(before, monkeypatch):
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    setter = memory._setter()
    assert setter is not None  # numpy >= 1.26 has the switch: the test runs against the real one
    old = setter(before)
    try:
        with memory.small_pages():
            assert _advice() is False
            np.ones(10**6).sum()
        assert _advice() is before
        with pytest.raises(ZeroDivisionError), memory.small_pages():
            raise ZeroDivisionError
        assert _advice() is before  # restored on an error too
    finally:
        setter(old)


def test_a_users_numpy_setting_is_kept(monkeypatch):
    monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
    setter = memory._setter()
    old = setter(True)
    try:
        with memory.small_pages():
            assert _advice() is True
    finally:
        setter(old)


@pytest.fixture
def recorded(monkeypatch):
    """Every switch of the advice, through a recording wrapper of numpy's own switch."""
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    real = memory._setter()
    calls: list[bool] = []

    def recording(value):
        calls.append(bool(value))
        return real(value)

    monkeypatch.setattr(memory, "_setter", lambda: recording)
    found = real(True)  # from the advice on, whatever the process's earlier tests left
    yield calls
    real(found)


def test_blocks_overlapping_in_two_threads_leave_the_advice_as_they_found_it(monkeypatch):
    # A enters, B enters, A leaves, B leaves: B runs without the advice to its end, and the advice is then what A
    # found (each block restoring its own "previous" left it off for good: B found it off)
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    setter = memory._setter()
    old = setter(True)
    steps = {name: threading.Event() for name in ("a_in", "b_in", "a_out")}
    seen = {}

    def a():
        with memory.small_pages():
            steps["a_in"].set()
            steps["b_in"].wait(10)
        steps["a_out"].set()

    def b():
        steps["a_in"].wait(10)
        with memory.small_pages():
            steps["b_in"].set()
            steps["a_out"].wait(10)
            seen["inside_b_after_a"] = _advice()

    try:
        threads = [threading.Thread(target=a), threading.Thread(target=b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert all(steps[name].is_set() for name in steps)
        assert seen["inside_b_after_a"] is False
        assert _advice() is True
    finally:
        setter(old)


def test_every_entry_point_runs_without_the_advice(recorded, tmp_path):
    """load_corpus, each registered audit's keyword function (speedaudit.run_audit), Audit.run and the engine
    (run_audits) each switch the advice off on entry and back on exit."""
    corpus = synthesize(n_problems=4, seed=3, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053))).corpus
    save_corpus(corpus, tmp_path / "c.parquet")
    load_corpus(tmp_path / "c.parquet")
    assert recorded[:1] == [False] and len(recorded) == 2
    for name in registry.names():  # each registered audit's keyword function (what speedaudit.run_audit calls)
        recorded.clear()
        try:  # some need more than a corpus (calibration's two sides, compare's two sets): entering is enough
            speedaudit.run_audit(name, corpus, n_boot=10)
        except Exception:  # noqa: BLE001 -- the advice is switched back on an error too (checked above)
            pass
        assert recorded[:1] == [False] and recorded[-1:] == [True], name
    recorded.clear()
    registry.get("reliability").run(corpus, {"n_boot": 10})
    assert recorded[:1] == [False]
    recorded.clear()
    run_audits(corpus, ["reliability", "discriminability"], options={n: {"n_boot": 10} for n in ("reliability",
                                                                                               "discriminability")})
    assert recorded[:1] == [False]


def _faults_of(allocations: int, megabytes: int = 64) -> int:
    """Minor page faults of allocating, touching and freeing an array of ``megabytes`` ``allocations`` times."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(allocations):
        a = np.ones(megabytes * 2**20 // 8)
        del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_inside_a_block_freed_large_arrays_are_reused_not_faulted_in_again(monkeypatch):
    """glibc maps every block above its mmap threshold (at most 32 MB) fresh and unmaps it on free, so each new
    64 MB array was zero-filled by the kernel page by page: ten allocations, ten times the faults. Inside a block
    the heap keeps and reuses the memory; after the last block glibc's defaults are back (each allocation
    faults again) and the memory has gone back to the kernel."""
    for name in [k for k in os.environ if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES"]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    assert memory._glibc() is not None  # this project's machines run glibc: the test runs against the real one
    setter = memory._setter()
    old = setter(False)  # small pages throughout (the block sets it so too): faults count 4 KiB pages alike
    try:
        outside_one, outside_ten = _faults_of(1), _faults_of(10)
        with memory.small_pages():
            inside_ten = _faults_of(10)
        after_one, after_ten = _faults_of(1), _faults_of(10)
    finally:
        setter(old)
    assert outside_one > 0 and outside_ten > 5 * outside_one, (outside_one, outside_ten)  # fresh memory each time
    assert inside_ten < 3 * outside_one, (outside_one, inside_ten)  # the first allocation faults, the rest reuse it
    assert after_ten > 5 * after_one, (after_one, after_ten)  # glibc's defaults again


def test_a_users_malloc_tunable_is_kept(monkeypatch):
    monkeypatch.setenv("MALLOC_MMAP_MAX_", "65536")
    assert memory._glibc() is None
    monkeypatch.delenv("MALLOC_MMAP_MAX_")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1")
    assert memory._glibc() is None


def test_the_first_block_decides_whether_freed_memory_is_kept(monkeypatch):
    """The Dask client's block (keep_freed=False) keeps glibc's defaults for the audits it runs inside it."""
    for name in [k for k in os.environ if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES"]:
        monkeypatch.delenv(name)
    setter = memory._setter()
    old = setter(False)
    try:
        with memory.small_pages(keep_freed=False), memory.small_pages():
            one, ten = _faults_of(1), _faults_of(10)
    finally:
        setter(old)
    assert ten > 5 * one, (one, ten)
