-- Revert taskpool:tg_dispensaries__settle_tasks from pg

BEGIN;

DROP TRIGGER _100_settle_tasks ON dispensaries;
DROP FUNCTION tg_dispensaries__settle_tasks();

COMMIT;
