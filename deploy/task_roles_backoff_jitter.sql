-- Deploy taskpool:task_roles_backoff_jitter to pg
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- task_roles.backoff_multiplier and backoff_jitter: how a role's retry delay grows from
-- backoff_base (multiplied per retry, up to backoff_cap) and how it is spread, as peers do it.
-- Jitter: 'full' waits a random time between 0 and the capped delay (AWS's "full jitter": tasks
-- that failed together, as when a platform went down, do not all come back together), 'equal'
-- between half of it and all of it, 'none' the capped delay itself.
--
-- New roles get full jitter. Roles there before this change keep the deterministic doubling they
-- had ('none', multiplier 2): an operator may have sized max_retries times the backoff to ride
-- out an outage of a known length, and full jitter halves the expected span of the retries.
-- `UPDATE task_roles SET backoff_jitter = 'full'` opts one in.
ALTER TABLE task_roles
    ADD COLUMN backoff_multiplier numeric NOT NULL DEFAULT 2,
    ADD COLUMN backoff_jitter     text    NOT NULL DEFAULT 'none',
    ADD CONSTRAINT task_roles_backoff_multiplier_from_1_to_10
        CHECK (backoff_multiplier BETWEEN 1 AND 10),
    ADD CONSTRAINT task_roles_backoff_jitter_known
        CHECK (backoff_jitter IN ('full', 'equal', 'none'));
ALTER TABLE task_roles ALTER COLUMN backoff_jitter SET DEFAULT 'full';

COMMENT ON COLUMN task_roles.backoff_base IS
    'Delay before the first retry; each further retry multiplies it by backoff_multiplier, up to backoff_cap.';
COMMENT ON COLUMN task_roles.backoff_multiplier IS
    'Growth of the retry delay per retry (1 to 10; 1: the same delay each time): '
    'least(backoff_base * backoff_multiplier^retry_count, backoff_cap), then backoff_jitter.';
COMMENT ON COLUMN task_roles.backoff_jitter IS
    'How the capped retry delay is spread: full (random from 0 to it, the default), equal (random from '
    'half of it to it) or none (exactly it).';

COMMIT;
