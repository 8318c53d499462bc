-- Verify taskpool_crawler:crawler_proxy_functions on pg

BEGIN;

SELECT id, platform, url, state, enabled, consecutive_failures, rested_until, last_success_at,
       last_failure_at, last_error, requests_total, failures_total, rest_base, rest_cap, added_at
FROM v_crawler_proxies
WHERE false;
-- Workers take and report; only operators manage the rows.
DO $$
BEGIN
    ASSERT has_function_privilege('taskpool_worker', 'take_proxy(text)', 'execute'),
        'taskpool_worker must be able to execute take_proxy';
    ASSERT has_function_privilege('taskpool_worker', 'report_proxy_result(bigint, boolean, text)', 'execute'),
        'taskpool_worker must be able to execute report_proxy_result';
    ASSERT NOT has_function_privilege('taskpool_worker', 'add_proxy(text, text, interval, interval)', 'execute'),
        'taskpool_worker must not be able to execute add_proxy';
    ASSERT NOT has_function_privilege('taskpool_worker', 'remove_proxy(bigint)', 'execute'),
        'taskpool_worker must not be able to execute remove_proxy';
    ASSERT NOT has_function_privilege('taskpool_worker', 'disable_proxy(bigint)', 'execute'),
        'taskpool_worker must not be able to execute disable_proxy';
    ASSERT NOT has_function_privilege('taskpool_worker', 'enable_proxy(bigint)', 'execute'),
        'taskpool_worker must not be able to execute enable_proxy';
END $$;

ROLLBACK;
