-- Deploy taskpool:_claim_tasks to pg
-- requires: _claim_tasks@v0.8.0
-- requires: _platform_tokens
-- requires: _platform_clock
-- requires: task_claim_turns
-- requires: task_roles_claims_platform_token
-- requires: worker_tasks_claim_order_by_platform
-- requires: concurrency_limits
-- requires: _concurrency_room
-- requires: _concurrency_keys_of

BEGIN;
SET client_min_messages = 'warning';

-- _claim_tasks
-- The claim behind claim_tasks and claim_and_start_tasks: up to max_tasks ready tasks of a role,
-- at most one per store and none past a concurrency cap, claimed for a worker and, when start is
-- true, started too.
CREATE OR REPLACE FUNCTION _claim_tasks(role text, worker_id text, max_tasks integer, start boolean)
RETURNS SETOF worker_tasks
LANGUAGE plpgsql
SET search_path = public, pg_temp
-- PL/pgSQL caches a statement's plan, but by default it plans it again for the call's values
-- whenever that custom plan looks cheaper than the generic one, which for the claim below is
-- always: measured under 8 concurrent claimers, that planning was most of the claim's cost
-- (one plan per call, about 0.8 ms each). The generic plan walks the same indexes.
SET plan_cache_mode = force_generic_plan
-- The generic plan cannot know the LIMIT, so it costs the claim as if it read a tenth of the
-- role's pending tasks: past jit_above_cost once a few hundred thousand are pending, and JIT
-- then compiled the claim on every call (30 ms and more at 300,000 pending, measured by the
-- depth figure of make bench). The claim reads a few index pages: JIT never pays.
SET jit = off
AS $$
-- Not for callers: claim_tasks and claim_and_start_tasks (SECURITY DEFINER) call it. A paused
-- role (task_roles.paused_at) hands out nothing. Tasks of a platform whose circuit is open
-- (platform_governance.open_until in the future) or that an operator disabled
-- (platform_governance.enabled false) are skipped, and so are, for a role with
-- claims_platform_token, those of a platform whose token bucket holds no whole token: the claim
-- takes one token for each task it hands out (the request the task makes), counted in
-- requests_total. At equal priority the claim rotates between platforms (task_claim_turns).
-- Concurrency caps (concurrency_limits): a task is handed out only with a free slot
-- (concurrency_slots) of each capped key it has: its role, its platform, its own key (the header
-- concurrency_key: kind key, or kind proxy for 'proxy:NAME'). The role's room bounds the batch,
-- and a (platform, key) whose room is spent is not walked. Without any cap but the stores' the
-- claim reads no slot at all.
-- A task whose attempt counter is spent (attempt at the largest integer) fails here, alone,
-- rather than making the claim overflow for the whole role.
DECLARE
    -- The attempt column is an integer: a task at its largest value has no next attempt.
    c_last_attempt constant integer := 2147483647;
    v_now          timestamptz := taskpool_now();
    v_paused       boolean;
    v_claims_token boolean;
    v_chosen       bigint[];
    v_spent        bigint[];
    v_lanes_met bigint;
    v_token_platforms text[];
    v_served       text[];
    v_pair_platforms text[];
    v_pair_keys    text[];
    v_capped       boolean;
    v_max          integer := _claim_tasks.max_tasks;
    v_role_room    integer;
    v_capped_ids   bigint[];
    v_capped_kinds text[];
    v_capped_keys  text[];
    v_capped_caps  integer[];
    v_capped_ranks bigint[];
    v_free_kinds   text[];
    v_free_keys    text[];
    v_free_slots   integer[];
    v_ranked       bigint[];
    v_lost_race    boolean := false;
    v_clock        timestamptz;
    v_walk_clock   timestamptz;
    v_claimed      bigint := 0;
BEGIN
    IF _claim_tasks.role IS NULL OR _claim_tasks.worker_id IS NULL OR _claim_tasks.max_tasks IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22004', MESSAGE = 'role, worker_id and max_tasks are all required';
    END IF;
    IF length(_claim_tasks.worker_id) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('worker_id must be 1 to 200 characters, not %s', length(_claim_tasks.worker_id));
    END IF;
    IF _claim_tasks.max_tasks NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('max_tasks %s is out of range', _claim_tasks.max_tasks),
            HINT = 'Claim from 1 to 1000 tasks at a time.';
    END IF;

    -- One primary-key probe: an unknown role is an error, a paused one has nothing to hand out.
    -- A pause that commits while this claim runs does not stop it: the claim after it sees it.
    SELECT r.paused_at IS NOT NULL, r.claims_platform_token INTO v_paused, v_claims_token FROM task_roles r WHERE r.role = _claim_tasks.role;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = format('unknown role %L', _claim_tasks.role),
            HINT = 'Known roles: ' || coalesce((SELECT string_agg(r.role, ', ' ORDER BY r.role) FROM task_roles r), 'none') || '.';
    END IF;
    IF v_paused THEN
        RETURN;
    END IF;

    -- The role's own cap bounds the whole claim: at its cap, nothing is read.
    v_capped := EXISTS (SELECT FROM concurrency_limits l WHERE l.kind <> 'store');
    IF v_capped THEN
        v_role_room := _concurrency_room('role', _claim_tasks.role);
        IF v_role_room <= 0 THEN
            RETURN;
        END IF;
        v_max := least(v_max, v_role_room);
    END IF;

    -- Per-store exclusion, without a subtransaction. Two statements, each with its own snapshot
    -- (a volatile PL/pgSQL function takes a new one per statement under READ COMMITTED):
    -- 1. Lock the candidates: ready tasks in claim order, rows another claimer holds skipped
    --    (SKIP LOCKED), stores busy in this snapshot skipped (an index probe into the few
    --    active tasks), and the transaction-scoped advisory lock of each task's store taken,
    --    stores another claimer is taking at this instant skipped.
    -- 2. Claim them, checking again that their stores are free. A rival that claimed one of these
    --    stores held its advisory lock until it committed, and released it only after its commit
    --    was visible to new snapshots: this statement's snapshot, taken after the lock was ours,
    --    sees its task active, and the candidate is left alone instead of tripping
    --    worker_tasks_one_active_per_dispensary_idx (which still guards any other writer).
    -- A try that claimed nothing because of such a race, or that met only spent tasks, runs
    -- again (its snapshot now sees the rival) so that it costs the worker no poll interval;
    -- after a few tries the claim reports no task, which a worker treats like an empty queue.
    --
    -- Platforms. worker_tasks_claim_order_idx keys each role's pending tasks by platform ('' for
    -- none: an equality, so that the walk of the tasks without one reads them in order too): the
    -- platforms a role's pending tasks name are found on it first, one descent each (a loose
    -- index scan). A role with none (most roles of the core) is claimed by one walk of its tasks
    -- without a platform, locking as it goes, as it always was: one descent more is all it pays.
    -- Otherwise each platform is walked apart, and the tasks without one ('') in one more walk,
    -- reading without locks: a walk reads at most max_tasks (with two platforms or more, room
    -- enough for the rows rivals lock first), and for a role with claims_platform_token at most
    -- the platform's whole tokens now (none:
    -- its tasks wait, and its walk reads nothing); open circuits and disabled platforms are not
    -- walked. The candidates are ranked by priority, then by their turn within their platform at
    -- that priority (its first, its second, ...), then by when the platform was last served
    -- (task_claim_turns): at equal priority a batch takes one task of each platform in turn and
    -- single claims alternate, while a higher priority still goes first. Then max_tasks of them
    -- are locked in rank order (rows and stores other claimers hold skipped), so a claim locks
    -- no more rows than it may claim.
    -- Concurrency keys. The task's own key (its header concurrency_key, '' for none) is the
    -- index's third key: what is walked apart is a (platform, key) pair, found by the same loose
    -- scan, and a pair's walk reads no more than the room under its platform's cap and its key's
    -- (none when either is full: a full key's queue is never read). A turn is a pair's: its row
    -- of task_claim_turns is named by the platform, then U+001F and the key when it has one, so
    -- that single claims alternate between keys as between platforms.
    WITH RECURSIVE pairs AS (
        SELECT first.platform, first.ckey
        FROM (SELECT coalesce(t.platform, '') AS platform, coalesce(t.headers ->> 'concurrency_key', '') AS ckey
              FROM worker_tasks t
              WHERE t.role = _claim_tasks.role AND t.status = 'pending'
                AND (coalesce(t.platform, ''), coalesce(t.headers ->> 'concurrency_key', '')) > ('', '')
              ORDER BY 1, 2 LIMIT 1) AS first
        UNION ALL
        SELECT next.platform, next.ckey
        FROM pairs p
        CROSS JOIN LATERAL (
            SELECT coalesce(t.platform, '') AS platform, coalesce(t.headers ->> 'concurrency_key', '') AS ckey
            FROM worker_tasks t
            WHERE t.role = _claim_tasks.role AND t.status = 'pending'
              AND (coalesce(t.platform, ''), coalesce(t.headers ->> 'concurrency_key', '')) > (p.platform, p.ckey)
            ORDER BY 1, 2 LIMIT 1) AS next
    )
    SELECT array_agg(p.platform), array_agg(p.ckey) INTO v_pair_platforms, v_pair_keys FROM pairs p;

    FOR v_try IN 1..5 LOOP
      IF v_pair_platforms IS NULL THEN
        v_lanes_met := 1;
        WITH
        candidates AS (
            SELECT t.id, t.dispensary_id, t.priority, t.created_at, t.attempt
            FROM worker_tasks t
            WHERE t.role = _claim_tasks.role
              AND t.status = 'pending'
              AND coalesce(t.platform, '') = ''
              AND coalesce(t.headers ->> 'concurrency_key', '') = ''
              AND t.scheduled_for <= v_now
              AND (t.dispensary_id IS NULL
                   -- OFFSET 0 keeps this a probe of the store's entry in
                   -- worker_tasks_one_active_per_dispensary_idx: without it the generic plan
                   -- hashes every active task of every store at each claim.
                   OR (NOT EXISTS (SELECT FROM worker_tasks busy
                                   WHERE busy.dispensary_id = t.dispensary_id
                                     AND busy.status IN ('claimed', 'running')
                                   OFFSET 0)
                       -- 1952543595 = 'task' in ASCII: taskpool's advisory-lock namespace
                       AND pg_try_advisory_xact_lock(1952543595, t.dispensary_id)))
            ORDER BY t.priority DESC, t.created_at, t.id
            LIMIT v_max
            FOR UPDATE OF t SKIP LOCKED
        ),
        -- one task per store, so a batch obeys the store rule too
        chosen AS (
            SELECT DISTINCT ON (coalesce(c.dispensary_id::bigint, -c.id)) c.id
            FROM candidates c
            WHERE c.attempt < c_last_attempt
            ORDER BY coalesce(c.dispensary_id::bigint, -c.id), c.priority DESC, c.created_at, c.id
        )
        SELECT (SELECT array_agg(chosen.id) FROM chosen),
               (SELECT array_agg(c.id) FROM candidates c WHERE c.attempt = c_last_attempt)
        INTO v_chosen, v_spent;
      ELSE
        -- the buckets' clock is the one of this moment, as the requests' (the transaction's
        -- start, v_now, is older than a tokens_at a request wrote since)
        v_walk_clock := _platform_clock();
        WITH
        walks AS (
            SELECT p.platform, p.ckey,
                   least(CASE WHEN g.open_until > v_now OR NOT g.enabled THEN 0
                              -- a platform without a governance row yet has the defaults' full bucket
                              WHEN v_claims_token THEN greatest(0, least(v_max,
                                  floor(coalesce(_platform_tokens(g.tokens, g.tokens_at, g.requests_per_minute,
                                                                  greatest(v_walk_clock, g.tokens_at)),
                                                 v_max))))::integer
                              ELSE v_max END,
                         -- the room under the platform's cap and the key's (NULL: uncapped)
                         CASE WHEN v_capped AND p.platform <> '' THEN _concurrency_room('platform', p.platform) END,
                         CASE WHEN v_capped AND p.ckey LIKE 'proxy:%' THEN _concurrency_room('proxy', substr(p.ckey, 7))
                              WHEN v_capped AND p.ckey <> '' THEN _concurrency_room('key', p.ckey) END) AS quota
            -- '' is the key of the tasks without a platform (or without a concurrency key): no
            -- row governs it, no limit holds it
            FROM unnest(v_pair_platforms || ''::text, v_pair_keys || ''::text) AS p(platform, ckey)
            LEFT JOIN platform_governance g ON g.platform = p.platform
        ),
        candidates AS (
            SELECT c.*
            FROM walks w
            CROSS JOIN LATERAL (
                SELECT t.id, t.platform, w.ckey, t.dispensary_id, t.priority, t.created_at, t.attempt
                FROM worker_tasks t
                WHERE t.role = _claim_tasks.role
                  AND t.status = 'pending'
                  AND coalesce(t.platform, '') = w.platform
                  AND coalesce(t.headers ->> 'concurrency_key', '') = w.ckey
                  AND t.scheduled_for <= v_now
                  AND (t.dispensary_id IS NULL
                       OR NOT EXISTS (SELECT FROM worker_tasks busy
                                      WHERE busy.dispensary_id = t.dispensary_id
                                        AND busy.status IN ('claimed', 'running')
                                      OFFSET 0))
                ORDER BY t.priority DESC, t.created_at, t.id
                LIMIT w.quota
            ) AS c
            WHERE w.quota > 0
        ),
        -- one task per store, so a batch obeys the store rule too
        one_per_store AS (
            SELECT DISTINCT ON (coalesce(c.dispensary_id::bigint, -c.id)) c.*
            FROM candidates c
            WHERE c.attempt < c_last_attempt
            ORDER BY coalesce(c.dispensary_id::bigint, -c.id), c.priority DESC, c.created_at, c.id
        ),
        ranked AS (
            SELECT s.id, s.priority, s.created_at, turns.claimed_at AS platform_served_at,
                   row_number() OVER (PARTITION BY s.platform, s.ckey, s.priority ORDER BY s.created_at, s.id) AS turn
            FROM one_per_store s
            LEFT JOIN task_claim_turns turns
                   ON turns.role = _claim_tasks.role
                  AND turns.platform = coalesce(s.platform, '') || CASE WHEN s.ckey = '' THEN '' ELSE E'\x1f' || s.ckey END
        )
        SELECT (SELECT array_agg(r.id ORDER BY r.priority DESC, r.turn, r.platform_served_at NULLS FIRST,
                                               r.created_at, r.id)
                FROM ranked r),
               (SELECT array_agg(c.id) FROM candidates c WHERE c.attempt = c_last_attempt),
               (SELECT count(DISTINCT (coalesce(c.platform, ''), c.ckey)) FROM candidates c)
        INTO v_ranked, v_spent, v_lanes_met;
        v_lost_race := false;

        -- Lock max_tasks of them in rank order: the LIMIT stops the locking once it has them.
        -- The store's advisory lock is taken outside the locking subquery, for each row as it
        -- comes: inside (or pushed in), it was taken for every candidate before the sort, and a
        -- rival claiming at the same time found all their stores taken.
        SELECT array_agg(taken.id ORDER BY taken.rank) INTO v_chosen
        FROM (SELECT l.id, l.rank
              FROM (SELECT t.id, r.rank, t.dispensary_id
                    FROM unnest(v_ranked) WITH ORDINALITY AS r(id, rank)
                    JOIN worker_tasks t ON t.id = r.id
                    WHERE t.status = 'pending'
                    ORDER BY r.rank
                    -- OFFSET 0: no condition of the outer query is pushed in here
                    OFFSET 0
                    FOR UPDATE OF t SKIP LOCKED) AS l
              -- 1952543595 = 'task' in ASCII: taskpool's advisory-lock namespace
              WHERE l.dispensary_id IS NULL OR pg_try_advisory_xact_lock(1952543595, l.dispensary_id)
              LIMIT v_max) AS taken;
        -- Candidates, but every one locked or claimed by a rival meanwhile: worth another try,
        -- unless the walks read no more than the platforms' tokens, which the rival then took
        -- (the worker hears of the next token from platform_token_wait).
        v_lost_race := v_ranked IS NOT NULL AND v_chosen IS NULL AND NOT v_claims_token;
      END IF;

        -- A spent task has no next attempt: it fails for good, saying why. A statement of its
        -- own, run only when there is one: as a data-modifying CTE of the claim it was set up
        -- (its indexes opened, its triggers prepared) on every claim to update nothing.
        IF v_spent IS NOT NULL THEN
            UPDATE worker_tasks t
            SET status = 'failed',
                error_message = format('attempt %s is the last the attempt counter holds: '
                                       'the task cannot be claimed again', t.attempt)
            WHERE t.id = ANY (v_spent) AND t.status = 'pending';
        END IF;

        -- The tokens, exactly: the walks read the buckets without a lock, so a rival claim or
        -- request may have taken some since. Lock the chosen platforms' rows, read the clock once
        -- they are ours, and keep of each platform's candidates, in rank order, only as many as
        -- it has whole tokens now. A row another transaction holds (a claim, a request, a
        -- platform's result being recorded) is skipped with its platform's candidates, which
        -- the next claim takes: waiting for it would queue every claim of the role behind the
        -- platform's row.
        IF v_claims_token AND v_chosen IS NOT NULL THEN
            SELECT array_agg(DISTINCT t.platform) INTO v_token_platforms
            FROM worker_tasks t WHERE t.id = ANY (v_chosen) AND t.platform IS NOT NULL;
        END IF;
        IF v_token_platforms IS NOT NULL THEN
            INSERT INTO platform_governance (platform)
            SELECT p FROM unnest(v_token_platforms) AS p
            WHERE btrim(p) <> '' AND length(p) <= 100
              AND NOT EXISTS (SELECT FROM platform_governance e WHERE e.platform = p)
            ON CONFLICT DO NOTHING;
            SELECT array_agg(l.platform) INTO v_token_platforms
            FROM (SELECT g.platform FROM platform_governance g WHERE g.platform = ANY (v_token_platforms)
                  ORDER BY g.platform FOR UPDATE SKIP LOCKED) AS l;
            v_clock := _platform_clock();
            SELECT array_agg(r.id ORDER BY r.rank) INTO v_chosen
            FROM (
                SELECT c.id, c.rank, g.platform AS governed,
                       g.enabled AND NOT coalesce(g.open_until > v_clock, false) AS takes,
                       row_number() OVER (PARTITION BY t.platform ORDER BY c.rank) AS nth,
                       _platform_tokens(g.tokens, g.tokens_at, g.requests_per_minute,
                                        greatest(v_clock, g.tokens_at)) AS tokens
                FROM unnest(v_chosen) WITH ORDINALITY AS c(id, rank)
                JOIN worker_tasks t ON t.id = c.id
                LEFT JOIN platform_governance g ON g.platform = t.platform
            ) AS r
            -- no platform, or one no row can govern (a name the table refuses): no limit; a
            -- circuit that opened (or a platform disabled) since the walks read its row, seen now
            -- that the row is ours, takes none
            WHERE r.governed IS NULL
               OR (r.governed = ANY (v_token_platforms) AND r.nth <= r.tokens AND r.takes);
        END IF;

        -- The caps, exactly: the walks read the rooms without a lock. Each chosen task needs a
        -- free slot of every capped key it has; the free slots are locked SKIP LOCKED (one a
        -- rival or a task's end holds is skipped, as a row), as many per key as its tasks need
        -- and its room allows, and a task keeps its place only if its rank among the chosen of
        -- each of its keys is within the slots taken there: a batch of 10 of a key capped at 3
        -- takes 3.
        v_capped_ids := NULL;
        IF v_capped AND v_chosen IS NOT NULL THEN
            SELECT array_agg(k.id ORDER BY k.kind, k.key, k.rank), array_agg(k.kind ORDER BY k.kind, k.key, k.rank),
                   array_agg(k.key ORDER BY k.kind, k.key, k.rank), array_agg(k.cap ORDER BY k.kind, k.key, k.rank),
                   array_agg(k.rank ORDER BY k.kind, k.key, k.rank)
            INTO v_capped_ids, v_capped_kinds, v_capped_keys, v_capped_caps, v_capped_ranks
            FROM (SELECT c.id, c.rank, k.kind, k.key, lim.max_running AS cap
                  FROM unnest(v_chosen) WITH ORDINALITY AS c(id, rank)
                  JOIN worker_tasks t ON t.id = c.id
                  CROSS JOIN LATERAL _concurrency_keys_of(t.role, t.platform, t.headers) AS k
                  CROSS JOIN LATERAL (SELECT l.max_running FROM concurrency_limits l
                                      WHERE l.kind = k.kind AND l.key IN (k.key, '*')
                                      ORDER BY l.key = '*' LIMIT 1) AS lim
                 ) AS k;
        END IF;
        IF v_capped_ids IS NOT NULL THEN
            -- a key's slots 1..N are made together, so slot N present means all are
            INSERT INTO concurrency_slots (kind, key, slot)
            SELECT k.kind, k.key, n
            FROM (SELECT DISTINCT u.kind, u.key, u.cap FROM unnest(v_capped_kinds, v_capped_keys, v_capped_caps) AS u(kind, key, cap)) AS k
            CROSS JOIN generate_series(1, k.cap) AS n
            WHERE NOT EXISTS (SELECT FROM concurrency_slots e WHERE e.kind = k.kind AND e.key = k.key AND e.slot = k.cap)
            ORDER BY k.kind, k.key, n
            ON CONFLICT DO NOTHING;
            SELECT array_agg(f.kind ORDER BY f.kind, f.key, f.slot), array_agg(f.key ORDER BY f.kind, f.key, f.slot),
                   array_agg(f.slot ORDER BY f.kind, f.key, f.slot)
            INTO v_free_kinds, v_free_keys, v_free_slots
            FROM (SELECT u.kind, u.key, min(u.cap) AS cap, count(*) AS wanted
                  FROM unnest(v_capped_kinds, v_capped_keys, v_capped_caps) AS u(kind, key, cap)
                  GROUP BY u.kind, u.key) AS k
            CROSS JOIN LATERAL (
                SELECT s.kind, s.key, s.slot
                FROM concurrency_slots s
                WHERE s.kind = k.kind AND s.key = k.key AND s.slot <= k.cap AND s.task_id IS NULL
                ORDER BY s.slot
                -- the room: a limit lowered below the slots held leaves some held above it
                LIMIT greatest(0, least(k.wanted, k.cap - (SELECT count(*) FROM concurrency_slots h
                                                           WHERE h.kind = k.kind AND h.key = k.key
                                                             AND h.task_id IS NOT NULL)))
                FOR UPDATE OF s SKIP LOCKED) AS f;
            SELECT array_agg(c.id ORDER BY c.rank) INTO v_chosen
            FROM unnest(v_chosen) WITH ORDINALITY AS c(id, rank)
            WHERE NOT EXISTS (
                SELECT FROM (SELECT u.id, u.kind, u.key,
                                    row_number() OVER (PARTITION BY u.kind, u.key ORDER BY u.rank) AS nth
                             FROM unnest(v_capped_ids, v_capped_kinds, v_capped_keys, v_capped_ranks) AS u(id, kind, key, rank)) AS k
                WHERE k.id = c.id
                  AND k.nth > (SELECT count(*) FROM unnest(v_free_kinds, v_free_keys) AS f(kind, key)
                               WHERE f.kind = k.kind AND f.key = k.key));
        END IF;

        IF v_chosen IS NOT NULL THEN
            -- the claim itself: a new attempt, owned by this worker
            RETURN QUERY
            WITH claimed AS (
                UPDATE worker_tasks t
                SET status = CASE WHEN _claim_tasks.start THEN 'running' ELSE 'claimed' END,
                    worker_id = _claim_tasks.worker_id,
                    attempt = t.attempt + 1,
                    -- the fence beside the attempt: a claim the database forgot (lost WAL)
                    -- may have had this attempt number, never this token
                    claim_token = gen_random_uuid(),
                    claimed_at = v_now,
                    started_at = CASE WHEN _claim_tasks.start THEN v_now END,
                    last_heartbeat_at = v_now,
                    error_message = NULL
                WHERE t.id = ANY (v_chosen)
                  AND (t.dispensary_id IS NULL
                       OR NOT EXISTS (SELECT FROM worker_tasks busy
                                      WHERE busy.dispensary_id = t.dispensary_id
                                        AND busy.status IN ('claimed', 'running')
                                      OFFSET 0))
                RETURNING t.*
            )
            SELECT * FROM claimed c ORDER BY c.priority DESC, c.created_at, c.id;
            GET DIAGNOSTICS v_claimed = ROW_COUNT;
        END IF;

        -- The claimed tasks take their slots: of each key, its n-th claimed task (in rank order)
        -- the n-th free slot locked above.
        IF v_claimed > 0 AND v_capped_ids IS NOT NULL THEN
            UPDATE concurrency_slots s
            SET task_id = a.id
            FROM (SELECT k.id, k.kind, k.key,
                         row_number() OVER (PARTITION BY k.kind, k.key ORDER BY k.rank) AS nth
                  FROM unnest(v_capped_ids, v_capped_kinds, v_capped_keys, v_capped_ranks) AS k(id, kind, key, rank)
                  JOIN worker_tasks t ON t.id = k.id
                  WHERE t.id = ANY (v_chosen) AND t.status <> 'pending') AS a
            JOIN (SELECT f.kind, f.key, f.slot,
                         row_number() OVER (PARTITION BY f.kind, f.key ORDER BY f.slot) AS nth
                  FROM unnest(v_free_kinds, v_free_keys, v_free_slots) AS f(kind, key, slot)) AS free
              ON free.kind = a.kind AND free.key = a.key AND free.nth = a.nth
            WHERE s.kind = free.kind AND s.key = free.key AND s.slot = free.slot;
        END IF;

        IF v_claimed > 0 AND (v_token_platforms IS NOT NULL OR v_lanes_met > 1) THEN
            -- What this claim took (its rows, locked and no longer pending), per platform:
            -- one token each from the buckets locked above, and the platforms' turn.
            IF v_token_platforms IS NOT NULL THEN
                UPDATE platform_governance g
                SET tokens = _platform_tokens(g.tokens, g.tokens_at, g.requests_per_minute,
                                              greatest(v_clock, g.tokens_at)) - taken.tasks,
                    tokens_at = greatest(v_clock, g.tokens_at),
                    requests_total = g.requests_total + taken.tasks
                FROM (SELECT t.platform, count(*) AS tasks FROM worker_tasks t
                      WHERE t.id = ANY (v_chosen) AND t.status <> 'pending' AND t.platform IS NOT NULL
                      GROUP BY t.platform) AS taken
                WHERE g.platform = taken.platform;
            END IF;
            IF v_lanes_met > 1 THEN
                -- A turn another claim is writing at this moment is left to it (SKIP LOCKED): it
                -- writes about the same time, and waiting for its commit would queue the claims.
                SELECT array_agg(DISTINCT coalesce(t.platform, '')
                                          || coalesce(E'\x1f' || (t.headers ->> 'concurrency_key'), ''))
                INTO v_served
                FROM worker_tasks t WHERE t.id = ANY (v_chosen) AND t.status <> 'pending';
                UPDATE task_claim_turns turns
                SET claimed_at = _platform_clock()
                FROM (SELECT f.platform FROM task_claim_turns f
                      WHERE f.role = _claim_tasks.role AND f.platform = ANY (v_served)
                      ORDER BY f.platform
                      FOR UPDATE SKIP LOCKED) AS free
                WHERE turns.role = _claim_tasks.role AND turns.platform = free.platform;
                INSERT INTO task_claim_turns (role, platform, claimed_at)
                SELECT _claim_tasks.role, p, _platform_clock() FROM unnest(v_served) AS p
                WHERE NOT EXISTS (SELECT FROM task_claim_turns e
                                  WHERE e.role = _claim_tasks.role AND e.platform = p)
                ORDER BY p
                ON CONFLICT DO NOTHING;
            END IF;
        END IF;
        -- Done when something was claimed, or when the queue had nothing to offer (no candidate
        -- and no spent task): only a lost race (candidates that rivals locked or claimed first)
        -- or spent tasks are worth another try.
        EXIT WHEN v_claimed > 0 OR (v_chosen IS NULL AND v_spent IS NULL AND NOT v_lost_race);
        v_token_platforms := NULL;
        v_free_kinds := NULL;
    END LOOP;

    -- A worker that was waiting for the role is at work on it again: the next enqueue need not
    -- wake it for this role (one serving several roles still waits for the others).
    IF v_claimed > 0 THEN
        DELETE FROM task_worker_waits w WHERE w.worker_id = _claim_tasks.worker_id AND w.role = _claim_tasks.role;
    END IF;
END;
$$;

REVOKE ALL ON FUNCTION _claim_tasks(text, text, integer, boolean) FROM PUBLIC;

COMMIT;
