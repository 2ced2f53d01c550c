-- Who took the entry last. PostgreSQL writes the receiving transaction's txid_current(); MariaDB
-- and MySQL give SQL no cheap, exact transaction id, so here receive and claim write a random
-- 64-bit token of their own call, and read it back to tell whether the entry is theirs (FIRST) or
-- another delivery's (DUPLICATE). Existing entries keep NULL, which no call's token equals.
ALTER TABLE `${schema}`.`${prefix}inbox` ADD COLUMN received_txid bigint NULL;
