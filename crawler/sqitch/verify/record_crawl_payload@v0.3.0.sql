-- Verify taskpool:record_crawl_payload on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'record_crawl_payload(integer, timestamptz, text, integer, text)',
                              'execute');

ROLLBACK;
