-- +goose Up
-- An erasure of a survivor erases the persons merged into it too (issue
-- 65): each merged id gets an erasures row of its own, erased_with naming
-- the survivor whose erasure it was, so that a redelivery, which asks
-- whether a delivery's person was erased (erasures_person), never sends a
-- delivery made for a merged id before its merge, whose body is now the
-- erasure's marker. The erasures listed (pds erasures list) are those
-- asked for, erased_with null.
ALTER TABLE erasures ADD COLUMN erased_with TEXT;

-- +goose Down
ALTER TABLE erasures DROP COLUMN erased_with;
