-- Deploy taskpool:_create_task_history_partitions to pg
-- requires: worker_task_history

BEGIN;
SET client_min_messages = 'warning';

-- _create_task_history_partitions
-- Creates the partitions of worker_task_history and worker_task_attempt_history for the given UTC days (a leaf per finished status under each), those missing only.
CREATE FUNCTION _create_task_history_partitions(days date[])
RETURNS void
LANGUAGE plpgsql
AS $$
-- move_tasks_to_history creates the days of a batch before it moves it. Native partitioning, not
-- pg_partman: a day is created when a task of it first moves, dropped by retention, and nothing
-- else runs. The leaves are named worker_task_history_YYYYMMDD_<status> (and
-- worker_task_attempt_history_YYYYMMDD_<status>); creating one locks its parent briefly.
DECLARE
    v_day    date;
    v_status text;
    v_table  text;
BEGIN
    FOREACH v_day IN ARRAY coalesce(_create_task_history_partitions.days, '{}') LOOP
        FOREACH v_table IN ARRAY ARRAY['worker_task_history', 'worker_task_attempt_history'] LOOP
            IF to_regclass(format('%s_%s', v_table, to_char(v_day, 'YYYYMMDD'))) IS NULL THEN
                EXECUTE format(
                    'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L) PARTITION BY LIST (%I)',
                    format('%s_%s', v_table, to_char(v_day, 'YYYYMMDD')), v_table,
                    v_day::timestamp AT TIME ZONE 'UTC', (v_day + 1)::timestamp AT TIME ZONE 'UTC',
                    CASE v_table WHEN 'worker_task_history' THEN 'status' ELSE 'task_status' END);
                FOREACH v_status IN ARRAY ARRAY['completed', 'failed', 'cancelled'] LOOP
                    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES IN (%L)',
                                   format('%s_%s_%s', v_table, to_char(v_day, 'YYYYMMDD'), v_status),
                                   format('%s_%s', v_table, to_char(v_day, 'YYYYMMDD')), v_status);
                END LOOP;
            END IF;
        END LOOP;
    END LOOP;
END;
$$;

REVOKE ALL ON FUNCTION _create_task_history_partitions(date[]) FROM PUBLIC;

COMMIT;
