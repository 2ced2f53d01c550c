-- Failures counted apart from attempts: attempts counts every run (and is the two-phase
-- fencing token), failures only the runs that failed (a handler error, fail(), a lease that ran
-- out). An entry becomes DEAD after maxAttempts failures, so a release, which is not a failure,
-- no longer brings it closer to DEAD.
ALTER TABLE "${schema}"."${prefix}inbox" ADD COLUMN failures integer NOT NULL DEFAULT 0;

-- Before this version every run counted toward DEAD. Entries that may still run or are parked
-- keep that count, so none is given more runs than it was promised; the run in progress of a
-- PROCESSING entry has not failed yet. COMPLETED entries never count again and keep 0.
UPDATE "${schema}"."${prefix}inbox" SET failures = attempts WHERE status IN ('FAILED', 'DEAD');
UPDATE "${schema}"."${prefix}inbox" SET failures = greatest(attempts - 1, 0) WHERE status = 'PROCESSING';
