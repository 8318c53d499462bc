-- privileges_nothing_public: PUBLIC executes no function and holds no privilege on any relation of the
-- core's schema, read from the catalog (so a function added without REVOKE ... FROM PUBLIC
-- fails here, whoever forgets it). crawler/sql_tests/63_nothing_public.sql checks the same with
-- the crawler deployed too.
BEGIN;
SELECT plan(3);

SELECT is_empty($$SELECT kind, object, privileges FROM tests.public_grants()$$,
    'Should let PUBLIC execute no function and use no relation of the core''s schema');

-- The check sees what it is meant to see.
CREATE FUNCTION public.t61_forgotten() RETURNS integer LANGUAGE sql AS 'SELECT 1';
CREATE TABLE public.t61_shared (id integer);
GRANT SELECT ON public.t61_shared TO PUBLIC;
SELECT results_eq(
    $$SELECT kind, object, privileges FROM tests.public_grants()$$,
    $$VALUES ('function', 't61_forgotten()', 'EXECUTE'), ('relation', 't61_shared', 'SELECT')$$,
    'Should catch a function made without REVOKE and a relation granted to PUBLIC');
REVOKE ALL ON FUNCTION public.t61_forgotten() FROM PUBLIC;
REVOKE ALL ON public.t61_shared FROM PUBLIC;
SELECT is_empty($$SELECT kind, object, privileges FROM tests.public_grants()$$,
    'Should not list them once revoked');

SELECT * FROM finish();
ROLLBACK;
