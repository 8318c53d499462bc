-- Deploy taskpool:follow_task_changes to pg
-- requires: task_change_followers
-- requires: taskpool_now

BEGIN;
SET client_min_messages = 'warning';

-- follow_task_changes
-- Starts or renews a follower's lease on the stream of task changes; returns when it runs out.
CREATE FUNCTION follow_task_changes(follower text, lease interval DEFAULT interval '1 minute')
RETURNS timestamptz
LANGUAGE plpgsql
AS $$
-- Example:
--   SELECT follow_task_changes('psql-alice', interval '1 hour');
--   LISTEN taskpool_task_changes;
-- While a lease runs, every task change is published on the channel taskpool_task_changes.
-- Renew it before it runs out (pyworker renews every third of its lease). Expired leases are
-- deleted here, so the table holds about one row per live follower. A blank or over-long name,
-- or a lease outside 1 second .. 1 day, raises 22023 and changes nothing.
DECLARE
    v_expires_at timestamptz;
BEGIN
    IF follow_task_changes.follower IS NULL OR btrim(follow_task_changes.follower) = ''
       OR length(follow_task_changes.follower) > 200 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('follower must be a name of 1 to 200 characters, not %L', follow_task_changes.follower);
    END IF;
    IF follow_task_changes.lease IS NULL
       OR NOT (follow_task_changes.lease BETWEEN interval '1 second' AND interval '1 day') THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('lease must be from 1 second to 1 day, not %s', coalesce(follow_task_changes.lease::text, 'NULL'));
    END IF;

    DELETE FROM task_change_followers f WHERE f.expires_at < taskpool_now();
    INSERT INTO task_change_followers AS f (follower, followed_at, expires_at)
    VALUES (follow_task_changes.follower, taskpool_now(), taskpool_now() + follow_task_changes.lease)
    ON CONFLICT ON CONSTRAINT task_change_followers_pkey DO UPDATE SET expires_at = excluded.expires_at
    RETURNING f.expires_at INTO v_expires_at;
    RETURN v_expires_at;
END;
$$;

REVOKE ALL ON FUNCTION follow_task_changes(text, interval) FROM PUBLIC;

COMMENT ON FUNCTION follow_task_changes(text, interval) IS $$Starts or renews a follower's lease (1 minute by default) on the stream of task changes, the channel taskpool_task_changes; returns when it runs out.
Example:
  SELECT follow_task_changes('psql-alice', interval '1 hour'); LISTEN taskpool_task_changes;$$;

COMMIT;
