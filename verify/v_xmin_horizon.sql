-- Verify taskpool:v_xmin_horizon on pg

BEGIN;

SELECT holder, pid, user_name, application_name, client_addr, state, xact_start, transaction_age,
       xmin_age
FROM v_xmin_horizon
WHERE FALSE;

-- No session's SQL text.
SELECT 1 / (count(*) = 0)::integer
FROM pg_attribute
WHERE attrelid = 'v_xmin_horizon'::regclass AND attname = 'last_query' AND NOT attisdropped;

ROLLBACK;
