"""Handlers registered without editing pyworker: a --handlers module, or the entry-point group."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pyworker.errors import ConfigurationError
from pyworker.handlers import ENTRY_POINT_GROUP, Registry, load


def test_an_installed_package_registers_its_handlers_through_the_entry_point_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A package "installed" on sys.path: its module and its dist-info naming the entry point.
    (tmp_path / "acme_tasks.py").write_text(
        "def register(registry):\n"
        "    registry.register('acme_role', lambda task: {'done': True})\n"
    )
    dist_info = tmp_path / "acme_tasks-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-tasks\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nacme = acme_tasks:register\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "acme_tasks", raising=False)

    registry = Registry()
    load([], registry)

    assert registry.roles == ["acme_role"]


def test_an_installed_package_whose_handlers_fail_to_load_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "acme_broken_tasks.py").write_text("import no_such_dependency\n")
    dist_info = tmp_path / "acme_broken_tasks-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-broken-tasks\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nacme = acme_broken_tasks\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigurationError) as raised:
        load([], Registry())
    assert str(raised.value) == (
        "cannot load the handlers of entry point 'acme' (acme_broken_tasks, from acme-broken-tasks"
        f" 1.0, group {ENTRY_POINT_GROUP}): ModuleNotFoundError: No module named 'no_such_dependency'"
    )


def test_a_handler_module_that_cannot_be_imported_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="cannot import handler module 'no_such_module'") as raised:
        load(["no_such_module"], Registry())
    assert "PYTHONPATH" in str(raised.value)


def test_a_handler_module_that_fails_its_own_import_names_what_it_could_not_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_tasks.py").write_text("import no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigurationError) as raised:
        load(["broken_tasks"], Registry())
    assert str(raised.value) == "cannot import handler module 'broken_tasks': No module named 'no_such_dependency'"
