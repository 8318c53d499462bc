"""The crawler's SQL, one call per method, on the core's connection handling.

`CrawlerDatabase` is a pyworker `Database` (one autocommit connection, errors translated, the
core's methods: transactions) with the crawler's calls added (platform governance among them:
the core schema's rate limit and circuit breaker, which only the crawler's handlers ask)
through its public `query` and `query_one`. The handlers, the `payloads` and `resync` commands
and the demo use it; the queue core knows nothing of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from psycopg.types.json import Jsonb

from pyworker import Database

# The handlers' side: stores found and resolved, payloads, analytics (granted to taskpool_worker)
ADD_STORE = (
    "SELECT * FROM add_store(%(name)s::text, platform => %(platform)s::text,"
    " state_code => %(state_code)s::text, city => %(city)s::text, menu_url => %(menu_url)s::text)"
)
GET_DISPENSARY = "SELECT * FROM get_dispensary(%(dispensary_id)s::integer)"
SET_STORE_PLATFORM_ID = (
    "SELECT * FROM set_store_platform_id(%(dispensary_id)s::integer,"
    " %(platform_dispensary_id)s::text)"
)
UPSERT_DISCOVERED_STORES = (
    "SELECT upsert_discovered_stores(%(platform)s::text, %(stores)s::jsonb) AS new_store_ids"
)
RECORD_CRAWL_PAYLOAD = (
    "SELECT record_crawl_payload(%(dispensary_id)s::integer, %(fetched_at)s::timestamptz,"
    " %(storage_path)s::text, %(size_bytes)s::integer, %(sha256)s::text) AS payload_id"
)
GET_CRAWL_PAYLOAD = "SELECT * FROM get_crawl_payload(%(payload_id)s::bigint)"
MARK_PAYLOAD_CORRUPT = (
    "SELECT mark_payload_corrupt(%(payload_id)s::bigint, %(error_message)s::text)"
)
APPLY_MENU_PAYLOAD = (
    "SELECT apply_menu_payload(%(payload_id)s::bigint, %(products)s::jsonb) AS result"
)
# The ids apply_menu_payload gives products without one, in the products' order.
PRODUCT_HASH_IDS = (
    "SELECT coalesce(jsonb_agg(product_hash_id(p.product ->> 'name', p.product ->> 'brand',"
    " p.product ->> 'category', p.product ->> 'size') ORDER BY p.n), '[]') AS ids"
    " FROM jsonb_array_elements(%(products)s::jsonb) WITH ORDINALITY AS p(product, n)"
)
REFRESH_ANALYTICS = "SELECT refresh_analytics() AS report"
LINK_PRODUCT_IMAGES = (
    "SELECT link_product_images(%(payload_id)s::bigint, %(images)s::jsonb) AS result"
)
RECORD_PRODUCT_IMAGE = (
    "SELECT record_product_image(%(image_url)s::text, %(sha256)s::text, %(storage_key)s::text,"
    " %(size_bytes)s::integer, %(content_type)s::text) AS image"
)
RECORD_IMAGE_DOWNLOAD_FAILURE = (
    "SELECT record_image_download_failure(%(image_url)s::text, %(error_message)s::text)"
)
PAYLOAD_FILES_TO_REMOVE = "SELECT payload_files_to_remove(%(max_files)s::integer) AS storage_path"
TASKPOOL_NOW = "SELECT taskpool_now() AS now"
UNRECORDED_PAYLOAD_PATHS = "SELECT unrecorded_payload_paths(%(storage_paths)s::text[]) AS storage_path"
FORGET_REMOVED_PAYLOAD_FILES = (
    "SELECT forget_removed_payload_files(%(storage_paths)s::text[]) AS forgotten"
)
# Proxies: the handlers take one per platform request and report how it went
TAKE_PROXY = "SELECT * FROM take_proxy(%(platform)s::text)"
REPORT_PROXY_RESULT = (
    "SELECT report_proxy_result(%(proxy_id)s::bigint, %(succeeded)s::boolean, %(error)s::text)"
    " AS rested_until"
)
# The operator's side of proxies (pyworker proxies ..., the demo)
ADD_PROXY = (
    "SELECT * FROM add_proxy(%(platform)s::text, %(url)s::text,"
    " coalesce(%(rest_base)s::interval, '30 seconds'), coalesce(%(rest_cap)s::interval, '30 minutes'))"
)
REMOVE_PROXY = "SELECT * FROM remove_proxy(%(proxy_id)s::bigint)"
ENABLE_PROXY = "SELECT * FROM enable_proxy(%(proxy_id)s::bigint)"
DISABLE_PROXY = "SELECT * FROM disable_proxy(%(proxy_id)s::bigint)"
LIST_PROXIES = (
    "SELECT * FROM v_crawler_proxies"
    " WHERE %(platform)s::text IS NULL OR platform = %(platform)s::text ORDER BY platform, id"
)
SET_PROXIES_REQUIRED = "SELECT * FROM set_proxies_required(%(platform)s::text, %(required)s::boolean)"
LIST_PROXY_PLATFORMS = "SELECT * FROM v_crawler_proxy_platforms ORDER BY platform"
# The operator's side (tables read directly: operators run as the schema owner)
# `payloads list`'s filters, each left out when NULL: the page and its count read the same rows.
_PAYLOAD_FILTERS = (
    " WHERE (%(store)s::integer IS NULL OR p.dispensary_id = %(store)s::integer)"
    "   AND (%(status)s::text IS NULL OR p.status = %(status)s::text)"
)
LIST_PAYLOADS = (
    "SELECT p.id, p.dispensary_id, d.name AS store_name, d.platform, p.fetched_at, p.status,"
    " p.product_count, p.size_bytes, p.storage_path, p.error_message"
    " FROM raw_crawl_payloads p JOIN dispensaries d ON d.id = p.dispensary_id" + _PAYLOAD_FILTERS
    + " ORDER BY p.fetched_at DESC, p.id DESC LIMIT %(limit)s::integer OFFSET %(offset)s::integer"
)
COUNT_PAYLOADS = "SELECT count(*) AS payloads FROM raw_crawl_payloads p" + _PAYLOAD_FILTERS
GET_PAYLOAD = (
    "SELECT p.id, p.dispensary_id, d.name AS store_name, d.platform, d.platform_dispensary_id,"
    " p.fetched_at, p.status, p.product_count, p.size_bytes, p.sha256, p.storage_path,"
    " p.applied_at, p.apply_result, p.error_message"
    " FROM raw_crawl_payloads p JOIN dispensaries d ON d.id = p.dispensary_id"
    " WHERE p.id = %(payload_id)s::bigint"
)
IMAGE_COUNTS = (
    "SELECT count(*) FILTER (WHERE t.status = 'completed') AS downloaded,"
    " count(*) FILTER (WHERE t.status = 'failed') AS failed,"
    " (SELECT count(*) FROM product_images) AS unique_images,"
    " (SELECT coalesce(sum(size_bytes), 0) FROM product_images) AS stored_bytes,"
    " (SELECT count(*) FROM product_image_urls) AS urls,"
    " (SELECT count(*) FROM store_product_images) AS linked_products"
    " FROM worker_tasks_with_history t WHERE t.role = 'image_download'"
)
PRODUCT_ID_COUNTS = (
    "SELECT (SELECT count(*) FROM store_products) AS products,"
    " (SELECT count(*) FROM store_products WHERE platform_product_id LIKE 'hash:%%') AS hashed,"
    " (SELECT coalesce(sum(jsonb_array_length(apply_result -> 'duplicates')), 0) FROM raw_crawl_payloads"
    "  WHERE status = 'applied' AND apply_result ? 'duplicates') AS duplicates"
)
LIST_STORES = "SELECT * FROM v_stores ORDER BY id LIMIT %(limit)s::integer OFFSET %(offset)s::integer"
COUNT_STORES = "SELECT count(*) AS stores FROM dispensaries"
GET_STORE = "SELECT * FROM v_stores WHERE id = %(store_id)s::integer"
DIFF_PAYLOADS = (
    "SELECT diff_payloads(%(from_payload_id)s::bigint, %(to_payload_id)s::bigint) AS diff"
)
DIFF_LATEST_PAYLOADS = "SELECT diff_latest_payloads(%(dispensary_id)s::integer) AS diff"
# Tuning (the demo's time compression, an operator's hand): plain writes as the schema owner
SET_ROLE_BACKOFF = (
    "UPDATE task_roles SET backoff_base = %(backoff_base)s::interval, backoff_cap = %(backoff_cap)s::interval"
    " WHERE role = %(role)s::text RETURNING role"
)
SET_PLATFORM_LIMITS = (
    "INSERT INTO platform_governance AS g (platform, requests_per_minute, cooldown)"
    " VALUES (%(platform)s::text, %(requests_per_minute)s::integer, %(cooldown)s::interval)"
    " ON CONFLICT (platform) DO UPDATE"
    " SET requests_per_minute = excluded.requests_per_minute, cooldown = excluded.cooldown"
    " RETURNING g.platform, g.requests_per_minute, g.failure_threshold, g.cooldown"
)
ACTIVE_STORE_IDS = "SELECT id FROM dispensaries WHERE active ORDER BY id"
STORES_WITH_APPLIED_PAYLOADS = (
    "SELECT dispensary_id FROM raw_crawl_payloads WHERE status = 'applied'"
    " GROUP BY dispensary_id HAVING count(*) >= %(at_least)s::integer"
    " ORDER BY dispensary_id LIMIT %(limit)s::integer"
)
PAYLOAD_TOTALS = (
    "SELECT count(*)::integer AS payloads, coalesce(sum(size_bytes), 0)::bigint AS size_bytes"
    " FROM raw_crawl_payloads"
)
PAYLOAD_COUNTS = "SELECT status, count(*) AS payloads FROM raw_crawl_payloads GROUP BY status ORDER BY status"
ATTEMPT_ERRORS = (
    "SELECT error_message, count(*) AS attempts FROM"
    " (SELECT error_message, outcome FROM worker_task_attempts"
    "  UNION ALL SELECT error_message, outcome FROM worker_task_attempt_history) a"
    " WHERE outcome IN ('retried', 'failed') GROUP BY error_message ORDER BY attempts DESC"
)
PLATFORM_EVENTS = (
    "SELECT id, platform, event, at, consecutive_failures, error_message FROM platform_events"
    " ORDER BY at, id"
)
WAITING_TASKS = (
    "SELECT w.*, extract(epoch FROM w.ready_at - taskpool_now())::float8 AS ready_in_seconds"
    " FROM v_waiting_tasks w WHERE w.role = ANY(%(roles)s::text[])"
    " ORDER BY w.ready_at NULLS FIRST, w.id"
)
ENQUEUE_STATE_CRAWL = (
    "SELECT made, already_active FROM enqueue_state_crawl(%(role)s::text, %(state)s::text, %(dry_run)s::boolean)"
)
# Planning: the day defaults to today in the plan's time zone, as the daily_resync_plan schedule's planner (plan_product_resync) takes it.
GENERATE_RESYNC_TASKS = (
    "WITH plan AS (SELECT coalesce(%(time_zone)s::text, current_setting('TimeZone')) AS time_zone)"
    " SELECT d.day, p.time_zone, r.created, r.already_planned, r.resync_under_way"
    " FROM plan p CROSS JOIN LATERAL (SELECT coalesce(%(day)s::date,"
    " (taskpool_now() AT TIME ZONE p.time_zone)::date) AS day) d"
    " CROSS JOIN LATERAL generate_resync_plan(%(batches)s::integer, d.day, p.time_zone,"
    " %(priority)s::integer) r"
)

# Platform governance: the per-platform rate limit and circuit breaker (the core schema's)
RESERVE_PLATFORM_REQUEST = "SELECT reserve_platform_request(%(platform)s::text) AS wait_seconds"
RECORD_PLATFORM_RESULT = (
    "SELECT record_platform_result(%(platform)s::text, %(succeeded)s::boolean,"
    " %(error_message)s::text) AS circuit"
)

class CrawlerDatabase(Database):
    """One connection to the taskpool database, with the crawler's calls."""

    def reserve_platform_request(self, platform: str) -> float:
        """Take the platform's next token for one request: the seconds to wait before sending it
        (0: now), without asking again; Refused while the platform's circuit is open."""
        return self.query_one(RESERVE_PLATFORM_REQUEST, {"platform": platform})["wait_seconds"]

    def record_platform_result(
        self, platform: str, succeeded: bool, error_message: str | None = None
    ) -> str:
        """Report a platform request's outcome to the circuit breaker; 'closed' or 'open'."""
        return self.query_one(
            RECORD_PLATFORM_RESULT,
            {"platform": platform, "succeeded": succeeded, "error_message": error_message},
        )["circuit"]

    def get_dispensary(self, dispensary_id: int) -> dict[str, Any]:
        """The store's dispensaries row; NotFound when there is none."""
        return self.query_one(GET_DISPENSARY, {"dispensary_id": dispensary_id})

    def add_store(
        self,
        name: str,
        *,
        platform: str | None = None,
        state_code: str | None = None,
        city: str | None = None,
        menu_url: str | None = None,
    ) -> dict[str, Any]:
        """The new store's row; InvalidInput naming a bad value, Refused for a menu URL taken."""
        return self.query_one(
            ADD_STORE,
            {"name": name, "platform": platform, "state_code": state_code, "city": city, "menu_url": menu_url},
        )

    def set_store_platform_id(self, dispensary_id: int, platform_dispensary_id: str) -> dict[str, Any]:
        """Record the store's id on its platform; the store's row."""
        return self.query_one(
            SET_STORE_PLATFORM_ID,
            {"dispensary_id": dispensary_id, "platform_dispensary_id": platform_dispensary_id},
        )

    def upsert_discovered_stores(self, platform: str, stores: list[dict[str, Any]]) -> list[int]:
        """Insert or update the platform's stores; the ids of those that were new."""
        row = self.query_one(UPSERT_DISCOVERED_STORES, {"platform": platform, "stores": Jsonb(stores)})
        return list(row["new_store_ids"])

    def record_crawl_payload(
        self, dispensary_id: int, fetched_at: datetime, storage_path: str, size_bytes: int, sha256: str
    ) -> int:
        """Record a payload stored (a file or an object); its id."""
        return self.query_one(
            RECORD_CRAWL_PAYLOAD,
            {
                "dispensary_id": dispensary_id,
                "fetched_at": fetched_at,
                "storage_path": storage_path,
                "size_bytes": size_bytes,
                "sha256": sha256,
            },
        )["payload_id"]

    def get_crawl_payload(self, payload_id: int) -> dict[str, Any]:
        """The payload's raw_crawl_payloads row; NotFound when there is none."""
        return self.query_one(GET_CRAWL_PAYLOAD, {"payload_id": payload_id})

    def mark_payload_corrupt(self, payload_id: int, error_message: str) -> None:
        self.query_one(MARK_PAYLOAD_CORRUPT, {"payload_id": payload_id, "error_message": error_message})

    def apply_menu_payload(self, payload_id: int, products: list[dict[str, Any]]) -> dict[str, Any]:
        """Apply a payload's normalized products; what changed (products, added, updated, ...)."""
        return self.query_one(APPLY_MENU_PAYLOAD, {"payload_id": payload_id, "products": Jsonb(products)})[
            "result"
        ]

    def product_hash_ids(self, products: list[dict[str, Any]]) -> list[str]:
        """product_hash_id of each product ({"name", "brand", "category", "size"}), in order: the
        ids apply_menu_payload gives the products that have none."""
        if not products:
            return []
        return self.query_one(PRODUCT_HASH_IDS, {"products": Jsonb(products)})["ids"]

    def payload_files_to_remove(self, max_files: int) -> list[str]:
        """The storage paths of payloads retention deleted whose files are still to go."""
        return [row["storage_path"] for row in self.query(PAYLOAD_FILES_TO_REMOVE, {"max_files": max_files})]

    def forget_removed_payload_files(self, storage_paths: list[str]) -> int:
        """Take removed files out of the outbox; how many rows went."""
        return self.query_one(FORGET_REMOVED_PAYLOAD_FILES, {"storage_paths": storage_paths})["forgotten"]

    def link_product_images(self, payload_id: int, images: list[dict[str, Any]]) -> dict[str, Any]:
        """Link an applied payload's products ({"id", "image_url"}) to their images, queueing the
        downloads; what it did (linked, unlinked, queued, stored, superseded)."""
        return self.query_one(LINK_PRODUCT_IMAGES, {"payload_id": payload_id, "images": Jsonb(images)})[
            "result"
        ]

    def record_product_image(
        self, image_url: str, sha256: str, storage_key: str, size_bytes: int, content_type: str
    ) -> dict[str, Any]:
        """Record an image stored at its content-addressed key; {"sha256", "storage_key", "new"}."""
        return self.query_one(
            RECORD_PRODUCT_IMAGE,
            {
                "image_url": image_url,
                "sha256": sha256,
                "storage_key": storage_key,
                "size_bytes": size_bytes,
                "content_type": content_type,
            },
        )["image"]

    def record_image_download_failure(self, image_url: str, error_message: str) -> None:
        self.query_one(
            RECORD_IMAGE_DOWNLOAD_FAILURE, {"image_url": image_url, "error_message": error_message}
        )

    def now(self) -> datetime:
        """The database's clock (taskpool_now(): the operator's clock offset included)."""
        return self.query_one(TASKPOOL_NOW)["now"]

    def unrecorded_payload_paths(self, storage_paths: list[str]) -> list[str]:
        """Those of `storage_paths` that no payload row names (the storage sweep removes them)."""
        return [row["storage_path"] for row in self.query(UNRECORDED_PAYLOAD_PATHS, {"storage_paths": storage_paths})]

    def refresh_analytics(self) -> dict[str, Any]:
        """Refresh the analytics views; the rows each holds."""
        return self.query_one(REFRESH_ANALYTICS)["report"]

    def take_proxy(self, platform: str) -> dict[str, Any] | None:
        """The proxy the platform's next request goes through ({"proxy_id", "url", "label",
        "back_in_seconds"}); None when the platform has no enabled proxy (go direct). proxy_id
        None: every enabled proxy is rested, the first back in back_in_seconds; back_in_seconds
        None too: the platform requires proxies and has none enabled (never go direct)."""
        return self.query_one(TAKE_PROXY, {"platform": platform})

    def report_proxy_result(self, proxy_id: int, succeeded: bool, error: str | None = None) -> datetime | None:
        """Record a request's outcome at the proxy; until when a failure rests it (None after a
        success, or for a proxy removed since)."""
        return self.query_one(
            REPORT_PROXY_RESULT, {"proxy_id": proxy_id, "succeeded": succeeded, "error": error}
        )["rested_until"]

    # The operator's side (pyworker payloads ..., resync generate, proxies ..., the demo)

    def add_proxy(
        self, platform: str, url: str, *, rest_base: str | None = None, rest_cap: str | None = None
    ) -> dict[str, Any]:
        """The new proxy's v_crawler_proxies row (credentials masked); InvalidInput naming a bad
        value, Refused for a URL the platform has already."""
        return self.query_one(
            ADD_PROXY, {"platform": platform, "url": url, "rest_base": rest_base, "rest_cap": rest_cap}
        )

    def remove_proxy(self, proxy_id: int) -> dict[str, Any]:
        """The removed proxy's row; NotFound for an unknown id."""
        return self.query_one(REMOVE_PROXY, {"proxy_id": proxy_id})

    def enable_proxy(self, proxy_id: int) -> dict[str, Any]:
        return self.query_one(ENABLE_PROXY, {"proxy_id": proxy_id})

    def disable_proxy(self, proxy_id: int) -> dict[str, Any]:
        return self.query_one(DISABLE_PROXY, {"proxy_id": proxy_id})

    def list_proxies(self, platform: str | None = None) -> list[dict[str, Any]]:
        """v_crawler_proxies, by platform and id: every proxy with its health."""
        return self.query(LIST_PROXIES, {"platform": platform})

    def set_proxies_required(self, platform: str, required: bool) -> dict[str, Any]:
        """The platform's v_crawler_proxy_platforms row once set; InvalidInput for an unknown
        platform."""
        return self.query_one(SET_PROXIES_REQUIRED, {"platform": platform, "required": required})

    def list_proxy_platforms(self) -> list[dict[str, Any]]:
        """v_crawler_proxy_platforms, by platform: whether each requires proxies, and how its
        requests go."""
        return self.query(LIST_PROXY_PLATFORMS)


    def list_stores(self, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """A page of v_stores: each store with its payloads and products, by id."""
        return self.query(LIST_STORES, {"limit": limit, "offset": offset})

    def count_stores(self) -> int:
        return self.query_one(COUNT_STORES)["stores"]

    def get_store(self, store_id: int) -> dict[str, Any] | None:
        """The store's row of v_stores; None when there is none."""
        return self.query_one(GET_STORE, {"store_id": store_id})

    def list_payloads(
        self, *, store: int | None = None, status: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        return self.query(
            LIST_PAYLOADS, {"store": store, "status": status, "limit": limit, "offset": offset}
        )

    def count_payloads(self, *, store: int | None = None, status: str | None = None) -> int:
        """How many payloads list_payloads pages through with these filters."""
        return self.query_one(COUNT_PAYLOADS, {"store": store, "status": status})["payloads"]

    def get_payload(self, payload_id: int) -> dict[str, Any] | None:
        """The payload with its store's name and platform ids; None when there is none."""
        return self.query_one(GET_PAYLOAD, {"payload_id": payload_id})

    def diff_payloads(self, from_payload_id: int, to_payload_id: int) -> dict[str, Any]:
        return self.query_one(
            DIFF_PAYLOADS, {"from_payload_id": from_payload_id, "to_payload_id": to_payload_id}
        )["diff"]

    def diff_latest_payloads(self, dispensary_id: int) -> dict[str, Any]:
        return self.query_one(DIFF_LATEST_PAYLOADS, {"dispensary_id": dispensary_id})["diff"]

    def set_role_backoff(self, role: str, backoff_base: str, backoff_cap: str) -> bool:
        """Change a role's retry backoff (intervals as text); False for an unknown role."""
        return self.query_one(
            SET_ROLE_BACKOFF, {"role": role, "backoff_base": backoff_base, "backoff_cap": backoff_cap}
        ) is not None

    def set_platform_limits(self, platform: str, requests_per_minute: int, cooldown: str) -> dict[str, Any]:
        """Set a platform's rate limit and circuit cooldown (its row made if missing)."""
        return self.query_one(
            SET_PLATFORM_LIMITS,
            {"platform": platform, "requests_per_minute": requests_per_minute, "cooldown": cooldown},
        )

    def active_store_ids(self) -> list[int]:
        return [row["id"] for row in self.query(ACTIVE_STORE_IDS)]

    def stores_with_applied_payloads(self, at_least: int = 2, limit: int = 100) -> list[int]:
        """Stores with `at_least` applied payloads (the ones a diff can compare), by id."""
        rows = self.query(STORES_WITH_APPLIED_PAYLOADS, {"at_least": at_least, "limit": limit})
        return [row["dispensary_id"] for row in rows]

    def payload_counts(self) -> list[dict[str, Any]]:
        """Payloads by status."""
        return self.query(PAYLOAD_COUNTS)

    def image_counts(self) -> dict[str, Any]:
        """Image downloads completed and failed, unique images stored and their bytes, image URLs
        and the products linked to them."""
        return self.query_one(IMAGE_COUNTS)

    def payload_totals(self) -> tuple[int, int]:
        """How many payloads are recorded, and their stored bytes."""
        row = self.query_one(PAYLOAD_TOTALS)
        return row["payloads"], row["size_bytes"]

    def product_id_counts(self) -> dict[str, Any]:
        """The stores' products, those of them under hashed ids (the platform gave none), and the
        id-less listings applied payloads left out as duplicates."""
        return self.query_one(PRODUCT_ID_COUNTS)

    def attempt_errors(self) -> list[dict[str, Any]]:
        """The errors of the attempts that ended in a failure, with how many ended so."""
        return self.query(ATTEMPT_ERRORS)

    def platform_events(self) -> list[dict[str, Any]]:
        """The circuit breaker's openings and closings, oldest first."""
        return self.query(PLATFORM_EVENTS)

    def waiting_tasks(self, roles: Sequence[str]) -> list[dict[str, Any]]:
        """v_waiting_tasks for these roles, with ready_in_seconds (ready_at less the database's
        clock: negative once ready), the soonest ready first."""
        return self.query(WAITING_TASKS, {"roles": list(roles)})

    # Planning

    def enqueue_state_crawl(self, role: str, state: str, *, dry_run: bool = False) -> dict[str, Any]:
        """{"made", "already_active"}: the tasks of `role` queued for the state's active stores
        (counted only, on a dry run) and the stores skipped with one under way."""
        return self.query_one(ENQUEUE_STATE_CRAWL, {"role": role, "state": state, "dry_run": dry_run})

    def generate_resync_plan(
        self,
        batches: int,
        day: date | None = None,
        time_zone: str | None = None,
        priority: int = 0,
    ) -> dict[str, Any]:
        """{"day", "time_zone", "created", "already_planned", "resync_under_way"}: the plan's day
        and zone (defaults filled in), how many tasks it created, and how many active stores it
        skipped for each reason."""
        return self.query_one(
            GENERATE_RESYNC_TASKS,
            {"batches": batches, "day": day, "time_zone": time_zone, "priority": priority},
        )
