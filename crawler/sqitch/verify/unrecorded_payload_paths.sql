-- Verify taskpool_crawler:unrecorded_payload_paths on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'unrecorded_payload_paths(text[])', 'execute');

ROLLBACK;
