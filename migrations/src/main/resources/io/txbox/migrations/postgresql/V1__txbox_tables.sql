-- txbox tables. ${schema} and ${prefix} are Flyway placeholders; txbox validates both
-- against a strict identifier pattern before they reach this script.

-- The schema is not created here: Flyway creates the schemas it is configured with
-- (TxboxMigrations.migrate lists the txbox schema); with your own Flyway, list it in schemas(..).

-- Consumer side: one row per (consumer, key). The primary key is what makes a concurrent
-- duplicate wait for the first delivery's transaction instead of racing it.
CREATE TABLE "${schema}"."${prefix}inbox" (
    consumer             varchar(255) NOT NULL,
    message_key          varchar(255) NOT NULL,
    status               varchar(16) NOT NULL,
    fingerprint          bytea,
    result               bytea,
    result_status        integer,
    result_header_names  text[],
    result_header_values text[],
    attempts             integer     NOT NULL DEFAULT 0,
    last_error           text,
    lease_until          timestamptz,
    received_at          timestamptz NOT NULL DEFAULT now(),
    completed_at         timestamptz,
    CONSTRAINT "${prefix}inbox_pk" PRIMARY KEY (consumer, message_key),
    CONSTRAINT "${prefix}inbox_status_ck"
        CHECK (status IN ('PROCESSING', 'COMPLETED', 'FAILED', 'DEAD'))
);

-- Serves retention: DELETE ... WHERE status = 'COMPLETED' AND completed_at < ? in batches.
CREATE INDEX "${prefix}inbox_completed_ix" ON "${schema}"."${prefix}inbox" (completed_at)
    WHERE status = 'COMPLETED';
-- Serves dead listing and retry: WHERE status = 'DEAD' ORDER BY received_at.
CREATE INDEX "${prefix}inbox_dead_ix" ON "${schema}"."${prefix}inbox" (received_at)
    WHERE status = 'DEAD';

-- Producer side: rows written in the caller's transaction, deleted by the relay once the
-- broker confirmed them. The claim query walks the primary key in id order.
CREATE TABLE "${schema}"."${prefix}outbox" (
    id             bigint      GENERATED ALWAYS AS IDENTITY,
    step_key       varchar(255) NOT NULL,
    original_key   varchar(255) NOT NULL,
    destination    varchar(255) NOT NULL,
    routing_key    text,
    lane           smallint    NOT NULL,
    payload        bytea       NOT NULL,
    header_names   text[],
    header_values  text[],
    content_type   text,
    traceparent    text,
    tracestate     text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    available_at   timestamptz NOT NULL DEFAULT now(),
    attempts       integer     NOT NULL DEFAULT 0,
    last_error     text,
    CONSTRAINT "${prefix}outbox_pk" PRIMARY KEY (id),
    -- Serves send(): INSERT ... ON CONFLICT (step_key) DO NOTHING.
    CONSTRAINT "${prefix}outbox_step_key_uq" UNIQUE (step_key)
);

-- Outbox rows that failed past max attempts, or could never be published. Kept until an
-- operator retries or purges them.
CREATE TABLE "${schema}"."${prefix}outbox_dead" (
    id             bigint      NOT NULL,
    step_key       varchar(255) NOT NULL,
    original_key   varchar(255) NOT NULL,
    destination    varchar(255) NOT NULL,
    routing_key    text,
    lane           smallint    NOT NULL,
    payload        bytea       NOT NULL,
    header_names   text[],
    header_values  text[],
    content_type   text,
    traceparent    text,
    tracestate     text,
    created_at     timestamptz NOT NULL,
    attempts       integer     NOT NULL,
    reason         text        NOT NULL,
    dead_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "${prefix}outbox_dead_pk" PRIMARY KEY (id)
);
-- Serves purge --older-than and listing newest first.
CREATE INDEX "${prefix}outbox_dead_at_ix" ON "${schema}"."${prefix}outbox_dead" (dead_at);

-- Relay lanes: every outbox row belongs to one lane (a hash of its routing key). A lane has
-- at most one owner at a time; the fence increases on every change of owner, so a relay
-- whose lease was taken over cannot delete rows it no longer owns.
CREATE TABLE "${schema}"."${prefix}relay_lane" (
    lane           smallint    NOT NULL,
    owner          varchar(255),
    fence          bigint      NOT NULL DEFAULT 0,
    lease_until    timestamptz,
    blocked_until  timestamptz,
    CONSTRAINT "${prefix}relay_lane_pk" PRIMARY KEY (lane)
);

-- Live relay workers, so lanes can be shared out evenly.
CREATE TABLE "${schema}"."${prefix}relay_member" (
    member_id      varchar(255) NOT NULL,
    lease_until    timestamptz NOT NULL,
    CONSTRAINT "${prefix}relay_member_pk" PRIMARY KEY (member_id)
);
