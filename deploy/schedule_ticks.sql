-- Deploy taskpool:schedule_ticks to pg
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- schedule_ticks
-- One row: when tick_schedules() last ran. A schedule's own last_run_at moves only when it is
-- due (every few hours), so a tick that stopped would otherwise go unnoticed for hours, its
-- stale tasks never recovered.
CREATE TABLE schedule_ticks (
    singleton     boolean     PRIMARY KEY DEFAULT true,
    last_tick_at  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT taskpool_now(),

    CONSTRAINT schedule_ticks_one_row CHECK (singleton)
);

COMMENT ON TABLE schedule_ticks IS
    'One row, written by tick_schedules(): last_tick_at is its last run (NULL: none since created_at, '
    'the deploy). taskpool_health() reads it.';

INSERT INTO schedule_ticks DEFAULT VALUES;

COMMIT;
