-- Deploy taskpool:spent_attempt_transition to pg
-- requires: task_status_transitions

BEGIN;
SET client_min_messages = 'warning';

-- A task whose attempt has reached the largest integer can never be claimed again (its next
-- attempt number does not exist). The claim that meets such a pending task fails it for good,
-- so that it neither blocks its role nor waits for ever.
INSERT INTO task_status_transitions (from_status, to_status, meaning) VALUES
    ('pending', 'failed', 'a claim met a task whose attempt counter is spent');

COMMIT;
