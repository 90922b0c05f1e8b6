"""Imports stand at the top of a module unless placing them inside a function defers something heavy (issue 23
item 6: "function-level imports only to defer a heavy optional dependency"), computed over the tree with ``ast``.

The rule, checked for every ``import`` inside a function or method of ``audits``, ``stats`` and ``speedaudit``:

* it must bring in a **heavy library** (:data:`HEAVY`) that its module does not already load when it is
  imported, directly or through the project modules it imports at module level (followed transitively);
  an import that defers nothing heavy (the standard library, a light project module, or a library the module
  already pays for) belongs at the top, where a reader sees what the module depends on;
* what it defers must matter to someone: either the module is on a **light path** (:data:`LIGHT`: the command
  line's parsers, which ``speedaudit --help`` builds within issue 26's 0.3 s, and ``import speedaudit``; each
  has its own test that numpy and pandas stay out) and the import keeps a library out of it, or the library is
  an **optional feature's** (:data:`FEATURE`: the Dask engine, notebook rendering, plots, one estimator's
  library), which a user who never uses that feature should not pay for;
* and it must say why, with a ``# deferred: ...`` comment on the line above its block of imports (or on the
  same line).

Import cycles are not a reason: the acyclic contract in pyproject.toml forbids them whether an import is at
the top or inside a function (import-linter counts both). ``if TYPE_CHECKING:`` imports are not run and are not
counted. :func:`violations` runs on any tree: :func:`test_rule_on_a_planted_tree` plants each case.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audits", "stats", "speedaudit")

#: Libraries whose import costs more than 30 ms on this machine (10 % of issue 26's 0.3 s budget for
#: ``speedaudit --help``), measured with ``python -X importtime`` on 2026-12-07: numpy 100 ms, pandas 390,
#: scipy.stats 700, pyarrow 160, matplotlib.pyplot 500, jsonschema 1210, papermill 1580, nbformat 1300,
#: nbconvert 1810, jupytext 1770, distributed 570, jupyter_client 130, tqdm 110, IPython 90,
#: importlib.metadata 40 (yaml 21 ms, ctypes 3, uuid 4, concurrent.futures 7, tomllib 12 are light). The rest
#: are the field's libraries that import numpy (seaborn, statsmodels, pingouin, sklearn, dask, nbclient).
HEAVY = frozenset({
    "numpy", "pandas", "scipy", "pyarrow", "matplotlib", "seaborn", "statsmodels", "pingouin", "sklearn",
    "dask", "distributed", "papermill", "nbconvert", "nbformat", "nbclient", "jupyter_client", "jupytext",
    "IPython", "jsonschema", "tqdm", "importlib.metadata",
})
#: The libraries only one feature needs: the Dask engine, rendering and executing notebooks, drawing, a fit.
FEATURE = frozenset({"dask", "distributed", "papermill", "nbconvert", "nbformat", "nbclient", "jupytext",
                     "jupyter_client", "IPython", "matplotlib", "seaborn", "sklearn", "statsmodels", "pingouin",
                     "jsonschema", "tqdm", "importlib.metadata"})
#: The light entry points: these modules (and what they import at module level) load none of :data:`HEAVY`
#: (tests/cli/test_options.py and tests/test_speedaudit_api.py check it in a fresh interpreter). The command
#: modules are found by pkgutil (:mod:`audits.cli._main`) and the audits' declarations by name
#: (:func:`audits.protocol.registry.declared`, for every ``--help``), imports this test cannot follow, so those
#: packages are named whole.
LIGHT = ("speedaudit", "audits.cli", "audits.checks.declared")
MARK = "# deferred:"


def _heavy_name(module: str) -> str | None:
    for heavy in HEAVY:
        if module == heavy or module.startswith(heavy + "."):
            return heavy
    return None


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.Import | ast.ImportFrom, here: str, is_package: bool, known: set[str]) -> list[str]:
    """The modules an import statement loads (for ``from P import n``: ``P.n`` too when that is a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = here.split(".") if is_package else here.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    return [base, *(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known)]


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(tree: ast.Module):
    """Import statements run when the module is imported: its body and any if/try blocks there, not functions."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            stack += node.body + node.orelse
        elif isinstance(node, ast.Try):
            stack += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]


def _function_level_imports(tree: ast.Module):
    """``(import node, the body list holding it)`` for every import inside a function or method."""
    def walk(node, inside):
        for _field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if not isinstance(child, ast.AST):
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)) and inside:
                    yield child, value
                deeper = inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.If) and _is_type_checking(child):
                    continue
                yield from walk(child, deeper)
    yield from walk(tree, False)


def _parse(root: Path):
    files = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            files[_module_name(root, path)] = (path, ast.parse(path.read_text(encoding="utf-8")))
    return files


def _module_graph(files):
    """``(edges, direct)``: the project modules each module imports at module level (its parent packages
    included), and the heavy libraries it imports itself."""
    known = set(files)
    edges, direct = {}, {}
    for name, (path, tree) in files.items():
        targets = [t for node in _module_level_imports(tree)
                   for t in _targets(node, name, path.name == "__init__.py", known)]
        modules = {p for t in targets for p in _with_parents(t) if p in known} | {
            p for p in _with_parents(name)[:-1] if p in known}
        edges[name] = modules - {name}
        direct[name] = {h for t in targets if (h := _heavy_name(t))}
    return edges, direct


def _closure(edges, name: str) -> set[str]:
    seen, todo = {name}, [name]
    while todo:
        current = todo.pop()
        todo += [m for m in edges[current] if m not in seen]
        seen |= edges[current]
    return seen


def _heavy_loads(files) -> dict[str, set[str]]:
    """``{module: heavy libraries loaded by importing it}``, following project imports at module level."""
    edges, direct = _module_graph(files)
    return {name: set().union(*(direct[m] for m in _closure(edges, name))) for name in files}


def _light_modules(files) -> set[str]:
    """The modules a light entry point (:data:`LIGHT`) loads at module level."""
    edges, _ = _module_graph(files)
    entries = [name for name in files if any(name == e or name.startswith(e + ".") for e in LIGHT)]
    return set().union(set(), *(_closure(edges, name) for name in entries))


def _marked(lines: list[str], node, body: list) -> bool:
    """A ``# deferred:`` comment on the import's line, or on the line above the block of imports it is in."""
    index = body.index(node)
    while index > 0 and isinstance(body[index - 1], (ast.Import, ast.ImportFrom)):
        index -= 1
    first = body[index].lineno
    above = lines[first - 2].strip() if first >= 2 else ""
    return MARK in lines[node.lineno - 1] or above.startswith(MARK)


def violations(root: Path) -> list[str]:
    """What breaks the rule in the tree at ``root``, one line each (``file:line: import M -- why``)."""
    files = _parse(root)
    known = set(files)
    loads = _heavy_loads(files)
    light = _light_modules(files)
    out = []
    for name, (path, tree) in files.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node, body in _function_level_imports(tree):
            targets = _targets(node, name, path.name == "__init__.py", known)
            brings = {h for t in targets if (h := _heavy_name(t))}
            brings |= {h for t in targets for p in _with_parents(t) if p in known for h in loads[p]}
            new = brings - loads[name]
            where = f"{path.relative_to(root)}:{node.lineno}: import {targets[0] or '.'}"
            if not new:
                out.append(f"{where} -- defers nothing heavy ({name} already loads "
                           f"{', '.join(sorted(brings)) or 'nothing heavy'} it brings): move it to the top")
            elif name not in light and not new & FEATURE:
                out.append(f"{where} -- defers {', '.join(sorted(new))}, which is no optional feature's library, "
                           f"and no light path ({', '.join(LIGHT)}) imports {name}: move it to the top")
            elif not _marked(lines, node, body):
                out.append(f"{where} -- defers {', '.join(sorted(new))}: say why with '{MARK} ...' above it")
    return out


def test_function_level_imports_only_defer_something_heavy():
    problems = violations(ROOT)
    assert not problems, f"{len(problems)} function-level imports break the rule:\n" + "\n".join(problems)


def _plant(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_rule_on_a_planted_tree(tmp_path):
    """Each clause on a planted tree: a light deferral, a deferral of what the module already loads (also
    through a project import), an unmarked heavy deferral, a heavy deferral off the light path of no optional
    feature are named; a marked one on the light path, a marked feature library and TYPE_CHECKING pass."""
    _plant(tmp_path, {
        "stats/__init__.py": "",
        "stats/heavy.py": "import pandas\n",
        "stats/light.py": "import math\n",
        "audits/__init__.py": "",
        "audits/cli.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    import pandas\n"
            "def run():\n"
            "    # deferred: keeps --help light\n"
            "    from stats.heavy import pandas\n"
            "    import scipy.stats\n"
            "def unmarked():\n    import numpy\n"
            "def light():\n    from stats import light\n"
            "def std():\n    import uuid\n"),
        "audits/work.py": (
            "from stats import heavy\n"
            "def f():\n    import pandas as pd\n"
            "def g():\n    # deferred: an optional plot library\n    import matplotlib.pyplot as plt\n"
            "def h():\n    # deferred: not a reason off the light path\n    import scipy.stats\n"),
    })
    found = violations(tmp_path)
    assert [line.split(" -- ")[0] for line in found] == [
        "audits/cli.py:9: import numpy",
        "audits/cli.py:11: import stats",
        "audits/cli.py:13: import uuid",
        "audits/work.py:3: import pandas",
        "audits/work.py:9: import scipy.stats",
    ], found
    assert "say why" in found[0] and "move it to the top" in found[1] and "already loads pandas" in found[3]
    assert "no optional feature's library" in found[4]
