"""The build step pyproject.toml cannot say: put taskpool's Sqitch project into the wheel.

sqitch.plan and its deploy/, revert/ and verify/ scripts (and registry/, the in-place move of a
database deployed before the crawler had a project of its own) stay at the repository root, where
Sqitch reads them; each build copies them into the package as pyworker/sqitch/, which
`pyworker schema apply | upgrade | status` (pyworker/admin/schema.py) read. An editable install copies
nothing: pyworker/admin/schema.py falls back to the checkout's root.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SQITCH_FILES = ["sqitch.plan"]
SQITCH_DIRS = ["deploy", "revert", "verify", "registry"]


class BuildPyWithSchema(build_py):
    """build_py, then the Sqitch project into <build_lib>/pyworker/sqitch/."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "pyworker" / "sqitch"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name in SQITCH_FILES:
            shutil.copy2(ROOT / name, target / name)
        for name in SQITCH_DIRS:
            shutil.copytree(ROOT / name, target / name)


setup(cmdclass={"build_py": BuildPyWithSchema})
