"""A reward-environment or grid file that cannot be used is refused naming the file, the key and what to do.

Before the fix: a file that is not UTF-8 ended `speedaudit simulate` with a UnicodeDecodeError traceback, a grid
whose `vary` key is not text (`vary: {1: [1]}`) with an AttributeError traceback; a key given twice
(`post: {tau: 30}` then `post: {tau: 10}`) was read silently as its last value, so the file screened a tau the
reader of its first line never sees; a folder was "no such environment file", an empty file "got NoneType", a
missing include named only the included file, not the grid that names it, and a UTF-8 byte-order mark was refused
in JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from audits.checks.reward_environments import load_reward_environment

CLI = [sys.executable, "-m", "audits.cli"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "runs.csv"
    rows = ["problem,test,solution,repeat,duration_s,status"]
    rows += [f"{p},t{t},s{s},{r},{(1 + s) * (1 + t) * (1 + r / 50) / 100},ok"
             for p in ("p", "q") for t in range(2) for s in range(4) for r in range(2)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _simulate(corpus, *args):
    proc = subprocess.run([*CLI, "simulate", str(corpus), *args, "--n-boot", "0"], capture_output=True, text=True,
                          timeout=300)
    return proc


CASES = {
    # name: (file name, bytes, option, words the message must hold)
    "not utf-8": ("latin.yaml", b"post: {tau: 30}\ndescription: caf\xe9\n", "--reward-env",
                  ["latin.yaml", "not UTF-8", "0xe9", "save the file as UTF-8"]),
    "key twice": ("twice.yaml", b"post: {tau: 30}\npost: {tau: 10}\n", "--reward-env",
                  ["twice.yaml", "'post' twice", "line 2", "give each key once"]),
    "inner key twice": ("inner.yaml", b"post: {tau: 30, tau: 10}\n", "--reward-env",
                        ["inner.yaml", "'tau' twice", "give each key once"]),
    "json key twice": ("twice.json", b'{"post": {"tau": 30}, "post": {"tau": 10}}', "--reward-env",
                       ["twice.json", "'post' is given twice", "give each key once"]),
    "empty": ("empty.yaml", b"", "--reward-env", ["empty.yaml", "empty", "post:"]),
    "vary key not text": ("grid.yaml", b"base: {post: {tau: 30}}\nvary: {1: [10, 20]}\n", "--grid",
                          ["grid.yaml", "vary.1", "dotted key such as post.tau"]),
    "vary key with an empty part": ("grid2.yaml", b"base: {post: {tau: 30}}\nvary: {post..tau: [10]}\n", "--grid",
                                    ["grid2.yaml", "vary.post..tau", "dotted key"]),
    "missing include": ("grid3.yaml", b"include: [nowhere.yaml]\n", "--grid",
                        ["grid3.yaml (key include[0])", "nowhere.yaml: no such environment file"]),
    "environments not a list": ("grid4.yaml", b"environments: {post: {tau: 30}}\n", "--grid",
                                ["grid4.yaml (key environments)", "list"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_file_is_named_with_its_key_and_no_traceback(tmp_path, corpus, case):
    name, data, option, words = CASES[case]
    path = tmp_path / name
    path.write_bytes(data)
    proc = _simulate(corpus, option, str(path))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)


def test_a_folder_is_named_as_a_folder(tmp_path, corpus):
    folder = tmp_path / "envs.yaml"
    folder.mkdir()
    proc = _simulate(corpus, "--reward-env", str(folder))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{folder}: is a folder" in proc.stderr


def test_a_byte_order_mark_is_read_and_merge_keys_are_not_repeats(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"post": {"tau": 20}}).encode())
    assert load_reward_environment(path).post.tau == 20
    merged = tmp_path / "merged.yaml"
    merged.write_text("post:\n  <<: {aggregator: mean_pct, tau: 40}\n  tau: 20\n")  # YAML: the own key wins
    assert load_reward_environment(merged).post.tau == 20


def test_a_grid_given_to_score_says_where_grids_go(tmp_path, corpus):
    """Before: 'pass it with --grid', an option score does not have ('unrecognized arguments: --grid')."""
    grid = tmp_path / "g.yaml"
    grid.write_bytes(b"base: {post: {tau: 30}}\nvary: {post.tau: [10, 30]}\n")
    proc = subprocess.run([*CLI, "score", str(corpus), "--reward-env", str(grid)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "pass it to speedaudit simulate with --grid" in proc.stderr and "to speedaudit score" in proc.stderr
