-- Parked messages of a consumer's ordering keys. When a message with an ordering key (a Kafka
-- record key, a RabbitMQ routing key or a named header) goes DEAD, the consumer stores it here as
-- the head of its key; later messages of that key are stored behind it, in arrival order, instead
-- of running, until an operator retries or skips the key. The payload and headers are kept, so a
-- retry runs the consumer's handler without the broker. Retention never deletes these rows.
CREATE TABLE "${schema}"."${prefix}inbox_parked" (
    id            bigint       GENERATED ALWAYS AS IDENTITY,
    consumer      varchar(255) NOT NULL,
    ordering_key  varchar(255) NOT NULL,
    message_key   varchar(255) NOT NULL,
    head          boolean      NOT NULL,
    payload       bytea        NOT NULL,
    headers       bytea        NOT NULL,
    reason        text,
    requested     varchar(8),
    parked_at     timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT "${prefix}inbox_parked_pk" PRIMARY KEY (id),
    -- A redelivered message is parked once.
    CONSTRAINT "${prefix}inbox_parked_msg_uq" UNIQUE (consumer, message_key),
    CONSTRAINT "${prefix}inbox_parked_req_ck" CHECK (requested IN ('RETRY', 'SKIP'))
);
-- Serves "is this key parked?" (one index probe in the receiving transaction) and the key's
-- messages in arrival order.
CREATE INDEX "${prefix}inbox_parked_key_ix" ON "${schema}"."${prefix}inbox_parked" (consumer, ordering_key, id);
