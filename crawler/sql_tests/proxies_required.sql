-- proxies_required: a platform can require proxies (set_proxies_required): with none enabled,
-- none added or all disabled, take_proxy answers a row of NULLs (fail, to be retried) instead of
-- no row (go direct); v_crawler_proxy_platforms shows it. Operators only; bad input writes nothing.
BEGIN;
SELECT plan(16);

SELECT has_table('crawler_platform_settings', 'Should have the table crawler_platform_settings');
SELECT has_view('v_crawler_proxy_platforms', 'Should have the view v_crawler_proxy_platforms');
SELECT ok(NOT has_function_privilege('taskpool_worker', 'set_proxies_required(text, boolean)', 'EXECUTE'),
    'Should leave requiring proxies to operators');
SELECT ok(NOT has_table_privilege('taskpool_worker', 'crawler_platform_settings', 'SELECT'),
    'Should give taskpool_worker no access to the table itself');

INSERT INTO platform_governance (platform) VALUES ('t65'), ('t65-direct');

/****************************************************************************/
-- a platform with no proxy

SELECT is_empty($$SELECT * FROM take_proxy('t65')$$, 'Should go direct by default with no proxy');
SELECT results_eq(
    $$SELECT platform, proxies_required, proxies, enabled_proxies, ready_proxies, requests
      FROM set_proxies_required('t65', true)$$,
    $$VALUES ('t65', true, 0::bigint, 0::bigint, 0::bigint, 'refused')$$,
    'Should require proxies, and show that the platform''s requests are refused');
SELECT results_eq(
    $$SELECT proxy_id, url, label, back_in_seconds FROM take_proxy('t65')$$,
    $$VALUES (NULL::bigint, NULL::text, NULL::text, NULL::double precision)$$,
    'Should answer a row of NULLs, never "go direct", when it requires proxies and has none');
SELECT is_empty($$SELECT * FROM take_proxy('t65-direct')$$, 'Should leave the other platforms direct');

/****************************************************************************/
-- with proxies: one enabled is taken; all disabled refuses

SELECT id AS p1 FROM add_proxy('t65', 'http://127.0.0.1:3128') \gset
SELECT is((SELECT proxy_id FROM take_proxy('t65')), :p1::bigint, 'Should take its enabled proxy');
SELECT is((SELECT requests FROM v_crawler_proxy_platforms WHERE platform = 't65'), 'proxied',
    'Should show its requests proxied');
SELECT disable_proxy(:p1) IS NOT NULL AS disabled \gset
SELECT results_eq(
    $$SELECT proxy_id, back_in_seconds FROM take_proxy('t65')$$,
    $$VALUES (NULL::bigint, NULL::double precision)$$,
    'Should refuse, not go direct, when all its proxies are disabled');
SELECT results_eq(
    $$SELECT proxies_required, proxies, enabled_proxies, requests FROM set_proxies_required('t65', false)$$,
    $$VALUES (false, 1::bigint, 0::bigint, 'direct')$$,
    'Should allow direct requests again');
SELECT is_empty($$SELECT * FROM take_proxy('t65')$$, 'Should go direct once allowed');

/****************************************************************************/
-- refusals write nothing

CREATE TEMP TABLE before AS SELECT * FROM crawler_platform_settings;
SELECT throws_ok($$SELECT set_proxies_required('t65-nowhere', true)$$, '22023', NULL,
    'Should refuse a platform taskpool does not know');
SELECT throws_ok($$SELECT set_proxies_required('t65', NULL)$$, '22004', 'required must be true or false, not NULL',
    'Should refuse a NULL');
SELECT results_eq($$SELECT * FROM crawler_platform_settings$$, $$SELECT * FROM before$$,
    'Should change nothing when it refuses');

SELECT * FROM finish();
ROLLBACK;
