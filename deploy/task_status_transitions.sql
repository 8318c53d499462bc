-- Deploy taskpool:task_status_transitions to pg

BEGIN;
SET client_min_messages = 'warning';

-- task_status_transitions
-- The legal status changes of a task; a trigger on worker_tasks rejects every other one.
CREATE TABLE task_status_transitions (
    from_status  text NOT NULL,
    to_status    text NOT NULL,
    meaning      text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);

COMMENT ON TABLE task_status_transitions IS
    'Allowed (from_status, to_status) pairs for worker_tasks.status. Read by tg_worker_tasks__enforce_transition.';

INSERT INTO task_status_transitions (from_status, to_status, meaning) VALUES
    ('pending',   'claimed',   'claim_task / claim_tasks'),
    ('pending',   'cancelled', 'cancel_task before any worker took it'),
    ('claimed',   'running',   'start_task'),
    ('claimed',   'completed', 'complete_task without start_task'),
    ('claimed',   'failed',    'fail_task, or stale with retries spent'),
    ('claimed',   'pending',   'retry, snooze, release, or stale recovery'),
    ('claimed',   'cancelled', 'the worker ended an attempt whose cancel was requested'),
    ('running',   'completed', 'complete_task'),
    ('running',   'failed',    'fail_task, or stale with retries spent'),
    ('running',   'pending',   'retry, snooze, release, or stale recovery'),
    ('running',   'cancelled', 'the worker ended an attempt whose cancel was requested'),
    ('failed',    'pending',   'retry_task by an operator'),
    ('cancelled', 'pending',   'retry_task by an operator');

COMMIT;
