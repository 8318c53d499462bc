"""Pages other packages add to the dashboard: the `pyworker.dashboard` entry points.

Each entry point names a `DashboardPages` (or a function of no arguments returning one): routes
mounted beside the core's, a folder of templates (rendered with `pyworker.contrib.dashboard.render`, so
they extend the core's base.html), and links for the menu. One that cannot be loaded, is not a
DashboardPages or claims a path the dashboard has already is left out and shown on every page as
a warning, as a broken command plug-in is by the CLI: the core pages work whatever an installed
package does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from starlette.routing import BaseRoute, Route

DASHBOARD_ENTRY_POINT_GROUP = "pyworker.dashboard"


@dataclass(frozen=True)
class DashboardPages:
    """What a package adds to the dashboard.

    routes: Starlette routes, their paths absolute (`/stores`, `/api/stores`); templates: the
    folder of their templates (names unique to the package: `crawler/stores.html`); menu: (label,
    path) links added to the menu, after the core's.
    """

    routes: Sequence[BaseRoute]
    templates: Path | None = None
    menu: Sequence[tuple[str, str]] = field(default_factory=tuple)


@dataclass
class LoadedPlugins:
    pages: list[DashboardPages]
    # The entry points that could not be added: why, by name.
    broken: dict[str, str]


def _route_paths(routes: Sequence[BaseRoute]) -> set[str]:
    return {route.path for route in routes if isinstance(route, Route)}


def _problem(entry_point: EntryPoint, cause: str) -> str:
    dist = getattr(entry_point, "dist", None)
    package = f"{dist.name} {dist.version}" if dist is not None else "its package"
    return (
        f"the dashboard plug-in {entry_point.name!r} ({entry_point.value}, from {package}, entry"
        f" point group {DASHBOARD_ENTRY_POINT_GROUP}) cannot be loaded: {cause}"
    )


def load_plugins(core_routes: Sequence[BaseRoute]) -> LoadedPlugins:
    """The pages of every `pyworker.dashboard` entry point that loads and fits."""
    taken = _route_paths(core_routes)
    loaded = LoadedPlugins(pages=[], broken={})
    for entry_point in entry_points(group=DASHBOARD_ENTRY_POINT_GROUP):
        try:
            pages = entry_point.load()
            if callable(pages) and not isinstance(pages, DashboardPages):
                pages = pages()
        except Exception as error:
            loaded.broken[entry_point.name] = _problem(entry_point, f"{type(error).__name__}: {error}")
            continue
        if not isinstance(pages, DashboardPages):
            loaded.broken[entry_point.name] = _problem(
                entry_point, f"it names an object of type {type(pages).__name__}, not a DashboardPages"
            )
            continue
        clashes = _route_paths(pages.routes) & taken
        if clashes:
            loaded.broken[entry_point.name] = _problem(
                entry_point, f"the dashboard has {', '.join(sorted(clashes))} already"
            )
            continue
        taken |= _route_paths(pages.routes)
        loaded.pages.append(pages)
    return loaded
