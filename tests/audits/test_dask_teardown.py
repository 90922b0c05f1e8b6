"""The local cluster of :func:`audits.engine.partitioned.dask_client` goes down without Dask's messages on stderr,
while an error logged during the work still reaches it; its worker and scheduler run with the project's cluster
settings (``LOCAL_CLUSTER_CONFIG``: no profiler, slow health tick and system monitor).

The race this stands for (a worker's heartbeat under way when the scheduler closes, logged with a traceback by
distributed's ``Worker.heartbeat``) is rare; a worker plugin that logs a traceback from its ``teardown`` makes the
same kind of message happen on every close, in the worker process, where the heartbeat's is logged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = '''
import logging

from distributed.diagnostics.plugin import WorkerPlugin

from audits.engine.partitioned import dask_client
from audits.engine.partitioned._common import LOCAL_CLUSTER_CONFIG


class LogsWhileClosing(WorkerPlugin):
    def teardown(self, worker):
        try:
            raise OSError("a stand-in for the heartbeat's closed stream")
        except OSError:
            logging.getLogger("distributed.worker").exception("closing-marker")


def settings():
    import dask
    return [dask.config.get(key) for key in sorted(LOCAL_CLUSTER_CONFIG)]


def log_while_working():
    logging.getLogger("distributed.worker").error("working-marker")
    return 1


if __name__ == "__main__":
    with dask_client(n_workers=1) as client:
        client.register_plugin(LogsWhileClosing())
        assert client.submit(log_while_working).result() == 1
        # the cluster's own settings (LOCAL_CLUSTER_CONFIG) hold in the spawned worker and in the scheduler
        wanted = [LOCAL_CLUSTER_CONFIG[key] for key in sorted(LOCAL_CLUSTER_CONFIG)]
        assert list(client.run(settings).values()) == [wanted], client.run(settings)
        assert client.run_on_scheduler(settings) == wanted
    print("closed", logging.getLogger("distributed").getEffectiveLevel())
'''


def test_the_local_cluster_closes_without_dask_messages_but_errors_at_work_are_shown(tmp_path):
    script = tmp_path / "teardown.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "working-marker" in proc.stderr  # an error while the audit runs is not hidden
    assert "closing-marker" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    # and this process's own Dask logging is back to what it was (INFO, from Dask's configuration)
    assert proc.stdout.split() == ["closed", "20"]
