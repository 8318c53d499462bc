-- The `tests` schema: fixtures for the pgTAP suite. Loaded into the test database only.
-- Fixtures go through the public functions; the only direct writes backdate timestamps
-- (now() does not move inside a test transaction, so age is made, never waited for).

CREATE SCHEMA IF NOT EXISTS tests;

-- tests.make_store
-- Adds a store and returns its id.
CREATE OR REPLACE FUNCTION tests.make_store(
    name     text    DEFAULT 'Test Store',
    platform text    DEFAULT 'simulated',
    active   boolean DEFAULT true)
RETURNS integer
LANGUAGE sql
AS $$
    INSERT INTO dispensaries (name, platform, active)
    VALUES (make_store.name, make_store.platform, make_store.active)
    RETURNING id;
$$;

-- tests.make_task
-- Enqueues a pending task and returns its id; created_at can be set to order tasks.
CREATE OR REPLACE FUNCTION tests.make_task(
    role          text        DEFAULT 'store_discovery',
    dispensary_id integer     DEFAULT NULL,
    priority      integer     DEFAULT 0,
    scheduled_for timestamptz DEFAULT NULL,
    created_at    timestamptz DEFAULT NULL,
    payload       jsonb       DEFAULT '{}',
    max_retries   integer     DEFAULT NULL,
    dedupe_key    text        DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_id bigint;
BEGIN
    SELECT t.id INTO v_id
    FROM enqueue_task(make_task.role, make_task.payload,
                      dispensary_id := make_task.dispensary_id,
                      priority := make_task.priority,
                      scheduled_for := make_task.scheduled_for,
                      dedupe_key := make_task.dedupe_key,
                      max_retries := make_task.max_retries) AS t;
    IF make_task.created_at IS NOT NULL THEN
        UPDATE worker_tasks t SET created_at = make_task.created_at WHERE t.id = v_id;
    END IF;
    RETURN v_id;
END;
$$;

-- tests.make_claimed_task
-- Enqueues a task and claims exactly it for worker_id (running when started := true); returns the row.
CREATE OR REPLACE FUNCTION tests.make_claimed_task(
    worker_id     text    DEFAULT 'w1',
    role          text    DEFAULT 'store_discovery',
    dispensary_id integer DEFAULT NULL,
    max_retries   integer DEFAULT NULL,
    started       boolean DEFAULT false)
RETURNS worker_tasks
LANGUAGE plpgsql
AS $$
DECLARE
    v_id   bigint;
    v_task worker_tasks;
BEGIN
    -- Highest priority and the oldest possible created_at put it first in its role's claim order.
    v_id := tests.make_task(role := make_claimed_task.role, dispensary_id := make_claimed_task.dispensary_id,
                            priority := 100, created_at := '2000-01-01 00:00:00+00',
                            max_retries := make_claimed_task.max_retries);
    SELECT * INTO v_task FROM claim_task(make_claimed_task.role, make_claimed_task.worker_id);
    IF v_task.id IS DISTINCT FROM v_id THEN
        RAISE EXCEPTION 'tests.make_claimed_task claimed task % instead of %', v_task.id, v_id;
    END IF;
    IF make_claimed_task.started THEN
        v_task := start_task(v_task.id, v_task.worker_id, v_task.attempt);
    END IF;
    RETURN v_task;
END;
$$;

-- tests.age_heartbeat
-- Makes a claimed or running task look silent for `age`.
CREATE OR REPLACE FUNCTION tests.age_heartbeat(task_id bigint, age interval)
RETURNS void
LANGUAGE sql
AS $$
    UPDATE worker_tasks t SET last_heartbeat_at = now() - age_heartbeat.age WHERE t.id = age_heartbeat.task_id;
$$;

-- tests.age_completion
-- Makes a finished task look finished `age` ago.
CREATE OR REPLACE FUNCTION tests.age_completion(task_id bigint, age interval)
RETURNS void
LANGUAGE sql
AS $$
    UPDATE worker_tasks t SET completed_at = now() - age_completion.age WHERE t.id = age_completion.task_id;
$$;

-- tests.session_conninfo
-- The connection string of another session of this database as this user, for dblink (tests
-- that take two sessions); application_name (a plain word) names it in pg_stat_activity.
CREATE OR REPLACE FUNCTION tests.session_conninfo(application_name text DEFAULT 'dblink')
RETURNS text
LANGUAGE sql
AS $$
    SELECT format('port=%s dbname=%s user=%s host=%s application_name=%s', current_setting('port'),
                  current_database(), current_user,
                  coalesce(host(inet_server_addr()), split_part(current_setting('unix_socket_directories'), ',', 1)),
                  session_conninfo.application_name);
$$;
