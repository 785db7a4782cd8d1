-- PLACEHOLDER on branch issue23-cne only: tern refuses a gap in the
-- numbering, and 011 belongs to the ManifestWork family (branch
-- issue23-work). When the branches are merged, take issue23-work's
-- sql/011_work.sql and drop this one.
SELECT 1;

---- create above / drop below ----

SELECT 1;
