"""Render the audit notebooks into self-contained HTML reports and an index page.

Pipeline for one report (``render_notebook``):

1. papermill executes the template ``notebooks/<name>.py`` (a jupytext percent-format
   notebook source, read into a notebook by :func:`read_template`) with the given
   parameters (only those the template declares in its cell tagged
   ``parameters``), in the Jupyter kernel ``python3`` of this virtual
   environment, with the template's folder as working directory (as JupyterLab
   would run it); the pages of one render slot run one after the other in one
   kernel, put back between two pages (:class:`KernelSlot`);
2. the executed notebook is kept beside the HTML as ``<name>.ipynb``;
3. nbconvert's :class:`~nbconvert.HTMLExporter` (``lab`` template) converts it
   with the code hidden (``exclude_input=True``) unless ``show_code``; figures
   are inline PNG data URIs, no external script is referenced, so the file
   opens offline and can be mailed to a colleague;
4. the HTML is written atomically (temporary file + rename): a failed run never
   leaves a half-written report, and a stale HTML of the same name is removed.

The headline verdicts of a report are read back from the executed notebook:
:func:`audits.report.narrative.show_findings` emits the findings under the mimetype
:data:`audits.report.narrative.FINDINGS_MIMETYPE`. ``render_reports`` renders several
templates and writes ``index.html`` linking each with its worst level and top
findings.

A failing cell raises :class:`ReportError` naming the notebook, the cell (its
index and first source line), the exception and the parameter values.

Examples
--------
>>> index = render_reports(["fixtures/corpora/quiet-a.parquet"], out_dir="reports")  # doctest: +SKIP
>>> index.path  # doctest: +SKIP
PosixPath('reports/index.html')
"""

from __future__ import annotations

import ast
import asyncio
import html
import importlib.util
import json
import os
import queue
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import yaml
from jupyter_core.paths import jupyter_path

from audits import shipped_dir
from audits.corpus.io import atomic_write
from audits.errors import UserError
from audits.protocol.findings import ALL_LEVELS, LEVELS, NA
from audits.protocol.saved import encoded_entry, read_results, write_entries
from audits.report.catalog import REPORTS, ReportSpec
from audits.report.inputs import PAIR_PARAMETERS, load_corpora, repo_root, resolve_corpora, suggest_runs
from audits.report.narrative import FINDINGS_MIMETYPE, format_value
from audits.report.narrative.common import audit_text, where_subject
from audits.report.results import PARAMETERS, RESULTS_FILE, ReportResults

__all__ = ["ReportError", "RenderedReport", "ReportIndex", "read_template", "parse_parameter", "render_reports",
           "render_workers"]


class ReportError(UserError):
    """A report could not be rendered (failing cell, bad parameter, missing kernel)."""


#: The package the templates are installed as (pyproject.toml maps ``notebooks/`` onto it).
TEMPLATE_PACKAGE = "audits.report.templates"


def notebook_dir() -> Path:
    """The folder of the report templates: ``notebooks/`` of a checkout, else the installed package data.

    See :func:`audits.shipped_dir`.
    """
    return shipped_dir(TEMPLATE_PACKAGE, "notebooks")


#: Templates are jupytext percent-format sources (``# %%`` cells), the only copy in git; the notebook
#: papermill executes is built from them at render time (docs/reports.md, "Templates").
TEMPLATE_SUFFIX = ".py"


def template_path(name: str, templates: str | os.PathLike | None = None) -> Path:
    """Path of the template of report ``name`` in ``templates`` (default: :func:`notebook_dir`)."""
    return Path(templates or notebook_dir()) / f"{name}{TEMPLATE_SUFFIX}"


def _without_iri_grammars() -> None:
    """Import jsonschema (under nbformat, papermill, nbconvert, jupytext) without ``rfc3987_syntax``.

    jsonschema's format module imports ``rfc3987_syntax`` when it is installed (here it comes with
    jupyter-events' ``jsonschema[format-nongpl]``), and that import compiles 39 lark grammars: 1.3-1.6 s of
    every ``speedaudit report`` on this 2-core machine (``python -c "import nbformat"``: 1.32-1.61 s, 0.15 s
    without it), for the ``iri``/``iri-reference`` format checks of draft 7 and later schemas. Nothing here
    checks a format: nbformat validates notebooks with a ``Draft4Validator`` built without a format checker
    (draft 4 has no ``iri`` format), papermill, nbclient and nbconvert build none. So the first import of
    jsonschema in the process is made with that module marked absent (jsonschema's own ``ImportError``
    fallback: those two format checks are not registered), and the mark is removed at once, so that
    ``import rfc3987_syntax`` itself still works afterwards. A process that imported jsonschema before
    (or rfc3987_syntax itself) is left as it is.
    """
    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        return
    sys.modules["rfc3987_syntax"] = None  # import rfc3987_syntax raises ImportError while this is set
    try:
        # deferred: jsonschema (notebook rendering): its first import, without rfc3987_syntax, before nbformat loads it
        import jsonschema  # noqa: F401  (its format checkers are registered at import)
    finally:
        if sys.modules.get("rfc3987_syntax", 0) is None:
            del sys.modules["rfc3987_syntax"]


def read_template(path: str | os.PathLike):
    """Read a percent-format template into a notebook (:class:`nbformat.NotebookNode`) without outputs.

    The notebook carries the kernelspec of the source's header, ``language_info`` ``python`` and cell ids
    ``<stem>-<index>`` (stable, so two renders of one template give the same executed notebook); the
    jupytext bookkeeping metadata is dropped.
    """
    _without_iri_grammars()
    # deferred: jupytext, nbformat (notebook rendering): only when a template is read
    import jupytext
    import nbformat

    path = Path(path)
    nb = jupytext.read(path, fmt="py:percent")
    nb.metadata.pop("jupytext", None)
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{path.stem}-{i:02d}"
    nbformat.validate(nb)
    return nb


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def default_audits() -> tuple[str, ...]:
    """Report names rendered by default: every template whose template file and audit modules exist."""
    return tuple(name for name, spec in REPORTS.items()
                 if template_path(name).exists() and all(_importable(m) for m in spec.requires))


#: Template parameters whose values are names of runs, sets or columns (environments, campaigns, solution prefixes):
#: names are data, so their YAML scalars stay the text given (only ``null``/``~`` is None). Read as plain YAML,
#: ``-p campaign=001`` became the number 1 (refused as "got 1"; the run ``001`` could not be chosen), and
#: ``campaign=2024-05-01`` a date.
NAME_PARAMETERS = frozenset({"campaign", "aggregation_environment", "aggregation_campaign", "simulation_environment",
                             "simulation_campaign", "pairs", "stored_run", "fresh_run", "source_run", "target_run",
                             "compare_by", "compare_a", "compare_b", "clocks_measures"})


class _NameLoader(yaml.SafeLoader):
    """YAML whose only implicit type is null: every other plain scalar is text as written."""


_NameLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag == "tag:yaml.org,2002:null"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def parse_parameter(text: str) -> tuple[str, object]:
    """Parse ``key=value``; the value is read as YAML (numbers, lists, true/false, null), but the names of
    :data:`NAME_PARAMETERS` stay text as written.

    >>> parse_parameter("n_boot=200"), parse_parameter("environments=[quiet, busy]")
    (('n_boot', 200), ('environments', ['quiet', 'busy']))
    >>> parse_parameter("campaign=c0"), parse_parameter("campaign=001"), parse_parameter("stored_run=[quiet, 1]")
    (('campaign', 'c0'), ('campaign', '001'), ('stored_run', ['quiet', '1']))
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise UserError(f"parameter {text!r} is not of the form key=value (e.g. -p n_boot=200)")
    try:
        loader = _NameLoader if key in NAME_PARAMETERS else yaml.SafeLoader
        parsed = yaml.load(value, Loader=loader) if value.strip() else None
    except yaml.YAMLError as exc:
        raise UserError(f"parameter {key}: cannot read value {value!r} ({exc.__class__.__name__}); quote "
                        "strings that contain ':' or brackets") from exc
    return key, parsed


def template_parameters(template: str | os.PathLike) -> dict[str, dict]:
    """Parameters declared in a template's ``parameters`` cell: name -> {default, type, help}."""
    _without_iri_grammars()
    # deferred: papermill (notebook rendering): only when a template's parameters are read
    import papermill

    return {name: {"default": info.get("default"), "type": info.get("inferred_type_name"),
                   "help": info.get("help", "")}
            for name, info in papermill.inspect_notebook(read_template(template)).items()}


def check_kernel(kernel_name: str = "python3") -> Path:
    """Make sure the Jupyter kernel runs this Python (the virtual environment with speedaudit installed).

    jupyter_client starts a kernel whose spec says ``python`` with the current interpreter, so a spec
    installed by ``python -m ipykernel install --sys-prefix --name python3`` (the Makefile does this) is
    the venv's. A spec pointing at another interpreter would run the notebooks without speedaudit.
    """
    # deferred: jupyter_client (notebook rendering): only when a report checks its kernel
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(kernel_name)
    except NoSuchKernel as exc:
        raise ReportError(
            f"no Jupyter kernel named {kernel_name!r}; install it into this environment with "
            f"'{sys.executable} -m ipykernel install --sys-prefix --name {kernel_name}' (make install does)") from exc
    program = spec.argv[0]
    if program in {"python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}"}:
        return Path(sys.executable)
    # The folders, not the files: a virtual environment's python is a symlink to the base interpreter, so
    # resolving the file would take another venv's kernel (without this speedaudit) for this one's.
    if Path(program).absolute().parent.resolve() != Path(sys.executable).absolute().parent.resolve():
        raise ReportError(
            f"Jupyter kernel {kernel_name!r} ({spec.resource_dir}) runs {program}, not this environment's "
            f"{sys.executable}; reinstall it with '{sys.executable} -m ipykernel install --sys-prefix --name "
            f"{kernel_name}' or pass another --kernel")
    return Path(program)


def export_html(notebook, *, show_code: bool = False, title: str | None = None) -> str:
    """Executed notebook -> self-contained HTML (lab template, code hidden unless ``show_code``).

    Output figures are PNG data URIs; Markdown images are embedded too (``embed_images``). The
    MathJax/require.js CDN references of the template are dropped so the page loads nothing from the
    network.
    """
    _without_iri_grammars()
    # deferred: nbconvert (notebook rendering): only when a page is exported to HTML
    from nbconvert import HTMLExporter

    # where nbconvert looks for the lab template when it makes an exporter: an exporter made elsewhere is not reused
    key = (show_code, os.getcwd(), tuple(jupyter_path("nbconvert", "templates")))
    with _EXPORTERS_LOCK:
        idle = _EXPORTERS.setdefault(key, [])
        exporter = idle.pop() if idle else None
    if exporter is None:
        exporter = HTMLExporter(template_name="lab", embed_images=True, exclude_input=not show_code,
                                exclude_input_prompt=not show_code, exclude_output_prompt=True)
        exporter.mathjax_url = ""
        exporter.require_js_url = ""
    if title:
        notebook.metadata["title"] = title
    body, _ = exporter.from_notebook_node(notebook)
    with _EXPORTERS_LOCK:  # idle again (not after a failed conversion: a new one is made instead)
        _EXPORTERS[key].append(exporter)
    return _strip_remote_scripts(body)


#: HTML exporters not in use, by (show_code, working directory, nbconvert's template folders): :func:`export_html`
#: reuses one (each page of a report, each report of a process) instead of making a new one per page, because a new
#: exporter compiles the lab template's nine Jinja files again: two thirds of the export's CPU time (0.125 s of CPU
#: per page, 0.043 s with the exporter reused, on the pages of a small synthetic report); the HTML is the same. An exporter converts one notebook at a time (each conversion registers its
#: notebook's filters on it), so pages exported at once (render slots are threads) each take one of their own.
_EXPORTERS: dict[tuple, list] = {}
_EXPORTERS_LOCK = threading.Lock()


def _strip_remote_scripts(body: str) -> str:
    """Remove <script src="http..."> tags (CDN MathJax / require.js) that the lab template adds."""
    return re.sub(r"<script[^>]*\bsrc=\"(https?://[^\"]*)?\"[^>]*>\s*</script>", "", body)


def notebook_findings(notebook) -> list[dict]:
    """Findings displayed by :func:`audits.report.narrative.show_findings` in an executed notebook, in order."""
    found = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if FINDINGS_MIMETYPE in data:
                payload = data[FINDINGS_MIMETYPE]
                if isinstance(payload, str):
                    payload = json.loads(payload)
                found.append(payload)
    return found


@dataclass(frozen=True)
class RenderedReport:
    """One rendered report: where its files are and its headline verdicts."""

    name: str
    title: str
    html: Path | None
    notebook: Path | None
    findings: tuple[dict, ...] = ()
    seconds: float = 0.0
    error: str | None = None
    #: The page's findings blocks of an audit it shows several times (one per calibration pair), each
    #: ``{"audit", "title", "worst"}`` in the page's order: the index lists them.
    sections: tuple[dict, ...] = ()

    @property
    def worst(self) -> str:
        if self.error:
            return "error"
        levels = [f["level"] for f in self.findings]
        fallback = NA if NA in levels else "pass" if levels else "none"  # n/a is never a pass
        return next((lv for lv in reversed(LEVELS) if lv in levels), fallback)

    def top_findings(self, k: int = 3) -> list[dict]:
        """The k worst findings (fail, then warn, then pass), in the notebook's order within a level."""
        order = {lv: i for i, lv in enumerate(reversed(LEVELS))}
        return sorted(self.findings, key=lambda f: order.get(f["level"], 9))[:k]

    def counts(self) -> dict[str, int]:
        return {lv: sum(f["level"] == lv for f in self.findings) for lv in ALL_LEVELS}

    def to_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "html": str(self.html) if self.html else None,
                "notebook": str(self.notebook) if self.notebook else None, "worst": self.worst,
                "counts": self.counts(), "findings": list(self.findings), "seconds": self.seconds,
                "error": self.error, "sections": list(self.sections)}


def _first_line(source: str) -> str:
    return next((line for line in source.splitlines() if line.strip()), "").strip()[:120]


def _failure_message(name: str, template: Path, exc, parameters: Mapping) -> str:
    """Name the notebook, the failing cell (1-based position in the template and first line) and parameters."""
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    source = getattr(exc, "source", None)
    cell = "an unknown cell"
    if source is not None:
        # papermill's cell index counts its injected-parameters cell: locate the cell in the template the
        # user edits instead (1-based, counting markdown cells, as JupyterLab lists them).
        cells = read_template(template).cells
        position = next((i for i, c in enumerate(cells) if c.source == source), None)
        where = f"cell {position + 1} of {template.name}" if position is not None else f"a cell of {template.name}"
        cell = f"{where} ({_first_line(source)!r})"
    params = ", ".join(f"{k}={v!r}" for k, v in parameters.items()) or "(template defaults)"
    return (f"report {name!r} failed in notebook {template} at {cell}: {ename}: {evalue}\n"
            f"  parameters: {params}\n"
            f"  the executed notebook with the traceback is kept for inspection; fix the parameter or the "
            f"corpus and rerun")


_KERNEL_START = threading.Lock()


def _kernel_start_turn() -> Callable[..., None]:
    """Wait for this page's turn to start a kernel; returns the call that ends the turn (once; nbclient calls
    it when the kernel answers, as its ``on_notebook_start`` hook).

    Pages render at once, but their kernels start one after the other: a kernel's ports are chosen free
    (bound and released) before the kernel binds them, and a second kernel started in between could be
    given the same ports (``ZMQError: Address already in use``, then 60 s until papermill gives up).
    A start takes seconds; the pages' cells, where the time goes, still run side by side.
    """
    # deferred: jupyter_client (notebook rendering): only when a page's kernel starts
    from jupyter_client.connect import LocalPortCache

    LocalPortCache.instance()  # the process's one cache of handed-out ports, made before any thread asks for it
    _KERNEL_START.acquire()
    done = threading.Event()

    def end(**_):
        if not done.is_set():
            done.set()
            _KERNEL_START.release()

    return end


def _kernel_manager_logging_to(log_path: Path) -> type:
    """A kernel manager class whose kernels write their own stderr to ``log_path`` instead of this terminal.

    The kernel process inherits the renderer's stderr otherwise, and ipykernel's shutdown races (a status
    message sent on an I/O pipe being closed: ``ZMQError: Socket operation on non-socket``, logged by tornado
    with a traceback) then print a traceback under a report that rendered correctly. What a cell prints still
    reaches the notebook (that goes over ZMQ, not stderr); the log is removed with the page's other temporary files.
    """
    # deferred: jupyter_client (notebook rendering): only when a page's kernel starts
    from jupyter_client.manager import AsyncKernelManager

    class _KernelManager(AsyncKernelManager):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.page_clients = []  # see client()

        async def start_kernel(self, **kw):
            log = open(log_path, "ab")  # noqa: SIM115 -- the kernel process holds it; closed once it is started
            try:
                kw.setdefault("stderr", log)
                return await super().start_kernel(**kw)
            finally:
                log.close()

        def client(self, **kw):
            # nbclient makes a client for each page it executes and stops its channels (and the heartbeat thread)
            # only together with a kernel of its own (setup_kernel's cleanup): a page run in a kernel passed as
            # km= leaves its client open. Kept here, so that KernelSlot resets the kernel through it and closes it.
            client = super().client(**kw)
            self.page_clients.append(client)
            return client

    return _KernelManager


#: The code a warm kernel runs when it starts (before its first page) and between two pages: see
#: :mod:`audits.report.page`.
_FRESH_KERNEL = "__import__('audits.report.page').report.page.fresh_kernel()"
_NEXT_PAGE = "__import__('audits.report.page').report.page.next_page()"


class KernelSlot:
    """The kernel a render slot runs its pages in, one after the other: a page's kernel is the one the slot's
    previous page ran in, put back between the two (:func:`audits.report.page.next_page`), so a report starts one
    kernel per slot, not one per page (each start is 2.5-3 s of CPU: ipykernel and the pages' imports).

    The kernel is started by nbclient for the slot's first page as for a page of its own (papermill passes the
    manager on as ``km=``, and nbclient then leaves the kernel running when the page is done). A kernel is
    discarded (shut down; the slot's next page starts a fresh one) when its page failed in any way (a failing
    cell, a timeout, the kernel died), when putting it back fails, or when the next page's template is in
    another folder (the kernel's working directory). One slot is used by one thread: its kernel's sockets belong
    to that thread's event loop (``jupyter_core.utils.run_sync``, as nbclient runs them).
    """

    def __init__(self, kernel_name: str = "python3"):
        self.kernel_name = kernel_name
        self.km = None  # the running kernel's manager, None before the first page or once discarded
        self.folder: Path | None = None  # the running kernel's working directory
        self.kernels_started = 0

    def manager(self, folder: Path, log_path: Path):
        """The kernel manager for a page whose template is in ``folder``, and whether its kernel is still to
        start (then the page holds a turn of :func:`_kernel_start_turn` until it answers)."""
        if self.km is not None and self.folder != folder:
            self.discard()
        if self.km is None:
            self.km = _kernel_manager_logging_to(log_path)(kernel_name=self.kernel_name)
            self.folder = folder
            self.kernels_started += 1
            return self.km, True
        return self.km, False

    def page_done(self, ok: bool) -> None:
        """After a page: put the kernel back for the next one, or discard it (``ok`` False: the page failed)."""
        if self.km is None:
            return
        clients, self.km.page_clients = self.km.page_clients, []
        try:
            if ok and clients and self._alive():
                reply = _run_sync(clients[-1].execute_interactive)(
                    _NEXT_PAGE, silent=True, store_history=False, timeout=60, output_hook=lambda msg: None)
                ok = reply["content"]["status"] == "ok"
            else:
                ok = False
        except Exception:  # noqa: BLE001 -- a kernel that cannot be put back is not used again, whatever the cause
            ok = False
        finally:
            for client in clients:
                client.stop_channels()
        if not ok:
            self.discard()

    def _alive(self) -> bool:
        return _run_sync(self.km.is_alive)()

    def discard(self) -> None:
        """Shut the kernel down as nbclient shuts a kernel of its own down (a shutdown request, so that ipykernel
        removes its temporary files, then a kill if it has not ended within jupyter_client's wait)."""
        km, self.km, self.folder = self.km, None, None
        if km is None:
            return
        for client in km.page_clients:
            client.stop_channels()
        try:
            # as nbclient's own cleanup: only a kernel still alive is asked to shut down (a kernel that died before
            # answering was cleaned up by nbclient already, its sockets' context destroyed)
            if km.has_kernel and _run_sync(km.is_alive)():
                _run_sync(km.shutdown_kernel)()
        except RuntimeError as exc:  # a kernel that is already gone
            if "No kernel is running!" not in str(exc):
                raise
        finally:
            _run_sync(km.cleanup_resources)()

    close = discard  # after the slot's last page


def _run_sync(coroutine_function):
    """``coroutine_function`` as a blocking call, on this thread's event loop (the one nbclient runs a page on)."""
    # deferred: nbclient (notebook rendering): only around a page's kernel
    from nbclient.util import run_sync

    return run_sync(coroutine_function)


def _close_thread_loop() -> None:
    """Close the event loop of this thread (a render slot's, its kernel shut down): nbclient runs a page on the loop
    jupyter_core makes for the thread and never closes it, so it was closed only when garbage collected, each with a
    ``ResourceWarning: unclosed event loop`` (and its socket pair) in whatever ran then."""
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # no loop was made for this thread
        return
    if not loop.is_running() and not loop.is_closed():
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    asyncio.set_event_loop(None)


#: What jupyter_client says when a kernel process ends before answering its first request.
_KERNEL_DIED = "Kernel died before replying to kernel_info"


def render_notebook(
    name: str,
    out_dir: str | os.PathLike,
    *,
    parameters: Mapping[str, object] | None = None,
    show_code: bool = False,
    kernel_name: str = "python3",
    templates: str | os.PathLike | None = None,
    timeout: float | None = 1800,
    slot: KernelSlot | None = None,
) -> RenderedReport:
    """Execute one template with papermill and convert it to ``<out_dir>/<name>.html``.

    Parameters
    ----------
    name : str
        Template stem (``reliability`` for ``notebooks/reliability.py``).
    out_dir : path
        Where ``<name>.ipynb`` (executed) and ``<name>.html`` go.
    parameters : mapping, optional
        Values for the template's ``parameters`` cell. Keys the template does not declare are ignored
        (so one set of parameters can be passed to every report).
    show_code : bool, default False
        Keep code cells in the HTML.
    kernel_name : str, default "python3"
    templates : path, optional
        Folder of templates (default: the repository's ``notebooks/``).
    timeout : float, optional
        Seconds per cell.
    slot : KernelSlot, optional
        The render slot whose kernel runs the page (:func:`render_reports` passes one per slot); None: a kernel of
        the page's own, shut down after it.

    Raises
    ------
    ReportError
        When a cell fails or the kernel dies: names the notebook, the cell and the parameters. The HTML is not
        written.
    """
    _without_iri_grammars()
    # deferred: nbformat, papermill, nbclient (notebook rendering): only when a page is executed
    import nbformat
    import papermill
    from nbclient.exceptions import DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    template = template_path(name, templates)
    if not template.exists():
        raise ReportError(f"no report template {template}; available: {', '.join(sorted(REPORTS))}")
    spec = REPORTS.get(name, ReportSpec(name, name, ""))
    declared = template_parameters(template)
    used = {k: v for k, v in (parameters or {}).items() if k in declared}
    out_dir = Path(out_dir).absolute()
    out_dir.mkdir(parents=True, exist_ok=True)
    html_path, nb_path = out_dir / f"{name}.html", out_dir / f"{name}.ipynb"
    check_kernel(kernel_name)
    own_slot = slot is None
    slot = KernelSlot(kernel_name) if own_slot else slot
    start = time.perf_counter()
    tmp_nb = out_dir / f".{name}.running.ipynb"
    kernel_log = out_dir / f".{name}.kernel.log"

    def execute():
        km, starts = slot.manager(template.parent, kernel_log)
        started = _kernel_start_turn() if starts else None
        try:
            papermill.execute_notebook(
                read_template(template), str(tmp_nb), parameters=dict(used), kernel_name=kernel_name,
                progress_bar=False, log_output=False, execution_timeout=timeout,
                # the kernel's working directory is the template's folder (as JupyterLab runs it), set on the
                # kernel itself (nbclient's resources path), not by papermill's cwd= (a chdir of this whole
                # process, which pages rendered at once in threads would race on)
                resources={"metadata": {"path": str(template.parent)}},
                # kernel chatter (TCP warning, shutdown) off; the state next_page puts back noted before any page
                extra_arguments=["--IPKernelApp.log_level=CRITICAL", f"--IPKernelApp.exec_lines={_FRESH_KERNEL}"],
                km=km, on_notebook_start=started)
        finally:
            if started is not None:
                started()  # the kernel never came up: the next page's turn anyway

    ok = False
    try:
        try:
            execute()
        except RuntimeError as exc:
            if _KERNEL_DIED not in str(exc):
                raise
            # The kernel died before it answered, so no cell ran: typically ports it was given were taken by another
            # process in between (kernel starts are serialised within this process only; seen once in a
            # fresh-clone CI with two test workers rendering at once). A second start is given other ports.
            slot.discard()
            execute()
        ok = True
    except PapermillExecutionError as exc:
        if tmp_nb.exists():
            os.replace(tmp_nb, nb_path)
        html_path.unlink(missing_ok=True)
        raise ReportError(_failure_message(name, template, exc, used)) from None
    except DeadKernelError as exc:
        # the page's kernel ended while a cell ran (a crash, a cell that killed it, out of memory): the page
        # failed like a failing cell, and the slot's next page gets a fresh kernel
        if tmp_nb.exists():
            os.replace(tmp_nb, nb_path)
        html_path.unlink(missing_ok=True)
        died = SimpleNamespace(ename="DeadKernelError", evalue=f"the kernel died while this cell ran ({exc})",
                               source=_last_cell_run(nb_path))
        raise ReportError(_failure_message(name, template, died, used)) from None
    except BaseException:
        tmp_nb.unlink(missing_ok=True)
        html_path.unlink(missing_ok=True)
        raise
    finally:
        if own_slot:
            slot.close()
        else:
            slot.page_done(ok)
        kernel_log.unlink(missing_ok=True)  # a failing cell reaches the error through the notebook, not stderr
    os.replace(tmp_nb, nb_path)
    executed = nbformat.read(nb_path, as_version=4)
    body = export_html(executed, show_code=show_code, title=spec.title)

    def writer(tmp):
        Path(tmp).write_text(body, encoding="utf-8")
        os.chmod(tmp, 0o644)  # mkstemp makes it private; reports are meant to be shared

    atomic_write(html_path, writer)
    blocks = notebook_findings(executed)
    findings = tuple(f for block in blocks for f in block["findings"])
    return RenderedReport(name=name, title=spec.title, html=html_path, notebook=nb_path, findings=findings,
                          seconds=time.perf_counter() - start, sections=repeated_sections(blocks))


def _last_cell_run(path: Path) -> str | None:
    """Source of the last cell papermill started in the executed notebook at ``path`` (None: none, or no notebook)."""
    # deferred: nbformat (notebook rendering): only when a page's kernel died
    import nbformat

    if not path.exists():
        return None
    started = [c for c in nbformat.read(path, as_version=4).cells
               if c.get("metadata", {}).get("papermill", {}).get("status", "pending") != "pending"]
    return started[-1].source if started else None


def repeated_sections(blocks: Sequence[dict]) -> tuple[dict, ...]:
    """The findings blocks of an audit a page shows more than once (e.g. one per calibration pair), as
    ``{"audit", "title", "worst"}`` in the page's order: so the index names every pair, not only the worst.

    >>> repeated_sections([{"audit": "calibration", "title": "a", "worst": "pass"}, {"audit": "reliability"},
    ...                    {"audit": "calibration", "title": "b", "worst": "warn"}])
    ({'audit': 'calibration', 'title': 'a', 'worst': 'pass'}, {'audit': 'calibration', 'title': 'b', 'worst': 'warn'})
    """
    times = Counter(b.get("audit") for b in blocks)
    return tuple({"audit": b.get("audit"), "title": b.get("title") or b.get("audit"), "worst": b.get("worst")}
                 for b in blocks if times[b.get("audit")] > 1)


@dataclass(frozen=True)
class ReportIndex:
    """The index page and the reports it links."""

    path: Path
    reports: tuple[RenderedReport, ...] = field(default_factory=tuple)

    @property
    def failed(self) -> tuple[RenderedReport, ...]:
        return tuple(r for r in self.reports if r.error)

    def to_dict(self) -> dict:
        return {"index": str(self.path), "reports": [r.to_dict() for r in self.reports]}


_LEVEL_STYLE = {"pass": ("#1a7f37", "#dafbe1"), "warn": ("#9a6700", "#fff8c5"), "fail": ("#cf222e", "#ffebe9"),
                "error": ("#ffffff", "#cf222e"), "none": ("#57606a", "#eaeef2")}


def _badge(level: str) -> str:
    fg, bg = _LEVEL_STYLE.get(level, _LEVEL_STYLE["none"])
    return (f"<span class='badge {html.escape(level)}' style='color:{fg};background:{bg};font-weight:bold;"
            f"padding:2px 8px;border-radius:4px'>{html.escape(level.upper())}</span>")


def write_index(
    reports: Sequence[RenderedReport],
    out_dir: str | os.PathLike,
    *,
    corpora: Sequence[str | os.PathLike] = (),
    parameters: Mapping[str, object] | None = None,
    top: int = 3,
    title: str = "speedaudit reports",
) -> Path:
    """Write ``index.html``: one row per report with a link, its worst level and its ``top`` worst findings.

    Links are relative, so the folder can be moved or zipped. Written atomically.
    """
    out_dir = Path(out_dir)
    rows = []
    for report in reports:
        link = (f"<a href='{html.escape(report.html.name)}'>{html.escape(report.title)}</a>" if report.html
                else html.escape(report.title))
        if report.error:
            detail = f"<pre class='error'>{html.escape(report.error)}</pre>"
        else:
            items = []
            for f in report.top_findings(top):
                # the run as the page's table names it (environment and campaign, subject): the environment alone
                # gave the findings of runs "quiet · 001" and "quiet · 1" one label
                # each name isolated (as the pages write them): a right-to-left override in one reversed the rest
                label = where_subject(f.get("environment"), f.get("campaign"), f.get("subject"))
                where = f"[{html.escape(label)}] " if label else ""
                # an n/a finding has no value: "metric: not measured: ...", as the pages write it (finding_text)
                value = "" if f["level"] == NA else f" = {html.escape(format_value(f.get('value')))}"
                items.append(f"<li>{_badge(f['level'])} {where}<code>{html.escape(str(f['metric']))}</code>{value}: "
                             f"{html.escape(audit_text(f['message']))}</li>")
            counts = report.counts()
            sections = "".join(f"<li>{_badge(str(s['worst']))} {html.escape(str(s['title']))}</li>"
                               for s in report.sections)
            if sections:  # every section of an audit shown several times (each calibration pair), by name
                items.append(f"<li>{len(report.sections)} sections:<ul class='sections'>{sections}</ul></li>")
            detail = (f"<div class='counts'>{counts['fail']} fail, {counts['warn']} warn, {counts['pass']} pass"
                      f"{', ' + str(counts[NA]) + ' n/a' if counts.get(NA) else ''}</div>"
                      f"<ul>{''.join(items)}</ul>" if items else "<div class='counts'>no findings</div>")
        nb_link = (f" <a class='nb' href='{html.escape(report.notebook.name)}'>(notebook)</a>" if report.notebook
                   else "")
        rows.append(f"<tr><td class='name'>{link}{nb_link}<div class='desc'>"
                    f"{html.escape(REPORTS[report.name].description if report.name in REPORTS else '')}</div></td>"
                    f"<td>{_badge(report.worst)}</td><td>{detail}</td></tr>")
    corpus_items = "".join(f"<li><code>{html.escape(str(c))}</code></li>" for c in corpora)
    # None is an option left to its automatic choice, as --help says ("default: automatic"), not Python's None
    param_items = "".join(f"<li><code>{html.escape(k)} = {'automatic' if v is None else html.escape(repr(v))}"
                          f"</code></li>" for k, v in (parameters or {}).items())
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #1f2328; }}
table {{ border-collapse: collapse; width: 100%; }}
td, th {{ border-bottom: 1px solid #d0d7de; padding: 8px; vertical-align: top; text-align: left; }}
td.name a {{ font-weight: bold; font-size: 1.1em; }} .desc {{ color: #57606a; font-size: 0.9em; }}
a.nb {{ font-size: 0.8em; font-weight: normal; }} .counts {{ color: #57606a; }}
ul {{ margin: 4px 0; padding-left: 1.2em; }} pre.error {{ white-space: pre-wrap; color: #cf222e; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>Rendered {stamp}. Each report leads with its verdicts; a verdict is the worst of its findings
(<b>fail</b> &gt; <b>warn</b> &gt; <b>pass</b>), each held to a documented threshold.</p>
<table><thead><tr><th>report</th><th>verdict</th><th>top findings</th></tr></thead><tbody>
{''.join(rows)}
</tbody></table>
<h2>Inputs</h2><ul>{corpus_items or '<li>(template defaults)</li>'}</ul>
{f'<h2>Parameters</h2><ul>{param_items}</ul>' if param_items else ''}
</body></html>
"""
    path = out_dir / "index.html"

    def writer(tmp):
        Path(tmp).write_text(page, encoding="utf-8")
        os.chmod(tmp, 0o644)

    return atomic_write(path, writer)


def render_reports(
    corpora: Sequence[str | os.PathLike] | None,
    *,
    out_dir: str | os.PathLike,
    audits: Sequence[str] | None = None,
    parameters: Mapping[str, object] | None = None,
    show_code: bool = False,
    kernel_name: str = "python3",
    templates: str | os.PathLike | None = None,
    progress: Callable[[str], None] | None = print,
    results: str | os.PathLike | None = None,
    workers: int | None = None,
) -> ReportIndex:
    """Render several reports and write the index page.

    Parameters
    ----------
    corpora : sequence of paths, optional
        Passed to every template as ``corpora`` (absolute paths). None keeps the templates' defaults
        (the shipped corpora).
    out_dir : path
    audits : sequence of str, optional
        Report names (default :func:`default_audits`).
    parameters : mapping, optional
        Extra template parameters (``-p key=value``); each report gets those it declares. A key that no
        selected template declares is an error (it is most likely a typo).
    show_code, kernel_name, templates
        See :func:`render_notebook`.
    progress : callable, optional
        Called with one line per report (default ``print``).
    results : path, optional
        Saved results (``speedaudit audit all CORPUS --json FILE``, :func:`audits.report.results.save_whole_audit`):
        the pages render from them without recomputing any audit, with the parameters they were computed from;
        ``corpora`` must then be None (the file names its corpus). By default only the pages whose results the
        file holds are rendered (and the overview).
    workers : int, optional
        Pages rendered at once (default: one per core this process may use, at most one per page): the pages
        only read the shared results, so they are independent. Each of these render slots runs its pages in one
        kernel, one after the other (:class:`KernelSlot`).

    Returns
    -------
    ReportIndex
        The reports are rendered even when one fails; failures are listed on the index page and then
        raised together as one :class:`ReportError`.
    """
    say = progress or (lambda line: None)
    saved = None
    if results is not None:
        saved = _saved_results(results, corpora)
        if not audits:
            # a page without shared results (the paired comparison computes its own) has none saved either
            audits = [n for n in default_audits() if n == "overview"
                      or (n in PAGE_RESULTS and all(r in saved.names() for r in PAGE_RESULTS[n]))]
            left = [n for n in default_audits() if n not in audits]
            if left:
                say(f"not rendered (not in {results}): {', '.join(left)}")
    names = list(audits) if audits else list(default_audits())
    unknown = [n for n in names if n not in REPORTS and not template_path(n, templates).exists()]
    if unknown:
        raise ReportError(f"unknown report(s) {', '.join(unknown)}; available: {', '.join(REPORTS)}")
    if not names:
        raise ReportError("no report templates found in " + str(templates or notebook_dir()))
    params = dict(parameters or {})
    if saved is not None:
        params = {**saved.meta.get("parameters", {}), "corpora": list(saved.meta.get("corpora", [])), **params}
    if corpora is not None:
        paths = resolve_corpora(corpora)
        corpus = load_corpora(paths)  # fail fast, before starting any kernel, with the file and column named
        params["corpora"] = [str(p) for p in paths]
        # The templates' run defaults name runs of the shipped corpora: for the user's corpora, choose
        # runs that exist (unless given with -p). Calibration pairs are never suggested: the pairs the user names
        # (pairs, stored_run/fresh_run, source_run/target_run), else every default pair (inputs.calibrate_pairs).
        # Runs of several files are ordered as the files were given, unless timestamps order them.
        order = corpus.attrs.get("run_order")
        params.update({k: v for k, v in suggest_runs(corpus, order=order).items()
                       if k not in params and k not in PAIR_PARAMETERS})
        params.update({k: None for k in PAIR_PARAMETERS if k not in params})
    declared = {n: template_parameters(template_path(n, templates)) for n in names}
    stray = [k for k in (parameters or {}) if k != "corpora" and not any(k in d for d in declared.values())]
    if stray:
        known = sorted({k for d in declared.values() for k in d})
        raise ReportError(f"parameter(s) {', '.join(stray)} are not declared by any selected report; "
                          f"known parameters: {', '.join(known)}")
    check_kernel(kernel_name)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    handover: list[Path] = []  # the pages' results files this report writes, removed when the pages are done
    # One slot per core used: a page rendering holds one, and so does computing the next results, so the pages
    # started while results are computed share the cores with it instead of slowing it down.
    slots = render_workers(len(names), workers)
    cores = threading.BoundedSemaphore(slots)
    if saved is not None:  # nothing is computed: every page reads the saved file
        page_params = {**params, "results_path": str(saved.path.resolve())}
        jobs = ((i, name, page_params) for i, name in enumerate(names))
    else:
        jobs = _pages_as_results_are_ready(names, declared, params, corpus if corpora is not None else None,
                                           out_dir, say, handover, cores)
    try:
        rendered = _render_all(names, jobs, out_dir, show_code, kernel_name, templates, say, cores, slots)
    finally:
        for path in handover:
            path.unlink(missing_ok=True)
    path = write_index(rendered, out_dir, corpora=params.get("corpora", ()),
                       parameters={k: v for k, v in params.items() if k != "corpora"})
    index = ReportIndex(path=path, reports=tuple(rendered))
    if index.failed:
        raise ReportError("\n".join(r.error for r in index.failed) + f"\n(index with the other reports: {path})")
    return index


#: The shared results each page shows (audits.report.results.PARAMETERS names them).
PAGE_RESULTS = {"overview": ("reliability", "discriminability", "pairs", "aggregation", "simulation", "clocks",
                             "compare", "corpus_summary"),
                "compare": ("compare", "corpus_summary"),
                "reliability": ("reliability", "discriminability", "corpus_summary"), "clocks": ("clocks", "corpus_summary"),
                "calibration": ("pairs", "corpus_summary"),
                "aggregation": ("aggregation", "corpus_summary"), "simulation": ("simulation", "corpus_summary")}


def _pages_as_results_are_ready(names, declared, params, corpus, out_dir, say, handover, cores):
    """Yield ``(position, page, its parameters)`` in the order the pages can start, computing the shared results
    on the way: every result once, on one shared context (:class:`audits.report.results.ReportResults`), each
    page as soon as the results it shows are computed. Each result is written once, into a file of the first page
    that shows it (appended to ``handover``), and a page's ``results_path`` lists the files of its results. So the
    pages render on the other cores while the next results are computed, and each page reads only the files of
    its results (at 10^7 rows the reliability tables alone are 300 MB of JSON).

    Pages that show no shared result start at once; then the pages needing fewest results (ties in the order
    given); the overview, which shows every result, last. Parameter values come from ``params``, else from the
    first selected template that declares the parameter (a page whose own values differ recomputes).
    """
    values = _result_parameters(names, declared, params)
    needs = {n: [r for r in PAGE_RESULTS.get(n, ()) if all(k in values for k in PARAMETERS[r])]
             if "results_path" in declared[n] else [] for n in names}
    order = sorted(range(len(names)), key=lambda i: (bool(needs[names[i]]), len(needs[names[i]])))
    results = ReportResults(corpus if corpus is not None else values["corpora"], values)
    held: dict[str, Path | None] = {}  # each result: the file it was written to (None: its computation failed)
    for i in order:
        name = names[i]
        if not needs[name]:
            yield i, name, params
            continue
        todo = [r for r in needs[name] if r not in held]
        if todo:
            start = time.perf_counter()
            with cores:  # a core of its own, shared with the pages rendering meanwhile
                entries = {r: results.entry(r) for r in todo}  # None: left out, the page computes it, fails there
                path = write_entries({r: encoded_entry(r, e[1], e[0]) for r, e in entries.items() if e is not None},
                                     Path(out_dir) / f".{name}.{RESULTS_FILE}").resolve()  # kernels run elsewhere
            handover.append(path)
            held.update({r: None if e is None else path for r, e in entries.items()})
            say(f"[0/{len(names)}] computed {', '.join(todo)} once in {time.perf_counter() - start:.1f} s "
                f"(for {name}{' and the pages after it' if len(names) > 1 else ''})")
        files = [str(f) for f in dict.fromkeys(held[r] for r in needs[name] if held[r] is not None)]
        yield i, name, {**params, "results_path": files[0] if len(files) == 1 else files or None}  # None: computes


def _result_parameters(names, declared, params) -> dict:
    """The values the shared results are computed from: ``params``, else the literal default of the first selected
    template that declares the parameter."""
    values = {}
    for n in names:
        for key, info in declared[n].items():
            if key not in values and key not in params:
                try:
                    values[key] = ast.literal_eval(str(info.get("default")))
                except (ValueError, SyntaxError):
                    continue  # not a literal: the pages compute what needs it
    values.update(params)
    return values


def _saved_results(path, corpora):
    if corpora is not None:
        raise ReportError("give the corpora or saved results, not both: saved results name the corpus they were "
                          "computed from")
    saved = read_results(path)
    if not saved.meta.get("saved"):
        raise ReportError(f"{path}: these results were not saved by 'speedaudit audit all' (the report's own working "
                          f"file); write them with 'speedaudit audit all CORPUS --json FILE'")
    return saved


def render_workers(n_pages: int, workers: int | None = None) -> int:
    """How many pages render at once: ``workers``, else one per core this process may use; at most one per page.

    Each page runs in a kernel process (one per render slot, :class:`KernelSlot`), and the pages only read the
    shared results, so they are independent; more at once than cores would only share the cores.

    >>> render_workers(6, 2), render_workers(1, 4), render_workers(3, 0)
    (2, 1, 1)
    """
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(n_pages, workers))


def _render_all(names, jobs, out_dir, show_code, kernel_name, templates, say, cores, slots):
    """Render the pages ``jobs`` yields (``(position in names, page, its parameters)``), each as soon as it is
    yielded, a render slot is idle and one of the ``cores`` (a semaphore) is free; the reports in the order of
    ``names``.

    ``slots`` threads render, each its pages one after the other in one kernel (:class:`KernelSlot`), so a report
    starts as many kernels as it renders pages at once (and one more for each page after one that failed).
    """
    def _render_one(i, name, params, slot):
        template = template_path(name, templates)
        shown = template.relative_to(repo_root()) if template.is_relative_to(repo_root()) else template
        say(f"[{i}/{len(names)}] {name}: executing {shown} ...")
        try:
            report = render_notebook(name, out_dir, parameters=params, show_code=show_code,
                                     kernel_name=kernel_name, templates=templates, slot=slot)
        except ReportError as exc:
            nb = out_dir / f"{name}.ipynb"
            report = RenderedReport(name=name, title=REPORTS.get(name, ReportSpec(name, name, "")).title, html=None,
                                    notebook=nb if nb.exists() else None, error=str(exc))
            say(f"[{i}/{len(names)}] {name}: FAILED ({str(exc).splitlines()[0]})")
        else:
            c = report.counts()
            say(f"[{i}/{len(names)}] {name}: {report.worst.upper()} ({c['fail']} fail, {c['warn']} warn, "
                f"{c['pass']} pass, {c[NA]} n/a) in {report.seconds:.1f} s -> {report.html}")
        return report

    todo: queue.SimpleQueue = queue.SimpleQueue()  # (position, page, parameters), then one None per slot
    done: dict[int, Future] = {}

    def slot_thread():
        # Threads suffice: each page runs in its kernel process (papermill waits on it). The slot's pages all run
        # on this thread, whose event loop the kernel's sockets belong to.
        slot = KernelSlot(kernel_name)
        try:
            while (job := todo.get()) is not None:
                i, name, params = job
                try:
                    with cores:
                        done[i].set_result(_render_one(i + 1, name, params, slot))
                except BaseException as exc:  # noqa: BLE001 -- raised by the main thread, as a pool's future would
                    done[i].set_exception(exc)
        finally:
            try:
                slot.close()
            finally:
                _close_thread_loop()

    threads = [threading.Thread(target=slot_thread, name=f"render-slot-{k}", daemon=True) for k in range(slots)]
    for thread in threads:
        thread.start()
    try:
        for i, name, page_params in jobs:
            done[i] = Future()
            todo.put((i, name, page_params))
    finally:
        for _ in threads:
            todo.put(None)
        for thread in threads:
            thread.join()
    # the order of the index is the order of ``names`` whatever finishes first
    return [done[i].result() for i in range(len(names))]
