-- Deploy taskpool:unfollow_task_changes to pg
-- requires: task_change_followers

BEGIN;
SET client_min_messages = 'warning';

-- unfollow_task_changes
-- Ends a follower's lease at once; returns whether it had one.
CREATE FUNCTION unfollow_task_changes(follower text)
RETURNS boolean
LANGUAGE sql
AS $$
    -- Example:
    --   SELECT unfollow_task_changes('psql-alice');
    WITH gone AS (
        DELETE FROM task_change_followers f WHERE f.follower = unfollow_task_changes.follower RETURNING 1
    )
    SELECT EXISTS (SELECT FROM gone);
$$;

REVOKE ALL ON FUNCTION unfollow_task_changes(text) FROM PUBLIC;

COMMENT ON FUNCTION unfollow_task_changes(text) IS $$Ends a follower's lease on the stream of task changes at once; returns whether it had one.
Example:
  SELECT unfollow_task_changes('psql-alice');$$;

COMMIT;
