-- Deploy taskpool:_concurrency_limit_problem to pg
-- requires: concurrency_limits

BEGIN;
SET client_min_messages = 'warning';

-- _concurrency_limit_problem
-- What is wrong with a concurrency limit's kind and key, as an error message; NULL when they are fine.
CREATE FUNCTION _concurrency_limit_problem(kind text, key text)
RETURNS text
LANGUAGE sql
STABLE
AS $$
    SELECT CASE
        WHEN _concurrency_limit_problem.kind IS NULL THEN 'kind is required'
        WHEN _concurrency_limit_problem.kind NOT IN ('store', 'platform', 'proxy', 'role', 'key')
            THEN format('unknown concurrency kind %s', left(quote_literal(_concurrency_limit_problem.kind), 60))
        WHEN _concurrency_limit_problem.key IS NULL THEN 'key is required (''*'' for every key of the kind)'
        WHEN btrim(_concurrency_limit_problem.key) = '' THEN 'key must not be empty (''*'' for every key of the kind)'
        WHEN length(_concurrency_limit_problem.key) > 200
            THEN format('key has %s characters; at most 200 are allowed', length(_concurrency_limit_problem.key))
        WHEN btrim(_concurrency_limit_problem.key) <> _concurrency_limit_problem.key
            THEN format('key %s has spaces at an end', quote_literal(_concurrency_limit_problem.key))
        WHEN _concurrency_limit_problem.kind = 'role' AND _concurrency_limit_problem.key <> '*'
             AND NOT EXISTS (SELECT FROM task_roles r WHERE r.role = _concurrency_limit_problem.key)
            THEN format('unknown role %s', quote_literal(_concurrency_limit_problem.key))
        WHEN _concurrency_limit_problem.kind = 'store' AND _concurrency_limit_problem.key <> '*'
             AND NOT EXISTS (SELECT FROM dispensaries d WHERE d.id::text = _concurrency_limit_problem.key)
            THEN format('unknown store %s', quote_literal(_concurrency_limit_problem.key))
    END;
$$;

REVOKE ALL ON FUNCTION _concurrency_limit_problem(text, text) FROM PUBLIC;

COMMIT;
