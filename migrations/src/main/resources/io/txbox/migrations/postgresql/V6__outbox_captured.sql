-- Rows written in change-data-capture mode: Outbox.send inserts them with captured = true and
-- deletes them in the same transaction, so no relay ever sees one; a log-reading connector
-- (Debezium with txbox's router) publishes only inserts with captured = true, and leaves the
-- others to the relay. Existing rows are the relay's. A constant default: no table rewrite.
ALTER TABLE "${schema}"."${prefix}outbox" ADD COLUMN captured boolean NOT NULL DEFAULT false;
