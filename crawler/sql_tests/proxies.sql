-- proxies: the proxies a platform's requests go through. Structure and privileges, then the
-- operator's functions and their refusals, then the rotation (take_proxy) and the health
-- (report_proxy_result): growing, capped rests; a success clears them; all rested is said apart
-- from none at all.
BEGIN;
SELECT plan(39);

/****************************************************************************/
-- Structure and privileges

SELECT has_table('crawler_proxies', 'Should have the crawler_proxies table');
SELECT has_view('v_crawler_proxies', 'Should have the v_crawler_proxies view');
SELECT is_definer('public', 'take_proxy', ARRAY['text'], 'Should run take_proxy as its owner');
SELECT is_definer('public', 'report_proxy_result', ARRAY['bigint', 'boolean', 'text'],
    'Should run report_proxy_result as its owner');
SELECT ok(has_function_privilege('taskpool_worker', 'take_proxy(text)', 'EXECUTE')
          AND has_function_privilege('taskpool_worker', 'report_proxy_result(bigint, boolean, text)', 'EXECUTE'),
    'Should let taskpool_worker take proxies and report on them');
SELECT ok(NOT has_function_privilege('taskpool_worker', 'add_proxy(text, text, interval, interval)', 'EXECUTE')
          AND NOT has_function_privilege('taskpool_worker', 'remove_proxy(bigint)', 'EXECUTE')
          AND NOT has_function_privilege('taskpool_worker', 'enable_proxy(bigint)', 'EXECUTE')
          AND NOT has_function_privilege('taskpool_worker', 'disable_proxy(bigint)', 'EXECUTE'),
    'Should leave adding, removing, enabling and disabling proxies to operators');
SELECT ok(NOT has_table_privilege('taskpool_worker', 'crawler_proxies', 'SELECT'),
    'Should give taskpool_worker no access to the table itself (it holds passwords)');

/****************************************************************************/
-- Adding, and the refusals that write nothing

INSERT INTO platform_governance (platform) VALUES ('t54'), ('t54-other');
SELECT id AS p1 FROM add_proxy('t54', 'http://127.0.0.1:3128') \gset
SELECT id AS p2 FROM add_proxy('t54', 'http://crawler:s3cret@proxy-2.example:8080', rest_base := '10 seconds', rest_cap := '40 seconds') \gset
SELECT id AS p3 FROM add_proxy('t54', 'https://[::1]:3129/') \gset
SELECT results_eq(
    format('SELECT url, state, enabled, consecutive_failures, requests_total, rest_base, rest_cap FROM v_crawler_proxies WHERE id IN (%s, %s, %s) ORDER BY id', :p1, :p2, :p3),
    $$VALUES ('http://127.0.0.1:3128', 'ready', true, 0, 0::bigint, '30 seconds'::interval, '30 minutes'::interval),
             ('http://***@proxy-2.example:8080', 'ready', true, 0, 0::bigint, '10 seconds'::interval, '40 seconds'::interval),
             ('https://[::1]:3129/', 'ready', true, 0, 0::bigint, '30 seconds'::interval, '30 minutes'::interval)$$,
    'Should add ready proxies, showing a password masked');
SELECT is((SELECT url FROM crawler_proxies WHERE id = :p2), 'http://crawler:s3cret@proxy-2.example:8080',
    'Should keep the password itself in the table, for the requests');

CREATE TEMPORARY TABLE before AS SELECT * FROM crawler_proxies;
SELECT throws_ok($$SELECT add_proxy('t54-nowhere', 'http://127.0.0.1:1')$$, '22023', NULL,
    'Should refuse a platform taskpool does not know');
SELECT throws_ok($$SELECT add_proxy('t54', 'socks5://127.0.0.1:1080')$$, '22023',
    'url must start with http:// or https://, not ''socks5://127.0.0.1:1080''', 'Should refuse a scheme other than http(s)');
SELECT throws_ok($$SELECT add_proxy('t54', 'ftp://user:pw@127.0.0.1:21')$$, '22023',
    'url must start with http:// or https://, not ''ftp://***@127.0.0.1:21''',
    'Should refuse a bad scheme without showing the password');
SELECT throws_ok($$SELECT add_proxy('t54', 'http://127.0.0.1:3128/some/path')$$, '22023',
    'url must be http(s)://[user:password@]host[:port] and nothing more, not ''http://127.0.0.1:3128/some/path''',
    'Should refuse a URL with a path');
SELECT throws_ok($$SELECT add_proxy('t54', 'http://127.0.0.1:70000')$$, '22023',
    'url''s port must be from 1 to 65535, not 70000', 'Should refuse a port out of range');
SELECT throws_ok($$SELECT add_proxy('t54', NULL)$$, '22004', 'url is required', 'Should refuse a NULL URL');
SELECT throws_ok($$SELECT add_proxy('t54', 'http://127.0.0.1:1', rest_base := '0 seconds')$$, '22023',
    'rest_base must be more than 0 and at most 1 day, not 00:00:00', 'Should refuse a rest of nothing');
SELECT throws_ok($$SELECT add_proxy('t54', 'http://127.0.0.1:1', rest_base := '1 minute', rest_cap := '30 seconds')$$, '22023',
    'rest_cap must be from rest_base (00:01:00) to 1 day, not 00:00:30', 'Should refuse a cap under the base');
SELECT throws_ok($$SELECT add_proxy('t54', 'http://crawler:s3cret@proxy-2.example:8080')$$, '23505',
    format('http://***@proxy-2.example:8080 is proxy %s of t54 already', :p2),
    'Should refuse a URL the platform has already, naming its proxy');
SELECT throws_ok('SELECT remove_proxy(-1)', 'P0002', 'proxy -1 does not exist', 'Should refuse to remove an unknown proxy');
SELECT throws_ok('SELECT disable_proxy(-1)', 'P0002', 'proxy -1 does not exist', 'Should refuse to disable an unknown proxy');
SELECT set_eq('SELECT * FROM crawler_proxies', 'SELECT * FROM before', 'Should have changed no proxy with the refused calls');

/****************************************************************************/
-- The rotation

-- The proxies n takes in a row hand out, each take a statement of its own, as workers' are.
CREATE FUNCTION pg_temp.takes(platform text, n integer) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    v_ids bigint[] := '{}';
BEGIN
    FOR i IN 1 .. n LOOP
        v_ids := v_ids || (SELECT proxy_id FROM take_proxy(platform));
    END LOOP;
    RETURN v_ids;
END $$;

SELECT is((SELECT count(*) FROM take_proxy('t54-other')), 0::bigint,
    'Should give no row for a platform without proxies: the request goes direct');
SELECT is(
    pg_temp.takes('t54', 6),
    ARRAY[:p1, :p2, :p3, :p1, :p2, :p3]::bigint[],
    'Should hand the proxies out in turn');
SELECT is((SELECT proxy_id FROM take_proxy('t54')), :p1::bigint, 'Should start the next round with the first again');
SELECT results_eq(
    $$SELECT url, label FROM take_proxy('t54')$$,
    $$VALUES ('http://crawler:s3cret@proxy-2.example:8080', 'http://***@proxy-2.example:8080')$$,
    'Should give the URL to use and a label with the password masked');
SELECT is((SELECT requests_total FROM crawler_proxies WHERE id = :p2), 3::bigint,
    'Should count each take as a request');

SELECT disable_proxy(:p3);
SELECT is(
    pg_temp.takes('t54', 4),
    ARRAY[:p1, :p2, :p1, :p2]::bigint[],
    'Should pass over a disabled proxy');

/****************************************************************************/
-- Health: failures rest a proxy, longer each time, capped; a success clears them

SELECT is(report_proxy_result(:p2, false, 'connection refused'), taskpool_now() + interval '10 seconds',
    'Should rest a proxy for its rest_base after a first failure');
SELECT is(report_proxy_result(:p2, false, 'connection refused'), taskpool_now() + interval '20 seconds',
    'Should double the rest with a second failure in a row');
SELECT report_proxy_result(:p2, false, 'again');
SELECT is(report_proxy_result(:p2, false, 'timed out'), taskpool_now() + interval '40 seconds',
    'Should cap the rest at rest_cap');
SELECT results_eq(
    format('SELECT state, consecutive_failures, failures_total, last_error, last_failure_at FROM v_crawler_proxies WHERE id = %s', :p2),
    format($$VALUES ('rested', 4, 4::bigint, 'timed out', %L::timestamptz)$$, taskpool_now()),
    'Should record the failures, the last error and when');
SELECT is(
    pg_temp.takes('t54', 2),
    ARRAY[:p1, :p1]::bigint[],
    'Should pass over a rested proxy');

SELECT report_proxy_result(:p1, false, 'HTTP 502 from the proxy');
SELECT results_eq(
    $$SELECT proxy_id, url, round(back_in_seconds) FROM take_proxy('t54')$$,
    $$VALUES (NULL::bigint, NULL::text, 30::double precision)$$,
    'Should say when every enabled proxy is rested, and when the first is back');

UPDATE crawler_proxies SET rested_until = taskpool_now() - interval '1 second' WHERE id = :p2;
SELECT is((SELECT proxy_id FROM take_proxy('t54')), :p2::bigint, 'Should hand out a proxy again once its rest is over');
SELECT is(report_proxy_result(:p2, true), NULL, 'Should rest no proxy after a success');
SELECT results_eq(
    format('SELECT state, consecutive_failures, failures_total, rested_until, last_success_at FROM v_crawler_proxies WHERE id = %s', :p2),
    format($$VALUES ('ready', 0, 4::bigint, NULL::timestamptz, %L::timestamptz)$$, taskpool_now()),
    'Should clear the failures in a row with a success, keeping the total');
SELECT is(report_proxy_result(-1, false, 'gone'), NULL, 'Should ignore a report on a proxy removed meanwhile');

SELECT is((SELECT url FROM remove_proxy(:p1)), 'http://127.0.0.1:3128', 'Should return the removed proxy''s row');
SELECT disable_proxy(:p2);
SELECT is((SELECT count(*) FROM take_proxy('t54')), 0::bigint,
    'Should go direct when every proxy of the platform is disabled');

SELECT * FROM finish();
ROLLBACK;
