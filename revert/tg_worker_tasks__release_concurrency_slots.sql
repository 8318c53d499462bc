-- Revert taskpool:tg_worker_tasks__release_concurrency_slots from pg

BEGIN;

DROP TRIGGER _900_release_concurrency_slots_of_deleted ON worker_tasks;
DROP TRIGGER _900_release_concurrency_slots ON worker_tasks;
DROP FUNCTION tg_worker_tasks__release_concurrency_slots();

COMMIT;
