-- Revert taskpool:taskpool_health from pg

-- Nothing to undo: deploy/taskpool_health.sql redefined taskpool_health as taskpool_health_unserved_roles had left it.

BEGIN;
COMMIT;
