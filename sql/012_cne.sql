-- Cloud Native Events (profile cne, dbsyncers/cne): the latest value of
-- every (CloudEvents type, resource address, data type) that nodes
-- publish, as O-RAN consumers keep it (rest-api docs/rest_api_v2.md,
-- CurrentState per ResourceAddress).
--
-- The fence is per row: event_time_ns (the CloudEvents time in
-- nanoseconds since 1970, which timestamptz's microseconds cannot hold),
-- then the Kafka position (topic, partition, offset; dbsyncers/cne
-- Value.After). event_time is the same
-- time for people and queries.
CREATE TABLE status.cne_state (
	event_type       text        NOT NULL,
	resource_address text        NOT NULL,
	data_type        text        NOT NULL,
	-- hub is the node named by the address's /cluster/node/<node>/ segment:
	-- the family's unit, named hub like every table's, so that
	-- stb hub reset|delete NODE clears its rows as a hub's.
	hub              text        NOT NULL,
	value_type       text        NOT NULL CHECK (value_type IN ('enumeration', 'decimal64.3', 'redfish-event')),
	-- value as sent (a string, a number or an object); value_text its text
	-- (an enumeration, or a decimal64.3 as written, string or number);
	-- value_numeric the decimal64.3 exactly as written.
	value            jsonb       NOT NULL,
	value_text       text,
	value_numeric    numeric,
	event_time       timestamptz NOT NULL,
	event_time_ns    bigint      NOT NULL,
	event_id         text        NOT NULL,
	event_source     text        NOT NULL,
	data_version     text        NOT NULL,
	topic            text        NOT NULL,
	"partition"      integer     NOT NULL,
	"offset"         bigint      NOT NULL,
	updated_at       timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (event_type, resource_address, data_type)
);

-- A node's rows: the console's page of a node, verification, and stb hub
-- reset|delete.
CREATE INDEX cne_state_hub ON status.cne_state (hub);

---- create above / drop below ----

DROP TABLE status.cne_state;
