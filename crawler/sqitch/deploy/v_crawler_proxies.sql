-- Deploy taskpool_crawler:v_crawler_proxies to pg
-- requires: crawler_proxy_functions

-- v_crawler_proxies's home: its live definition, unchanged from crawler_proxy_functions.
-- Change v_crawler_proxies here, with `sqitch rework v_crawler_proxies`.

BEGIN;
SET client_min_messages = 'warning';

-- v_crawler_proxies
CREATE OR REPLACE VIEW v_crawler_proxies AS
SELECT p.id,
       p.platform,
       _proxy_label(p.url) AS url,
       CASE WHEN NOT p.enabled THEN 'disabled'
            WHEN p.rested_until > taskpool_now() THEN 'rested'
            ELSE 'ready' END AS state,
       p.enabled,
       p.consecutive_failures,
       p.rested_until,
       p.last_success_at,
       p.last_failure_at,
       p.last_error,
       p.requests_total,
       p.failures_total,
       p.rest_base,
       p.rest_cap,
       p.added_at
FROM crawler_proxies p;

COMMIT;
