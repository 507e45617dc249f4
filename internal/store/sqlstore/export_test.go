package sqlstore

// HoldersQuery is the statement the upsert's identifier lookup runs, for the
// plan test; nil leaves an identifier out.
func HoldersQuery(accountID string, externalID, email, fID *string) (string, []any) {
	return holdersQuery(accountID, identifiers{externalID: externalID, email: email, fID: fID})
}
