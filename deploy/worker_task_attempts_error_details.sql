-- Deploy taskpool:worker_task_attempts_error_details to pg
-- requires: worker_task_attempts

BEGIN;
SET client_min_messages = 'warning';

-- worker_task_attempts.error_details
-- What error_message's one line cannot hold: the failed attempt's traceback, bounded by fail_task.
ALTER TABLE worker_task_attempts ADD COLUMN error_details text;

COMMENT ON TABLE worker_task_attempts IS
    'Every attempt that ended without completing: who ran it, when, how it ended and its error. Written '
    'by the transaction that ends the attempt (fail_task adds its error_details there), never changed after.';
COMMENT ON COLUMN worker_task_attempts.error_details IS
    'The failure''s details as the worker gave them to fail_task (pyworker: the handler''s traceback), at most '
    '20000 characters: a longer text keeps its first 4000 and its last characters, saying how many were cut.';

COMMIT;
