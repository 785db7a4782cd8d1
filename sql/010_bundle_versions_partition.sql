-- A partition's hubs: an assignment restores only the hubs with a version
-- read from one of the partitions assigned (db.PartitionVersions, inside
-- the rebalance callback's deadline), which without this index scans every
-- hub's rows.
CREATE INDEX bundle_versions_topic_partition ON status.bundle_versions (topic, "partition");

---- create above / drop below ----

DROP INDEX status.bundle_versions_topic_partition;
