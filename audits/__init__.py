"""speedaudit: audit the measurement chain behind runtime-based rewards for code.

Besides the subpackages, this module holds two helpers every layer may use: :func:`shipped_dir`, the
folder of files that ship with speedaudit (report templates, reward-environment files), and
:func:`version`. The public API is the top-level package :mod:`speedaudit`.
"""

from __future__ import annotations

import tomllib
from importlib.util import find_spec
from pathlib import Path

__all__ = ["shipped_dir", "version"]

_CHECKOUT = Path(__file__).resolve().parent.parent


def shipped_dir(package: str, folder: str) -> Path:
    """The folder of files shipped as package data of ``package``; ``folder`` is where they live in git.

    In a source checkout (the code runs from a tree holding ``pyproject.toml``: an editable install or
    ``PYTHONPATH``) the files next to the running code are used, ``<checkout>/<folder>``. In an installed
    wheel the same files are the package data of ``package`` (pyproject.toml maps the folder onto that
    package, so git holds one copy), found through the import system: a ``pip install .`` renders from
    any working directory.

    Examples
    --------
    >>> shipped_dir("audits.report.templates", "notebooks").joinpath("overview.py").is_file()
    True
    """
    here = _CHECKOUT / folder
    if (_CHECKOUT / "pyproject.toml").is_file() and here.is_dir():
        return here
    spec = find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise FileNotFoundError(f"speedaudit's shipped files {folder}/ are missing: neither {here} (a checkout) nor "
                                f"the package data {package} (an installed wheel) exists; reinstall speedaudit")
    return Path(locations[0])


def version() -> str:
    """speedaudit's version, from the installed distribution's metadata; in a checkout that is not installed
    (``PYTHONPATH`` only), from its ``pyproject.toml`` (the one place the version is written).

    Examples
    --------
    >>> version().count(".") >= 1
    True
    """
    # deferred: importlib.metadata (40 ms) stays out of `import speedaudit` and `speedaudit --help`
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as metadata_version

    pyproject = _CHECKOUT / "pyproject.toml"
    if pyproject.is_file():  # a checkout: its own file, even when another speedaudit is installed
        return tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
    try:
        return metadata_version("speedaudit")
    except PackageNotFoundError:
        return "unknown"
