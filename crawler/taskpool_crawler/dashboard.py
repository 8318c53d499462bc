"""The crawler's dashboard pages: stores, payloads, what changed on a menu between two, and the
proxies platform requests go through; and its part of the seeds' API: a crawl of every active
store of a state (enqueue_state_crawl, behind the bearer token), a payload's stored body and a
store's latest payload.

Added to `pyworker dashboard` by the package's `pyworker.dashboard` entry point
(crawler/pyproject.toml), as its commands are added to `pyworker`; each page is also JSON under
/api/. The diff is SQL (diff_payloads, diff_latest_payloads), shown as `pyworker payloads diff`
shows it; /api/payloads/store/ID/diff is the seed's endpoint, with the CLI's --json document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pyworker.contrib.dashboard import (
    DashboardPages,
    api_authorized,
    check_params,
    int_param,
    json_body,
    json_response,
    load_exact_json,
    masked_text,
    open_database,
    paging,
    path_id,
    respond,
    text_param,
)
from pyworker import NotFound
from taskpool_crawler import storage
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


# The seeds' API


STATE_CRAWL_FIELDS = ("role", "state", "dry_run")


def state_crawl_fields(body: Any) -> tuple[str, str, bool]:
    """The role, state and dry_run of an enqueue-state body, each checked for its type (the
    database checks the values), else a 400 naming it."""
    if not isinstance(body, dict):
        raise HTTPException(400, "the body must be a JSON object: role, state and dry_run (optional)")
    unknown = sorted(set(body) - set(STATE_CRAWL_FIELDS))
    if unknown:
        raise HTTPException(400, f"unknown field {unknown[0]!r}: the body takes {', '.join(STATE_CRAWL_FIELDS)}")
    for name in ("role", "state"):
        if not isinstance(body.get(name), str):
            given = "none" if name not in body else repr(body[name])[:100]
            raise HTTPException(400, f"{name} is required and must be a string, not {given}")
        if "\x00" in body[name]:
            raise HTTPException(400, f"{name} must not contain a NUL character")
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise HTTPException(400, f"dry_run must be true or false, not {str(dry_run)[:100]!r}")
    return body["role"], body["state"], dry_run


def queued_state_crawl(request: Request, role: str, state: str, dry_run: bool) -> dict[str, Any]:
    with open_database(request, CrawlerDatabase) as db:
        return db.enqueue_state_crawl(role, state, dry_run=dry_run)


async def enqueue_state(request: Request) -> Response:
    """POST /api/tasks/enqueue-state (seed 001's /api/job-queue/enqueue-state): a task of `role`
    for every active store of `state` (enqueue_state_crawl), as `pyworker stores crawl` queues
    them; its --json document, 201 when it queued some."""
    api_authorized(request)
    check_params(request)
    role, state, dry_run = state_crawl_fields(await json_body(request))
    counts = await run_in_threadpool(queued_state_crawl, request, role, state, dry_run)
    made = counts["made"] and not dry_run
    return json_response({"role": role, "state": state, "dry_run": dry_run, **counts}, 201 if made else 200)


def stored_body(row: dict[str, Any]) -> bytes:
    """The payload's body as the crawl stored it, decompressed and checked against its sha256;
    an HTTP error saying why it cannot be read (404: its file is gone; 503: the storage does not
    answer; 500: the file is not what its row says)."""
    try:
        return storage.load_payload(row["storage_path"], row["sha256"])
    except storage.PayloadFileMissing as error:
        raise HTTPException(404, f"payload {row['id']} is recorded but its file is gone: {error}") from error
    except storage.StorageUnavailable as error:
        raise HTTPException(503, f"the payload storage does not answer: {error}") from error
    except (storage.PayloadFileCorrupt, storage.PayloadPathRefused) as error:
        raise HTTPException(500, f"payload {row['id']} cannot be read: {error}") from error


def payload_data(request: Request) -> Response:
    """GET /api/payloads/ID/data: the payload's body, decompressed, as stored (a URL's
    credentials in it masked, as everywhere on the dashboard)."""
    check_params(request)
    payload_id = path_id(request, "payload_id")
    with open_database(request, CrawlerDatabase) as db:
        row = db.get_payload(payload_id)
    if row is None:
        raise NotFound(f"payload {payload_id} does not exist")
    # surrogateescape: bytes that are not UTF-8 go back out as they came.
    text = masked_text(stored_body(row).decode("utf-8", "surrogateescape"))
    return Response(
        text.encode("utf-8", "surrogateescape"),
        media_type="application/json",
        headers={"X-Payload-Id": str(payload_id)},
    )


def latest_payload(request: Request) -> Response:
    """GET /api/payloads/store/ID/latest: the store's newest payload (by fetch), {"payload": its
    row, "data": its body}; 404 for an unknown store or one never crawled."""
    check_params(request)
    store_id = path_id(request, "store_id", maximum=MAX_STORE_ID)
    with open_database(request, CrawlerDatabase) as db:
        db.get_dispensary(store_id)
        newest = db.list_payloads(store=store_id, limit=1)
        if not newest:
            raise NotFound(f"dispensary {store_id} has no payload yet")
        row = db.get_payload(newest[0]["id"])
    assert row is not None
    body = stored_body(row)
    try:
        data = load_exact_json(body)
    except (ValueError, RecursionError) as error:
        raise HTTPException(
            422, f"payload {row['id']}, the newest of dispensary {store_id}, is not JSON ({str(error)[:200]}):"
            f" its body as stored is /api/payloads/{row['id']}/data"
        ) from error
    return json_response({"payload": row, "data": data})


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
        Route("/api/payloads/{payload_id}/data", payload_data),
        Route("/api/payloads/store/{store_id}/latest", latest_payload),
        Route("/api/tasks/enqueue-state", enqueue_state, methods=["POST"]),
        Route("/api/job-queue/enqueue-state", enqueue_state, methods=["POST"]),
    ],
    templates=Path(__file__).resolve().parent / "dashboard_templates",
    menu=[("Stores", "/stores"), ("Payloads", "/payloads"), ("Proxies", "/proxies")],
)
