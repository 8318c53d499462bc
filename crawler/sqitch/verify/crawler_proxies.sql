-- Verify taskpool_crawler:crawler_proxies on pg

BEGIN;

SELECT id, platform, url, enabled, rest_base, rest_cap, consecutive_failures, rested_until,
       last_success_at, last_failure_at, last_error, requests_total, failures_total, turn, added_at
FROM crawler_proxies
WHERE false;
SELECT nextval('crawler_proxy_turns') IS NOT NULL;

ROLLBACK;
