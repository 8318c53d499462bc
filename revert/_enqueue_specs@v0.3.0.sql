-- Revert taskpool:_enqueue_specs from pg

BEGIN;

DROP FUNCTION _enqueue_specs(jsonb, text);

COMMIT;
