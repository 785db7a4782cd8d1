-- Hub lifecycle (README "Hub lifecycle"). A hub is active while it sends,
-- inactive once no heartbeat of it was received for --hub-inactive-after,
-- and deleted after `stb hub delete` (or --hub-delete-after): its rows are
-- gone and its status.bundle_versions rows are tombstones, at the hub's
-- newest incarnation and the largest generation, so that no bundle of
-- that incarnation still in Kafka can bring it back. Its next bundle of a
-- newer incarnation makes it active again. state_since is when the hub
-- entered its state.
ALTER TABLE status.hubs
    ADD COLUMN state       text NOT NULL DEFAULT 'active'
        CHECK (state IN ('active', 'inactive', 'deleted')),
    ADD COLUMN state_since timestamptz NOT NULL DEFAULT now();

CREATE INDEX hubs_state_idx ON status.hubs (state, state_since);

-- Deletes and resets, as requested: the durable record the running bridges
-- read (they are also told with NOTIFY stb_hub_requests, the id as
-- payload) to drop what they hold of the hub. removed counts the rows the
-- request's transaction deleted; tombstone is the incarnation of the
-- tombstones a delete left (NULL for a reset).
CREATE TABLE status.hub_requests (
    id           bigserial PRIMARY KEY,
    hub          text NOT NULL,
    action       text NOT NULL CHECK (action IN ('delete', 'reset')),
    requested_by text NOT NULL DEFAULT '',
    removed      bigint NOT NULL DEFAULT 0,
    tombstone    numeric(20,0),
    requested_at timestamptz NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE status.hub_requests;
DROP INDEX status.hubs_state_idx;
ALTER TABLE status.hubs DROP COLUMN state_since, DROP COLUMN state;
