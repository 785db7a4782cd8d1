-- Dead letters an operator re-drives (stb deadletters replay): when the
-- last replay ran and how it ended. applied: written through the version
-- fence; stale: the database already held as new, nothing written;
-- failed: rejected or refused again, with the new reason and error in the
-- row's reason and error. '' for a letter never replayed.
ALTER TABLE status.dead_letters
    ADD COLUMN replayed_at    timestamptz,
    ADD COLUMN replay_outcome text NOT NULL DEFAULT ''
        CHECK (replay_outcome IN ('', 'applied', 'stale', 'failed'));

CREATE INDEX dead_letters_created_idx ON status.dead_letters (created_at);

---- create above / drop below ----

DROP INDEX status.dead_letters_created_idx;
ALTER TABLE status.dead_letters DROP COLUMN replay_outcome, DROP COLUMN replayed_at;
