"""Reward environments, reward schemes and p_tau (DESIGN.md "Environment", "Rewards", "p_tau").

An **environment** turns the executions of one program on one problem into
three numbers (c, g, q):

* a *pre-execution filter* decides which optimization tests are run at all
  (drop tests whose reference median exceeds ``max_reference_s``, tests whose
  input is larger than ``max_input_chars`` (column ``input_bytes``), then keep
  the slowest ``keep_slowest_fraction`` of the remaining ones by reference
  median, ceil(f * n) per problem, tests with equal medians at the cut kept together
  when at least half of them fit); correctness tests are never filtered;
* an *in-execution limit* turns every ``ok`` execution longer than the test's
  limit L_t into a ``timeout`` at L_t (on optimization tests; ``apply_to: all``
  limits correctness tests too, which otherwise run under the sandbox's own limit):

  - ``uniform``:              L_t = seconds
  - ``reference_percentile``: L_t = factor * P_p(pool_t)  (linear interpolation, as ``np.percentile``)
  - ``ranked_worst``:         L_t = factor * max{pool_t(s) : s among the references ranked in the
                              fastest ``fastest_percent`` % of their problem by q}
                              (the ceil(p/100 * n) references with the smallest q, at least one;
                              references tied in q at the cut are in together when at least half of
                              them fit, else out together: :func:`stats._ties.smallest_by_half_inclusion`);

* a *post-execution ranking* scores the surviving tests: q = mean per-test
  percentile / 100 for ``mean_pct`` (:func:`stats.ranking.problem_scores`), or
  the within-problem reference percentile of another aggregator's score / 100;
  c = every test ``ok`` (timeouts fail c unless ``limit.timeout_fails_c`` is
  false); g = q <= tau/100 and no optimization test failed hard.

The reference pool is never limited or filtered by the environment: it is the
stored leaderboard that executions are ranked against.

**Rewards** map (c, g, q) to [-1, 1] with c~ = 2c - 1 and g~ = 2g - 1 (see
:func:`reward`). **p_tau** counts a sample as a success when c = 1 and
q <= tau/100 and estimates pass@k without bias (:func:`pass_at_k`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from stats import aggregation
from stats._groups import first_rows, group_codes, grouped_median, grouped_order, label_mask, subset_codes
from stats._ties import smallest_by_half_inclusion
from stats.bootstrap import bootstrap_ci
from stats._hashing import dense_ranks_within, mix64, set_hash
from stats.noise import expected_percentiles, fit_noise, noise_aware_scores
from stats.pass_at_k import pass_at_k
from stats.ranking import STATUSES, problem_scores, reference_pools, solution_cells, status_codes, test_percentiles

__all__ = ["EnvironmentSpecError", "PreFilter", "Limit", "PostRanking", "RewardSpec", "Environment",
           "RewardEnvironment", "EnvironmentRun", "ScoringBase", "apply_environment", "base_percentiles", "reward",
           "environment_rewards", "p_tau", "row_lookup", "reference_medians", "run_reference_quantile",
           "unused_keys", "problem_data_seed"]

LIMIT_KINDS = ("none", "uniform", "reference_percentile", "ranked_worst")
REWARD_SCHEMES = (
    "correctness",
    "optimization",
    "optimization_bucketed",
    "additive",
    "multitask",
    "collapsed",
    "two_gate",
    "two_gate_graded",
    "noise_aware",
    "noise_gate",
)
#: The ``reward`` keys each scheme reads besides ``scheme``; a scheme not listed reads no other key.
SCHEME_KEYS = {"additive": ("lambda",), "multitask": ("p_correctness", "seed"),
               "optimization_bucketed": ("thresholds", "levels")}
#: The ``limit`` keys a limit of kind ``none`` does not read: no limit, so nothing to scale or to apply.
#: (``timeout_fails_c`` stays: it also decides whether the corpus's own timeouts fail c.)
NO_LIMIT_UNUSED = ("factor", "apply_to")


class EnvironmentSpecError(ValueError):
    """An invalid environment description; ``key`` is the dotted key that is wrong."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key
        self.detail = message


# --------------------------------------------------------------------------------------------
# Environment specification
# --------------------------------------------------------------------------------------------

def _number(section: str, key: str, value, *, low=None, high=None, low_open=False, integer=False):
    """Validate one numeric field, naming ``section.key`` and the allowed range."""
    where = f"{section}.{key}"
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise EnvironmentSpecError(where, f"expected a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise EnvironmentSpecError(where, f"expected a finite number, got {value!r}")
    bounds = f"{'(' if low_open else '['}{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
    if low is not None and (value < low or (low_open and value == low)):
        raise EnvironmentSpecError(where, f"{value:g} is out of range; allowed: {bounds}")
    if high is not None and value > high:
        raise EnvironmentSpecError(where, f"{value:g} is out of range; allowed: {bounds}")
    return value


def _mapping(section: str, data, allowed: Sequence[str]) -> dict:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise EnvironmentSpecError(section, f"expected a mapping with keys {list(allowed)}, got {data!r}")
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise EnvironmentSpecError(f"{section}.{unknown[0]}",
                                   f"unknown key; allowed keys of '{section}': {', '.join(allowed)}")
    return dict(data)


def _limit_kind(data: Mapping) -> object:
    """The limit kind a ``limit`` mapping sets: ``kind``, else ``uniform`` when it gives seconds or
    reference_quantile, else ``none``."""
    return data.get("kind", "uniform" if "seconds" in data or "reference_quantile" in data else "none")


def unused_keys(data) -> list[str]:
    """Dotted keys of an environment mapping that its reward scheme or limit kind would not read.

    ``reward.lambda`` under ``scheme: collapsed``, ``reward.seed`` under ``additive``, ``limit.factor``
    without a limit: a key another scheme reads, given where it changes nothing, so the result would not be
    the reward the file asks for (a typo of the scheme, or a key left over). :meth:`Environment.from_dict`
    refuses them; a grid (:func:`audits.checks.reward_environments.expand_grid`) drops, from a member, a key of
    its base that another member's scheme reads. Malformed sections give no key here (``from_dict`` says
    what is wrong with them).

    >>> unused_keys({"post": {"tau": 30}, "reward": {"scheme": "collapsed", "lambda": 0.3}})
    ['reward.lambda']
    >>> unused_keys({"post": {"tau": 30}, "reward": {"scheme": "additive", "lambda": 0.3}})
    []
    """
    out: list[str] = []
    if not isinstance(data, Mapping):
        return out
    reward_data, limit_data = data.get("reward"), data.get("limit")
    if isinstance(reward_data, Mapping):
        scheme = reward_data.get("scheme", "collapsed")
        if isinstance(scheme, str) and scheme in REWARD_SCHEMES:
            used = SCHEME_KEYS.get(scheme, ())
            out += [f"reward.{k}" for k in reward_data if k != "scheme" and k in RewardSpec.KEYS and k not in used]
    if isinstance(limit_data, Mapping) and _limit_kind(limit_data) == "none":
        out += [f"limit.{k}" for k in limit_data if k in NO_LIMIT_UNUSED]
    return out


def _refuse_unused(section: str, data: Mapping, environment: str | None) -> None:
    """Raise :class:`EnvironmentSpecError` for the first key of ``section`` that :func:`unused_keys` finds."""
    found = unused_keys({section: data})
    if not found:
        return
    key = found[0].split(".", 1)[1]
    owner = f"the reward environment {environment!r} sets {section}.{key}, but" if environment else "but"
    if section == "reward":
        scheme = data.get("scheme", "collapsed")
        accepts = ", ".join(("scheme",) + SCHEME_KEYS.get(scheme, ()))
        readers = ", ".join(name for name, keys in SCHEME_KEYS.items() if key in keys)
        raise EnvironmentSpecError(found[0], f"not used by reward.scheme {scheme!r} ({owner} that scheme reads "
                                   f"only: {accepts}); {key} is read by the scheme {readers}. Remove the key, or "
                                   "set the scheme that reads it")
    raise EnvironmentSpecError(found[0], f"not used without a limit (limit.kind 'none'; {owner} a limit of kind "
                               "none reads only: kind, timeout_fails_c); remove the key, or set the limit it "
                               "belongs to (kind uniform with seconds or reference_quantile, reference_percentile "
                               "with percentile, ranked_worst with fastest_percent)")


@dataclass(frozen=True)
class PreFilter:
    """Pre-execution filter of optimization tests (all fields optional).

    Attributes
    ----------
    max_reference_s : float, optional
        Drop optimization tests whose reference median exceeds this (seconds).
    max_reference_quantile : float in (0, 1], optional
        The same cut relative to the run: drop optimization tests whose reference median exceeds this
        quantile of the reference medians of the run's optimization tests (:func:`run_reference_quantile`).
        A cut in seconds acts differently on programs of microseconds and of ten seconds; this one does
        not (the unit of time plays no part). One of the two, not both.
    max_input_chars : float, optional
        Drop optimization tests whose ``input_bytes`` exceed this.
    keep_slowest_fraction : float in (0, 1], optional
        Then keep, per problem, the ceil(f * n) slowest remaining tests by reference median.
    """

    max_reference_s: float | None = None
    max_input_chars: float | None = None
    keep_slowest_fraction: float | None = None
    max_reference_quantile: float | None = None

    KEYS = ("max_reference_s", "max_reference_quantile", "max_input_chars", "keep_slowest_fraction")
    #: The optional corpus column each key reads (the others read ``duration_s`` only).
    COLUMNS = {"max_input_chars": "input_bytes"}

    @classmethod
    def from_dict(cls, data) -> "PreFilter":
        data = _mapping("pre", data, cls.KEYS)
        if data.get("max_reference_s") is not None and data.get("max_reference_quantile") is not None:
            raise EnvironmentSpecError("pre.max_reference_quantile", "give max_reference_s (seconds) or "
                                       "max_reference_quantile (relative to the run's tests), not both")
        return cls(
            max_reference_s=_number("pre", "max_reference_s", data.get("max_reference_s"), low=0, low_open=True),
            max_reference_quantile=_number("pre", "max_reference_quantile", data.get("max_reference_quantile"),
                                           low=0, high=1, low_open=True),
            max_input_chars=_number("pre", "max_input_chars", data.get("max_input_chars"), low=0),
            keep_slowest_fraction=_number("pre", "keep_slowest_fraction", data.get("keep_slowest_fraction"),
                                          low=0, high=1, low_open=True),
        )

    @property
    def active(self) -> bool:
        return any(getattr(self, k) is not None for k in self.KEYS)

    @property
    def needs_columns(self) -> dict[str, str]:
        """``{key: column}`` of the set keys that read an optional corpus column."""
        return {f"pre.{k}": c for k, c in self.COLUMNS.items() if getattr(self, k) is not None}


@dataclass(frozen=True)
class Limit:
    """In-execution limit (see the module docstring for L_t of each kind)."""

    kind: str = "none"
    seconds: float | None = None
    percentile: float | None = None
    fastest_percent: float | None = None
    factor: float = 1.0
    timeout_fails_c: bool = True
    apply_to: str = "optimization"
    reference_quantile: float | None = None

    KEYS = ("kind", "seconds", "reference_quantile", "percentile", "fastest_percent", "factor", "timeout_fails_c",
            "apply_to")
    APPLY_TO = ("optimization", "all")
    #: The parameter each kind needs (``uniform``: one of the two, :attr:`seconds` or :attr:`reference_quantile`).
    NEEDS = {"uniform": ("seconds", "reference_quantile"), "reference_percentile": ("percentile",),
             "ranked_worst": ("fastest_percent",), "none": ()}

    @property
    def parameter(self) -> str | None:
        """The key that sets this limit's size (``seconds``, ``reference_quantile``, ...); None for ``none``."""
        return next((k for k in self.NEEDS[self.kind] if getattr(self, k) is not None), None)

    @classmethod
    def from_dict(cls, data, *, environment: str | None = None) -> "Limit":
        """Validate a ``limit`` mapping; a key the limit would not read is refused (:func:`unused_keys`),
        naming ``environment`` when given."""
        data = _mapping("limit", data, cls.KEYS)
        kind = _limit_kind(data)
        if kind not in LIMIT_KINDS:
            raise EnvironmentSpecError("limit.kind", f"{kind!r} is not allowed; use one of {', '.join(LIMIT_KINDS)}")
        _refuse_unused("limit", data, environment)
        given = [k for k in cls.NEEDS[kind] if data.get(k) is not None]
        if cls.NEEDS[kind] and not given:
            raise EnvironmentSpecError(f"limit.{cls.NEEDS[kind][0]}", f"required when limit.kind is {kind!r}"
                                       + (" (or limit.reference_quantile)" if kind == "uniform" else ""))
        if len(given) > 1:
            raise EnvironmentSpecError(f"limit.{given[1]}", f"give limit.{given[0]} or limit.{given[1]}, not both")
        for key in ("seconds", "reference_quantile", "percentile", "fastest_percent"):
            if data.get(key) is not None and key not in cls.NEEDS[kind]:
                raise EnvironmentSpecError(f"limit.{key}", f"not used by limit.kind {kind!r} (it needs "
                                           f"{' or '.join(cls.NEEDS[kind]) or 'no parameter'})")
        if data.get("seconds") is not None and data.get("factor") is not None:
            # the limit is the seconds given: a factor would be ignored silently
            raise EnvironmentSpecError("limit.factor", "not used with limit.seconds (the limit is the seconds "
                                       "given); write the limit itself in seconds")
        fails = data.get("timeout_fails_c", True)
        if not isinstance(fails, bool):
            raise EnvironmentSpecError("limit.timeout_fails_c", f"expected true or false, got {fails!r}")
        apply_to = data.get("apply_to", "optimization")
        if apply_to not in cls.APPLY_TO:
            raise EnvironmentSpecError("limit.apply_to", f"{apply_to!r} is not allowed; use one of "
                                       f"{', '.join(cls.APPLY_TO)}")
        return cls(
            kind=kind,
            apply_to=apply_to,
            seconds=_number("limit", "seconds", data.get("seconds"), low=0, low_open=True),
            percentile=_number("limit", "percentile", data.get("percentile"), low=0, high=100),
            fastest_percent=_number("limit", "fastest_percent", data.get("fastest_percent"), low=0, high=100,
                                    low_open=True),
            reference_quantile=_number("limit", "reference_quantile", data.get("reference_quantile"), low=0, high=1,
                                       low_open=True),
            factor=_number("limit", "factor", data.get("factor", 1.0), low=0, low_open=True),
            timeout_fails_c=fails,
        )


def available_aggregators() -> tuple[str, ...]:
    """Names accepted by ``post.aggregator``: those of ``stats.aggregation.AGGREGATORS``, ``mean_pct``
    (computed by :func:`stats.ranking.problem_scores`) first if it is not among them."""
    names = tuple(aggregation.AGGREGATORS)
    return names if "mean_pct" in names else ("mean_pct",) + names


@dataclass(frozen=True)
class PostRanking:
    """Post-execution ranking: an aggregator and the speed threshold tau (percentile points)."""

    aggregator: str = "mean_pct"
    tau: float = 100.0

    KEYS = ("aggregator", "tau")

    @classmethod
    def from_dict(cls, data) -> "PostRanking":
        if data is None:
            raise EnvironmentSpecError("post", "required: e.g. post: {aggregator: mean_pct, tau: 30}")
        data = _mapping("post", data, cls.KEYS)
        name = data.get("aggregator", "mean_pct")
        allowed = available_aggregators()
        if name not in allowed:
            raise EnvironmentSpecError("post.aggregator", f"{name!r} is not allowed; use one of {', '.join(allowed)}")
        tau = _number("post", "tau", data.get("tau", 100.0), low=0, high=100)
        return cls(aggregator=name, tau=tau)


@dataclass(frozen=True)
class RewardSpec:
    """Reward scheme and its parameters (see :func:`reward`)."""

    scheme: str = "collapsed"
    lam: float = 0.5
    p_correctness: float = 0.5
    thresholds: tuple[float, ...] = ()
    levels: tuple[float, ...] = ()
    seed: int = 0

    KEYS = ("scheme", "lambda", "p_correctness", "thresholds", "levels", "seed")

    @classmethod
    def from_dict(cls, data, *, environment: str | None = None) -> "RewardSpec":
        """Validate a ``reward`` mapping; a key its scheme does not read (:data:`SCHEME_KEYS`) is refused,
        naming ``environment`` when given, rather than ignored.

        >>> RewardSpec.from_dict({"scheme": "additive", "lambda": 0.25}).lam
        0.25
        """
        data = _mapping("reward", data, cls.KEYS)
        scheme = data.get("scheme", "collapsed")
        if not isinstance(scheme, str) or scheme not in REWARD_SCHEMES:
            raise EnvironmentSpecError("reward.scheme",
                                       f"{scheme!r} is not allowed; use one of {', '.join(REWARD_SCHEMES)}")
        _refuse_unused("reward", data, environment)
        thresholds = _number_list("reward.thresholds", data.get("thresholds", ()), low=0, high=100)
        levels = _number_list("reward.levels", data.get("levels", ()), low=-1, high=1)
        if scheme == "optimization_bucketed":
            if not thresholds:
                raise EnvironmentSpecError("reward.thresholds",
                                           "required for optimization_bucketed, e.g. [10, 30, 50] (percentile points)")
            if list(thresholds) != sorted(set(thresholds)):
                raise EnvironmentSpecError("reward.thresholds", f"must be strictly increasing, got {list(thresholds)}")
            if levels and len(levels) != len(thresholds) + 1:
                raise EnvironmentSpecError("reward.levels", f"needs len(thresholds) + 1 = {len(thresholds) + 1} "
                                           f"values, got {len(levels)}")
        seed = data.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise EnvironmentSpecError("reward.seed", f"expected an integer, got {seed!r}")
        return cls(
            scheme=scheme,
            lam=_number("reward", "lambda", data.get("lambda", 0.5), low=0, high=1),
            p_correctness=_number("reward", "p_correctness", data.get("p_correctness", 0.5), low=0, high=1),
            thresholds=thresholds, levels=levels, seed=int(seed),
        )

    def to_dict(self) -> dict:
        out = {"scheme": self.scheme}
        if self.scheme == "additive":
            out["lambda"] = self.lam
        if self.scheme == "multitask":
            out["p_correctness"] = self.p_correctness
            out["seed"] = self.seed
        if self.scheme == "optimization_bucketed":
            out["thresholds"] = list(self.thresholds)
            if self.levels:
                out["levels"] = list(self.levels)
        return out


def _number_list(where: str, values, *, low, high) -> tuple[float, ...]:
    if values is None:
        return ()
    if not isinstance(values, (list, tuple)):
        raise EnvironmentSpecError(where, f"expected a list of numbers, got {values!r}")
    section, key = where.split(".")
    return tuple(_number(section, f"{key}[{i}]", v, low=low, high=high) for i, v in enumerate(values))


@dataclass(frozen=True)
class Environment:
    """A reward environment as data: pre-filter, limit, post-ranking and reward scheme.

    Build it with :meth:`from_dict` (the layout of an environment YAML/JSON file)::

        name: top30
        pre: {max_reference_s: 2.0, max_input_chars: 1000, keep_slowest_fraction: 0.5}
        limit: {kind: reference_percentile, percentile: 90, factor: 2}
        post: {aggregator: mean_pct, tau: 30}
        reward: {scheme: collapsed}

    Every section but ``post`` is optional.

    Examples
    --------
    >>> env = Environment.from_dict({"name": "top30", "post": {"tau": 30}})
    >>> env.post.tau, env.limit.kind, env.reward.scheme
    (30.0, 'none', 'collapsed')
    """

    name: str
    post: PostRanking
    pre: PreFilter = field(default_factory=PreFilter)
    limit: Limit = field(default_factory=Limit)
    reward: RewardSpec = field(default_factory=RewardSpec)
    description: str = ""

    KEYS = ("name", "description", "pre", "limit", "post", "reward")

    @property
    def needs_columns(self) -> dict[str, str]:
        """``{key: column}``: the optional corpus columns this environment reads, by the key that reads each.

        >>> Environment.from_dict({"name": "l", "pre": {"max_input_chars": 1000}, "post": {"tau": 30}}).needs_columns
        {'pre.max_input_chars': 'input_bytes'}
        """
        return self.pre.needs_columns

    @property
    def relative(self) -> bool:
        """Whether a key of this environment is a quantile of the run's reference medians
        (``pre.max_reference_quantile``, ``limit.reference_quantile``: :func:`run_reference_quantile`)."""
        return self.pre.max_reference_quantile is not None or self.limit.reference_quantile is not None

    @classmethod
    def from_dict(cls, data, *, name: str | None = None) -> "Environment":
        """Validate a mapping; errors are :class:`EnvironmentSpecError` naming the dotted key."""
        if not isinstance(data, Mapping):
            raise EnvironmentSpecError("", f"an environment is a mapping with keys {', '.join(cls.KEYS)}; "
                                       f"got {type(data).__name__}")
        unknown = [k for k in data if k not in cls.KEYS]
        if unknown:
            raise EnvironmentSpecError(str(unknown[0]), f"unknown key; allowed top-level keys: {', '.join(cls.KEYS)}")
        if "post" not in data:
            raise EnvironmentSpecError("post", "required: e.g. post: {aggregator: mean_pct, tau: 30}")
        env_name = data.get("name", name)
        if not isinstance(env_name, str) or not env_name.strip():
            raise EnvironmentSpecError("name", f"expected a non-empty string, got {env_name!r}")
        description = data.get("description", "")
        if not isinstance(description, str):
            raise EnvironmentSpecError("description", f"expected a string, got {description!r}")
        post = PostRanking.from_dict(data["post"])
        reward = RewardSpec.from_dict(data.get("reward"), environment=env_name.strip())
        if reward.scheme == "noise_gate" and post.aggregator != "mean_pct":
            # P(q <= tau) comes from the noise model's draws of the mean per-test percentile: no other q
            raise EnvironmentSpecError("post.aggregator", f"the noise_gate reward gates the mean per-test "
                                                          f"percentile; use mean_pct, not {post.aggregator!r}")
        return cls(
            name=env_name.strip(),
            post=post,
            pre=PreFilter.from_dict(data.get("pre")),
            limit=Limit.from_dict(data.get("limit"), environment=env_name.strip()),
            reward=reward,
            description=description,
        )

    def to_dict(self) -> dict:
        """The canonical mapping (round-trips through :meth:`from_dict`)."""
        out: dict = {"name": self.name}
        if self.description:
            out["description"] = self.description
        pre = {k: getattr(self.pre, k) for k in PreFilter.KEYS if getattr(self.pre, k) is not None}
        if pre:
            out["pre"] = pre
        if self.limit.kind != "none":
            limit = {"kind": self.limit.kind, self.limit.parameter: getattr(self.limit, self.limit.parameter)}
            if self.limit.parameter != "seconds":
                limit["factor"] = self.limit.factor
            if not self.limit.timeout_fails_c:
                limit["timeout_fails_c"] = False
            if self.limit.apply_to != "optimization":
                limit["apply_to"] = self.limit.apply_to
            out["limit"] = limit
        elif not self.limit.timeout_fails_c:  # no limit, but the corpus's own timeouts keep c
            out["limit"] = {"timeout_fails_c": False}
        out["post"] = {"aggregator": self.post.aggregator, "tau": self.post.tau}
        out["reward"] = self.reward.to_dict()
        return out

    def describe(self) -> str:
        """One line for tables, e.g. ``pre max_ref<=2s | limit uniform 10s | mean_pct tau=30 | collapsed``."""
        parts = []
        if self.pre.max_reference_s is not None:
            parts.append(f"max_ref<={self.pre.max_reference_s:g}s")
        if self.pre.max_reference_quantile is not None:
            parts.append(f"max_ref<=q{self.pre.max_reference_quantile:g} of the run's tests")
        if self.pre.max_input_chars is not None:
            parts.append(f"input<={self.pre.max_input_chars:g}")
        if self.pre.keep_slowest_fraction is not None:
            parts.append(f"slowest {self.pre.keep_slowest_fraction:g}")
        lim = self.limit
        if lim.kind == "uniform" and lim.seconds is not None:
            limit = f"uniform {lim.seconds:g}s"
        elif lim.kind == "uniform":
            limit = f"uniform {lim.factor:g}x q{lim.reference_quantile:g} of the run's reference medians"
        elif lim.kind == "reference_percentile":
            limit = f"{lim.factor:g}x ref p{lim.percentile:g}"
        elif lim.kind == "ranked_worst":
            limit = f"{lim.factor:g}x worst of fastest {lim.fastest_percent:g}%"
        else:
            limit = "no limit"
        if not lim.timeout_fails_c:  # otherwise two environments scoring c differently read the same
            limit += ", timeouts keep c"
        scheme = self.reward.scheme + (f"(lambda={self.reward.lam:g})" if self.reward.scheme == "additive" else "")
        return " | ".join([("pre " + ", ".join(parts)) if parts else "no pre-filter", limit,
                           f"{self.post.aggregator} tau={self.post.tau:g}", scheme])


# --------------------------------------------------------------------------------------------
# Applying an environment to executions
# --------------------------------------------------------------------------------------------

#: The name the audits use: "environment" alone means the corpus column (the sandbox or machine).
RewardEnvironment = Environment


@dataclass(frozen=True)
class EnvironmentRun:
    """The outcome of :func:`apply_environment`.

    Attributes
    ----------
    scores : DataFrame
        One row per (problem, solution[, repeat]): ``role``, ``correct``, ``q``, ``c``, ``g``,
        ``hard_fail``, ``n_opt_tests`` (tests scored after the filter).
    tests : DataFrame
        One row per (problem, test): ``test_kind``, ``reference_median_s``, ``pool_size``,
        ``input_bytes``, ``kept`` and ``limit_s`` (NaN = no limit).
    n_executions : int
        Executions (or cells) scored after the pre-filter.
    n_limited : int
        Of those, how many the limit turned into timeouts.
    scored : DataFrame
        The rows scored after the filter and the limit, with their ``percentile``.
        For the ``noise_aware`` reward, ``scores`` also holds ``q_expected`` (E[q],
        :mod:`stats.noise`) and ``scored`` the ``expected_percentile``; for ``noise_gate``,
        ``scores`` holds ``p_gate`` (P(q <= tau/100), 0 for a hard failure).
    """

    scores: pd.DataFrame
    tests: pd.DataFrame
    n_executions: int
    n_limited: int
    scored: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    @property
    def limited_share(self) -> float:
        return self.n_limited / self.n_executions if self.n_executions else float("nan")

    def to_frame(self) -> pd.DataFrame:
        return self.scores


def row_lookup(frame: pd.DataFrame, table: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Row index into ``table`` of every row of ``frame`` (matched on ``keys``; -1 when absent).

    The first matching row of ``table``, as a left ``merge`` on the keys' values would give it (missing
    values match each other). Both frames' keys are coded jointly (:func:`_joint_key_codes`: a
    categorical's own codes when both sides share its categories) and matched through one presence
    table of the joint group codes: no hashing of 10^7 object keys (the ``pandas.merge`` this replaced
    took 9.6 s of the whole audit at 10^7 rows, 25 calls).
    """
    if len(frame) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(table) == 0:
        return np.full(len(frame), -1, dtype=np.int64)
    joined = pd.DataFrame({k: _joint_key_codes(frame[k], table[k]) for k in keys}) if keys else pd.DataFrame(
        index=pd.RangeIndex(len(frame) + len(table)))
    codes, n = group_codes(joined, list(keys))
    first = first_rows(codes[len(frame):], n)   # the first table row of every group (-1: none)
    return first[codes[: len(frame)]]


def _joint_key_codes(left: pd.Series, right: pd.Series) -> np.ndarray:
    """One integer code per value of ``left`` then ``right``, equal exactly when the values are equal
    (missing values equal each other, as in a merge)."""
    if (isinstance(left.dtype, pd.CategoricalDtype) and isinstance(right.dtype, pd.CategoricalDtype)
            and left.cat.categories.equals(right.cat.categories)):
        return np.concatenate([left.cat.codes.to_numpy(np.int64), right.cat.codes.to_numpy(np.int64)])
    numeric = all(s.dtype.kind in "iuf" for s in (left, right))
    values = (np.concatenate([left.to_numpy(), right.to_numpy()]) if numeric
              else np.concatenate([left.astype(object).to_numpy(), right.astype(object).to_numpy()]))
    return pd.factorize(values)[0].astype(np.int64, copy=False)


def _test_table(runs: pd.DataFrame, pools: pd.DataFrame) -> pd.DataFrame:
    codes, n = group_codes(runs, ["problem", "test"])
    first = first_rows(codes, n)
    tests = runs.iloc[first][["problem", "test"]].reset_index(drop=True)
    kind = (runs["test_kind"].astype(object).to_numpy()[first] if "test_kind" in runs.columns
            else np.full(n, "optimization", dtype=object))
    tests["test_kind"] = kind
    if "input_bytes" in runs.columns:
        size = runs["input_bytes"].to_numpy(dtype=float)
        finite = np.isfinite(size)
        best = np.full(n, -np.inf)
        np.maximum.at(best, codes[finite], size[finite])
        tests["input_bytes"] = np.where(np.isfinite(best), best, np.nan)
    else:
        tests["input_bytes"] = np.nan
    pool_row = row_lookup(pools, tests, ["problem", "test"]) if len(pools) else np.zeros(0, dtype=np.int64)
    has = pool_row >= 0
    tests["reference_median_s"] = grouped_median(pool_row[has], pools["duration_s"].to_numpy(float)[has], n)
    tests["pool_size"] = np.bincount(pool_row[has], minlength=n)
    return tests


def optimization_reference_medians(tests: pd.DataFrame) -> np.ndarray:
    """The reference medians of a test table's optimization tests that have a pool, sorted: what a relative key
    takes its quantile of (:func:`run_reference_quantile`)."""
    is_opt = tests["test_kind"].to_numpy() == "optimization"
    median = tests["reference_median_s"].to_numpy(dtype=float)[is_opt]
    return np.sort(median[np.isfinite(median)])


def reference_medians(runs: pd.DataFrame, pools: pd.DataFrame | None = None) -> np.ndarray:
    """:func:`optimization_reference_medians` of the executions ``runs`` of one run (``floor`` rows are ignored):
    one value per optimization test with a pool, the median of its reference pool. A partition of whole problems
    gives its tests' values; the run's are those of every partition together."""
    runs = _without_floor(runs)
    return optimization_reference_medians(_test_table(runs, reference_pools(runs) if pools is None else pools))


def run_reference_quantile(medians: np.ndarray, quantile: float) -> float:
    """The ``quantile`` (in (0, 1], linear interpolation as ``np.quantile``) of the run's optimization tests'
    reference medians (:func:`reference_medians`); NaN when no optimization test has a pool.

    Why a quantile: the duration filters and the uniform timeout of the study replicated in
    ``fixtures/environments/`` are constants in seconds chosen for its programs. On a corpus of microsecond
    benchmarks a 0.1 s filter drops nothing and a 1 s timeout limits nothing; on programs of ten seconds both
    drop or limit everything, and the reward reads as saturated or sparse because of the unit of time. A quantile
    of the run's own reference medians scales with the corpus: multiplying every duration by any factor moves the
    cut by the same factor, so the same tests are kept and the same executions limited.

    >>> run_reference_quantile(np.array([1.0, 2.0, 3.0, 10.0]), 0.5)
    2.5
    """
    medians = np.asarray(medians, dtype=float)
    medians = medians[np.isfinite(medians)]
    return float(np.quantile(medians, quantile)) if len(medians) else float("nan")


def filter_tests(tests: pd.DataFrame, pre: PreFilter, *, run_medians: np.ndarray | None = None) -> np.ndarray:
    """``kept`` flag per test row: correctness tests always; optimization tests by the filter.

    ``run_medians``: the run's :func:`reference_medians` when ``tests`` holds part of the run (a partition of
    problems), for ``pre.max_reference_quantile``; default, those of ``tests``.
    """
    is_opt = tests["test_kind"].to_numpy() == "optimization"
    median = tests["reference_median_s"].to_numpy(dtype=float)
    keep = np.ones(len(tests), dtype=bool)
    if pre.max_reference_s is not None:
        # A test without a reference pool has no median: it cannot be judged, so it is kept.
        keep &= ~(is_opt & (median > pre.max_reference_s))
    if pre.max_reference_quantile is not None:
        cut = run_reference_quantile(optimization_reference_medians(tests) if run_medians is None else run_medians,
                                     pre.max_reference_quantile)
        if np.isfinite(cut):  # no optimization test with a pool: nothing to cut by, every test is kept
            keep &= ~(is_opt & (median > cut))
    if pre.max_input_chars is not None:
        size = tests["input_bytes"].to_numpy(dtype=float)
        if np.isnan(size[is_opt]).all() and is_opt.any():
            raise ValueError("pre.max_input_chars needs the corpus column 'input_bytes' (input size of each "
                             "test); it is missing or empty. Add it, or drop max_input_chars from the environment.")
        keep &= ~(is_opt & (size > pre.max_input_chars))
    if pre.keep_slowest_fraction is not None:
        candidates = is_opt & keep
        problem_code, n_problems = group_codes(tests, ["problem"])
        n_cand = np.bincount(problem_code[candidates], minlength=n_problems)
        n_keep = np.ceil(pre.keep_slowest_fraction * n_cand - 1e-9).astype(np.int64)
        # The n_keep slowest candidates of each problem; tests with equal medians at the cut are kept together
        # when at least half of them fit (stats._ties.smallest_by_half_inclusion), never by test id or order.
        # A candidate without a median ranks after every measured one (all such candidates tie).
        idx = np.flatnonzero(candidates)
        slowness = -median[idx]
        finite = np.isfinite(slowness)
        sentinel = (np.max(slowness[finite]) + 1.0) if finite.any() else 0.0
        slowness = np.where(finite, slowness, sentinel)
        slow_enough = np.zeros(len(tests), dtype=bool)
        slow_enough[idx] = smallest_by_half_inclusion(problem_code[idx], slowness, n_keep)
        keep &= ~is_opt | slow_enough
    return keep


def _pool_percentile(pool_test: np.ndarray, pool_d: np.ndarray, n_tests: int, p: float) -> np.ndarray:
    """Per-test percentile of the pool, linear interpolation (``np.percentile``'s default)."""
    out = np.full(n_tests, np.nan)
    if len(pool_d) == 0:
        return out
    order = grouped_order(pool_d, pool_test)
    values = pool_d[order]
    sizes = np.bincount(pool_test, minlength=n_tests)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    present = sizes > 0
    h = (sizes[present] - 1) * p / 100.0
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, sizes[present] - 1)
    base = starts[present]
    out[present] = values[base + lo] + (h - lo) * (values[base + hi] - values[base + lo])
    return out


def _ranked_worst_limits(refs: pd.DataFrame, pools: pd.DataFrame, tests: pd.DataFrame, limit: Limit) -> np.ndarray:
    """Slowest pool duration on each test among the references in the fastest p % by q (mean_pct)."""
    cells = solution_cells(refs)
    cells["percentile"] = test_percentiles(cells, pools)
    ref_q = problem_scores(cells, by=["problem", "solution"])
    ref_q = ref_q[np.isfinite(ref_q["q"].to_numpy(dtype=float))].reset_index(drop=True)
    prob, n_prob = group_codes(ref_q, ["problem"])
    q = ref_q["q"].to_numpy(dtype=float)  # snapped once (problem_scores): equal rationals tie
    sizes = np.bincount(prob, minlength=n_prob)
    n_keep = np.maximum(1, np.ceil(limit.fastest_percent / 100.0 * sizes - 1e-9)).astype(np.int64)
    # References whose q ties at the cut are in together when at least half of them fit, else out together
    # (stats._ties.smallest_by_half_inclusion): by value, never by solution id or category order.
    fastest = ref_q.loc[smallest_by_half_inclusion(prob, q, n_keep), ["problem", "solution"]]
    in_fastest = row_lookup(pools, fastest.reset_index(drop=True), ["problem", "solution"]) >= 0
    pool_test = row_lookup(pools, tests, ["problem", "test"])
    use = in_fastest & (pool_test >= 0)
    worst = np.full(len(tests), -np.inf)
    np.maximum.at(worst, pool_test[use], pools["duration_s"].to_numpy(dtype=float)[use])
    return np.where(np.isfinite(worst), worst, np.nan)


def _limits(base: ScoringBase, pools: pd.DataFrame, tests: pd.DataFrame, limit: Limit,
            run_medians: np.ndarray | None = None) -> np.ndarray:
    n = len(tests)
    if limit.kind == "none":
        return np.full(n, np.nan)
    if limit.kind == "uniform" and limit.seconds is not None:
        return np.full(n, limit.seconds)
    if limit.kind == "uniform":  # relative: factor x a quantile of the run's reference medians (NaN: no limit)
        medians = optimization_reference_medians(tests) if run_medians is None else run_medians
        return np.full(n, limit.factor * run_reference_quantile(medians, limit.reference_quantile))
    if limit.kind == "reference_percentile":
        pool_test = row_lookup(pools, tests, ["problem", "test"])
        has = pool_test >= 0
        return limit.factor * _pool_percentile(pool_test[has], pools["duration_s"].to_numpy(float)[has], n,
                                               limit.percentile)
    return limit.factor * _ranked_worst_limits(base.references, pools, tests, limit)


def _scoped_limits(base: ScoringBase, pools, tests, limit: Limit, run_medians: np.ndarray | None = None) -> np.ndarray:
    """:func:`_limits`, NaN (no limit) on correctness tests unless ``apply_to`` is ``all``."""
    values = _limits(base, pools, tests, limit, run_medians)
    if limit.apply_to == "optimization":
        values = np.where(tests["test_kind"].to_numpy() == "optimization", values, np.nan)
    return values


def _aggregated_q(frame: pd.DataFrame, pools: pd.DataFrame, name: str, by: list[str],
                  base: pd.DataFrame, floor_s: float | None) -> np.ndarray:
    """q of another aggregator, aligned to ``base``'s units.

    q = (within-problem percentile of the unit's score among the correct
    references' scores of the same ``by`` group minus the solution, i.e. the same
    repeat when scoring per repeat; leave-self-out) / 100.
    """
    table = aggregation.aggregate(frame, pools, name=name, by=by, floor_s=floor_s).reset_index(drop=True)
    groups = [k for k in by if k != "solution"]
    pct = np.asarray(aggregation.reference_percentile(table, score="score", by=groups), dtype=float)
    row = row_lookup(base, table, by) if len(table) else np.full(len(base), -1)
    q = np.full(len(base), np.nan)
    found = row >= 0
    q[found] = pct[row[found]] / 100.0
    return q


def _without_floor(runs: pd.DataFrame) -> pd.DataFrame:
    """The executions without the sandbox's ``floor`` rows (never scored); ``runs`` itself when it has none."""
    if "role" not in runs.columns:
        return runs
    is_floor = label_mask(runs["role"], "floor")
    return runs.loc[~is_floor] if is_floor.any() else runs


def _scored_frame(runs: pd.DataFrame, *, roles: Sequence[str], per_repeat: bool) -> pd.DataFrame:
    """The rows an environment scores: executions of ``roles`` (or their collapsed cells)."""
    scored = runs
    if "role" in runs.columns:
        scored = runs.loc[runs["role"].isin(list(roles)).to_numpy()]
    if per_repeat:  # language: an execution joins its own language's pool where the pool is split
        cols = [c for c in ("problem", "test", "solution", "repeat", "duration_s", "status", "role", "correct",
                            "test_kind", "language") if c in scored.columns]
        return scored[cols].reset_index(drop=True)
    return solution_cells(scored)


class ScoringBase:
    """What :func:`apply_environment` computes from the runs alone, before an environment acts.

    Applying many environments to the same runs (the simulation audit's seven reward environments) repeats
    the same work in each: the test table, the scored rows, every row's test and unit. Built once and passed
    as ``apply_environment(..., base=...)``, each is computed on first use and then shared (measured at 10^7
    rows: a fifth of each environment's time, 2026-12-06). Nothing here depends on the environment, and no
    environment changes it: :func:`apply_environment` copies the test table before it adds its columns, and
    filters into new frames.

    Parameters
    ----------
    runs : DataFrame
        The executions without their ``floor`` rows, exactly the object passed to :func:`apply_environment`.
    pools, roles, per_repeat
        As :func:`apply_environment` takes them.
    tests : DataFrame, optional
        The test table (:attr:`tests`) when a caller holds it already: that of these ``runs`` and ``pools``, or the
        rows of the problems of ``runs`` of a wider base's over whole problems (its rows are per test, in sorted
        key order, and a test's values come from its own rows and pool: :func:`_test_table`). The simulation audit
        builds it once per run context and reads the run's reference medians from it too.
    """

    def __init__(self, runs: pd.DataFrame, *, pools: pd.DataFrame, roles: Sequence[str] = ("reference", "candidate"),
                 per_repeat: bool = True, tests: pd.DataFrame | None = None):
        if "role" in runs.columns and label_mask(runs["role"], "floor").any():
            raise ValueError("ScoringBase: runs must come without their floor rows")
        self.runs, self.pools, self.roles, self.per_repeat = runs, pools, tuple(roles), bool(per_repeat)
        if tests is not None:
            self.__dict__["tests"] = tests  # the cached_property's value, given

    def matches(self, runs: pd.DataFrame, pools: pd.DataFrame, roles: Sequence[str], per_repeat: bool) -> bool:
        return (runs is self.runs and pools is self.pools and tuple(roles) == self.roles
                and bool(per_repeat) == self.per_repeat)

    @cached_property
    def tests(self) -> pd.DataFrame:
        """:func:`_test_table`: one row per (problem, test), before the environment's filter and limit."""
        return _test_table(self.runs, self.pools)

    @cached_property
    def references(self) -> pd.DataFrame:
        """The correct reference rows (what a ranked limit is computed from)."""
        mask = np.ones(len(self.runs), dtype=bool)
        if "role" in self.runs.columns:
            mask &= (self.runs["role"] == "reference").to_numpy()
        if "correct" in self.runs.columns:
            mask &= self.runs["correct"].to_numpy(dtype=bool)
        return self.runs.loc[mask]

    @cached_property
    def frame(self) -> pd.DataFrame:
        """:func:`_scored_frame`: the rows (or cells) scored, before the filter."""
        return _scored_frame(self.runs, roles=self.roles, per_repeat=self.per_repeat)

    @cached_property
    def test_row(self) -> np.ndarray:
        """Row of :attr:`tests` of every row of :attr:`frame`."""
        return row_lookup(self.frame, self.tests, ["problem", "test"])

    @cached_property
    def by(self) -> list[str]:
        return ["problem", "solution"] + (["repeat"] if self.per_repeat and "repeat" in self.frame.columns else [])

    @cached_property
    def unit_codes(self) -> tuple[np.ndarray, int]:
        """``group_codes(frame, by)``: the unit of every scored row (a filter's rows take a subset of them,
        :func:`stats._groups.subset_codes`)."""
        return group_codes(self.frame, self.by)

    @cached_property
    def units(self) -> pd.DataFrame:
        """One row per scored unit (``by`` plus role and correct), also those whose tests a filter removes."""
        full = self.frame
        unit_codes, n_all = self.unit_codes
        columns = [c for c in self.by + ["role", "correct"] if c in full.columns]
        return full.iloc[first_rows(unit_codes, n_all)][columns].reset_index(drop=True)


def base_percentiles(
    runs: pd.DataFrame,
    *,
    pools: pd.DataFrame,
    roles: Sequence[str] = ("reference", "candidate"),
    per_repeat: bool = True,
    percentiles: np.ndarray | None = None,
) -> np.ndarray:
    """Per-test percentiles of the rows :func:`apply_environment` scores, before any environment acts.

    Pass the result as ``apply_environment(..., percentiles=...)`` when applying
    many environments to the same runs: it replaces one ranking pass per
    environment with one in all (the results are identical). ``percentiles``: with ``per_repeat``, the
    per-test percentile of every row of ``runs`` against ``pools`` (aligned with its rows, e.g. the run
    context's per-repeat table) when already computed: the scored rows' are picked from it.

    Examples
    --------
    >>> import pandas as pd
    >>> from stats.ranking import reference_pools
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "b", "x"], "repeat": 0,
    ...     "duration_s": [1.0, 3.0, 2.0], "status": "ok", "correct": True,
    ...     "role": ["reference", "reference", "candidate"]})
    >>> base_percentiles(runs, pools=reference_pools(runs)).tolist()
    [0.0, 100.0, 50.0]
    """
    if percentiles is not None and per_repeat:
        keep = np.ones(len(runs), dtype=bool)
        if "role" in runs.columns:  # the rows _scored_frame keeps (floor rows are never among ``roles``)
            keep = runs["role"].isin([r for r in roles if r != "floor"]).to_numpy()
        return np.asarray(percentiles, dtype=float)[keep]
    runs = _without_floor(runs)
    return test_percentiles(_scored_frame(runs, roles=roles, per_repeat=per_repeat), pools)


def apply_environment(
    runs: pd.DataFrame,
    env: Environment,
    *,
    per_repeat: bool = True,
    roles: Sequence[str] = ("reference", "candidate"),
    pools: pd.DataFrame | None = None,
    percentiles: np.ndarray | None = None,
    floor_durations: np.ndarray | None = None,
    base: ScoringBase | None = None,
    run_medians: np.ndarray | None = None,
) -> EnvironmentRun:
    """Apply an environment's filter, limit and ranking: (c, g, q) per scored unit.

    Parameters
    ----------
    runs : DataFrame
        Executions of one environment and one campaign (corpus schema). The
        reference pool is built from its correct ``reference`` rows (never
        filtered or limited); ``floor`` rows are ignored.
    env : Environment
    per_repeat : bool, default True
        ``True``: one score per (problem, solution, repeat), each repeat ranked
        against the fixed pool (what a single rollout would see). ``False``:
        repeats are collapsed first (median of ``ok`` repeats, majority status).
    roles : sequence of str
        Roles of the rows to score.
    pools : DataFrame, optional
        ``stats.ranking.reference_pools(runs)`` when already computed (it is the
        costliest step; pass it when applying many environments to the same runs).
    floor_durations : ndarray, optional
        The durations of the run's ``floor`` rows when ``runs`` comes without them (many environments
        applied to the same run, :func:`stats.simulator.simulate_grid`: the run is copied without its floor
        rows once, not once per environment); ``runs`` must then hold no ``floor`` row.
    percentiles : ndarray, optional
        :func:`base_percentiles` of the same ``runs``, ``pools``, ``roles`` and
        ``per_repeat``: the per-test percentiles before the environment acts. An
        environment's filter only drops rows and its limit only turns executions
        into timeouts (percentile 100); the pool is never filtered or limited, so
        every other execution keeps its rank and one pass serves every environment.
    base : ScoringBase, optional
        Built from the same ``runs`` (without floor rows, so with ``floor_durations``), ``pools``, ``roles`` and
        ``per_repeat`` when applying many environments to them: what does not depend on the environment is
        computed once (the results are identical).
    run_medians : ndarray, optional
        The run's :func:`reference_medians` when ``runs`` holds part of the run (a partition of whole problems):
        what ``pre.max_reference_quantile`` and ``limit.reference_quantile`` take their quantile of. Default:
        those of ``runs``.

    Returns
    -------
    EnvironmentRun

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "b", "c", "x"],
    ...     "duration_s": [1.0, 2.0, 3.0, 2.5], "status": "ok", "correct": True,
    ...     "role": ["reference"] * 3 + ["candidate"], "repeat": 0})
    >>> env = Environment.from_dict({"name": "e", "limit": {"seconds": 2.2}, "post": {"tau": 50}})
    >>> out = apply_environment(runs, env).scores
    >>> out[["solution", "q", "c", "g"]].to_dict("records")[3]   # 2.5 s > 2.2 s: a timeout
    {'solution': 'x', 'q': 1.0, 'c': False, 'g': False}
    """
    if not isinstance(env, Environment):
        raise TypeError(f"env must be an Environment (see Environment.from_dict), got {type(env).__name__}")
    missing = [c for c in ("problem", "test", "solution", "duration_s", "status") if c not in runs.columns]
    if missing:
        raise ValueError(f"apply_environment: the executions lack column(s) {missing}")
    floor_s = None
    floor_d = None
    if floor_durations is not None:
        if "role" in runs.columns and label_mask(runs["role"], "floor").any():
            raise ValueError("apply_environment: floor_durations is given, so runs must come without floor rows")
        floor_d = np.asarray(floor_durations, dtype=float)
    elif "role" in runs.columns:
        is_floor = (runs["role"] == "floor").to_numpy()
        floor_d = runs["duration_s"].to_numpy(dtype=float)[is_floor]
        runs = _without_floor(runs)
    if floor_d is not None and len(floor_d) and env.post.aggregator != "mean_pct":
        floor_s = float(np.median(floor_d[np.isfinite(floor_d)])) if np.isfinite(floor_d).any() else None
    if pools is None:
        pools = base.pools if base is not None and base.runs is runs else reference_pools(runs)
    if base is None:
        base = ScoringBase(runs, pools=pools, roles=roles, per_repeat=per_repeat)
    elif not base.matches(runs, pools, roles, per_repeat):
        raise ValueError("apply_environment: base was built from other runs, pools, roles or per_repeat; build "
                         "ScoringBase(runs, pools=pools, roles=roles, per_repeat=per_repeat) from these")
    tests = base.tests.copy()
    tests["kept"] = filter_tests(tests, env.pre, run_medians=run_medians)
    tests["limit_s"] = _scoped_limits(base, pools, tests, env.limit, run_medians)

    frame = base.frame
    if percentiles is not None and len(percentiles) != len(frame):
        raise ValueError(f"percentiles has {len(percentiles)} values but the scored rows are {len(frame)}: "
                         f"compute it with base_percentiles() on the same runs, roles and per_repeat")
    test_row = base.test_row
    keep = tests["kept"].to_numpy()[test_row]
    frame = frame.loc[keep].reset_index(drop=True)
    test_row = test_row[keep]

    durations = frame["duration_s"].to_numpy(dtype=float).copy()
    status = status_codes(frame)  # index into STATUSES ("ok" = 0), no per-row strings
    limit = tests["limit_s"].to_numpy(dtype=float)[test_row]
    hit = (status == 0) & (durations > limit)  # NaN limit: never hit
    if hit.any():
        status = status.copy()
        status[hit] = STATUSES.index("timeout")
        durations[hit] = limit[hit]
        frame["status"] = pd.Categorical.from_codes(status, categories=STATUSES)
        frame["duration_s"] = durations
    if percentiles is None:
        frame["percentile"] = test_percentiles(frame, pools)
    else:
        ranked = np.asarray(percentiles, dtype=float)[keep]
        ranked[hit] = 100.0  # what test_percentiles gives a timeout
        frame["percentile"] = ranked

    by = base.by
    units = base.units  # every unit keeps a row even when the filter removed all of its tests
    codes, n_units = subset_codes(*base.unit_codes, keep)  # group_codes(frame, by), from the unfiltered rows
    scores = problem_scores(frame, tau=env.post.tau, timeout_fails_c=env.limit.timeout_fails_c, by=by,
                            codes=(codes, n_units))
    is_opt = (label_mask(frame["test_kind"], "optimization") if "test_kind" in frame.columns
              else np.ones(len(frame), dtype=bool))
    hard = is_opt & (status_codes(frame) != 0)
    scores["hard_fail"] = np.bincount(codes, weights=hard.astype(float), minlength=n_units) > 0
    if env.post.aggregator != "mean_pct":
        q = _aggregated_q(frame, pools, env.post.aggregator, by, scores, floor_s)
        scores["q"] = q
        scores["g"] = (q <= env.post.tau / 100.0) & ~scores["hard_fail"].to_numpy()
    if len(scores) < len(units):
        # Units with no test left: nothing failed (c True), nothing proved fast (q NaN, g False).
        row = row_lookup(units, scores, by) if len(scores) else np.full(len(units), -1)
        found = row >= 0
        filled = units.copy()
        for column, empty, dtype in (("q", np.nan, float), ("c", True, bool), ("g", False, bool),
                                     ("hard_fail", False, bool), ("n_opt_tests", 0, np.int64),
                                     ("n_tests", 0, np.int64)):
            values = scores[column].to_numpy()[np.maximum(row, 0)] if len(scores) else np.full(len(units), empty)
            filled[column] = np.where(found, values, empty).astype(dtype)
        scores = filled
    if env.reward.scheme == "noise_aware":
        scores["q_expected"], frame["expected_percentile"] = _expected_q(runs, frame, scores, by, per_repeat)
    if env.reward.scheme == "noise_gate":
        scores["p_gate"] = _gate_probability(runs, frame, scores, by, per_repeat, tau=env.post.tau)
    return EnvironmentRun(scores=scores, tests=tests, n_executions=len(frame), n_limited=int(hit.sum()),
                          scored=frame)


def _expected_q(runs: pd.DataFrame, frame: pd.DataFrame, scores: pd.DataFrame, by: list[str],
                per_repeat: bool) -> tuple[np.ndarray, np.ndarray]:
    """E[q] of every unit (``mean_pct`` of E[r_t], :mod:`stats.noise`) and E[r_t] of every scored row.

    The noise model is fitted on every repeat of ``runs``; a scored execution
    (``per_repeat``) is one repeat, a collapsed cell keeps all of its repeats.
    Rows the limit turned into timeouts get 100, as for the point percentile.
    A test without a variance estimate borrows from its problem only, never from the other problems of
    ``runs`` (``widest="problem"``): a problem's E[q] depends on its rows alone, as :func:`_gate_probability`'s
    P does, so a Dask partition of problems gives the in-memory values (the run's fallback made a one-repeat
    problem's E[q] depend on which other problems shared its table).
    """
    model = fit_noise(runs, widest="problem")
    if per_repeat:
        ep = expected_percentiles(model, roles=None, executions=frame)
        keys = ["problem", "test", "solution"] + (["repeat"] if "repeat" in frame.columns else [])
    else:
        ep = expected_percentiles(model, roles=None, cells=frame)
        keys = ["problem", "test", "solution"]
    row = row_lookup(frame, ep, keys)
    pct = np.where(row >= 0, ep["expected_percentile"].to_numpy(dtype=float)[np.maximum(row, 0)], np.nan)
    if len(frame) == 0:
        return np.full(len(scores), np.nan), pct
    q = problem_scores(frame.assign(percentile=pct), by=by)
    unit = row_lookup(scores, q, by)
    return np.where(unit >= 0, q["q"].to_numpy(dtype=float)[np.maximum(unit, 0)], np.nan), pct


def _rows_by_problem(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Row positions of every problem (by its name), found with one stable sort rather than a scan per problem."""
    codes, n = group_codes(frame, ["problem"])
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n + 1))
    names = frame["problem"].iloc[first_rows(codes, n)].astype(str).to_numpy()
    return {name: order[bounds[i]:bounds[i + 1]] for i, name in enumerate(names)}


def problem_data_seed(rows: pd.DataFrame) -> list[int]:
    """The seed of one problem's posterior draws in :func:`_gate_probability` (the ``noise_gate`` reward), from its
    rows as a set.

    Keyed by ranks, as :func:`stats.noise._draw_keys` keys each cell's draws: every row is its status and the dense
    rank of its duration among the problem's (equal values one rank, a missing one last); a cell (test, solution)
    is the multiset of its rows, a test the multiset of its cells, and the seed the multiset of the cells each with
    its test's key (64-bit splitmix sums, order-free). So the same rows in any order, under any names (problem,
    tests, solutions) and in any unit of time (a rank does not move when every duration is multiplied by 1000)
    give the same seed; the raw durations' hash drew other numbers in milliseconds than in seconds.

    >>> rows = pd.DataFrame({"test": ["a", "b"], "solution": "s", "duration_s": [0.2, 0.1],
    ...                      "status": ["ok", "timeout"]})
    >>> problem_data_seed(rows) == problem_data_seed(rows.iloc[::-1])
    True
    >>> problem_data_seed(rows) == problem_data_seed(rows.assign(duration_s=rows["duration_s"] * 1e3))
    True
    """
    n = len(rows)
    rank = dense_ranks_within(rows["duration_s"].to_numpy(dtype=np.float64), np.zeros(n, dtype=np.int64))
    status = status_codes(rows).astype(np.uint64) if n else np.zeros(0, dtype=np.uint64)
    row = mix64(rank) ^ mix64(status + np.uint64(1))
    keys = [c for c in ("test", "solution") if c in rows.columns]
    if not keys:  # rows without cells: the multiset of the rows
        return [0, int(set_hash(row, np.zeros(n, dtype=np.int64), 1)[0])]
    cell, n_cells = group_codes(rows, keys)
    own = set_hash(row, cell, n_cells)
    test_of_cell = (group_codes(rows, ["test"])[0][first_rows(cell, n_cells)] if "test" in keys
                    else np.zeros(n_cells, dtype=np.int64))
    n_tests = int(test_of_cell.max()) + 1 if n_cells else 0
    test = set_hash(own, test_of_cell, n_tests)
    return [0, int(set_hash(mix64(own ^ test[test_of_cell]), np.zeros(n_cells, dtype=np.int64), 1)[0])]


def _gate_probability(runs: pd.DataFrame, frame: pd.DataFrame, scores: pd.DataFrame, by: list[str],
                      per_repeat: bool, *, tau: float) -> np.ndarray:
    """P(q <= tau/100) of every unit under the repeat-noise model (:func:`stats.noise.noise_aware_scores`,
    2,000 posterior draws); 0 for a unit with a hard optimization failure, NaN where q is undefined.

    The model is fitted on every repeat of ``runs``; a scored execution (``per_repeat``) is one repeat,
    a collapsed cell keeps all of its repeats (as :func:`_expected_q`). Each problem draws from its own
    stream, seeded by its own data (:func:`problem_data_seed`: its rows' statuses and duration ranks), never by its
    name: a problem's P depends on its rows alone, so a Dask partition of problems, another problem set,
    another row order, another name for the problem or another unit of time gives the same values. The noise model is fitted per
    problem: a test without a variance estimate borrows from its problem only, as in :func:`_expected_q`.
    """
    p = np.full(len(scores), np.nan)
    run_rows, frame_rows = _rows_by_problem(runs), _rows_by_problem(frame)
    for problem in sorted(frame_rows):
        own = runs.iloc[run_rows.get(problem, np.zeros(0, dtype=np.int64))]
        model = fit_noise(own)
        seed = problem_data_seed(own)
        mine = frame.iloc[frame_rows[problem]]
        scored = (noise_aware_scores(model, tau=tau, roles=None, executions=mine, seed=seed) if per_repeat
                  else noise_aware_scores(model, tau=tau, roles=None, cells=mine, seed=seed)).scores
        unit = row_lookup(scores, scored, by)
        p = np.where(unit >= 0, scored["p_gate"].to_numpy(dtype=float)[np.maximum(unit, 0)], p)
    return np.where(scores["hard_fail"].to_numpy(dtype=bool), 0.0, p)


# --------------------------------------------------------------------------------------------
# Rewards
# --------------------------------------------------------------------------------------------

def reward(
    c,
    g,
    q=None,
    *,
    scheme: str = "collapsed",
    lam: float = 0.5,
    p_correctness: float = 0.5,
    thresholds: Sequence[float] = (),
    levels: Sequence[float] | None = None,
    hard_fail=None,
    seed: int | None = 0,
    draws=None,
) -> np.ndarray:
    """Reward in [-1, 1] of every rollout from its (c, g, q).

    With c~ = 2c - 1 and g~ = 2g - 1 (both in {-1, +1}):

    ==========================  =====================================================
    ``correctness``             R = c~
    ``optimization``            R = g~ (correctness ignored)
    ``optimization_bucketed``   R = levels[j], j = #{thresholds < 100 q}; a hard optimization
                                failure (``hard_fail``) or an undefined q gives -1.
                                Default levels: evenly spaced from +1 (fastest) to -1.
                                Correctness ignored.
    ``additive``                R = lam c~ + (1 - lam) g~
    ``multitask``               R = c~ with probability ``p_correctness``, else g~ (seeded draw
                                per rollout)
    ``collapsed``               R = (1 + c~)(1 + g~)/2 - 1   (+1 iff c and g, else -1)
    ``two_gate``                R = (1 + c~)(1 + g~)/4 - (1 - c~)/2   (wrong -1, correct slow 0,
                                correct fast +1)
    ``two_gate_graded``         R = -1 when c = 0, else 1 - q (q NaN, i.e. no optimization
                                test scored, gives 0); tau plays no part
    ``noise_aware``             the same formula with q = E[q], the expected true q under
                                the repeat-noise model of :mod:`stats.noise` (pass E[q] as q;
                                :func:`environment_rewards` does)
    ``noise_gate``              R = -1 when c = 0, else 2 P(q <= tau) - 1, P the posterior probability
                                of passing the gate under the repeat-noise model (pass it as q;
                                :func:`environment_rewards` does): the collapsed reward's expectation
                                over the timing noise; an undefined P gives -1, as g = 0 would
    ==========================  =====================================================

    Parameters
    ----------
    c, g : array of bool
    q : array of float, optional
        Needed by ``optimization_bucketed``, ``two_gate_graded``, ``noise_aware`` (E[q]) and ``noise_gate``
        (P(q <= tau), in [0, 1]).
    thresholds : sequence of float
        Percentile points (0-100), strictly increasing (``optimization_bucketed``).
    draws : array of float, optional
        ``multitask``: the uniform of every rollout (default: the first ``len(c)`` of
        ``default_rng(seed)``, in the order of the arrays). :func:`environment_rewards` passes each rollout's
        own, keyed by its data (:func:`multitask_uniforms`), so a score table's names and order decide nothing.

    Examples
    --------
    >>> reward([1, 1, 0, 0], [1, 0, 1, 0], scheme="two_gate").tolist()
    [1.0, 0.0, -1.0, -1.0]
    >>> reward([1, 1, 0], [1, 0, 1], scheme="additive", lam=0.25).tolist()
    [1.0, -0.5, 0.5]
    """
    if scheme not in REWARD_SCHEMES:
        raise ValueError(f"unknown reward scheme {scheme!r}; use one of {', '.join(REWARD_SCHEMES)}")
    c = np.asarray(c, dtype=bool)
    g = np.asarray(g, dtype=bool)
    if c.shape != g.shape:
        raise ValueError(f"c and g must have the same shape, got {c.shape} and {g.shape}")
    ct = 2.0 * c - 1.0
    gt = 2.0 * g - 1.0
    if scheme == "correctness":
        return ct
    if scheme == "optimization":
        return gt
    if scheme == "additive":
        if not 0 <= lam <= 1:
            raise ValueError(f"lam must lie in [0, 1], got {lam}")
        return lam * ct + (1 - lam) * gt
    if scheme == "multitask":
        if not 0 <= p_correctness <= 1:
            raise ValueError(f"p_correctness must lie in [0, 1], got {p_correctness}")
        uniform = np.random.default_rng(seed).random(c.shape) if draws is None else np.asarray(draws, dtype=float)
        if uniform.shape != c.shape:
            raise ValueError(f"draws must have the shape of c, got {uniform.shape} and {c.shape}")
        draw = uniform < p_correctness
        return np.where(draw, ct, gt)
    if scheme == "collapsed":
        return (1 + ct) * (1 + gt) / 2 - 1
    if scheme == "two_gate":
        return (1 + ct) * (1 + gt) / 4 - (1 - ct) / 2
    if q is None:
        raise ValueError(f"scheme {scheme!r} needs q")
    q = np.asarray(q, dtype=float)
    if q.shape != c.shape:
        raise ValueError(f"q must have the shape of c, got {q.shape} and {c.shape}")
    if scheme in ("two_gate_graded", "noise_aware"):
        graded = np.where(np.isfinite(q), 1.0 - np.clip(q, 0.0, 1.0), 0.0)
        return np.where(c, graded, -1.0)
    if scheme == "noise_gate":
        expected = np.where(np.isfinite(q), 2.0 * np.clip(q, 0.0, 1.0) - 1.0, -1.0)
        return np.where(c, expected, -1.0)
    if scheme == "optimization_bucketed":
        cuts = np.asarray(thresholds, dtype=float)
        if cuts.size == 0 or np.any(np.diff(cuts) <= 0):
            raise ValueError(f"thresholds must be a non-empty, strictly increasing list, got {list(thresholds)}")
        lv = np.linspace(1.0, -1.0, cuts.size + 1) if levels is None or len(levels) == 0 else np.asarray(levels, float)
        if lv.size != cuts.size + 1 or np.any(np.abs(lv) > 1):
            raise ValueError(f"levels must hold len(thresholds) + 1 = {cuts.size + 1} values in [-1, 1]")
        # j = #{thresholds < 100 q}, compared as q against threshold / 100, the gate's q <= tau / 100: 100 q in
        # floating point is not the percentile points (100 * 0.07 = 7.000000000000001), so q = 0.07 fell
        # above a threshold of 7 that the gate at tau = 7 passes
        bucket = np.searchsorted(cuts / 100.0, np.nan_to_num(q, nan=1.0), side="left")
        hard = ~np.isfinite(q)
        if hard_fail is not None:
            hard = hard | np.asarray(hard_fail, dtype=bool)
        return np.where(hard, -1.0, lv[bucket])
    raise ValueError(f"unknown reward scheme {scheme!r}; use one of {', '.join(REWARD_SCHEMES)}")


def multitask_uniforms(scores: pd.DataFrame, seed: int | None) -> np.ndarray:
    """The ``multitask`` coin's uniform in [0, 1) of every rollout (a row of an :class:`EnvironmentRun`'s scores),
    keyed by data, never by a name or the table's order.

    A rollout's own key hashes its scores (q to 9 decimals, c, g, hard_fail) and its repeat; a unit (problem,
    solution) is the multiset of its rollouts, a problem the multiset of its units, and the rollout's key hashes
    its own with its unit's and its problem's (splitmix64 sums, as :func:`stats.noise._draw_keys`). Two rollouts
    of a problem tie only when their units hold the same scores on every repeat (interchangeable); they then take
    the next keys in label order. The uniform is the key mixed with the seed (a counter-based draw: each
    rollout's coin is its own, so a problem's coins do not depend on which problems share the table, a Dask
    partition or another name). ``seed`` None: a fresh random salt.

    >>> t = pd.DataFrame({"problem": ["a", "a", "b"], "solution": ["x", "y", "x"], "q": [0.1, 0.5, 0.1],
    ...                   "c": True, "g": [True, False, True]})
    >>> u = multitask_uniforms(t, 0)
    >>> bool(np.all((u >= 0) & (u < 1))), np.array_equal(u[::-1], multitask_uniforms(t.iloc[::-1], 0))
    (True, True)
    """
    n = len(scores)
    if n == 0:
        return np.zeros(0)
    q = np.round(scores["q"].to_numpy(dtype=np.float64), 9) + 0.0 if "q" in scores.columns else np.zeros(n)
    own = mix64(np.where(np.isnan(q), -1.0, q).view(np.uint64))
    for column in ("c", "g", "hard_fail"):
        if column in scores.columns:
            own = mix64(own ^ mix64(scores[column].to_numpy(dtype=bool).astype(np.uint64) + np.uint64(1)))
    if "repeat" in scores.columns:
        own = mix64(own ^ mix64(scores["repeat"].to_numpy(dtype=np.int64).view(np.uint64)))
    unit, n_units = group_codes(scores, ["problem", "solution"])
    problem, n_problems = group_codes(scores, ["problem"])
    unit_key = set_hash(own, unit, n_units)
    problem_key = set_hash(unit_key, problem[first_rows(unit, n_units)], n_problems)
    key = mix64(mix64(own ^ unit_key[unit]) ^ problem_key[problem])
    order = np.lexsort((unit, key))  # ties (interchangeable units) in label order
    sorted_key = key[order]
    start = np.r_[True, sorted_key[1:] != sorted_key[:-1]]
    run_start = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    occurrence = np.empty(n, dtype=np.uint64)
    occurrence[order] = (np.arange(n) - run_start).astype(np.uint64)
    key = mix64(key ^ mix64(occurrence))
    salt = np.uint64(np.random.default_rng(seed).integers(0, 2 ** 63)) if seed is None else \
        mix64(np.array([int(seed) % 2 ** 64], dtype=np.uint64))[0]
    return (mix64(key ^ salt) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def environment_rewards(scores: pd.DataFrame, spec: RewardSpec, *, seed: int | None = None, draws=None) -> np.ndarray:
    """:func:`reward` of an :class:`EnvironmentRun` score table under a :class:`RewardSpec`.

    For ``optimization_bucketed`` a unit with ``hard_fail`` gets -1; ``noise_aware``
    uses the ``q_expected`` column (E[q]) that :func:`apply_environment` adds for it, ``multitask`` draws each
    rollout's coin from its data (:func:`multitask_uniforms`, unless ``draws`` are given), ``noise_gate`` its
    ``p_gate`` column. Where a correct unit with a defined q has no E[q] or P (the repeat-noise model has no
    variance: no cell with two ok repeats, as in a one-repeat run), every reward of its problem is NaN: not
    measured.
    """
    hard = scores["hard_fail"].to_numpy(dtype=bool) if "hard_fail" in scores.columns else None
    q_column = "q"
    if spec.scheme == "noise_aware":
        if "q_expected" not in scores.columns:
            raise ValueError("the noise_aware reward needs E[q] (column q_expected): apply the environment "
                             "with stats.rewards.apply_environment, which computes it for this scheme")
        q_column = "q_expected"
    if spec.scheme == "noise_gate":
        if "p_gate" not in scores.columns:
            raise ValueError("the noise_gate reward needs P(q <= tau) (column p_gate): apply the environment "
                             "with stats.rewards.apply_environment, which computes it for this scheme")
        q_column = "p_gate"
    if spec.scheme == "multitask" and draws is None:  # each rollout's coin keyed by its data (never table order)
        draws = multitask_uniforms(scores, spec.seed if seed is None else seed)
    values = reward(scores["c"].to_numpy(dtype=bool), scores["g"].to_numpy(dtype=bool),
                    scores[q_column].to_numpy(dtype=float), scheme=spec.scheme, lam=spec.lam,
                    p_correctness=spec.p_correctness, thresholds=spec.thresholds, levels=spec.levels or None,
                    hard_fail=hard, seed=spec.seed if seed is None else seed, draws=draws)
    if q_column != "q" and len(scores):
        # A correct unit whose point q is defined but whose noise-aware value is not: the repeat-noise model has
        # no variance to draw from (no cell with two ok repeats, e.g. a one-repeat run). The rewards of its
        # problem are not measured (NaN, every unit's: its wrong units' -1 alone would read as a sparse reward),
        # never the 0 or -1 of an undefined q (no optimization test left), which is the environment's own outcome.
        unmeasured = (scores["c"].to_numpy(dtype=bool) & np.isfinite(scores["q"].to_numpy(dtype=float))
                      & ~np.isfinite(scores[q_column].to_numpy(dtype=float)))
        if unmeasured.any():
            problem, n_problems = group_codes(scores, ["problem"])
            values = np.where(np.bincount(problem[unmeasured], minlength=n_problems)[problem] > 0, np.nan, values)
    return values


# --------------------------------------------------------------------------------------------
# p_tau
# --------------------------------------------------------------------------------------------

def _successes(samples: pd.DataFrame, tau: float) -> np.ndarray:
    c = samples["c"].to_numpy(dtype=bool)
    if tau >= 100:
        return c  # p_100 is plain correctness
    q = samples["q"].to_numpy(dtype=float)
    return c & (q <= tau / 100.0)


def p_tau_per_problem(samples: pd.DataFrame, *, taus: Sequence[float] = (100, 50, 30, 10), k: int = 1) -> pd.DataFrame:
    """n, m_tau and pass@k of every problem for every tau.

    Parameters
    ----------
    samples : DataFrame
        One row per sample (rollout / candidate program): ``problem``, ``c``, ``q``.
    taus : sequence of float
        Thresholds in percentile points; a sample succeeds when c = 1 and
        q <= tau/100 (tau >= 100: c = 1 alone).

    Returns
    -------
    DataFrame with ``tau, problem, n, m, pass_at_k`` (pass@k in [0, 1]).
    """
    for column in ("problem", "c", "q"):
        if column not in samples.columns:
            raise ValueError(f"p_tau needs a column {column!r} (one row per sample: problem, c, q)")
    codes, n_problems = group_codes(samples, ["problem"])
    problems = samples["problem"].to_numpy()[first_rows(codes, n_problems)]
    n = np.bincount(codes, minlength=n_problems)
    frames = []
    for tau in taus:  # a loop over the few thresholds, vectorised over problems
        if not 0 <= tau <= 100:
            raise ValueError(f"tau must lie in [0, 100] percentile points, got {tau}")
        m = np.bincount(codes, weights=_successes(samples, tau).astype(float), minlength=n_problems)
        frames.append(pd.DataFrame({"tau": float(tau), "problem": problems, "n": n, "m": m.astype(np.int64),
                                    "pass_at_k": pass_at_k(n, m, k)}))
    return pd.concat(frames, ignore_index=True)


def p_tau(
    samples: pd.DataFrame,
    *,
    taus: Sequence[float] = (100, 50, 30, 10),
    k: int = 1,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> pd.DataFrame:
    """p_tau = mean over problems of pass@k, in percent, with a bootstrap CI over problems.

    Problems with fewer than k samples are left out (their n is reported in ``n_problems``). The interval is
    a function of the problems' values as a multiset (resampled in sorted order), never of their names.

    Returns
    -------
    DataFrame with ``tau, k, estimate, ci_low, ci_high, n_problems`` (percent).

    Examples
    --------
    >>> import pandas as pd
    >>> s = pd.DataFrame({"problem": ["a", "a", "b", "b"], "c": [1, 1, 1, 0], "q": [0.1, 0.6, 0.2, 0.0]})
    >>> p_tau(s, taus=(100, 50), n_boot=50)[["tau", "estimate"]].to_dict("records")
    [{'tau': 100.0, 'estimate': 75.0}, {'tau': 50.0, 'estimate': 50.0}]
    """
    per = p_tau_per_problem(samples, taus=taus, k=k)
    rows = []
    for tau, block in per.groupby("tau", sort=False):
        # the problems' values by value, not in the order of their names: the seeded resamples pick positions,
        # so in name order renaming the problems moved the interval (p30's lower end 20.8 or 24.9, same rows)
        values = np.sort(block["pass_at_k"].to_numpy(dtype=float) * 100.0)
        ci = bootstrap_ci(values, n_boot=n_boot, level=level, seed=seed)
        rows.append({"tau": tau, "k": k, "estimate": ci.estimate, "ci_low": ci.low, "ci_high": ci.high,
                     "n_problems": ci.n})
    return pd.DataFrame(rows)


def relative_gain(
    base: pd.DataFrame,
    new: pd.DataFrame,
    *,
    taus: Sequence[float] = (100, 50, 30, 10),
    k: int = 1,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Relative gain of system ``new`` over ``base`` in p_tau: 100 (p_new / p_base - 1) percent.

    Both are sample tables (``problem, c, q``); only problems present in both
    (with >= k samples each) are compared, and the bootstrap resamples those
    problems jointly (paired), recomputing the ratio of means in each resample.

    Returns
    -------
    DataFrame with ``tau, base, new, gain_pct, ci_low, ci_high, n_problems``.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"problem": ["x", "y"], "c": [1, 0], "q": [0.2, 0.2]})
    >>> b = pd.DataFrame({"problem": ["x", "y"], "c": [1, 1], "q": [0.2, 0.2]})
    >>> relative_gain(a, b, taus=(30,), n_boot=20)["gain_pct"].tolist()
    [100.0]
    """
    pa = p_tau_per_problem(base, taus=taus, k=k)
    pb = p_tau_per_problem(new, taus=taus, k=k)
    pa["problem"] = pa["problem"].astype(str)
    pb["problem"] = pb["problem"].astype(str)
    joined = pa.merge(pb, on=["tau", "problem"], suffixes=("_base", "_new"))
    joined = joined[np.isfinite(joined["pass_at_k_base"]) & np.isfinite(joined["pass_at_k_new"])]
    rng = np.random.default_rng(seed)
    alpha = (1 - level) / 2
    rows = []
    for tau in taus:
        block = joined[joined["tau"] == float(tau)]
        a = block["pass_at_k_base"].to_numpy(dtype=float)
        b = block["pass_at_k_new"].to_numpy(dtype=float)
        n = len(a)
        with np.errstate(invalid="ignore", divide="ignore"):
            gain = 100.0 * (b.mean() / a.mean() - 1.0) if n else np.nan
            low = high = np.nan
            if n > 1:
                idx = rng.integers(0, n, size=(n_boot, n))
                draws = 100.0 * (b[idx].mean(axis=1) / a[idx].mean(axis=1) - 1.0)
                draws = draws[np.isfinite(draws)]
                if len(draws):
                    low, high = np.quantile(draws, [alpha, 1 - alpha])
        rows.append({"tau": float(tau), "base": 100.0 * a.mean() if n else np.nan,
                     "new": 100.0 * b.mean() if n else np.nan, "gain_pct": float(gain),
                     "ci_low": float(low), "ci_high": float(high), "n_problems": n})
    return pd.DataFrame(rows)
