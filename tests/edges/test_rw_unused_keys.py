"""A reward-environment key that the scheme (or the limit) does not read is refused, not ignored.

`reward: {scheme: collapsed, lambda: 0.3}` loaded as the collapsed reward, `lambda` silently dropped, and
`limit: {factor: 2}` as no limit: a file with a leftover key or a mistyped scheme gave a result the user did not
ask for. Now the message names the file, the reward environment, the key and the keys that scheme reads, from
the command line without a traceback. A grid whose base key is read by only some members' schemes still loads.
The table of which scheme reads which key is written here from docs/rewards.md, not read from the code.
"""

from __future__ import annotations

import pytest

from audits.checks.reward_environments import (EnvironmentFileError, expand_grid, load_grid,
                                               load_reward_environment, shipped_environment_files)
from stats.rewards import REWARD_SCHEMES, Environment, EnvironmentSpecError
from tests.cli_process import speedaudit, synth_corpus

# docs/rewards.md, "Rewards": the keys each scheme takes besides `scheme`
READS = {"additive": {"lambda"}, "multitask": {"p_correctness", "seed"},
         "optimization_bucketed": {"thresholds", "levels"}}
VALUES = {"lambda": 0.3, "p_correctness": 0.3, "seed": 3, "thresholds": [10, 30], "levels": [1, 0, -1]}


def _spec(scheme, key):
    reward = {"scheme": scheme, key: VALUES[key]}
    if scheme == "optimization_bucketed" and key != "thresholds":
        reward["thresholds"] = [10, 30]
    return {"name": "my env", "post": {"tau": 30}, "reward": reward}


@pytest.mark.parametrize("scheme", REWARD_SCHEMES)
@pytest.mark.parametrize("key", sorted(VALUES))
def test_a_key_is_accepted_exactly_by_the_schemes_that_read_it(scheme, key):
    if key in READS.get(scheme, set()):
        env = Environment.from_dict(_spec(scheme, key))
        attribute = {"lambda": "lam"}.get(key, key)
        value = getattr(env.reward, attribute)
        assert (list(value) if isinstance(value, tuple) else value) == VALUES[key]
        return
    with pytest.raises(EnvironmentSpecError) as info:
        Environment.from_dict(_spec(scheme, key))
    message = str(info.value)
    assert info.value.key == f"reward.{key}"
    assert "'my env'" in message and repr(scheme) in message
    accepts = ", ".join(["scheme"] + [k for k in ("lambda", "p_correctness", "seed", "thresholds", "levels")
                                      if k in READS.get(scheme, set())])
    assert f"reads only: {accepts})" in message


@pytest.mark.parametrize("limit", [{"factor": 2}, {"kind": "none", "apply_to": "all"}, {"kind": "none", "factor": 1}])
def test_a_limit_key_without_a_limit_is_refused(limit):
    with pytest.raises(EnvironmentSpecError, match=r"limit\.(factor|apply_to).*'e'.*kind, timeout_fails_c"):
        Environment.from_dict({"name": "e", "post": {"tau": 30}, "limit": limit})


def test_timeout_fails_c_without_a_limit_still_counts():
    # the corpus's own timeouts: whether they fail c is read with or without a limit
    env = Environment.from_dict({"name": "e", "post": {"tau": 30}, "limit": {"timeout_fails_c": False}})
    assert env.limit.kind == "none" and env.limit.timeout_fails_c is False


def test_every_shipped_file_still_loads():
    files = shipped_environment_files()
    assert len(files) >= 10
    for path in files:
        envs = load_grid(path) if "vary" in path.read_text() else [load_reward_environment(path)]
        assert envs and all(isinstance(e, Environment) for e in envs)


def test_a_file_names_itself_the_environment_and_the_key(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("name: fast\npost: {tau: 30}\nreward: {scheme: two_gate, lambda: 0.3}\n")
    with pytest.raises(EnvironmentFileError) as info:
        load_reward_environment(path)
    message = str(info.value)
    for part in (str(path), "(key reward.lambda)", "'fast'", "'two_gate'", "reads only: scheme)", "additive"):
        assert part in message, (part, message)


def test_a_grid_drops_a_base_key_only_where_another_member_reads_it():
    grid = {"base": {"name": "b", "post": {"tau": 30}, "reward": {"scheme": "collapsed", "lambda": 0.25}},
            "vary": {"reward.scheme": ["collapsed", "additive"]}}
    envs = {e.name: e for e in expand_grid(grid, source="g.yaml")}
    assert envs["b[scheme=additive]"].reward.lam == 0.25
    assert envs["b[scheme=collapsed]"].reward.scheme == "collapsed"
    grid["vary"] = {"post.tau": [10, 30]}  # no member reads lambda
    with pytest.raises(EnvironmentFileError, match=r"g\.yaml \(member b\[tau=10\]\) \(key reward\.lambda\)"):
        expand_grid(grid, source="g.yaml")


def test_the_command_line_refuses_it_without_a_traceback(tmp_path):
    corpus = synth_corpus(tmp_path / "c.parquet")
    env = tmp_path / "gate.yaml"
    env.write_text("name: gate\npost: {tau: 30}\nreward: {scheme: noise_gate, seed: 7}\n")
    done = speedaudit("score", corpus, "--reward-env", env, "--n-boot", "20", "--n-draws", "50", cwd=tmp_path)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    for part in (str(env), "reward.seed", "'gate'", "'noise_gate'", "reads only: scheme)"):
        assert part in done.stderr, (part, done.stderr)
