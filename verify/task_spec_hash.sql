-- Verify taskpool:task_spec_hash on pg

BEGIN;

SELECT 1/(task_spec_hash('r', 1, '{"b": 1, "a": 2}') = task_spec_hash('r', 1, '{"a":2,"b":1}'))::int;
SELECT 1/(task_spec_hash('r', NULL, NULL) ~ '^sha256:[0-9a-f]{64}$')::int;

ROLLBACK;
