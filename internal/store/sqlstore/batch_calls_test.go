package sqlstore

import (
	"context"
	"testing"
)

// TestBatchEndsWhenNoOneWaits: a batch's statement is cancelled once every
// caller in it has stopped waiting, and not before.
func TestBatchEndsWhenNoOneWaits(t *testing.T) {
	first, cancelFirst := context.WithCancel(context.Background())
	second, cancelSecond := context.WithCancel(context.Background())
	defer cancelSecond()
	ctx, stop := whileAnyWaits([]*getCall{{batchCall: batchCall{ctx: first}}, {batchCall: batchCall{ctx: second}}})
	defer stop()
	cancelFirst()
	if ctx.Err() != nil {
		t.Fatal("the batch was cancelled while a caller still waited")
	}
	cancelSecond()
	<-ctx.Done() // AfterFunc runs in a goroutine of its own
	done, stopDone := whileAnyWaits([]*getCall{{batchCall: batchCall{ctx: context.Background()}}})
	stopDone()
	if done.Err() == nil {
		t.Fatal("a batch's context outlived its batch")
	}
}
