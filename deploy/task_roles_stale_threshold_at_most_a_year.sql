-- Deploy taskpool:task_roles_stale_threshold_at_most_a_year to pg
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- task_roles_stale_threshold_at_most_a_year
-- A role's stale threshold is at most a year. Stale recovery subtracts it from now, and a
-- threshold of some hundred thousand years made that raise ("timestamp out of range") in every
-- tick while the role had a task claimed or running, stopping every schedule with it; a
-- heartbeat missed for a year is stale by any measure.
-- A role above the bound before this change gets the bound: its tasks were never recovered
-- before a year of silence anyway.
UPDATE task_roles SET stale_threshold = interval '1 year' WHERE stale_threshold > interval '1 year';

ALTER TABLE task_roles
    ADD CONSTRAINT task_roles_stale_threshold_at_most_a_year
        CHECK (stale_threshold <= interval '1 year');

COMMIT;
