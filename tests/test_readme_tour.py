"""The README's tour from Python, run verbatim on a wheel-only install: the wheel built from a
copy of the checkout (tests/package_fixtures.py: once per run) copied into this test's own
directory, then the tour's blocks as the README has them, in order, in that directory, with nothing of the checkout on the
import path: its shell blocks (making a venv, `pip install` of the wheel, `pyworker schema
apply`, `pyworker roles sync`, a worker, the application) as one bash script, and each Python
block that names its file in its first line (`# myapp/tasks.py`) written to that file. The one
line not run as written is the tour's `export DATABASE_URL=...`: it names the tour's database,
and the test gives an empty database of its own in its place."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from test_readme import README, Example, a_newcomers_environment, examples_in

TOUR = "A five-minute tour from Python"
RUNNER = "tests/test_readme_tour.py"
FILE_LINE = re.compile(r"# (?P<path>[\w/]+\.py)\n")
DATABASE_LINE = re.compile(r"^export DATABASE_URL=\S+$", re.MULTILINE)


def tour_blocks() -> tuple[list[Example], list[Example]]:
    """The tour's shell blocks (those its mark gives to this test) and its Python files."""
    examples = [example for example in examples_in(README.read_text()) if example.section == TOUR]
    shell = [example for example in examples if example.kind == "shell" and RUNNER in (example.not_run or "")]
    files = [example for example in examples if example.kind == "python" and FILE_LINE.match(example.text)]
    return shell, files


def test_the_tour_names_its_blocks_and_its_database() -> None:
    shell, files = tour_blocks()
    assert len(shell) == 3 and [FILE_LINE.match(f.text)["path"] for f in files] == ["myapp/tasks.py", "signup.py"]
    script = "".join(example.text for example in shell)
    assert len(DATABASE_LINE.findall(script)) == 1, "the tour gives its DATABASE_URL once"
    assert "psql" not in script, "the tour types no SQL"


def test_the_tour_runs_on_a_wheel_only_install(checkout_wheel: Path, tmp_path: Path, empty_db_url: str) -> None:
    home = tmp_path / "tour"
    home.mkdir()
    shutil.copy2(checkout_wheel, home / checkout_wheel.name)
    shell, files = tour_blocks()
    for example in files:
        path = home / FILE_LINE.match(example.text)["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(example.text)
    script = DATABASE_LINE.sub(f"export DATABASE_URL='{empty_db_url}'", "".join(example.text for example in shell))

    # `python3` is this venv's interpreter (as a newcomer's would be some Python 3.11 or later);
    # nothing of the checkout on the import path, and no venv active to begin with.
    env = a_newcomers_environment(PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", HOME=str(home))
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "DATABASE_URL", "PGDATABASE"):
        env.pop(name, None)
    result = subprocess.run(
        ["bash", "-x", "-e", "-o", "pipefail"], input=script, cwd=home, env=env,
        capture_output=True, text=True, timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"the tour fails:\n{script}\n{output}"
    assert "created    send_welcome (myapp.tasks)" in result.stdout
    assert "{'sent_to': 'ada@example.com'}" in result.stdout
    assert "RAISE statement option cannot be null" not in output

    installed = subprocess.run(
        [str(home / "tour-venv" / "bin" / "python"), "-c", "import pyworker; print(pyworker.__file__)"],
        cwd=home, env=env, capture_output=True, text=True, check=True,
    ).stdout
    assert installed.startswith(str(home / "tour-venv")), f"the tour ran {installed}, not the wheel's pyworker"
