-- Revert taskpool:task_roles_stale_threshold_at_most_a_year from pg

BEGIN;

-- Roles capped on deploy keep their threshold of a year.
ALTER TABLE task_roles DROP CONSTRAINT task_roles_stale_threshold_at_most_a_year;

COMMIT;
