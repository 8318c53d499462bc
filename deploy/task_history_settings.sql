-- Deploy taskpool:task_history_settings to pg

BEGIN;
SET client_min_messages = 'warning';

-- task_history_settings
-- When finished tasks leave worker_tasks for worker_task_history, and how many a batch moves.
CREATE TABLE task_history_settings (
    singleton     boolean  PRIMARY KEY DEFAULT true,
    history_after interval NOT NULL DEFAULT interval '5 minutes',
    batch_size    integer  NOT NULL DEFAULT 10000,
    max_batches   integer  NOT NULL DEFAULT 10,

    CONSTRAINT task_history_settings_one_row CHECK (singleton),
    CONSTRAINT task_history_settings_history_after_in_range
        CHECK (history_after >= interval '0' AND history_after <= interval '100 years'),
    CONSTRAINT task_history_settings_batch_size_in_range CHECK (batch_size BETWEEN 1 AND 100000),
    CONSTRAINT task_history_settings_max_batches_in_range CHECK (max_batches BETWEEN 1 AND 1000)
);

COMMENT ON TABLE task_history_settings IS
    'One row: a finished task moves to worker_task_history once it finished history_after ago '
    '(and the metrics folded it), batch_size tasks a statement, up to max_batches statements a tick. '
    'Change it with set_task_history().';

INSERT INTO task_history_settings DEFAULT VALUES;

COMMIT;
