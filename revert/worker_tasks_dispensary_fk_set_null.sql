-- Revert taskpool:worker_tasks_dispensary_fk_set_null from pg

BEGIN;

ALTER TABLE worker_tasks
    DROP CONSTRAINT worker_tasks_dispensary_id_fkey,
    ADD CONSTRAINT worker_tasks_dispensary_id_fkey
        FOREIGN KEY (dispensary_id) REFERENCES dispensaries (id);

COMMIT;
