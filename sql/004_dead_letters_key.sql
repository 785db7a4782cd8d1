-- Dead letters get a natural key, so that a message read twice (after a
-- rebalance, a crash, or a retry of a batch that was partly stored) is
-- dead-lettered once: its origin (topic, partition, offset) and, for
-- letters written after decoding, its hub and type (a merged delta group
-- shares no offset with another bundle, but the key stays exact for any
-- job). Read-side rejects have '' for hub and type when they were not read.
-- Inserts use ON CONFLICT DO NOTHING on this key.

-- Duplicates from before keep their oldest row.
DELETE FROM status.dead_letters d
USING status.dead_letters o
WHERE o.topic = d.topic AND o."partition" = d."partition" AND o."offset" = d."offset"
  AND o.hub = d.hub AND o.bundle_type = d.bundle_type
  AND o.id < d.id;

-- hub and bundle_type are capped at 512 bytes by the writer, so the key
-- fits a B-tree entry.
CREATE UNIQUE INDEX dead_letters_origin_key
    ON status.dead_letters (topic, "partition", "offset", hub, bundle_type);

---- create above / drop below ----

DROP INDEX status.dead_letters_origin_key;
