-- Verify taskpool_crawler:platform_proxies_required on pg

BEGIN;

SELECT platform, proxies_required, updated_at FROM crawler_platform_settings WHERE false;
SELECT platform, proxies_required, proxies, enabled_proxies, ready_proxies, requests
FROM v_crawler_proxy_platforms WHERE false;
SELECT has_function_privilege('set_proxies_required(text, boolean)', 'execute');
SELECT 1/count(*) FROM pg_proc WHERE proname = 'take_proxy' AND prosrc LIKE '%crawler_platform_settings%';

ROLLBACK;
