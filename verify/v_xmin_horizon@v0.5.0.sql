-- Verify taskpool:v_xmin_horizon on pg

BEGIN;

SELECT holder, pid, user_name, application_name, client_addr, state, xact_start, transaction_age,
       xmin_age, last_query
FROM v_xmin_horizon
WHERE FALSE;

ROLLBACK;
