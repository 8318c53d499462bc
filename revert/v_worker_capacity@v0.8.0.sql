-- Revert taskpool:v_worker_capacity from pg

-- Nothing to undo: deploy/v_worker_capacity.sql redefined v_worker_capacity as v_worker_capacity_units had left it.

BEGIN;
COMMIT;
