-- Deploy taskpool:_check_task_filter to pg
-- requires: tasks_matching

-- _check_task_filter's home: its live body, unchanged from tasks_matching.
-- Change _check_task_filter here, with `sqitch rework _check_task_filter`.

BEGIN;
SET client_min_messages = 'warning';

-- _check_task_filter
-- Raises 22023 for a filter that selects every task, or names an unknown status.
CREATE OR REPLACE FUNCTION _check_task_filter(
    role           text        DEFAULT NULL,
    status         text        DEFAULT NULL,
    store          bigint      DEFAULT NULL,
    platform       text        DEFAULT NULL,
    error_like     text        DEFAULT NULL,
    created_before timestamptz DEFAULT NULL,
    created_after  timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
    IF num_nonnulls(_check_task_filter.role, _check_task_filter.status, _check_task_filter.store,
                    _check_task_filter.platform, _check_task_filter.error_like, _check_task_filter.created_before,
                    _check_task_filter.created_after) = 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'give at least one filter: role, status, store, platform, error_like, created_before or created_after',
            HINT = 'To take every task of a status, give that status.';
    END IF;
    IF _check_task_filter.status NOT IN ('pending', 'claimed', 'running', 'completed', 'failed', 'cancelled') THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('status %L is not a task status', _check_task_filter.status),
            HINT = 'pending, claimed, running, completed, failed or cancelled.';
    END IF;
END;
$$;

COMMIT;
