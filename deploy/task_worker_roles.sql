-- Deploy taskpool:task_worker_roles to pg
-- requires: task_workers
-- requires: task_roles

BEGIN;
SET client_min_messages = 'warning';

-- A worker process may serve several roles (pyworker --role a --role b): one row per role it
-- serves. task_workers.role stays the first of them, for what reads one role per worker.
CREATE TABLE task_worker_roles (
    worker_id  text  NOT NULL REFERENCES task_workers (worker_id) ON DELETE CASCADE,
    role       text  NOT NULL REFERENCES task_roles (role),
    PRIMARY KEY (worker_id, role)
);

CREATE INDEX task_worker_roles_role_idx ON task_worker_roles (role);

INSERT INTO task_worker_roles (worker_id, role)
SELECT w.worker_id, w.role FROM task_workers w;

COMMENT ON TABLE task_worker_roles IS
    'The roles each registered worker serves, written by register_worker (task_workers.role is the first). '
    'v_worker_capacity counts a worker once for each role it serves.';

COMMIT;
