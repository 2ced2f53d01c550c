-- Per-key holds of the relay, as in the PostgreSQL script: a routing key held back at one of its
-- rows (row_id, its first row not yet published), retried or, once dead-lettered, parked
-- (parked_at set) until an operator retries or skips the dead row. The claim query leaves out
-- every row of a held key above row_id. Rows without a routing key are never held.
CREATE TABLE `${schema}`.`${prefix}outbox_key_hold` (
    row_id         bigint       NOT NULL,
    lane           smallint     NOT NULL,
    destination    varchar(255) NOT NULL,
    routing_key    longtext     NOT NULL,
    held_at        timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    parked_at      timestamp(6) NULL DEFAULT NULL,
    CONSTRAINT PRIMARY KEY (row_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = ${keyCollation};
-- Serves the claim's per-lane exclusion and the lanes' lowest held row.
CREATE INDEX `${prefix}outbox_key_hold_lane_ix` ON `${schema}`.`${prefix}outbox_key_hold` (lane, row_id);
