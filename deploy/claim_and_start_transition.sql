-- Deploy taskpool:claim_and_start_transition to pg
-- requires: task_status_transitions

BEGIN;
SET client_min_messages = 'warning';

-- A worker that runs what it claims at once claims and starts in one transaction: the task goes
-- from pending to running without a committed claimed state in between.
INSERT INTO task_status_transitions (from_status, to_status, meaning) VALUES
    ('pending', 'running', 'claim_and_start_tasks');

COMMIT;
