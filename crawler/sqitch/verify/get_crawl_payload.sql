-- Verify taskpool:get_crawl_payload on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'get_crawl_payload(bigint)', 'execute');

ROLLBACK;
