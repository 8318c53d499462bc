-- Verify taskpool_crawler:payload_file_removal_functions on pg

BEGIN;

SELECT has_function_privilege('taskpool_worker', 'payload_files_to_remove(integer)', 'execute');
SELECT has_function_privilege('taskpool_worker', 'forget_removed_payload_files(text[])', 'execute');

ROLLBACK;
