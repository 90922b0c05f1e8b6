"""The pages a render slot renders run one after the other in one kernel (audits.report.render.KernelSlot), put back
between two pages (audits.report.page.next_page): a page's output is the same as in a kernel of its own, a failing
page's kernel is not used again, and a kernel that dies is replaced for the next page. Real kernels, real papermill.

The planted templates print the kernel's process id (so a test knows whether two pages shared a kernel: without
that, "same output" would also hold of a renderer that never reuses one) and the state a page could leave behind.
"""

from __future__ import annotations

import json
import re

import pytest

from audits.cli._main import main
from audits.report.render import KernelSlot, ReportError, render_notebook, render_reports

HEADER = """# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
corpora = []
label = "default"

# %%
import os
print("pid", os.getpid())
"""

#: Leaves behind everything next_page puts back: a variable, warning filters and a shown warning, options of pandas
#: and numpy, matplotlib's rcParams and an open figure, an environment variable, the working directory, sys.path.
DIRTY = HEADER + """
# %%
import sys
import warnings

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

leftover = 1
warnings.filterwarnings("error", category=DeprecationWarning)
import planted
planted.warn()
pd.set_option("display.precision", 1)
np.set_printoptions(precision=2)
np.seterr(all="raise")
matplotlib.rcParams["lines.linewidth"] = 9
plt.figure()
os.environ["SPEEDAUDIT_LEFTOVER"] = "1"
os.chdir("/")
sys.path.append("/nowhere")
leftover
"""

#: Shows the state a page starts from (and warns where DIRTY did: shown again only if the registry was reset).
#: (``planted`` is a module beside the templates, imported from the kernel's working directory.)
CLEAN = HEADER + """
# %%
import sys
import warnings

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

print(sorted(k for k in globals() if not k.startswith("_")))
print(get_ipython().execution_count, len(Out), [f[0] for f in warnings.filters])
print(pd.get_option("display.precision"), np.get_printoptions()["precision"], np.geterr())
print(matplotlib.rcParams["lines.linewidth"], matplotlib.get_backend(), plt.get_fignums())
print(os.environ.get("SPEEDAUDIT_LEFTOVER"), os.path.basename(os.getcwd()), "/nowhere" in sys.path)
import planted
planted.warn()
pd.DataFrame({"x": [1 / 3]})
"""

FAILS = HEADER + """
# %%
leftover = 1
raise ValueError("planted failure")
"""

DIES = HEADER + """
# %%
import signal
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    folder = tmp_path_factory.mktemp("templates")
    for name, text in (("dirty", DIRTY), ("clean", CLEAN), ("fails", FAILS), ("dies", DIES)):
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    (folder / "planted.py").write_text('import warnings\n\n\ndef warn():\n    warnings.warn("planted once", UserWarning)\n')
    return folder


def _pid(notebook) -> int:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    return int(re.search(r"pid (\d+)", text).group(1))


def _outputs(notebook) -> list:
    """Every cell's outputs and execution count, but the first code cell's (the process id)."""
    nb = json.loads(_without_pid(notebook.read_text(encoding="utf-8")))
    cells = [(c.get("execution_count"), c["outputs"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return [c for c in cells if not any("pid " in "".join(o.get("text", "")) for o in c[1])]


def _without_pid(text: str) -> str:
    """A warning names the file of its cell, in a folder named after the kernel's process id."""
    return re.sub(r"ipykernel_\d+", "ipykernel_<pid>", text)


def test_a_page_after_another_in_its_kernel_shows_what_it_shows_in_a_kernel_of_its_own(templates, tmp_path):
    slot = KernelSlot()
    try:
        dirty = render_notebook("dirty", tmp_path / "warm", templates=templates, slot=slot)
        warm = render_notebook("clean", tmp_path / "warm", templates=templates, slot=slot)
    finally:
        slot.close()
    fresh = render_notebook("clean", tmp_path / "fresh", templates=templates)
    assert _pid(dirty.notebook) == _pid(warm.notebook) and slot.kernels_started == 1  # one kernel, reused
    assert _pid(fresh.notebook) != _pid(warm.notebook)
    assert _outputs(warm.notebook) == _outputs(fresh.notebook)
    assert "planted once" in json.dumps(_outputs(warm.notebook))  # shown again: not once per kernel


def test_a_page_whose_cell_fails_is_reported_and_the_next_page_gets_a_fresh_kernel(templates, tmp_path):
    with pytest.raises(ReportError) as failed:
        render_reports(None, out_dir=tmp_path, audits=["fails", "clean"], templates=templates, workers=1,
                       parameters={"label": "planted"}, progress=None)
    message = str(failed.value)
    assert "report 'fails' failed in notebook" in message and "fails.py" in message
    assert "cell 3 of fails.py ('leftover = 1')" in message and "ValueError: planted failure" in message
    assert "parameters: label='planted'" in message
    assert (tmp_path / "clean.html").exists() and not (tmp_path / "fails.html").exists()
    assert _pid(tmp_path / "fails.ipynb") != _pid(tmp_path / "clean.ipynb")
    assert "'leftover'" not in json.dumps(_outputs(tmp_path / "clean.ipynb"))


def test_a_page_that_kills_its_kernel_is_reported_and_the_next_page_gets_a_fresh_kernel(templates, tmp_path):
    with pytest.raises(ReportError) as failed:
        render_reports(None, out_dir=tmp_path, audits=["dies", "clean"], templates=templates, workers=1,
                       parameters={"label": "planted"}, progress=None)
    message = str(failed.value)
    assert "report 'dies' failed in notebook" in message and "dies.py" in message
    assert "cell 3 of dies.py ('import signal')" in message and "the kernel died while this cell ran" in message
    assert "parameters: label='planted'" in message
    assert (tmp_path / "clean.html").exists() and (tmp_path / "dies.ipynb").exists()
    assert _pid(tmp_path / "dies.ipynb") != _pid(tmp_path / "clean.ipynb")
    assert (tmp_path / "index.html").exists() and "the kernel died" in (tmp_path / "index.html").read_text()


#: Keys of the executed notebooks that change from one run to the next: papermill's and nbclient's timestamps and
#: durations (the notebook's and every cell's); and, in strings, the output folder (papermill's output_path) and the
#: kernel's process id (:func:`_without_pid`); and the id papermill gives its injected-parameters cell (a random
#: uuid, in the HTML too). The rest, outputs and execution counts included, must be equal.
VOLATILE = {"start_time", "end_time", "duration", "iopub.status.busy", "iopub.status.idle", "iopub.execute_input",
            "shell.execute_reply"}


def _stable(value, out):
    if isinstance(value, dict) and "injected-parameters" in value.get("metadata", {}).get("tags", []):
        value = {k: v for k, v in value.items() if k != "id"}
    if isinstance(value, dict):
        return {k: _stable(v, out) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v, out) for v in value]
    return _without_pid(value.replace(str(out), "<out>")) if isinstance(value, str) else value


def _stable_html(text: str) -> str:
    return re.sub(r'(celltag_injected-parameters" id="cell-id=)[0-9a-f-]+', r"\1<id>", _without_pid(text))


@pytest.mark.slow  # every default page twice: in one kernel, and each in a kernel of its own
def test_every_page_renders_the_same_after_the_others_in_one_kernel(tmp_path, monkeypatch):
    saved = tmp_path / "all.json"
    assert main(["audit", "all", "fixtures/corpora/quiet-a.parquet", "--n-boot", "30", "--json", str(saved)]) == 0
    starts = []
    manager = KernelSlot.manager

    def counted(slot, *args):  # the real call, its answer noted: did the page start a kernel?
        km, start = manager(slot, *args)
        starts.append(start)
        return km, start

    monkeypatch.setattr(KernelSlot, "manager", counted)
    index = render_reports(None, results=saved, out_dir=tmp_path / "warm", workers=1, progress=None)
    names = [r.name for r in index.reports]
    assert len(names) >= 6 and starts == [True] + [False] * (len(names) - 1)  # every page in one kernel
    monkeypatch.undo()
    for name in names[1:]:  # the first page ran in a fresh kernel anyway
        render_reports(None, results=saved, out_dir=tmp_path / name, audits=[name], workers=1, progress=None)
        warm = _stable(json.loads((tmp_path / "warm" / f"{name}.ipynb").read_text()), tmp_path / "warm")
        fresh = _stable(json.loads((tmp_path / name / f"{name}.ipynb").read_text()), tmp_path / name)
        assert warm == fresh, name
        html = [(tmp_path / d / f"{name}.html").read_text(encoding="utf-8") for d in ("warm", name)]
        assert _stable_html(html[0]) == _stable_html(html[1]), name
