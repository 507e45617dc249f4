package sqlstore

import "github.com/pds-dev/pds/internal/domain"

// HoldersQuery is the statement the upsert's identifier lookup runs, for the
// plan test; nil leaves an identifier out.
func HoldersQuery(accountID string, externalID, email, fID *string) (string, []any) {
	return holdersQuery(accountID, domain.Identifiers{ExternalID: externalID, Email: email, FID: fID})
}

// TakenQuery is the statement with which an import asks which of a chunk's
// identifiers of one column are held, for the plan test.
func TakenQuery(accountID, column string, values []string) (string, []any) {
	return takenQuery(accountID, column, values)
}
