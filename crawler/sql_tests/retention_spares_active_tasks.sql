-- retention_spares_active_tasks: the crawl_payloads retention policy never deletes a payload
-- that a pending, claimed or running task names in its payload's payload_id (a product_refresh
-- still to apply it); once that task is over, the payload goes like any other.
BEGIN;
SELECT plan(7);

/****************************************************************************/
-- fixtures: six stores, each with one saved payload 60 days old, named by a product_refresh in
-- each state but one store's, which no task names

CREATE TEMP TABLE t63 (name text PRIMARY KEY, store integer, payload bigint, task bigint);
INSERT INTO dispensaries (name, platform)
SELECT 't63 ' || n, 't63' FROM unnest(ARRAY['none', 'completed', 'cancelled', 'claimed', 'running', 'pending']) n;
INSERT INTO t63 (name, store)
SELECT substr(d.name, 5), d.id FROM dispensaries d WHERE d.name LIKE 't63 %';
UPDATE t63 SET payload = record_crawl_payload(store, now() - interval '60 days',
    format('payloads/%s/store_%s_%sZ.json.gz', to_char((now() - interval '60 days') AT TIME ZONE 'UTC', 'YYYY/MM/DD'),
           store, to_char((now() - interval '60 days') AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MISSUS')),
    100, encode(sha256(convert_to(name, 'UTF8')), 'hex'));
-- priorities set the order claim_task hands them out: completed, claimed, running
UPDATE t63 SET task = (enqueue_task('product_refresh', jsonb_build_object('payload_id', payload),
        dispensary_id := store,
        priority := CASE name WHEN 'completed' THEN 100 WHEN 'claimed' THEN 90 WHEN 'running' THEN 80 ELSE 0 END,
        scheduled_for := CASE name WHEN 'pending' THEN now() + interval '1 day' END)).id
WHERE name <> 'none';
UPDATE worker_tasks SET scheduled_for = now() + interval '1 day'
WHERE role = 'product_refresh' AND status = 'pending' AND id NOT IN (SELECT task FROM t63 WHERE task IS NOT NULL);
SELECT id AS completed_task, attempt AS completed_attempt FROM claim_task('product_refresh', 't63-w1') \gset
SELECT start_task(:completed_task, 't63-w1', :completed_attempt, tests.claim_token(:completed_task, :completed_attempt)) IS NOT NULL AS started \gset
SELECT complete_task(:completed_task, 't63-w1', :completed_attempt, tests.claim_token(:completed_task, :completed_attempt)) IS NOT NULL AS completed \gset
SELECT claim_task('product_refresh', 't63-w2') IS NOT NULL AS claimed \gset
SELECT id AS running_task, attempt AS running_attempt FROM claim_task('product_refresh', 't63-w3') \gset
SELECT start_task(:running_task, 't63-w3', :running_attempt, tests.claim_token(:running_task, :running_attempt)) IS NOT NULL AS started \gset
SELECT cancel_task(task) IS NOT NULL AS cancelled FROM t63 WHERE name = 'cancelled' \gset

SELECT results_eq(
    $$SELECT x.name, t.status FROM t63 x JOIN worker_tasks t ON t.id = x.task ORDER BY x.name$$,
    $$VALUES ('cancelled', 'cancelled'), ('claimed', 'claimed'), ('completed', 'completed'),
             ('pending', 'pending'), ('running', 'running')$$,
    'Should have a product_refresh in each state, each naming its store''s old payload');

CREATE FUNCTION pg_temp.kept() RETURNS text[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(x.name ORDER BY x.name), '{}') FROM t63 x JOIN raw_crawl_payloads p ON p.id = x.payload;
$$;

/****************************************************************************/
-- behaviour

SELECT is((SELECT would_prune FROM count_retention() WHERE policy = 'crawl_payloads'), 3::bigint,
    'Should count only the old payloads no active task names');
SELECT is((SELECT pruned FROM apply_retention() WHERE policy = 'crawl_payloads'), 3::bigint,
    'Should prune them');
SELECT is(pg_temp.kept(), ARRAY['claimed', 'pending', 'running'],
    'Should keep the payloads a pending, claimed or running product_refresh names, and delete those of finished tasks and of none');
SELECT ok(NOT EXISTS (SELECT FROM payload_file_removals r JOIN raw_crawl_payloads p ON p.storage_path = r.storage_path),
    'Should queue no file of a kept payload for removal');

SELECT cancel_task(task) IS NOT NULL AS cancelled FROM t63 WHERE name = 'pending' \gset
SELECT is((SELECT pruned FROM apply_retention() WHERE policy = 'crawl_payloads'), 1::bigint,
    'Should prune the payload of the pending task once it is cancelled');
SELECT is(pg_temp.kept(), ARRAY['claimed', 'running'],
    'Should prune a payload once the task that named it is over');

SELECT * FROM finish();
ROLLBACK;
