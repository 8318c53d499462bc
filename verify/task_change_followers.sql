-- Verify taskpool:task_change_followers on pg

BEGIN;

SELECT follower, followed_at, expires_at FROM task_change_followers WHERE false;

ROLLBACK;
