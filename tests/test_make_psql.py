"""`make psql` on the project-local cluster, as a newcomer runs it after `make demo`: it deploys
first, so the README's claim works in a cluster where nothing deployed `taskpool`, and it uses
the cluster on the port it runs on (one started with PGPORT=N), instead of advising
`make db-stop`.

The cluster is a real one, made for the test in a copy of the checkout's build files (a cluster
belongs to its checkout), on a free port, and removed after."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from core_fixtures import REPO_ROOT
from testkit.ports import free_port

# What `make psql` needs: the Makefile, its scripts, the Sqitch project, and the files the venv
# stamp depends on (the venv itself is the one running the tests).
BUILD_FILES = (
    "Makefile", "pyproject.toml", "pyworker/__init__.py", "crawler/pyproject.toml", "sqitch.conf",
    "sqitch.plan",
)
BUILD_DIRS = ("scripts", "deploy", "revert", "verify", "registry", "crawler/sqitch")


def checkout_copy(root: Path) -> Path:
    """A checkout with the build files of this one, its venv this test's, up to date."""
    for name in BUILD_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, root / name)
        # Older than the venv's stamp: `make deps` must find the venv installed, never reinstall it.
        os.utime(root / name, (0, 0))
    for name in BUILD_DIRS:
        shutil.copytree(REPO_ROOT / name, root / name, symlinks=True)
    (root / ".venv").symlink_to(Path(sys.prefix))
    return root


def a_newcomers_environment() -> dict[str, str]:
    """This process's environment less what points at a server or configures make: a shell in
    which nobody exported DATABASE_URL or PGPORT."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PG", "MAKE"))
        and name not in ("DATABASE_URL", "SQITCH_TARGET", "MFLAGS")
    }


def test_make_psql_deploys_and_uses_the_cluster_on_the_port_it_runs_on(tmp_path: Path) -> None:
    checkout = checkout_copy(tmp_path / "taskpool")
    env = a_newcomers_environment()
    port = free_port()
    cluster = checkout / "scripts" / "cluster"
    subprocess.run([cluster, "up", "--port", str(port)], env=env, check=True, capture_output=True)
    try:
        result = subprocess.run(
            ["make", "psql"],
            cwd=checkout,
            env=env,
            input="\\set ON_ERROR_STOP on\n"
            "SELECT current_database() || ' on port ' || current_setting('port') AS server;\n"
            "SELECT claim_task('product_resync', 'w1');\n",
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        subprocess.run([cluster, "remove"], env=env, capture_output=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"taskpool on port {port}" in result.stdout, output
    assert "claim_task" in result.stdout, output
