CREATE TABLE IF NOT EXISTS orders (order_id text PRIMARY KEY, amount text NOT NULL);
CREATE TABLE IF NOT EXISTS payments (step_key text NOT NULL, amount text NOT NULL);
CREATE TABLE IF NOT EXISTS refunds (refund_id text PRIMARY KEY, order_id text NOT NULL);
