-- privileges_nothing_public: with the crawler deployed beside the core, PUBLIC executes no function and
-- holds no privilege on any relation of the schema, read from the catalog
-- (_image_download_dedupe_key was executable by PUBLIC). sql_tests/privileges_nothing_public.sql checks
-- the core alone.
BEGIN;
SELECT plan(2);

SELECT is_empty($$SELECT kind, object, privileges FROM tests.public_grants()$$,
    'Should let PUBLIC execute no function and use no relation of the core''s or the crawler''s schema');
SELECT ok(NOT has_function_privilege('public', '_image_download_dedupe_key(text)', 'execute'),
    'Should not let PUBLIC execute _image_download_dedupe_key');

SELECT * FROM finish();
ROLLBACK;
