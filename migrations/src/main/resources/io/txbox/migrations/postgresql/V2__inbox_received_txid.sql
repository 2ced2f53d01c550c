-- The transaction whose receive last reported FIRST for the entry (txid_current(): the
-- top-level transaction id, with its epoch, so it never wraps around and a savepoint does not
-- change it). storeResult writes only while it equals the caller's own transaction id, so a
-- later transaction, or one whose receive said DUPLICATE, can never replace a stored result.
-- Existing entries keep NULL: no running transaction received them, which is exactly right.
ALTER TABLE "${schema}"."${prefix}inbox" ADD COLUMN received_txid bigint;
