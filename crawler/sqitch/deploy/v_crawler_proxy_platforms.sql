-- Deploy taskpool_crawler:v_crawler_proxy_platforms to pg
-- requires: platform_proxies_required

-- v_crawler_proxy_platforms's home: its live definition, unchanged from platform_proxies_required.
-- Change v_crawler_proxy_platforms here, with `sqitch rework v_crawler_proxy_platforms`.

BEGIN;
SET client_min_messages = 'warning';

-- v_crawler_proxy_platforms
CREATE OR REPLACE VIEW v_crawler_proxy_platforms AS
SELECT k.platform,
       coalesce(s.proxies_required, false) AS proxies_required,
       count(p.id) AS proxies,
       count(p.id) FILTER (WHERE p.enabled) AS enabled_proxies,
       count(p.id) FILTER (WHERE p.enabled AND (p.rested_until IS NULL OR p.rested_until <= taskpool_now()))
           AS ready_proxies,
       CASE WHEN count(p.id) FILTER (WHERE p.enabled) > 0 THEN 'proxied'
            WHEN coalesce(s.proxies_required, false) THEN 'refused'
            ELSE 'direct' END AS requests
FROM (SELECT c.platform FROM crawler_proxies c UNION SELECT t.platform FROM crawler_platform_settings t) k
LEFT JOIN crawler_platform_settings s ON s.platform = k.platform
LEFT JOIN crawler_proxies p ON p.platform = k.platform
GROUP BY k.platform, s.proxies_required;

COMMIT;
