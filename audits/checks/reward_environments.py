"""Reward-environment files: loading, validation and grids.

A *reward environment* (:class:`stats.rewards.RewardEnvironment`) is the reward side: pre-filter,
limit, post-ranking and reward scheme. It is never called a bare "environment", which means the
corpus column (the sandbox or machine). A reward-environment file (YAML or JSON) holds one mapping in
the layout of :class:`stats.rewards.RewardEnvironment`::

    name: top30
    pre: {max_reference_s: 2.0, max_input_chars: 1000, keep_slowest_fraction: 0.5}
    limit: {kind: uniform, seconds: 10}
    post: {aggregator: mean_pct, tau: 30}
    reward: {scheme: collapsed}

``name`` defaults to the file's stem. A **grid** file expands into many
environments: a ``base`` environment and ``vary``, a mapping from dotted keys to
lists of values whose Cartesian product is taken; plus optional explicit
``environments`` (a list of mappings) and ``include`` (environment files,
relative to the grid file)::

    base: {name: grid, post: {tau: 30}, reward: {scheme: collapsed}}
    vary:
      post.tau: [10, 30, 50]
      reward.scheme: [collapsed, two_gate]

Grid members are named ``<base name>[tau=10,scheme=collapsed]`` (the last part
of each dotted key; a mapping value is written as its values joined by ``/``).
Every error names the file and the key that is wrong, and the allowed values.
"""

from __future__ import annotations

import copy
import io
import itertools
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from audits.errors import UserError
from audits import shipped_dir
from stats.rewards import EnvironmentSpecError, RewardEnvironment, unused_keys

__all__ = ["shipped_environments_dir", "find_shipped", "load_reward_environment", "load_grid",
           "load_reward_environments"]


class EnvironmentFileError(UserError, ValueError):
    """An environment or grid file that cannot be used (the message names the file and the key)."""


#: The package the shipped reward-environment files are installed as (pyproject.toml maps
#: ``fixtures/environments/`` onto it); :data:`SHIPPED_FOLDER` is where they live in git.
SHIPPED_PACKAGE = "audits.shipped_reward_environments"
SHIPPED_FOLDER = "fixtures/environments"


def shipped_environments_dir() -> Path:
    """The folder of the shipped reward-environment files (checkout or installed wheel; see :func:`audits.shipped_dir`)."""
    return shipped_dir(SHIPPED_PACKAGE, SHIPPED_FOLDER)


def shipped_environment_files() -> list[Path]:
    """Every shipped reward-environment and grid file (``*.yaml``, ``*.yml``, ``*.json``), sorted by name."""
    folder = shipped_environments_dir()
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in (".yaml", ".yml", ".json") and p.is_file())


def find_shipped(path: str | os.PathLike) -> Path | None:
    """The shipped file a relative path ``fixtures/environments/<file>`` names, or None.

    Lets the spelling used in the report templates and the docs work from any working directory and in
    an installed wheel, where the repository's ``fixtures/`` does not exist.

    Examples
    --------
    >>> find_shipped("fixtures/environments/top30.yaml").name
    'top30.yaml'
    >>> find_shipped("elsewhere/top30.yaml") is None
    True
    """
    path = Path(path)
    prefix = Path(SHIPPED_FOLDER).parts
    if path.is_absolute() or path.parts[:len(prefix)] != prefix or len(path.parts) <= len(prefix):
        return None
    candidate = shipped_environments_dir().joinpath(*path.parts[len(prefix):])
    return candidate if candidate.is_file() else None


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that gives one key twice (plain PyYAML keeps the last silently)."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # merge keys (<<): their keys may be overridden
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            repeated = key in seen
        except TypeError:  # an unhashable key: the mapping constructor says so
            break
        if repeated:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"found the key {key!r} twice (first at line {seen[key].line + 1}); give each key once",
                key_node.start_mark)
        seen[key] = key_node.start_mark
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def _unique_pairs(pairs: list) -> dict:
    """``object_pairs_hook`` of :func:`json.loads`: an object that gives one key twice is refused."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} is given twice in one object; give each key once")
        out[key] = value
    return out


def read_mapping(path: str | os.PathLike) -> dict:
    """Parse a YAML (``.yaml``/``.yml``) or JSON (``.json``) file that must hold one mapping.

    A relative ``fixtures/environments/<file>`` that is not found from the working directory is the
    shipped file of that name (:func:`find_shipped`). The text is UTF-8 (a byte-order mark is allowed); a
    mapping that gives one key twice is refused, since either value may be the one meant (YAML and JSON
    readers silently keep the last).
    """
    path = Path(path)
    if not path.is_file() and (shipped := find_shipped(path)) is not None:
        path = shipped
    if path.is_dir():
        raise EnvironmentFileError(f"{path}: is a folder; pass a reward-environment file (.yaml, .yml or .json) "
                                   "inside it")
    if not path.is_file():
        raise EnvironmentFileError(f"{path}: no such environment file")
    kind = path.suffix.lower()
    if kind not in (".json", ".yaml", ".yml"):
        raise EnvironmentFileError(f"{path}: unknown file type {path.suffix!r}; use .yaml, .yml or .json")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EnvironmentFileError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                                   f"{exc.start}); save the file as UTF-8") from exc
    try:
        if kind == ".json":
            data = json.loads(text, object_pairs_hook=_unique_pairs)
        else:
            stream = io.StringIO(text)
            stream.name = str(path)  # PyYAML's messages name the file, not "<unicode string>"
            data = yaml.load(stream, Loader=_UniqueKeyLoader)
    except (yaml.YAMLError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise EnvironmentFileError(f"{path}: not valid {kind.lstrip('.').upper()}: {exc}") from exc
    if data is None:
        raise EnvironmentFileError(f"{path}: the file is empty; a reward environment needs at least "
                                   "post: {aggregator: mean_pct, tau: 30}")
    if not isinstance(data, dict):
        raise EnvironmentFileError(f"{path}: expected a mapping at the top level (keys such as name, pre, limit, "
                                   f"post, reward), got {type(data).__name__}")
    return data


def _build(data: Mapping, source: str, default_name: str) -> RewardEnvironment:
    try:
        return RewardEnvironment.from_dict(data, name=default_name)
    except EnvironmentSpecError as exc:
        where = f" (key {exc.key})" if exc.key else ""
        raise EnvironmentFileError(f"{source}{where}: {exc.detail}") from exc


def load_reward_environment(path: str | os.PathLike) -> RewardEnvironment:
    """Load and validate one environment file (``name`` defaults to the file stem).

    Examples
    --------
    >>> env = load_reward_environment("fixtures/environments/top30.yaml")  # from the repository root
    >>> env.post.tau
    30.0
    """
    path = Path(path)
    data = read_mapping(path)
    if "base" in data or "vary" in data:
        raise EnvironmentFileError(f"{path}: this is a grid file (it has 'base'/'vary'), many reward environments; "
                                   "pass it to speedaudit simulate with --grid (audits.checks.reward_environments."
                                   "load_grid), or one of its members as its own file to speedaudit score")
    return _build(data, str(path), path.stem)


def _set_dotted(data: dict, dotted: str, value, source: str) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise EnvironmentFileError(f"{source} (key vary.{dotted}): {part!r} is not a mapping in the base")
        node = child
    node[parts[-1]] = copy.deepcopy(value)


def _label(value) -> str:
    if isinstance(value, Mapping):
        return "/".join(_label(v) for v in value.values())
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def expand_grid(grid: Mapping, *, source: str = "<grid>", base_dir: str | os.PathLike | None = None
                ) -> list[RewardEnvironment]:
    """Environments of a grid mapping (see the module docstring)."""
    allowed = ("base", "vary", "environments", "include", "description")
    unknown = [k for k in grid if k not in allowed]
    if unknown:
        raise EnvironmentFileError(f"{source} (key {unknown[0]}): unknown key; allowed grid keys: "
                                   f"{', '.join(allowed)}")
    out: list[RewardEnvironment] = []
    base = grid.get("base")
    vary = grid.get("vary") or {}
    if vary and base is None:
        raise EnvironmentFileError(f"{source} (key base): required when 'vary' is given")
    if base is not None:
        if not isinstance(base, dict):
            raise EnvironmentFileError(f"{source} (key base): expected a mapping, got {type(base).__name__}")
        if not isinstance(vary, dict):
            raise EnvironmentFileError(f"{source} (key vary): expected a mapping of dotted keys to lists")
        for key, values in vary.items():
            if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
                raise EnvironmentFileError(f"{source} (key vary.{key}): expected a dotted key such as post.tau or "
                                           "limit.seconds")
            if not isinstance(values, list) or not values:
                raise EnvironmentFileError(f"{source} (key vary.{key}): expected a non-empty list of values")
        base_name = str(base.get("name", Path(source).stem))
        keys = list(vary)
        members = []
        for combo in itertools.product(*(vary[k] for k in keys)):
            data = copy.deepcopy(base)
            for key, value in zip(keys, combo):
                if key == "name":
                    raise EnvironmentFileError(f"{source} (key vary.name): names are generated; vary other keys")
                _set_dotted(data, key, value, source)
            label = ",".join(f"{k.split('.')[-1]}={_label(v)}" for k, v in zip(keys, combo))
            data["name"] = f"{base_name}[{label}]" if label else base_name
            members.append(data)
        # A key the members' schemes (or limits) read only in part of the grid (base reward.lambda while
        # vary.reward.scheme lists collapsed and additive) is dropped from the members that do not read it; a key
        # that no member reads is refused by the first member's validation, naming the member and the key.
        unused = [set(unused_keys(data)) for data in members]
        read_somewhere = set().union(*unused) - set.intersection(*unused) if unused else set()
        for data, skip in zip(members, unused):
            for dotted in skip & read_somewhere:
                section, key = dotted.split(".", 1)
                data[section] = {k: v for k, v in data[section].items() if k != key}
            out.append(_build(data, f"{source} (member {data['name']})", data["name"]))
    members = grid.get("environments") or []
    if not isinstance(members, list):
        raise EnvironmentFileError(f"{source} (key environments): expected a list of reward-environment mappings")
    for i, item in enumerate(members):
        if not isinstance(item, dict):
            raise EnvironmentFileError(f"{source} (key environments[{i}]): expected a mapping")
        out.append(_build(item, f"{source} (environments[{i}])", f"{Path(source).stem}-{i}"))
    includes = grid.get("include") or []
    if not isinstance(includes, list):
        raise EnvironmentFileError(f"{source} (key include): expected a list of environment files")
    for i, item in enumerate(includes):
        if not isinstance(item, str) or not item:
            raise EnvironmentFileError(f"{source} (key include[{i}]): expected a file name, got {item!r}")
        path = Path(item)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        try:
            out.append(load_reward_environment(path))
        except EnvironmentFileError as exc:  # the grid that names the file, then what is wrong with it
            raise EnvironmentFileError(f"{source} (key include[{i}]): {exc}") from exc
    if not out:
        raise EnvironmentFileError(f"{source}: the grid defines no environment; give base + vary, environments "
                                   "or include")
    return out


def load_grid(path: str | os.PathLike) -> list[RewardEnvironment]:
    """Load a grid file (YAML/JSON) into its environments."""
    path = Path(path)
    return expand_grid(read_mapping(path), source=str(path), base_dir=path.parent)


def load_reward_environments(env_paths: Iterable[str | os.PathLike] = (), grid_paths: Iterable[str | os.PathLike] = ()
                      ) -> list[RewardEnvironment]:
    """All environments of some environment files and grid files, checked for unique names."""
    envs = [load_reward_environment(p) for p in env_paths]
    for grid in grid_paths:
        envs.extend(load_grid(grid))
    if not envs:
        raise EnvironmentFileError("no environment given: pass --reward-env FILE (and/or --grid FILE)")
    seen: dict[str, int] = {}
    for env in envs:
        seen[env.name] = seen.get(env.name, 0) + 1
    repeated = sorted(n for n, c in seen.items() if c > 1)
    if repeated:
        raise EnvironmentFileError(f"environment names must be unique; repeated: {', '.join(repeated)} "
                                   "(set 'name:' in the files)")
    return envs


#: Old names of :func:`load_reward_environment` / :func:`load_reward_environments`.
load_environment = load_reward_environment
load_environments = load_reward_environments
