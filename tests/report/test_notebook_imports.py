"""The notebook stack is imported without jsonschema's IRI grammars (audits.report.render._without_iri_grammars).

Each check runs in a fresh interpreter: what matters is the first import of jsonschema in a process.
"""

from __future__ import annotations

import subprocess
import sys

from audits.report.inputs import repo_root

ROOT = repo_root()


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_reading_and_inspecting_a_template_does_not_compile_the_iri_grammars():
    out = _python(
        "import sys\n"
        "from audits.report.render import read_template, template_parameters, template_path\n"
        "nb = read_template(template_path('reliability'))\n"          # jupytext + nbformat.validate
        "params = template_parameters(template_path('reliability'))\n"  # papermill
        "from nbconvert import HTMLExporter\n"
        "print('rfc3987_syntax' in sys.modules, len(nb.cells) > 0, 'corpora' in params)\n"
        "import rfc3987_syntax\n"                                    # still importable by whoever wants it
        "print(rfc3987_syntax.is_valid_syntax('iri', 'http://example.org/a'))\n")
    assert out.split() == ["False", "True", "True", "True"]


def test_nbformat_still_rejects_an_invalid_notebook():
    # validation is what nbformat imports jsonschema for: it must still refuse a malformed notebook
    out = _python(
        "from audits.report.render import read_template, template_path\n"
        "import nbformat\n"
        "nb = read_template(template_path('reliability'))\n"
        "nb.cells[0]['cell_type'] = 'not a cell type'\n"
        "try:\n"
        "    nbformat.validate(nb)\n"
        "except nbformat.ValidationError:\n"
        "    print('refused')\n")
    assert out.split() == ["refused"]


def test_a_process_that_imported_jsonschema_first_keeps_every_format_checker():
    out = _python(
        "import sys, jsonschema\n"
        "from audits.report.render import read_template, template_path\n"
        "read_template(template_path('reliability'))\n"
        "print('iri' in jsonschema.FormatChecker().checkers, 'rfc3987_syntax' in sys.modules)\n")
    assert out.split() == ["True", "True"]
