-- Parked messages of a consumer's ordering keys, as on PostgreSQL (see its V5 for the why).
-- head is a smallint (0 or 1): MariaDB and MySQL have no boolean type (theirs is a tinyint).
CREATE TABLE `${schema}`.`${prefix}inbox_parked` (
    id            bigint       NOT NULL AUTO_INCREMENT,
    consumer      varchar(255) NOT NULL,
    ordering_key  varchar(255) NOT NULL,
    message_key   varchar(255) NOT NULL,
    head          smallint     NOT NULL,
    payload       longblob     NOT NULL,
    headers       longblob     NOT NULL,
    reason        longtext     NULL,
    requested     varchar(8)   NULL,
    parked_at     timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    CONSTRAINT PRIMARY KEY (id),
    CONSTRAINT `${prefix}inbox_parked_msg_uq` UNIQUE (consumer, message_key),
    CONSTRAINT `${prefix}inbox_parked_req_ck` CHECK (requested IN ('RETRY', 'SKIP'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = ${keyCollation};
CREATE INDEX `${prefix}inbox_parked_key_ix` ON `${schema}`.`${prefix}inbox_parked` (consumer, ordering_key, id);
