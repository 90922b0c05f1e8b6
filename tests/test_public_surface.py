"""``__all__`` lists what a module really exports (issue 23 item 4), computed over the tree with ``ast``.

The rule (written for readers in README.md, "The same from Python"): a name stands in the ``__all__`` of a
module of ``audits`` or ``stats`` only if something **outside that module** in the project uses it:

* another module of ``audits``, ``stats`` or ``speedaudit``, a report template (``notebooks/*.py``) or a script
  (``scripts/``, ``benchmarks/``, ``fixtures/**/*.py``) imports it (``from M import name``), names it as
  ``M.name`` through a module it imported (``import M as m``, ``from P import M``,
  ``m = importlib.import_module("M")``), or names it in a string, ``"M:name"`` or ``"M.name"`` (the registry's
  functions, the entry point in pyproject.toml); a docstring counts as documentation: its cross-references
  (``:func:`M.name```) and the code of its examples;
* README.md, a page of docs/ or pyproject.toml names it (``from M import name``, ``M.name``, ``M:name``);
* or a used name exposes it: a type or constant of the module in the signature (annotations, defaults, return
  type) of a used function or of a public method of a used class, a used class's field annotations and bases
  (the result types a caller gets back, the default a caller may pass again);
* or it is read from ``__all__`` at run time (:data:`READ_FROM_ALL`: the registry's Options and Thresholds).

Comments do not count, nor do the tests (``tests/``): a test may reach any name, ``__all__`` is what a module
offers the rest of the project and its users. The top-level ``speedaudit`` has its own rules (:data:`OWN_RULES`).

Two directions are enforced, each failure naming the module and the name:

1. **no unused export**: every name of an ``__all__`` is used as above; this is what keeps the lists short
   (issue 23 counted 488 names, this session 716 before the rule). Dropping a name from ``__all__`` changes
   nothing but ``import *``, which nothing here uses, so the check costs no behaviour.
2. **no private import**: no name starting with ``_`` is imported, or named as ``M._name``, by another module
   of the packages, a template or a script (docs may still explain an internal): a name another module needs
   is part of what its module offers, so it is public (and may then be listed).

The converse of 1 (every used public name is in ``__all__``) is not enforced: it would only grow the lists
(many modules are imported for one or two names by their own package), and direction 2 already says what a
module must not hide. Modules being changed by their owners this session are held to the rule as they stand,
with their exceptions listed exactly (:data:`OWNED_ELSEWHERE`, :data:`PRIVATE_IMPORTS_OWNED_ELSEWHERE`);
an exception that no longer holds fails :func:`test_the_lists_of_exceptions_are_exact`, so the lists only
shrink. :func:`problems` runs on any tree: two tests plant bad lists in temporary trees and see it fail.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audits", "stats", "speedaudit")
#: Where the users of the packages' names live (besides the packages): the report templates and the scripts.
USER_GLOBS = ("notebooks/*.py", "scripts/**/*.py", "benchmarks/**/*.py", "fixtures/**/*.py")
DOC_GLOBS = ("README.md", "docs/**/*.md", "pyproject.toml")
FENCE = re.compile(r"^[ \t]*```python[ \t]*\n(?P<body>.*?)^[ \t]*```", re.M | re.S)
DOTTED = re.compile(r"\b((?:%s)(?:\.\w+)+)(?::(\w+))?" % "|".join(PACKAGES))
FROM_IMPORT = re.compile(r"\bfrom\s+((?:%s)(?:\.\w+)*)\s+import\s+\(?([\w\s,]+)" % "|".join(PACKAGES))


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    exported: list[str] | None  # its __all__ (None: it has none)
    defined: set[str] = field(default_factory=set)  # names bound at its top level


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_of(tree: ast.Module) -> list[str] | None:
    node = _all_node(tree)
    return None if node is None else list(ast.literal_eval(node.value))


def _all_node(tree: ast.Module) -> ast.Assign | ast.AnnAssign | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            return node
    return None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def package_modules(root: Path) -> dict[str, Module]:
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            name = module_name(root, path)
            out[name] = Module(name, path, tree, _all_of(tree), _top_level_names(tree))
    return out


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                ids.add(id(first.value))
    return ids


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _split(dotted: str, modules) -> tuple[str, str] | None:
    """``("a.b", "name")`` for ``"a.b.name..."`` where ``a.b`` is the longest known module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:cut]) in modules:
            return ".".join(parts[:cut]), parts[cut]
    return None


def _in_text(text: str, modules) -> set[tuple[str, str]]:
    refs = set()
    for match in DOTTED.finditer(text):
        dotted, after_colon = match.groups()
        if after_colon and dotted in modules:
            refs.add((dotted, after_colon))
        elif (split := _split(dotted, modules)) is not None:
            refs.add(split)
    for match in FROM_IMPORT.finditer(text):
        module, names = match.groups()
        if module in modules:
            refs.update((module, n) for n in re.split(r"[\s,]+", names.split(")")[0]) if n and n != "as")
    return refs


def python_references(tree: ast.Module, here: str | None, modules, text: bool = True) -> set[tuple[str, str]]:
    """``(module, name)`` pairs a Python file uses: imports, ``M.name`` through a module alias (``import M as m``,
    ``from P import M``, ``m = importlib.import_module("M")``) and, with ``text``, ``"M:name"``/``"M.name"`` in its
    strings and docstrings and the code of its docstrings' examples; ``here`` (its own module, if any) excluded."""
    refs: set[tuple[str, str]] = set()
    aliases: dict[str, str] = {}  # local name -> module
    package = None if here is None else here if modules[here].path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    aliases.setdefault(head, head)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = (package or "").split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                module = ".".join([*base, module] if module else base)
            for alias in node.names:
                if f"{module}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
                elif module in modules:
                    refs.add((module, alias.name))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and _dotted(node.value.func) in (["importlib", "import_module"],
                                                                                     ["import_module"]) \
                and node.value.args and isinstance(node.value.args[0], ast.Constant) \
                and node.value.args[0].value in modules:  # m = importlib.import_module("M"): m.name uses M.name
            aliases[node.targets[0].id] = node.value.args[0].value
    docstrings = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = _dotted(node)
            if parts and parts[0] in aliases:
                split = _split(".".join([aliases[parts[0]], *parts[1:]]), modules)
                if split is not None:
                    refs.add(split)
        elif text and isinstance(node, ast.Constant) and isinstance(node.value, str):
            refs |= _in_text(node.value, modules)
            if id(node) in docstrings and (example := _doctest_source(node.value)) is not None:
                refs |= python_references(example, None, modules)
    return {(m, n) for m, n in refs if m != here}


def _doctest_source(docstring: str) -> ast.Module | None:
    """The code of a docstring's examples (its ``>>>`` and ``...`` lines), or None when it has none or they do
    not parse."""
    lines = [line.strip()[4:] for line in docstring.splitlines() if line.strip()[:4] in (">>> ", "... ")
             or line.strip() in (">>>", "...")]
    if not lines:
        return None
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def markdown_references(text: str, modules) -> set[tuple[str, str]]:
    """What a page of docs names: its Python blocks parsed as code, and ``M.name`` / ``from M import`` in prose."""
    refs = _in_text(text, modules)
    for match in FENCE.finditer(text):
        body = match.group("body")
        indent = min((len(line) - len(line.lstrip()) for line in body.splitlines() if line.strip()), default=0)
        try:
            tree = ast.parse("\n".join(line[indent:] for line in body.splitlines()))
        except SyntaxError:
            continue
        refs |= python_references(tree, None, modules)
    return refs


def references(root: Path, modules: dict[str, Module], text: bool = True) -> dict[tuple[str, str], set[str]]:
    """Every ``(module, name)`` used outside its module, with the files that use it; without ``text``, only the
    code's imports and attributes (no docs, strings or docstrings)."""
    used: dict[tuple[str, str], set[str]] = {}

    def add(refs, where):
        for ref in refs:
            used.setdefault(ref, set()).add(where)

    for module in modules.values():
        add(python_references(module.tree, module.name, modules, text), str(module.path.relative_to(root)))
    for pattern in USER_GLOBS:
        for path in sorted(root.glob(pattern)):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            add(python_references(tree, None, modules, text), str(path.relative_to(root)))
    for pattern in DOC_GLOBS if text else ():
        for path in sorted(root.glob(pattern)):
            add(markdown_references(path.read_text(encoding="utf-8"), modules), str(path.relative_to(root)))
    return used


def _annotation_names(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval")
        except SyntaxError:
            return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _signature_names(node: ast.AST) -> set[str]:
    """The names a function's signature shows a caller: its annotations, defaults and return annotation."""
    args = node.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, (args.vararg, args.kwarg))]
    names = _annotation_names(node.returns)
    for arg in every:
        names |= _annotation_names(arg.annotation)
    for default in [*args.defaults, *filter(None, args.kw_defaults)]:
        names |= {n.id for n in ast.walk(default) if isinstance(n, ast.Name)}
    return names


def exposed(module: Module, names: set[str]) -> set[str]:
    """The names of ``module`` that a caller of ``names`` meets through them (to a fixed point): the types and
    constants in the signatures (annotations, defaults, return types) of those functions and of the public
    methods of those classes, the classes' public field annotations and defaults, and their base classes."""
    defs = {node.name: node for node in module.tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    seen, todo = set(), list(names & set(defs))
    found: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        node = defs[name]
        if isinstance(node, ast.ClassDef):
            mentioned = {n.id for base in node.bases for n in ast.walk(base) if isinstance(n, ast.Name)}
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        (not item.name.startswith("_") or item.name == "__init__"):
                    mentioned |= _signature_names(item)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                        and not item.target.id.startswith("_"):
                    mentioned |= _annotation_names(item.annotation)
                    if item.value is not None:
                        mentioned |= {n.id for n in ast.walk(item.value) if isinstance(n, ast.Name)}
        else:
            mentioned = _signature_names(node)
        mentioned &= module.defined
        found |= mentioned
        todo.extend(mentioned & set(defs))
    return found


#: A module held to its own test rather than to this rule: the top-level ``speedaudit`` is the users' API (a
#: handful of names, each resolving, listed once: tests/test_speedaudit_api.py), used by people, not by the tree.
OWN_RULES = {"speedaudit"}
#: ``__all__`` read at run time: the registry finds each audit's Options and Thresholds classes in the
#: ``__all__`` of ``audits.checks.declared.<audit>`` (:func:`audits.protocol.registry.options_of`).
READ_FROM_ALL = {"audits.checks.declared.": ("Options", "Thresholds")}
#: Exports that nothing in the tree uses, kept on purpose, each with its reason. An entry that no longer holds
#: (the name left ``__all__`` or gained a user) fails :func:`test_the_lists_of_exceptions_are_exact`, so these
#: lists only shrink.
OWNED_ELSEWHERE = {
    # the sandbox classes and constants behind make_sandbox: what docs/collecting.md describes and the sandbox
    # tests import by name (the hostile suite, the launcher tests)
    "audits.collect.sandbox": {"LocalSandbox", "BwrapSandbox", "CommandSandbox", "launcher_source", "stage_program",
                               "RUN_STATUSES", "REPORT_BYTES"},
    # the library's keyword functions for one audit of a partitioned dataset on Dask (the tree runs every audit
    # through run_partitioned_whole_audit / run_partitioned_audits; users and the Dask-equality tests call these)
    "audits.engine.partitioned": {"partition_runs", "run_partitioned_aggregation", "run_partitioned_calibration",
                                  "run_partitioned_discriminability", "run_partitioned_reliability",
                                  "run_partitioned_simulation"},
}
#: Private names other modules import today, each ``(module, name)``: a name in a module owned elsewhere this
#: session, or used by one (above). A new private import fails; an entry that is gone fails too (remove it).
PRIVATE_IMPORTS_OWNED_ELSEWHERE: set[tuple[str, str]] = set()


def used_names(root: Path, modules: dict[str, Module], refs=None) -> dict[str, set[str]]:
    """``{module: names used from outside it}`` by the rule above, the names their signatures expose included."""
    refs = refs if refs is not None else references(root, modules)
    used: dict[str, set[str]] = {name: set() for name in modules}
    for module, name in refs:
        used[module].add(name)
    for name, module in modules.items():
        for prefix, suffixes in READ_FROM_ALL.items():
            if name.startswith(prefix):
                used[name] |= {n for n in module.exported or () if n.endswith(suffixes)}
        used[name] |= exposed(module, used[name])
    return used


def unused_exports(root: Path, modules: dict[str, Module] | None = None) -> dict[str, set[str]]:
    """``{module: names of its __all__ nothing outside it uses}`` (modules with their own rules left out)."""
    modules = modules if modules is not None else package_modules(root)
    used = used_names(root, modules)
    out = {}
    for name, module in sorted(modules.items()):
        unused = {n for n in module.exported or () if n not in used[name]}
        if unused and name not in OWN_RULES:
            out[name] = unused
    return out


def private_imports(root: Path, modules: dict[str, Module] | None = None) -> dict[tuple[str, str], set[str]]:
    """``{(module, _name): files}``: private names of a module that code outside it (the packages, the templates,
    the scripts; not the docs, which may explain an internal) imports or names as ``M._name``."""
    modules = modules if modules is not None else package_modules(root)
    out: dict[tuple[str, str], set[str]] = {}
    for (module, name), where in references(root, modules, text=False).items():
        if name.startswith("_") and not name.startswith("__") and name in modules[module].defined:
            out[(module, name)] = where
    return out


@dataclass(frozen=True)
class Analysis:
    """The tree's modules, each module's unused exports and the private names imported across modules."""
    modules: dict
    unused: dict
    private: dict


def analyse(root: Path) -> Analysis:
    modules = package_modules(root)
    return Analysis(modules, unused_exports(root, modules), private_imports(root, modules))


def problems(root: Path, owned_elsewhere=None, private_allowed=None, *, analysis: Analysis | None = None) -> list[str]:
    """What breaks the rule in the tree at ``root`` (``analysis``: its :func:`analyse`, if already made), one line
    each: an export nothing uses, a private name imported by another module (less the exceptions listed: by default
    this session's)."""
    owned_elsewhere = OWNED_ELSEWHERE if owned_elsewhere is None else owned_elsewhere
    private_allowed = PRIVATE_IMPORTS_OWNED_ELSEWHERE if private_allowed is None else private_allowed
    analysis = analysis or analyse(root)
    modules = analysis.modules
    out = [f"{module}: {name!r} is in __all__ but nothing outside the module uses it"
           for module, names in analysis.unused.items() for name in sorted(names - owned_elsewhere.get(module, set()))]
    out += [f"{name}: private {export!r} is in __all__" for name, module in sorted(modules.items())
            if name not in OWN_RULES for export in module.exported or ()
            if export.startswith("_") and not export.startswith("__")]
    out += [f"{module}: private {name!r} is imported by {', '.join(sorted(where))}"
            for (module, name), where in sorted(analysis.private.items()) if (module, name) not in private_allowed]
    return out


# --- the tests ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def checkout() -> Analysis:
    """The checkout's analysis, made once for the tests that read it (5 s of parsing and matching)."""
    return analyse(ROOT)


def test_every_export_is_used_and_no_private_name_is_imported(checkout):
    found = problems(ROOT, analysis=checkout)
    assert not found, "\n".join(found)


def test_the_lists_of_exceptions_are_exact(checkout):
    stale = [f"{module}: {name!r}" for module, names in OWNED_ELSEWHERE.items()
             for name in sorted(names - checkout.unused.get(module, set()))]
    stale += [f"private {module}.{name}" for module, name in sorted(PRIVATE_IMPORTS_OWNED_ELSEWHERE - set(checkout.private))]
    assert not stale, "no longer an exception, remove from the lists:\n" + "\n".join(stale)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_rule_on_a_small_tree(tmp_path):
    """Each clause, on a planted tree: what is used stays, what is not is named, private imports are named."""
    _write(tmp_path, {
        "audits/__init__.py": "",
        "stats/__init__.py": "",
        "speedaudit/__init__.py": "__all__ = ['load']\n",  # its own rules: not checked here
        "stats/est.py": (
            "__all__ = ['imported', 'attribute', 'by_string', 'in_docs', 'Result', 'unused', 'DEFAULT', '_helper']\n"
            "DEFAULT = 3\n"
            "class Result: ...\n"
            "def imported(k=DEFAULT) -> 'Result': ...\n"  # Result and DEFAULT: exposed by a used function
            "def attribute(): ...\n"
            "def by_string(): ...\n"
            "def in_docs(): ...\n"
            "def unused(): ...\n"
            "def _helper(): ...\n"
            "def _internal(): ...\n"),
        "audits/use.py": (
            '"""Docs of use: a docstring that names no stats function (prose counts only as M.name)."""\n'
            "import stats.est as e\n"
            "from stats.est import imported, _helper\n"
            "REGISTRY = {'x': 'stats.est:by_string'}\n"
            "def f():\n"
            "    return e.attribute(), imported(), _helper()\n"),
        "notebooks/page.py": "from stats import est\nest._internal()\n",
        "docs/api.md": "Call `stats.est.in_docs` for that.\n",
        "tests/test_x.py": "from stats.est import unused\n",  # a test is not a user
    })
    assert problems(tmp_path, owned_elsewhere={}, private_allowed=set()) == [
        "stats.est: 'unused' is in __all__ but nothing outside the module uses it",
        "stats.est: private '_helper' is in __all__",
        "stats.est: private '_helper' is imported by audits/use.py",
        "stats.est: private '_internal' is imported by notebooks/page.py",
    ]
    assert problems(tmp_path, owned_elsewhere={"stats.est": {"unused"}},
                    private_allowed={("stats.est", "_helper"), ("stats.est", "_internal")}) == [
        "stats.est: private '_helper' is in __all__"]  # never an exception


def test_the_check_fails_on_a_planted_export_in_a_copy_of_the_tree(tmp_path):
    """The real tree, copied, with one name nobody uses added to a real ``__all__`` (and private names listed): the
    check fails naming exactly those, so the rest of the copy passes (as the checkout does, in the first test)."""
    for pattern in (*(f"{p}/**/*.py" for p in PACKAGES), *USER_GLOBS, *DOC_GLOBS):
        for path in ROOT.glob(pattern):
            target = tmp_path / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    results = tmp_path / "audits/report/results.py"
    text = results.read_text(encoding="utf-8")
    planted = text.replace('__all__ = ["PARAMETERS",', '__all__ = ["_compute", "_OPTIONS", "PARAMETERS",', 1)
    planted += "\n\ndef planted_helper():\n    return None\n"
    planted = planted.replace('__all__ = ["_compute",', '__all__ = ["planted_helper", "_compute",', 1)
    assert planted != text
    results.write_text(planted, encoding="utf-8")
    found = problems(tmp_path)
    assert found == ["audits.report.results: '_OPTIONS' is in __all__ but nothing outside the module uses it",
                     "audits.report.results: 'planted_helper' is in __all__ but nothing outside the module uses it",
                     "audits.report.results: private '_compute' is in __all__",  # used (a docstring names it)
                     "audits.report.results: private '_OPTIONS' is in __all__"]
