"""External commands for the worker's command handler (TASKPOOL_COMMAND) in the tests.

python worker_commands.py echo              task JSON on stdin -> {"echo": payload, ...}
python worker_commands.py fail              a long stderr, then exit status 3
python worker_commands.py sleep-tree FILE   start a child, write both PIDs to FILE, sleep 60 s
python worker_commands.py sleep-tree-in DIR the same, FILE being DIR/<the task's id>
python worker_commands.py child             (the child: ignores SIGTERM, sleeps 60 s)
python worker_commands.py scripted          does what the task's payload says: prints its
                                            "stdout" (and "stdout_hex" bytes) and "stderr" (after
                                            "stderr_hex" bytes, "stderr_repeat" times), floods
                                            stdout with "flood" bytes then sleeps, kills itself
                                            with "signal", exits with "exit" (default 0)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    mode = argv[1]
    if mode == "echo":
        task = json.load(sys.stdin)
        json.dump(
            {"echo": task["payload"], "task_id": task["id"], "attempt": task["attempt"]}, sys.stdout
        )
        return 0
    if mode == "fail":
        sys.stdin.read()
        sys.stderr.write("noise " * 1000 + "\n")
        sys.stderr.write("the last words of the command\n")
        return 3
    if mode == "sleep-tree-in":
        task = json.load(sys.stdin)
        return main([argv[0], "sleep-tree", os.path.join(argv[2], str(task["id"]))])
    if mode == "sleep-tree":
        # The child ignores SIGTERM, so only the worker's SIGKILL of the group ends it.
        child = subprocess.Popen([sys.executable, __file__, "child"])
        with open(argv[2] + ".tmp", "w") as pids:
            pids.write(f"{os.getpid()} {child.pid}\n")
        os.rename(argv[2] + ".tmp", argv[2])
        time.sleep(60)
        return 0
    if mode == "scripted":
        payload = json.load(sys.stdin)["payload"]
        out = sys.stdout.buffer
        out.write(bytes.fromhex(payload.get("stdout_hex", "")))
        out.write(payload.get("stdout", "").encode())
        out.flush()
        sys.stderr.buffer.write(bytes.fromhex(payload.get("stderr_hex", "")) * payload.get("stderr_repeat", 1))
        sys.stderr.write(payload.get("stderr", ""))
        sys.stderr.flush()
        if payload.get("flood"):
            chunk = b"x" * 65536
            for _ in range(payload["flood"] // len(chunk) + 1):
                out.write(chunk)
            out.flush()
            time.sleep(60)
        if payload.get("signal"):
            os.kill(os.getpid(), getattr(signal, payload["signal"]))
            time.sleep(60)
        return payload.get("exit", 0)
    if mode == "child":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(60)
        return 0
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
