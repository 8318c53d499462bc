-- Revert taskpool:_enqueue_specs from pg

-- Nothing to undo: deploy/_enqueue_specs.sql redefined _enqueue_specs as enqueue_dedupe_windows had left it.

BEGIN;
COMMIT;
