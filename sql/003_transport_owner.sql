-- Who may move each partition's stored position (DESIGN.md §10).
--
-- A bridge claims a partition's row when Kafka assigns the partition to
-- it: it writes its owner id and raises epoch by one. Its commits then
-- only update the row while owner and epoch are still its own, so a
-- replica that has lost the partition to another, and has not noticed
-- yet, can no longer move the position the new owner resumes from.
-- A claimed partition without a stored position has payload NULL.
ALTER TABLE status.transport ALTER COLUMN payload DROP NOT NULL;
ALTER TABLE status.transport ADD COLUMN owner text NOT NULL DEFAULT '';
ALTER TABLE status.transport ADD COLUMN epoch bigint NOT NULL DEFAULT 0;

---- create above / drop below ----

DELETE FROM status.transport WHERE payload IS NULL;
ALTER TABLE status.transport DROP COLUMN epoch;
ALTER TABLE status.transport DROP COLUMN owner;
ALTER TABLE status.transport ALTER COLUMN payload SET NOT NULL;
