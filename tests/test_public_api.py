"""What an application imports comes from the package itself, and loading it costs the worker
nothing it does not use."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys

import pyworker
from pyworker import client, errors, handlers


def test_a_handler_module_imports_everything_it_needs_from_pyworker() -> None:
    from pyworker import Completion, PermanentError, Snooze, handler

    assert handler == handlers.registry.handler
    assert (Completion, PermanentError, Snooze) == (handlers.Completion, errors.PermanentError, errors.Snooze)


def test_every_name_in_all_is_importable_and_is_the_modules_own() -> None:
    for name in pyworker.__all__:
        assert getattr(pyworker, name) is not None, name
    assert pyworker.Client is client.Client


def test_importing_pyworker_loads_neither_the_client_nor_the_worker() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, pyworker; print(sorted(m for m in sys.modules if m.startswith('pyworker')))"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert loaded.strip() == "['pyworker']"


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    try:
        pyworker.no_such_thing  # noqa: B018
    except AttributeError as error:
        assert "no_such_thing" in str(error)
    else:
        raise AssertionError("pyworker.no_such_thing did not raise")


def test_type_checkers_see_every_exported_name_from_its_own_module() -> None:
    """The TYPE_CHECKING imports (what mypy reads, py.typed) match what __getattr__ serves: a
    name missing there would be an error to a type checker, one from elsewhere another type."""
    tree = ast.parse(inspect.getsource(pyworker))
    (block,) = [
        node for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    seen = {
        alias.asname: node.module
        for node in block.body if isinstance(node, ast.ImportFrom)
        for alias in node.names if alias.asname == alias.name
    }
    assert seen == pyworker._MODULE_OF
