-- Deploy taskpool:worker_tasks_dispensary_fk_set_null to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- A store can be deleted while it has tasks: its tasks keep their history with dispensary_id
-- NULL (tg_dispensaries__settle_tasks ends the waiting ones first).
ALTER TABLE worker_tasks
    DROP CONSTRAINT worker_tasks_dispensary_id_fkey,
    ADD CONSTRAINT worker_tasks_dispensary_id_fkey
        FOREIGN KEY (dispensary_id) REFERENCES dispensaries (id) ON DELETE SET NULL;

COMMIT;
