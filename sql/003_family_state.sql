-- A family's own state per hub and type, one opaque value the family
-- encodes (transport.Stateful, bundle.Bundle.FamilyState), in place of the
-- global-hub profile's two columns: the bridge stores what a bundle
-- carries with its version and hands it back to the family when it starts
-- or is assigned the hub's partitions. NULL: the family keeps no state of
-- the type (STB's own types, the status families), or none was written.
--
-- The global-hub profile's state is a JSON object (pkg/transport
-- globalhub_family.go, ghState): "run_ids", the CloudEvents ids of the
-- events that started the agent's latest runs for this (hub, type),
-- oldest first, at most four, and "start_frames", FNV-1a 64-bit hashes of
-- the ids of the latest 64 frames written at their run's first (or
-- newest) version, oldest first. The rows written before this migration
-- keep theirs, converted from run_ids and start_frames.
ALTER TABLE stb.bundle_versions ADD COLUMN family_state jsonb;

UPDATE stb.bundle_versions
SET family_state = jsonb_strip_nulls(jsonb_build_object(
        'run_ids', CASE WHEN cardinality(run_ids) > 0 THEN to_jsonb(run_ids) END,
        'start_frames', CASE WHEN cardinality(start_frames) > 0 THEN to_jsonb(start_frames) END))
WHERE cardinality(run_ids) > 0 OR cardinality(start_frames) > 0;

ALTER TABLE stb.bundle_versions DROP COLUMN run_ids, DROP COLUMN start_frames;

---- create above / drop below ----

ALTER TABLE stb.bundle_versions
    ADD COLUMN run_ids text[] NOT NULL DEFAULT '{}',
    ADD COLUMN start_frames bigint[] NOT NULL DEFAULT '{}';

UPDATE stb.bundle_versions
SET run_ids = coalesce(ARRAY(SELECT jsonb_array_elements_text(family_state -> 'run_ids')), '{}'),
    start_frames = coalesce(ARRAY(SELECT (jsonb_array_elements_text(family_state -> 'start_frames'))::bigint), '{}')
WHERE jsonb_typeof(family_state) = 'object';

ALTER TABLE stb.bundle_versions DROP COLUMN family_state;
