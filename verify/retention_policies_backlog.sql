-- Verify taskpool:retention_policies_backlog on pg

BEGIN;

SELECT backlog, behind_since FROM retention_policies WHERE false;

ROLLBACK;
