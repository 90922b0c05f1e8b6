"""A report's kernel writes its own stderr to the page's log, not to the terminal of ``speedaudit report``.

ipykernel can print a traceback on stderr while it shuts down (a status message sent on an I/O pipe that is
being closed: ``ZMQError: Socket operation on non-socket``); inherited, it landed under a report that had
rendered correctly (seen in ``test_examples`` on a loaded machine). The real kernel is started here and its
file descriptor 2 is read from /proc.
"""

import asyncio
import os
import sys

from audits.report import render


def _kernel_stderr(manager_class) -> str:
    async def start_and_read():
        km = manager_class(kernel_name="python3")
        await km.start_kernel()
        try:
            return os.readlink(f"/proc/{km.provisioner.process.pid}/fd/2")
        finally:
            await km.shutdown_kernel(now=True)

    return asyncio.run(start_and_read())


def test_the_kernel_writes_its_stderr_to_the_page_log(tmp_path):
    render.check_kernel("python3")
    log = tmp_path / ".reliability.kernel.log"
    assert _kernel_stderr(render._kernel_manager_logging_to(log)) == str(log)


def test_a_plain_kernel_manager_would_hand_the_kernel_this_terminal(tmp_path):
    # the contrast that makes the test above able to fail: without the class the kernel inherits our stderr
    from jupyter_client.manager import AsyncKernelManager

    assert _kernel_stderr(AsyncKernelManager) == os.readlink(f"/proc/{os.getpid()}/fd/{sys.stderr.fileno()}")
