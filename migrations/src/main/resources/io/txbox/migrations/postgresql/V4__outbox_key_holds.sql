-- Per-key holds of the relay: a routing key held back at one of its rows, so that a failing row
-- holds back only the later rows of its own key (same destination), never its lane's other keys.
-- row_id is the key's first row not yet published: while it is retried, and after it was
-- dead-lettered (the key is then parked, parked_at set) until an operator retries it (the row
-- goes back to the outbox with its id, ahead of the key's later rows) or skips it (the hold
-- goes). The claim query leaves out every row of a held key above row_id. Rows without a routing
-- key are never held. Few rows: only keys with a failing or dead row have one.
CREATE TABLE "${schema}"."${prefix}outbox_key_hold" (
    row_id         bigint       NOT NULL,
    lane           smallint     NOT NULL,
    destination    varchar(255) NOT NULL,
    routing_key    text         NOT NULL,
    held_at        timestamptz  NOT NULL DEFAULT now(),
    parked_at      timestamptz,
    CONSTRAINT "${prefix}outbox_key_hold_pk" PRIMARY KEY (row_id)
);
-- Serves the claim's per-lane exclusion and the lanes' lowest held row.
CREATE INDEX "${prefix}outbox_key_hold_lane_ix" ON "${schema}"."${prefix}outbox_key_hold" (lane, row_id);
