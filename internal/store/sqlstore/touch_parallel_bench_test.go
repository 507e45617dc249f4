package sqlstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
)

// BenchmarkTouchKeyParallel runs a single-statement write (outside any
// transaction of the store's) from 16 goroutines per CPU.
func BenchmarkTouchKeyParallel(b *testing.B) {
	st := testenv.SQLite.NewStore(b)
	ctx := context.Background()
	acc := benchAccount(b, st)
	key := domain.APIKey{ID: domain.NewID("key"), AccountID: acc, Prefix: "pds_", LastFour: "abcd", Hash: []byte("hash"),
		Scopes: domain.AllScopes, CreatedAt: seedEpoch}
	if err := st.CreateKey(ctx, key); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// A new time each call, so that every UPDATE writes.
			if err := st.TouchKey(ctx, key.ID, seedEpoch.Add(time.Duration(n.Add(1))*time.Millisecond)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
