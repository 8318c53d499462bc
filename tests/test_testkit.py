"""The test kit (testkit/) that tests/, bench/ and faults/ share: its fleet's stop and kill, and
its waiting. No database."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from testkit.fleet import Fleet
from testkit.waiting import WaitTimeout, wait_until

# Counts the SIGTERMs it receives in its log; exits 0 a second after the first one.
GRACEFUL = """
import signal, sys, time
terms = []
def on_term(signum, frame):
    terms.append(signum)
    print("term", file=sys.stderr, flush=True)
signal.signal(signal.SIGTERM, on_term)
print("ready", file=sys.stderr, flush=True)
while not terms:
    time.sleep(0.01)
time.sleep(1)
sys.exit(0)
"""

STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", file=sys.stderr, flush=True)
while True:
    time.sleep(0.1)
"""


def test_stop_sends_each_process_one_sigterm_and_kills_the_stubborn_after_the_grace(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    graceful = fleet.start("graceful", [sys.executable, "-c", GRACEFUL], {})
    stubborn = fleet.start("stubborn", [sys.executable, "-c", STUBBORN], {})
    for process in (graceful, stubborn):
        process.wait_for_log("ready")
    fleet.stop(grace=3)
    assert fleet.exit_codes() == {"graceful": 0, "stubborn": -signal.SIGKILL}
    assert graceful.log().count("term") == 1


def test_a_restart_appends_to_the_log_and_waits_for_the_new_start(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    process = fleet.start("p", [sys.executable, "-c", GRACEFUL], {})
    process.wait_for_log("ready")
    process.kill()
    fleet.restart("p")
    process.wait_for_log("ready", since_restart=True)
    assert process.log().count("ready") == 2
    fleet.kill_all()
    assert not process.alive


def test_wait_until_raises_the_callers_error_with_what_it_waited_for() -> None:
    with pytest.raises(WaitTimeout, match="waiting for nothing"):
        wait_until(lambda: False, 0.1, "nothing")

    class Mine(Exception):
        pass

    with pytest.raises(Mine, match="nothing\nlog tail"):
        wait_until(lambda: None, 0.1, "nothing", also=lambda: "log tail", error=Mine)
    assert wait_until(iter([0, "", 7]).__next__, 1, "a value") == 7
