"""As the image and the worker's manifest run it: pyworker under tini, PID 1 of its own PID
namespace (`unshare --pid --fork --mount-proc`, as root), with a command handler that leaves a
child behind. tini reaps the orphan: no zombie is left in the namespace. pyworker started as
PID 1 itself says in its log that nothing will reap them. The Dockerfile and the manifest are
checked to run it so.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import psycopg
import pytest
import yaml
from worker_support import Workers, enqueue, pyworker_argv, wait_for, wait_for_status

REPO_ROOT = Path(__file__).resolve().parent.parent

needs_namespaces = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a PID namespace of its own needs root and unshare (util-linux)",
)

# Prints its result and exits, leaving a child behind; the worker kills it once the command has
# exited, and the killed child, an orphan, is PID 1's to reap.
ORPHANING_SCRIPT = """#!/bin/sh
cat > /dev/null
sleep 600 &
echo '{"result": {"done": true}}'
"""

# PID 1 of a new PID namespace, with a private /proc; killed with every process of the namespace
# when unshare ends (the workers fixture kills unshare by PID).
IN_NEW_PID_NAMESPACE = ("unshare", "--pid", "--fork", "--kill-child", "--mount-proc")


def namespace_processes(unshare_pid: int) -> dict[int, str]:
    """The processes of the namespace unshare made: its PID 1 (unshare's child) and every
    descendant, zombies included (host PIDs), each with its state letter."""
    states: dict[int, str] = {}
    parents = [unshare_pid]
    while parents:
        parent = parents.pop()
        children = []
        # Each thread's children: a worker's commands are started by its handler threads.
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children += [int(pid) for pid in (task / "children").read_text().split()]
            except FileNotFoundError:
                continue
        for pid in children:
            try:
                # The state follows the command name, in parentheses, which may hold any byte.
                states[pid] = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except FileNotFoundError:
                continue
            parents.append(pid)
    return states


@needs_namespaces
def test_under_tini_as_pid_1_the_orphans_of_a_command_are_reaped(
    pool: psycopg.Connection, workers: Workers, tmp_path: Path
) -> None:
    assert shutil.which("tini"), "tini is missing: make deps installs it (DEB_PACKAGES)"
    script = tmp_path / "orphaning.sh"
    script.write_text(ORPHANING_SCRIPT)
    worker = workers.start(
        "test_protocol",
        "under-tini",
        program=(*IN_NEW_PID_NAMESPACE, "tini", "--", *pyworker_argv()),
        command=shlex.join(["sh", str(script)]),
        handlers=None,
    )
    task_ids = [enqueue(pool, "test_protocol") for _ in range(3)]
    for task_id in task_ids:
        row = wait_for_status(pool, task_id, ("completed", "failed"), 20, also=worker.describe)
        assert (row["status"], row["result"]) == ("completed", {"done": True}), row["error_message"]

    def no_zombie() -> bool:
        return "Z" not in namespace_processes(worker.process.pid).values()

    wait_for(no_zombie, 10, "tini to reap the orphans", also=lambda: f"{namespace_processes(worker.process.pid)}")
    # The worker runs on, under tini.
    assert len(namespace_processes(worker.process.pid)) >= 2
    assert "pyworker runs as PID 1" not in worker.log()


@needs_namespaces
def test_pyworker_started_as_pid_1_warns_that_nothing_reaps_orphans(workers: Workers, pool: psycopg.Connection) -> None:
    worker = workers.start("test_outcome", "as-pid-1", program=(*IN_NEW_PID_NAMESPACE, *pyworker_argv()))
    worker.wait_for_log("pyworker runs as PID 1: orphaned children of its handlers' commands are never reaped")


def test_the_image_and_the_worker_manifest_run_pyworker_under_tini() -> None:
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    (install,) = re.findall(r"apt-get install[^&]*", dockerfile)
    assert "tini" in install.split()
    assert re.search(r'^ENTRYPOINT \["tini", "--"\]$', dockerfile, re.M)
    deployment = yaml.safe_load((REPO_ROOT / "kubernetes" / "worker" / "deployment.yaml").read_text())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["tini", "--", "pyworker"]
