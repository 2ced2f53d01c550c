-- txbox tables for MariaDB 10.6+ and MySQL 8.0+: the same tables, columns, keys and indexes as
-- the PostgreSQL scripts, in this server family's types. ${schema}, ${prefix} and
-- ${keyCollation} are Flyway placeholders; txbox validates the names against a strict
-- identifier pattern before they reach this script, and picks the collation for the server.
--
-- A schema is a database here: Flyway creates the one it is configured with
-- (TxboxMigrations.migrate lists the txbox schema); with your own Flyway, list it in schemas(..).
--
-- Types, against PostgreSQL's: bytea -> longblob, text -> longtext, text[] -> json (an array of
-- strings), timestamptz -> timestamp(6) (stored in UTC, read in the session's time zone), an
-- identity -> AUTO_INCREMENT. Every timestamp column states NULL or its DEFAULT, so the server's
-- explicit_defaults_for_timestamp setting never adds an ON UPDATE clause.
--
-- Every text column compares byte for byte, without padding (${keyCollation}): two keys that
-- differ only in case or in trailing spaces are two keys, as on PostgreSQL.
--
-- MariaDB and MySQL have no partial indexes: where PostgreSQL indexes only the rows of one
-- status, these indexes lead with the status column, which serves the same queries.

-- Consumer side: one row per (consumer, key). The primary key is what makes a concurrent
-- duplicate wait for the first delivery's transaction instead of racing it.
CREATE TABLE `${schema}`.`${prefix}inbox` (
    consumer             varchar(255) NOT NULL,
    message_key          varchar(255) NOT NULL,
    status               varchar(16)  NOT NULL,
    fingerprint          longblob     NULL,
    result               longblob     NULL,
    result_status        integer      NULL,
    result_header_names  json         NULL,
    result_header_values json         NULL,
    attempts             integer      NOT NULL DEFAULT 0,
    last_error           longtext     NULL,
    lease_until          timestamp(6) NULL DEFAULT NULL,
    received_at          timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    completed_at         timestamp(6) NULL DEFAULT NULL,
    CONSTRAINT PRIMARY KEY (consumer, message_key),
    CONSTRAINT `${prefix}inbox_status_ck`
        CHECK (status IN ('PROCESSING', 'COMPLETED', 'FAILED', 'DEAD'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = ${keyCollation};

-- Serves retention: DELETE ... WHERE status = 'COMPLETED' AND completed_at < ? in batches.
CREATE INDEX `${prefix}inbox_completed_ix` ON `${schema}`.`${prefix}inbox` (status, completed_at);
-- Serves dead listing and retry: WHERE status = 'DEAD' ORDER BY received_at.
CREATE INDEX `${prefix}inbox_dead_ix` ON `${schema}`.`${prefix}inbox` (status, received_at);

-- Producer side: rows written in the caller's transaction, deleted by the relay once the
-- broker confirmed them. The claim query walks the primary key in id order.
CREATE TABLE `${schema}`.`${prefix}outbox` (
    id             bigint       NOT NULL AUTO_INCREMENT,
    step_key       varchar(255) NOT NULL,
    original_key   varchar(255) NOT NULL,
    destination    varchar(255) NOT NULL,
    routing_key    longtext     NULL,
    lane           smallint     NOT NULL,
    payload        longblob     NOT NULL,
    header_names   json         NULL,
    header_values  json         NULL,
    content_type   longtext     NULL,
    traceparent    longtext     NULL,
    tracestate     longtext     NULL,
    created_at     timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    available_at   timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    attempts       integer      NOT NULL DEFAULT 0,
    last_error     longtext     NULL,
    CONSTRAINT PRIMARY KEY (id),
    -- Serves send(): INSERT IGNORE / ON DUPLICATE KEY on step_key.
    CONSTRAINT `${prefix}outbox_step_key_uq` UNIQUE (step_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = ${keyCollation};

-- Outbox rows that failed past max attempts, or could never be published. Kept until an
-- operator retries or purges them.
CREATE TABLE `${schema}`.`${prefix}outbox_dead` (
    id             bigint       NOT NULL,
    step_key       varchar(255) NOT NULL,
    original_key   varchar(255) NOT NULL,
    destination    varchar(255) NOT NULL,
    routing_key    longtext     NULL,
    lane           smallint     NOT NULL,
    payload        longblob     NOT NULL,
    header_names   json         NULL,
    header_values  json         NULL,
    content_type   longtext     NULL,
    traceparent    longtext     NULL,
    tracestate     longtext     NULL,
    -- always written by the dead-lettering insert; the default only keeps ON UPDATE away
    created_at     timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    attempts       integer      NOT NULL,
    reason         longtext     NOT NULL,
    dead_at        timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    CONSTRAINT PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = ${keyCollation};
-- Serves purge --older-than and listing newest first.
CREATE INDEX `${prefix}outbox_dead_at_ix` ON `${schema}`.`${prefix}outbox_dead` (dead_at);

-- Relay lanes: every outbox row belongs to one lane (a hash of its routing key). A lane has
-- at most one owner at a time; the fence increases on every change of owner, so a relay
-- whose lease was taken over cannot delete rows it no longer owns.
CREATE TABLE `${schema}`.`${prefix}relay_lane` (
    lane           smallint     NOT NULL,
    owner          varchar(255) NULL,
    fence          bigint       NOT NULL DEFAULT 0,
    lease_until    timestamp(6) NULL DEFAULT NULL,
    blocked_until  timestamp(6) NULL DEFAULT NULL,
    CONSTRAINT PRIMARY KEY (lane)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = ${keyCollation};

-- Live relay workers, so lanes can be shared out evenly.
CREATE TABLE `${schema}`.`${prefix}relay_member` (
    member_id      varchar(255) NOT NULL,
    -- always written by the heartbeat; the default only keeps ON UPDATE away
    lease_until    timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    CONSTRAINT PRIMARY KEY (member_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = ${keyCollation};
