"""The proxies platform requests go through: the rows of crawler_proxies, as a ProxyPool.

take_proxy (SQL) hands out a platform's proxies in turn, passing over the disabled and the
rested ones, and says when a platform that requires proxies (set_proxies_required) has none
enabled, whose requests then fail, to be retried, instead of going direct; report_proxy_result rests a proxy that failed, longer with each failure in a row,
and clears the failures of one that worked. The handlers' HTTP client takes a DatabaseProxies,
so every platform request of every worker shares one rotation and one record of health.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from taskpool_crawler.client import Proxy, ProxyUnavailable
from taskpool_crawler.db import CrawlerDatabase

log = logging.getLogger("pyworker")


class DatabaseProxies:
    """A ProxyPool over take_proxy and report_proxy_result, on the database `database()`
    returns (in a worker, the running attempt's own connection)."""

    def __init__(self, database: Callable[[], CrawlerDatabase]) -> None:
        self.database = database

    def take(self, platform: str) -> Proxy | None:
        row = self.database().take_proxy(platform)
        if row is None:
            return None
        if row["proxy_id"] is None:
            back_in = row["back_in_seconds"]
            if back_in is None:
                raise ProxyUnavailable(
                    f"{platform} requires proxies and has none enabled: its requests never go"
                    " direct (pyworker proxies add or enable one, or proxies allow-direct)",
                    retryable=True,
                )
            raise ProxyUnavailable(
                f"every proxy of {platform} is rested (the first is back in {back_in:.1f} s)",
                retryable=True,
                retry_after=back_in,
            )
        return Proxy(row["proxy_id"], row["url"], row["label"])

    def report(self, proxy: Proxy, succeeded: bool, error: str | None = None) -> None:
        rested_until = self.database().report_proxy_result(proxy.id, succeeded, error)
        if rested_until is not None:
            log.warning(
                "Proxy %s (%s) failed (%s): rested until %s",
                proxy.id,
                proxy.label,
                error,
                rested_until,
            )
