-- Revert taskpool:unserved_roles from pg

BEGIN;
SET client_min_messages = 'warning';

DROP FUNCTION unserved_roles(interval);

COMMIT;
