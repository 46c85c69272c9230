-- Keys expire 24 hours after their payment: the sweep is a range of this partial
-- index, which holds only the payments whose key is still live.
CREATE INDEX payments_live_keys ON payments (created)
    WHERE idempotency_key IS NOT NULL;
