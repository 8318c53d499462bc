"""The crawler's dashboard pages: stores, payloads, what changed on a menu between two, and the
proxies platform requests go through.

Added to `pyworker dashboard` by the package's `pyworker.dashboard` entry point
(crawler/pyproject.toml), as its commands are added to `pyworker`; each page is also JSON under
/api/. The diff is SQL (diff_payloads, diff_latest_payloads), shown as `pyworker payloads diff`
shows it; /api/payloads/store/ID/diff is the seed's endpoint, with the CLI's --json document.
"""

from __future__ import annotations

from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pyworker.contrib.dashboard import (
    DashboardPages,
    check_params,
    int_param,
    open_database,
    paging,
    path_id,
    respond,
    text_param,
)
from pyworker import NotFound
from taskpool_crawler.cli import DIFF_SECTIONS, PAYLOAD_STATUSES, diff_json
from taskpool_crawler.db import CrawlerDatabase

PER_PAGE = 50
# A store's page lists its newest payloads, this many.
STORE_PAYLOADS = 20
# Store ids are integers, payload ids bigints.
MAX_STORE_ID = 2**31 - 1
MAX_PAYLOAD_ID = 2**63 - 1


def stores(request: Request) -> Response:
    check_params(request, "page")
    # The page's offset must fit the database's integer.
    page = int_param(request, "page", maximum=(2**31 - 1) // PER_PAGE) or 1
    with open_database(request, CrawlerDatabase) as db:
        rows = db.list_stores(limit=PER_PAGE, offset=(page - 1) * PER_PAGE)
        paged = paging({}, total=db.count_stores(), page=page, limit=PER_PAGE)
    return respond(
        request, {"stores": rows, **paged.as_json()}, "crawler/stores.html", {"stores": rows, "paging": paged}
    )


def store(request: Request) -> Response:
    check_params(request)
    store_id = path_id(request, "store_id", maximum=MAX_STORE_ID)
    with open_database(request, CrawlerDatabase) as db:
        row = db.get_store(store_id)
        if row is None:
            raise NotFound(f"dispensary {store_id} does not exist")
        payloads = db.list_payloads(store=store_id, limit=STORE_PAYLOADS)
    found = {"store": row, "payloads": payloads}
    return respond(request, found, "crawler/store.html", found)


def payloads(request: Request) -> Response:
    check_params(request, "store", "status", "page")
    filters = {"store": int_param(request, "store", minimum=-(2**31)), "status": text_param(request, "status")}
    if filters["status"] is not None and filters["status"] not in PAYLOAD_STATUSES:
        raise HTTPException(400, f"status must be one of {', '.join(PAYLOAD_STATUSES)}, not {filters['status']!r}")
    page = int_param(request, "page", maximum=(2**31 - 1) // PER_PAGE) or 1
    with open_database(request, CrawlerDatabase) as db:
        if filters["store"] is not None:
            db.get_dispensary(filters["store"])
        rows = db.list_payloads(**filters, limit=PER_PAGE, offset=(page - 1) * PER_PAGE)
        paged = paging(filters, total=db.count_payloads(**filters), page=page, limit=PER_PAGE)
    return respond(request, {"payloads": rows, **paged.as_json()}, "crawler/payloads.html", {
        "payloads": rows, "paging": paged, "filters": filters, "statuses": PAYLOAD_STATUSES,
    })


def payload(request: Request) -> Response:
    check_params(request)
    payload_id = path_id(request, "payload_id")
    with open_database(request, CrawlerDatabase) as db:
        row = db.get_payload(payload_id)
    if row is None:
        raise NotFound(f"payload {payload_id} does not exist")
    return respond(request, row, "crawler/payload.html", {"payload": row})


def diff(request: Request) -> Response:
    """Between payloads ?from=A&to=B, or the two newest applied of /stores/ID/diff's store."""
    if "store_id" in request.path_params:
        check_params(request)
        store_id = path_id(request, "store_id", maximum=MAX_STORE_ID)
    else:
        check_params(request, "from", "to")
        store_id = None
    with open_database(request, CrawlerDatabase) as db:
        if store_id is not None:
            document = db.diff_latest_payloads(store_id)
        else:
            from_id = int_param(request, "from", maximum=MAX_PAYLOAD_ID)
            to_id = int_param(request, "to", maximum=MAX_PAYLOAD_ID)
            if from_id is None or to_id is None:
                raise HTTPException(400, "give two payload ids: ?from=A&to=B")
            document = db.diff_payloads(from_id, to_id)
    return respond(
        request, diff_json(document, details=True), "crawler/diff.html", {"diff": document, "sections": DIFF_SECTIONS}
    )


def proxies(request: Request) -> Response:
    """v_crawler_proxies: each proxy's state and figures (passwords masked), ?platform= to filter."""
    check_params(request, "platform")
    platform = text_param(request, "platform")
    with open_database(request, CrawlerDatabase) as db:
        rows = db.list_proxies(platform)
    return respond(
        request, {"proxies": rows}, "crawler/proxies.html", {"proxies": rows, "platform": platform}
    )


PAGES = DashboardPages(
    routes=[
        Route("/stores", stores),
        Route("/api/stores", stores),
        Route("/stores/{store_id}", store),
        Route("/api/stores/{store_id}", store),
        Route("/stores/{store_id}/diff", diff),
        Route("/api/payloads/store/{store_id}/diff", diff),
        Route("/payloads", payloads),
        Route("/api/payloads", payloads),
        Route("/payloads/diff", diff),
        Route("/api/payloads/diff", diff),
        Route("/payloads/{payload_id}", payload),
        Route("/api/payloads/{payload_id}", payload),
        Route("/proxies", proxies),
        Route("/api/proxies", proxies),
    ],
    templates=Path(__file__).resolve().parent / "dashboard_templates",
    menu=[("Stores", "/stores"), ("Payloads", "/payloads"), ("Proxies", "/proxies")],
)
