-- The transaction whose receive last reported FIRST for the entry. PostgreSQL writes
-- txid_current(); here the store writes the InnoDB transaction id of the caller's transaction
-- (information_schema.innodb_trx.trx_id for CONNECTION_ID(), assigned by the first write, so it
-- is known right after the inbox INSERT). storeResult writes only while it equals the caller's
-- own transaction id, so a later transaction, or one whose receive said DUPLICATE, can never
-- replace a stored result. Existing entries keep NULL.
ALTER TABLE `${schema}`.`${prefix}inbox` ADD COLUMN received_txid bigint NULL;
