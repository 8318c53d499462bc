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
        v_task := start_task(v_task.id, v_task.worker_id, v_task.attempt, v_task.claim_token);
    END IF;
    RETURN v_task;
END;
$$;

-- tests.claim_token
-- The claim_token the claim of that attempt of the task returned: the task's while it is at that
-- attempt, else the one its attempt history kept, else a token no claim had. The worker side of
-- a test passes what a worker would: the token it got from its claim.
CREATE OR REPLACE FUNCTION tests.claim_token(task_id bigint, attempt integer)
RETURNS uuid
LANGUAGE sql
-- The worker side of the privilege tests runs as taskpool_worker, which reads no table.
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT coalesce(
        (SELECT t.claim_token FROM worker_tasks t
         WHERE t.id = claim_token.task_id AND t.attempt = claim_token.attempt AND t.claim_token IS NOT NULL),
        (SELECT a.claim_token FROM worker_task_attempts a
         WHERE a.task_id = claim_token.task_id AND a.attempt = claim_token.attempt),
        gen_random_uuid());
$$;

-- tests.claim_tokens
-- The claim_tokens of heartbeat_tasks for task_ids[i] at attempts[i] (tests.claim_token of each);
-- NULL for NULL arrays, and arrays of different lengths padded as unnest pads them.
CREATE OR REPLACE FUNCTION tests.claim_tokens(task_ids bigint[], attempts integer[])
RETURNS uuid[]
LANGUAGE sql
AS $$
    SELECT CASE WHEN task_ids IS NOT NULL AND attempts IS NOT NULL THEN
        ARRAY(SELECT CASE WHEN g.id IS NOT NULL AND g.attempt IS NOT NULL THEN tests.claim_token(g.id, g.attempt) END
              FROM unnest(task_ids, attempts) WITH ORDINALITY AS g(id, attempt, n) ORDER BY g.n)
    END;
$$;

-- tests.with_claim_tokens
-- complete_tasks' completions, each object with an integer task_id and attempt and no claim_token
-- given the token of its claim (tests.claim_token); any other entry is left as it is.
CREATE OR REPLACE FUNCTION tests.with_claim_tokens(completions jsonb)
RETURNS jsonb
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT CASE WHEN jsonb_typeof(completions) = 'array' THEN
        (SELECT coalesce(jsonb_agg(
                    CASE WHEN jsonb_typeof(e.entry) = 'object' AND NOT e.entry ? 'claim_token'
                              AND _jsonb_bigint(e.entry -> 'task_id') IS NOT NULL
                              AND _jsonb_integer(e.entry -> 'attempt') IS NOT NULL
                         THEN e.entry || jsonb_build_object('claim_token',
                                 tests.claim_token(_jsonb_bigint(e.entry -> 'task_id'), _jsonb_integer(e.entry -> 'attempt')))
                         ELSE e.entry END
                    ORDER BY e.n), '[]'::jsonb)
         FROM jsonb_array_elements(completions) WITH ORDINALITY AS e(entry, n))
        ELSE completions END;
$$;

-- The worker side of the privilege tests (SET ROLE taskpool_worker) passes its tokens too.
GRANT USAGE ON SCHEMA tests TO taskpool_worker;
GRANT EXECUTE ON FUNCTION tests.claim_token(bigint, integer), tests.claim_tokens(bigint[], integer[]),
    tests.with_claim_tokens(jsonb) TO taskpool_worker;

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

/****************************************************************************/
-- Lookups and assertions shared by the test files

-- tests.fx: fixture name -> task id (and, where a file keeps it, the attempt it holds), filled by
-- each file and rolled back with it. Sequences are not rolled back, so ids are never literals.
CREATE TABLE IF NOT EXISTS tests.fx (
    name    text PRIMARY KEY,
    id      bigint NOT NULL,
    attempt integer
);

-- tests.fx(name)
-- The id of a named fixture; NULL when the file named none so.
CREATE OR REPLACE FUNCTION tests.fx(name text)
RETURNS bigint
LANGUAGE sql
STABLE
AS $$
    SELECT f.id FROM tests.fx f WHERE f.name = fx.name;
$$;

-- tests.task_row
-- A task's whole row as JSON, to compare before and after a call; NULL when there is no such task.
CREATE OR REPLACE FUNCTION tests.task_row(task_id bigint)
RETURNS jsonb
LANGUAGE sql
STABLE
AS $$
    SELECT to_jsonb(t) FROM worker_tasks t WHERE t.id = task_row.task_id;
$$;

-- tests.snapshots: task rows kept by name, to show that a call left them as they were.
CREATE TABLE IF NOT EXISTS tests.snapshots (
    name       text PRIMARY KEY,
    row_before jsonb NOT NULL
);

-- tests.snapshot
-- Keeps the row of the fixture `name` (tests.fx) as it is now.
CREATE OR REPLACE FUNCTION tests.snapshot(name text)
RETURNS void
LANGUAGE sql
AS $$
    INSERT INTO tests.snapshots (name, row_before)
    VALUES (snapshot.name, tests.task_row(tests.fx(snapshot.name)))
    ON CONFLICT ON CONSTRAINT snapshots_pkey DO UPDATE SET row_before = excluded.row_before;
$$;

-- tests.snapshot_all
-- Keeps the row of every fixture whose task exists, forgetting earlier snapshots.
CREATE OR REPLACE FUNCTION tests.snapshot_all()
RETURNS void
LANGUAGE sql
AS $$
    DELETE FROM tests.snapshots;
    INSERT INTO tests.snapshots (name, row_before)
    SELECT f.name, tests.task_row(f.id) FROM tests.fx f WHERE tests.task_row(f.id) IS NOT NULL;
$$;

-- tests.unchanged
-- Whether the fixture `name`'s row is as tests.snapshot kept it.
CREATE OR REPLACE FUNCTION tests.unchanged(name text)
RETURNS boolean
LANGUAGE sql
STABLE
AS $$
    SELECT tests.task_row(tests.fx(unchanged.name)) = s.row_before
    FROM tests.snapshots s
    WHERE s.name = unchanged.name;
$$;

-- tests.changed
-- The names of the kept rows that changed since their snapshot, in order; empty when none did.
CREATE OR REPLACE FUNCTION tests.changed()
RETURNS text[]
LANGUAGE sql
STABLE
AS $$
    SELECT coalesce(array_agg(s.name ORDER BY s.name), '{}')
    FROM tests.snapshots s
    WHERE tests.task_row(tests.fx(s.name)) IS DISTINCT FROM s.row_before;
$$;

-- tests.waiting_workers
-- The workers marked waiting (task_worker_waits), of one role or of any, in order.
CREATE OR REPLACE FUNCTION tests.waiting_workers(role text DEFAULT NULL)
RETURNS text[]
LANGUAGE sql
STABLE
AS $$
    SELECT coalesce(array_agg(w.worker_id ORDER BY w.worker_id), '{}')
    FROM task_worker_waits w
    WHERE waiting_workers.role IS NULL OR w.role = waiting_workers.role;
$$;

-- tests.error_hint
-- The hint of the error a statement raises, NULL when it raises none (pgTAP's throws_ok checks
-- only the code and the message).
CREATE OR REPLACE FUNCTION tests.error_hint(sql text)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
    v_hint text;
BEGIN
    EXECUTE error_hint.sql;
    RETURN NULL;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS v_hint = PG_EXCEPTION_HINT;
    RETURN v_hint;
END;
$$;

-- tests.fingerprint
-- Every row of the tables given as one hash per table: equal before and after a call, the call
-- wrote nothing to them.
CREATE OR REPLACE FUNCTION tests.fingerprint(tables regclass[])
RETURNS text
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_table regclass;
    v_hash  text;
    v_all   text := '';
BEGIN
    FOREACH v_table IN ARRAY fingerprint.tables LOOP
        EXECUTE format('SELECT md5(coalesce(string_agg(r::text, E''\n'' ORDER BY r::text), '''')) FROM %s AS r', v_table)
            INTO v_hash;
        v_all := v_all || v_table::text || ' ' || v_hash || E'\n';
    END LOOP;
    RETURN v_all;
END;
$$;

-- tests.error_of
-- The SQLSTATE and message of the error a statement raises ('no error' when it raises none), so
-- that a test compares the errors of two ways to say the same thing.
CREATE OR REPLACE FUNCTION tests.error_of(sql text)
RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE error_of.sql;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END;
$$;

-- tests.rejects
-- Two tests: the statement raises errcode with message (throws_ok), and it left the tables
-- given as they were (worker_tasks unless told).
CREATE OR REPLACE FUNCTION tests.rejects(
    sql         text,
    errcode     text,
    message     text,
    description text,
    tables      regclass[] DEFAULT '{worker_tasks}')
RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
    v_before text := tests.fingerprint(rejects.tables);
BEGIN
    RETURN NEXT throws_ok(rejects.sql, rejects.errcode, rejects.message, 'Should reject ' || rejects.description);
    RETURN NEXT is(tests.fingerprint(rejects.tables), v_before,
                   format('Should leave %s unchanged after %s',
                          array_to_string(rejects.tables, ', '), rejects.description));
END;
$$;
