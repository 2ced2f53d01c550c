-- Failures counted apart from attempts: attempts counts every run (and is the two-phase
-- fencing token), failures only the runs that failed (a handler error, fail(), a lease that ran
-- out). An entry becomes DEAD after maxAttempts failures, so a release, which is not a failure,
-- no longer brings it closer to DEAD.
ALTER TABLE `${schema}`.`${prefix}inbox` ADD COLUMN failures integer NOT NULL DEFAULT 0;

-- Entries written before this version keep their count toward DEAD, as on PostgreSQL.
UPDATE `${schema}`.`${prefix}inbox` SET failures = attempts WHERE status IN ('FAILED', 'DEAD');
UPDATE `${schema}`.`${prefix}inbox` SET failures = greatest(attempts - 1, 0) WHERE status = 'PROCESSING';
