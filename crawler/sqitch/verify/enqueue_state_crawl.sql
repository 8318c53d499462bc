-- Verify taskpool_crawler:enqueue_state_crawl on pg

BEGIN;

SELECT has_function_privilege('enqueue_state_crawl(text, text, boolean)', 'execute');

ROLLBACK;
