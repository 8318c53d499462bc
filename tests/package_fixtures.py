"""The checkout's wheel, and a venv it is installed in, made once per run (pytest plugin).

tests/test_package.py runs the installed wheel; tests/test_readme_tour.py installs the wheel
the README's way. Under pytest-xdist the first worker to need the wheel (or the venv) makes it
in the temporary directory that all the run's workers share, while the others wait on its lock
file (filelock, as pytest-xdist's documentation does it): the tests that use them spread over
the workers instead of queueing on the one that made them. The tests only read what is made
here (a test writes its own files in its own tmp_path).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock
from testkit.env import REPO_ROOT

# What a source distribution holds (MANIFEST.in), enough to build the wheel.
SOURCES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "sqitch.plan", "sqitch.conf"]
SOURCE_DIRS = ["pyworker", "deploy", "revert", "verify", "registry"]


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """The directory `name`, filled by `make(directory)` once per run: under pytest-xdist in the
    directory the run's workers share, by the first worker to ask while the others wait. A
    `make` that failed leaves no mark: the next to ask makes it again (and fails the same way)."""
    base = tmp_path_factory.getbasetemp()
    # xdist gives each worker a directory of its own (popen-gw0, ...) in the run's.
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    directory, made = root / name, root / f"{name}.made"
    with FileLock(root / f"{name}.lock"):
        if not made.exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            make(directory)
            made.touch()
    return directory


def build_wheel_of_checkout(root: Path) -> Path:
    """The wheel built (pip wheel) in `root`/dist from a copy in `root`/source of the checkout's
    sources."""
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        shutil.copy2(REPO_ROOT / name, source / name)
    for name in SOURCE_DIRS:
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(REPO_ROOT / name, source / name, ignore=ignore)
    return build_wheel(source, root / "dist")


def build_wheel(source: Path, dist: Path) -> Path:
    """The wheel of the project in `source` (pip wheel), built into `dist`."""
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check",
         "--wheel-dir", str(dist), str(source)],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = dist.glob("*.whl")
    return built


def install_into_a_new_venv(wheel: Path, home: Path) -> None:
    """An empty venv, `home`/venv, into which `wheel` and its dependencies (from the index,
    through pip's cache) are installed."""
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         str(wheel)],
        capture_output=True, text=True, cwd=home,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="session")
def checkout_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built (pip wheel) from a copy of the checkout's sources once per run."""
    built = made_once(tmp_path_factory, "checkout-wheel", build_wheel_of_checkout)
    (wheel,) = (built / "dist").glob("*.whl")
    return wheel


@pytest.fixture(scope="session")
def wheel_home(checkout_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the checkout, a user's home, whose venv (venv/) has the wheel
    installed, made once per run."""
    return made_once(tmp_path_factory, "wheel-home", lambda home: install_into_a_new_venv(checkout_wheel, home))
