-- Deploy taskpool:task_change_followers to pg
-- requires: worker_tasks

BEGIN;
SET client_min_messages = 'warning';

-- task_change_followers
-- Who follows the stream of task changes now: the stream is published only while one does.
--
-- Why: NOTIFY serializes the commits of every notifying transaction (each takes a lock on the
-- database's notification queue from pre-commit until its commit is flushed), so a message on
-- every claim and completion cut the SQL cycle of 8 clients from about 700 to 230 tasks/s on the
-- development machine. With nobody following, the triggers read this (tiny) table and send
-- nothing; a follower holds a lease it renews (follow_task_changes), so one that died stops the
-- messages when its lease runs out.
CREATE TABLE task_change_followers (
    follower     text        PRIMARY KEY,
    followed_at  timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    CONSTRAINT task_change_followers_name_length CHECK (length(follower) BETWEEN 1 AND 200)
);

REVOKE ALL ON task_change_followers FROM PUBLIC;

COMMENT ON TABLE task_change_followers IS
    'The followers of the channel taskpool_task_changes and their leases: task changes are published only while one lease runs. Written by follow_task_changes and unfollow_task_changes.';

COMMIT;
