-- Revert taskpool:count_retention from pg

-- Nothing to undo: deploy/count_retention.sql redefined count_retention as apply_retention had left it.

BEGIN;
COMMIT;
