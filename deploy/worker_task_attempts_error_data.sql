-- Deploy taskpool:worker_task_attempts_error_data to pg
-- requires: worker_task_attempts_error_details

BEGIN;
SET client_min_messages = 'warning';

-- worker_task_attempts.error_data
-- A failed attempt's error as data, beside error_message (its one line) and error_details (its
-- traceback): pyworker records a command handler's exit code, signal and stderr tail here, and a
-- Python handler's exception type. A JSON object of at most 16384 bytes, checked by fail_task.
ALTER TABLE worker_task_attempts ADD COLUMN error_data jsonb;

COMMENT ON COLUMN worker_task_attempts.error_data IS
    'The failure as a JSON object, as the worker gave it to fail_task (pyworker: {"type": ...} for a '
    'Python handler; exit_code, signal, stderr_tail, stdout_tail for a command), at most 16384 bytes.';

COMMIT;
