// Package storetest is the one conformance suite every storage engine runs.
// Each concern keeps its cases in a file of its own; suites lists them all,
// so that what runs is read in one place.
package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// NewStore opens an empty store of the engine under test.
type NewStore func(t testing.TB) store.Store

type suite struct {
	name string
	fn   func(t *testing.T, newStore NewStore)
}

// suites is every group of cases, by name: adding a group is adding it here.
var suites = []suite{
	{"account_counts", testAccountCounts},
	{"account_delivery_log", testAccountDeliveryLog},
	{"accounts", testAccounts},
	{"breadcrumbs", testBreadcrumbs},
	{"breadcrumbs_list", testListBreadcrumbs},
	{"campaigns_projects", testCampaignsProjects},
	{"changes", testChanges},
	{"changes_concurrent", testChangesUnderWriters},
	{"console", testConsole},
	{"contention", testContention},
	{"custom_fields", testCustomFields},
	{"delivered_states", testDeliveredStates},
	{"erasure", testErasure},
	{"erasure_clears_named_identifiers", testErasureClearsNamedIdentifiers},
	{"erasure_concurrent", testErasureConcurrent},
	{"erasure_suppression", testSuppression},
	{"erasure_suppression_handover", testSuppressedIdentifierNotHandedOver},
	{"erasure_suppression_lookup", testSuppressionLookup},
	{"erasure_suppression_race", testSuppressionRace},
	{"keys", testKeys},
	{"keys_revoke_in_account", testRevokeAccountKey},
	{"person_report", testPersonReport},
	{"persons", testPersons},
	{"persons_batch", testUpsertPersons},
	{"persons_custom_fields", testPersonCustomFields},
	{"persons_export", testExportPersons},
	{"persons_get", testGetPerson},
	{"persons_import", testImportPersons},
	{"persons_import_elsewhere", testImportExportElsewhere},
	{"persons_list", testListPersons},
	{"persons_list_newest", testListPersonsNewestFirst},
	{"persons_merge", testMergePersons},
	{"persons_merge_redelivery", testMergeRedelivery},
	{"persons_merge_batches", testMergeBatches},
	{"persons_restore", testRestorePersons},
	{"persons_tags", testPersonTags},
	{"rate", testRate},
	{"secrets_sealed", testSecretsSealed},
	{"secrets_sealed_headers", testHeadersSealed},
	{"tag_holder_counts", testTagHolderCounts},
	{"tags", testTags},
	{"webhook_attempt_counts", testAttemptCounts},
	{"webhook_attempt_headers", testAttemptHeaders},
	{"webhook_deliveries", testWebhookDeliveries},
	{"webhook_delivery_log", testDeliveryLog},
	{"webhook_disabled", testWebhookDisabled},
	{"webhook_outbox", testWebhookOutbox},
	{"webhook_redeliver_failed", testRedeliverFailed},
	{"webhook_retention", testWebhookRetention},
	{"webhooks", testWebhooks},
}

// Run runs every group of cases against the engine. The groups run in
// parallel: each opens stores of its own through newStore (a fresh SQLite
// file or PostgreSQL schema) and makes its own accounts, and no case touches
// package-level state. Cases inside a group that each open their own store
// run in parallel too; cases sharing their group's store run in order.
func Run(t *testing.T, newStore NewStore) {
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.fn(t, newStore)
		})
	}
}

// readSuites are the groups whose reads a replica may serve (PostgreSQL's
// --database-replica): Get Person, the lists and lookups, the change feed,
// the export, the report, the delivery log, the catalogue and the counts.
var readSuites = []string{
	"account_counts", "account_delivery_log", "breadcrumbs_list", "campaigns_projects", "changes", "person_report",
	"persons_export", "persons_get", "persons_list", "tag_holder_counts", "webhook_delivery_log",
}

// RunReads runs the groups of readSuites, as Run does: for an engine whose
// reads may be served elsewhere than its writes, whose every read must
// still see every write made before it.
func RunReads(t *testing.T, newStore NewStore) {
	for _, s := range suites {
		if !slices.Contains(readSuites, s.name) {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.fn(t, newStore)
		})
	}
}

// Epoch is a fixed instant the cases build times from.
var Epoch = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// NewAccount creates an account of its own for one case.
func NewAccount(t testing.TB, st store.Store) string {
	t.Helper()
	id := domain.NewID("acc")
	if err := st.CreateAccount(context.Background(), domain.Account{ID: id, Name: "test " + id, CreatedAt: Epoch}); err != nil {
		t.Fatalf("create account: %v", err)
	}
	return id
}
