-- start_frames: hashes (FNV-1a, 64 bits) of the CloudEvents ids of the
-- events written at their run's first version for this (hub, type), other
-- than the run's first event (run_ids has those): the frames of the resync
-- an agent sends when it starts. The latest 64, oldest first. A late copy
-- of such a frame read after a restart of the bridge is a copy, not a new
-- run of the agent (README "The global-hub agent's events"). Empty for
-- STB's own types.
ALTER TABLE status.bundle_versions
    ADD COLUMN start_frames bigint[] NOT NULL DEFAULT '{}';

---- create above / drop below ----

ALTER TABLE status.bundle_versions DROP COLUMN start_frames;
