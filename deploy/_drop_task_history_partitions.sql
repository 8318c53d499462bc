-- Deploy taskpool:_drop_task_history_partitions to pg
-- requires: worker_task_history
-- requires: task_metric_totals

BEGIN;
SET client_min_messages = 'warning';

-- _drop_task_history_partitions
-- Drops the leaves of worker_task_history (and their attempts' leaves) of the given statuses whose whole UTC day lies before cutoff; returns how many tasks they held. With dry_run, drops nothing and counts.
CREATE FUNCTION _drop_task_history_partitions(statuses text[], cutoff timestamptz, dry_run boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql
AS $$
-- Retention's fast path (_prune_finished_tasks): a day of one status goes at once, whatever it
-- holds, and leaves no dead row behind. The counts come from task_history_counts, not the rows;
-- the completed tasks dropped are added to pruned_completed, as a prune's are (every task in the
-- history was folded into task_metric_totals before it moved). A day whose last leaf goes is
-- dropped too. Dropping a leaf locks the history for a moment: a leaf whose lock is not had within
-- a second (a long read of the history) is left for the next call.
DECLARE
    v_leaf    record;
    v_tasks   bigint;
    v_total   bigint := 0;
    v_timeout text := current_setting('lock_timeout');
BEGIN
    FOR v_leaf IN
        SELECT d.day, s.status,
               format('worker_task_history_%s_%s', to_char(d.day, 'YYYYMMDD'), s.status) AS tasks_leaf,
               format('worker_task_attempt_history_%s_%s', to_char(d.day, 'YYYYMMDD'), s.status) AS attempts_leaf,
               format('worker_task_history_%s', to_char(d.day, 'YYYYMMDD')) AS tasks_day,
               format('worker_task_attempt_history_%s', to_char(d.day, 'YYYYMMDD')) AS attempts_day
        FROM (SELECT to_date(substr(c.relname, length('worker_task_history_') + 1, 8), 'YYYYMMDD') AS day
              FROM pg_inherits i
              JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = 'worker_task_history'::regclass) d
        CROSS JOIN unnest(_drop_task_history_partitions.statuses) AS s (status)
        WHERE ((d.day + 1)::timestamp AT TIME ZONE 'UTC') <= _drop_task_history_partitions.cutoff
          AND to_regclass(format('worker_task_history_%s_%s', to_char(d.day, 'YYYYMMDD'), s.status)) IS NOT NULL
        ORDER BY d.day, s.status
    LOOP
        SELECT coalesce(sum(c.tasks), 0) INTO v_tasks
        FROM task_history_counts c
        WHERE c.day = v_leaf.day AND c.status = v_leaf.status;
        IF NOT _drop_task_history_partitions.dry_run THEN
            BEGIN
                PERFORM set_config('lock_timeout', '1s', true);
                EXECUTE format('DROP TABLE %I, %I', v_leaf.tasks_leaf, v_leaf.attempts_leaf);
                IF NOT EXISTS (SELECT FROM pg_inherits i WHERE i.inhparent = to_regclass(v_leaf.tasks_day)) THEN
                    EXECUTE format('DROP TABLE %I, %I', v_leaf.tasks_day, v_leaf.attempts_day);
                END IF;
                PERFORM set_config('lock_timeout', v_timeout, true);
            EXCEPTION WHEN lock_not_available THEN
                PERFORM set_config('lock_timeout', v_timeout, true);
                CONTINUE;
            END;
            INSERT INTO task_metric_totals AS m (role, counter, total)
            SELECT c.role, 'pruned_completed', c.tasks
            FROM task_history_counts c
            WHERE c.day = v_leaf.day AND c.status = v_leaf.status AND c.status = 'completed' AND c.tasks > 0
            ON CONFLICT (role, counter) DO UPDATE SET total = m.total + excluded.total;
            DELETE FROM task_history_counts c WHERE c.day = v_leaf.day AND c.status = v_leaf.status;
        END IF;
        v_total := v_total + v_tasks;
    END LOOP;
    RETURN v_total;
END;
$$;

REVOKE ALL ON FUNCTION _drop_task_history_partitions(text[], timestamptz, boolean) FROM PUBLIC;

COMMIT;
