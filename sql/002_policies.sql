-- Policies: which policies apply to which clusters of each hub and whether
-- each cluster complies (status.compliance), and the policy events hubs
-- report (event.policy_events).

-- One row per (hub, policy, cluster) the hub's latest clusterspolicies
-- bundle placed; compliance and compliancedelta bundles only change the
-- compliance of rows that exist.
--
-- The primary key serves every statement of the handlers: they all select
-- a hub's rows, by policy, and join on (policy_id, cluster_name). No other
-- index is kept: compliance is the column that changes, and leaving it out
-- of every index lets its updates be HOT (no new index entry) whenever the
-- row's page has room for the new version. A compliance report may change
-- every row of a hub at once, so pages are filled only half: on 135,000
-- rows this made the first report after a placement about 3.5 times and a
-- full rotation about 2 times as fast as fillfactor 100 or 80
-- (BenchmarkComplianceApply), for twice the space of small rows.
CREATE TABLE status.compliance (
    hub          text NOT NULL,
    policy_id    text NOT NULL,
    cluster_name text NOT NULL,
    compliance   text NOT NULL CHECK (compliance IN ('compliant', 'non_compliant', 'unknown')),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, policy_id, cluster_name)
) WITH (fillfactor = 50);

-- Policy events as hubs reported them. An event is identified by its hub,
-- policy, cluster and name (Kubernetes event names are unique per object),
-- so a replayed bundle inserts nothing twice (ON CONFLICT DO NOTHING on the
-- primary key, the only index the handler needs). created_at is the time
-- the event happened, as the hub reported it, or else the time its bundle
-- was produced; NULL when neither is known.
CREATE TABLE event.policy_events (
    hub          text NOT NULL,
    policy_id    text NOT NULL,
    cluster_name text NOT NULL,
    event_name   text NOT NULL,
    reason       text NOT NULL DEFAULT '',
    message      text NOT NULL DEFAULT '',
    created_at   timestamptz,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hub, policy_id, cluster_name, event_name)
);

---- create above / drop below ----

DROP TABLE event.policy_events;
DROP TABLE status.compliance;
