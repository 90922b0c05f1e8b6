"""Write the report templates notebooks/*.ipynb from the cell lists below.

The notebooks are generated so that they stay thin and diff-able: edit this file, run
``python notebooks/build_notebooks.py`` and commit both. The .ipynb files carry no outputs.

Rules every template follows (tests/test_notebooks.py checks them):

* exactly one code cell tagged ``parameters`` (papermill injects values after it);
* defaults point at the shipped corpora (``fixtures/corpora``), resolved from the working directory
  or the repository root, so the template runs as it is in JupyterLab (``make lab``);
* every other code cell only calls ``audits``/``stats`` functions and displays what they return;
  prose that depends on numbers comes from :mod:`audits.narrative`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

SHIPPED = ["fixtures/corpora/speedbench-quiet-a.parquet"]

COMMON_PARAMETERS = f'''# Parameters (papermill / `speedaudit report -p key=value` override them).
# Paths are relative to the working directory or to the repository root.
corpora = {SHIPPED!r}  # timing corpora, stacked into one
n_boot = 1000  # bootstrap resamples over problems for every interval
seed = 0  # seed of the bootstrap and of the simulator
'''

IMPORTS = '''import warnings

import pandas as pd
from IPython.display import display

from audits import narrative
from audits.report import load_corpora

warnings.filterwarnings("ignore", category=FutureWarning)
pd.set_option("display.precision", 4)'''

LOAD = '''corpus = load_corpora(corpora)
display(narrative.Markdown(narrative.describe_corpus(corpus, corpora)))
narrative.corpus_overview(corpus)'''


def md(text: str) -> dict:
    return {"cell_type": "markdown", "source": text.strip("\n")}


def code(text: str, *tags: str) -> dict:
    return {"cell_type": "code", "source": text.strip("\n"), "tags": list(tags)}


NOTEBOOKS: dict[str, list[dict]] = {}

NOTEBOOKS["overview"] = [
    md("""
# speedaudit overview

The verdicts of every audit on this corpus, worst first. Each line is a finding: what was measured,
the value, the threshold it was held to, and what to do. The other reports hold the figures and
the details behind each verdict.
"""),
    code(COMMON_PARAMETERS, "parameters"),
    code(IMPORTS),
    code(LOAD),
]


def build(name: str, cells: list[dict]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            node = nbformat.v4.new_markdown_cell(cell["source"])
        else:
            node = nbformat.v4.new_code_cell(cell["source"])
            if cell["tags"]:
                node.metadata["tags"] = cell["tags"]
        node["id"] = f"{name}-{i:02d}"
        nb.cells.append(node)
    nbformat.validate(nb)
    return nb


def main(argv: list[str] | None = None) -> int:
    out = Path(argv[0]) if argv else HERE
    for name, cells in NOTEBOOKS.items():
        path = out / f"{name}.ipynb"
        nbformat.write(build(name, cells), path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
