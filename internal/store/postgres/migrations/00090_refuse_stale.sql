-- +goose Up
-- A statement that writes rows only if they are as it read them earlier
-- (sqlstore's matchHeld) calls this when one of two writes found its row
-- changed, so that the other is undone with it: SQL has no way of its own
-- to fail a statement on a condition.
-- +goose StatementBegin
CREATE FUNCTION pds_refuse_stale() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a row changed since it was read' USING ERRCODE = 'PDS01';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION pds_refuse_stale();
