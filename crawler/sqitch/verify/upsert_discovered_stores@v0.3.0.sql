-- Verify taskpool:upsert_discovered_stores on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'upsert_discovered_stores(text, jsonb)', 'execute');

ROLLBACK;
