package testenv

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails the test, naming what it
// waited for, should it not hold within timeout. A test that waits for
// something waits on the condition with one generous deadline (30 s, say)
// rather than for a number of tries or a short bound: how soon it holds
// depends on the machine's other work.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
