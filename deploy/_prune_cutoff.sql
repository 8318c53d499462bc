-- Deploy taskpool:_prune_cutoff to pg
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- _prune_cutoff
-- The time a finished task must have finished before to be pruned for being older_than; NULL when no task can be that old.
CREATE FUNCTION _prune_cutoff(older_than interval)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
AS $$
-- prune_tasks and count_prunable_tasks take their cutoff here, so a dry run counts exactly the
-- tasks a prune would delete.
BEGIN
    IF _prune_cutoff.older_than IS NULL OR _prune_cutoff.older_than < interval '0' THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('older_than must be a non-negative interval, not %s', coalesce(_prune_cutoff.older_than::text, 'NULL'));
    END IF;
    RETURN taskpool_now() - _prune_cutoff.older_than;
EXCEPTION WHEN datetime_field_overflow THEN
    -- No task finished before the earliest time a timestamp can hold (4713 BC).
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION _prune_cutoff(interval) FROM PUBLIC;

COMMIT;
