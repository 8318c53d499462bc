-- proxies_credentials_masked: a proxy URL's whole userinfo is masked wherever it is shown (a
-- provider's key may be the user name alone: http://KEY:@host, http://TOKEN@host), in
-- v_crawler_proxies, take_proxy's label and the messages; the table keeps it, for the requests.
BEGIN;
SELECT plan(7);

INSERT INTO platform_governance (platform) VALUES ('t64');
CREATE TEMP TABLE t64 (name text PRIMARY KEY, id bigint);
INSERT INTO t64
SELECT name, (add_proxy('t64', url)).id
FROM (VALUES ('user_password', 'http://crawler:s3cret@127.0.0.1:3128'),
             ('key_colon',     'http://KEY0123:@127.0.0.1:3129'),
             ('token',         'http://TOKEN0123@127.0.0.1:3130'),
             ('none',          'https://127.0.0.1:3131/')) v (name, url);

SELECT results_eq(
    $$SELECT x.name, v.url FROM t64 x JOIN v_crawler_proxies v ON v.id = x.id ORDER BY x.name$$,
    $$VALUES ('key_colon', 'http://***@127.0.0.1:3129'), ('none', 'https://127.0.0.1:3131/'),
             ('token', 'http://***@127.0.0.1:3130'), ('user_password', 'http://***@127.0.0.1:3128')$$,
    'Should mask the whole userinfo in v_crawler_proxies: a user and password, a key with an empty password, a token alone');
SELECT is((SELECT count(*) FROM v_crawler_proxies WHERE url ~ '(crawler|s3cret|KEY0123|TOKEN0123)'), 0::bigint,
    'Should show no credential in v_crawler_proxies');
SELECT is((SELECT url FROM crawler_proxies WHERE id = (SELECT id FROM t64 WHERE name = 'token')),
    'http://TOKEN0123@127.0.0.1:3130', 'Should keep the URL itself in the table, for the requests');
SELECT is((SELECT url FROM disable_proxy((SELECT id FROM t64 WHERE name = 'key_colon'))), 'http://***@127.0.0.1:3129',
    'Should mask it in what the operator functions return');
SELECT is(array_agg(label ORDER BY label), ARRAY['http://***@127.0.0.1:3128', 'http://***@127.0.0.1:3130', 'https://127.0.0.1:3131/'],
    'Should mask it in the label take_proxy gives for logs')
FROM (SELECT (take_proxy('t64')).label FROM generate_series(1, 3)) taken;
SELECT throws_ok($$SELECT add_proxy('t64', 'http://TOKEN0123@127.0.0.1:3130')$$, '23505',
    format('http://***@127.0.0.1:3130 is proxy %s of t64 already', (SELECT id FROM t64 WHERE name = 'token')),
    'Should mask it in an error message');
SELECT throws_ok($$SELECT add_proxy('t64', 'socks5://TOKEN0123@127.0.0.1:1080')$$, '22023',
    'url must start with http:// or https://, not ''socks5://***@127.0.0.1:1080''',
    'Should mask it in a refused URL');

SELECT * FROM finish();
ROLLBACK;
