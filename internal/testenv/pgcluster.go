package testenv

import (
	"os"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/pgcluster"
)

// NewPGCluster starts a PostgreSQL primary and a standby of the test's own
// (internal/pgcluster), stopped and removed when the test ends. Without
// Debian's server binaries it skips, except under CI, where that is a
// failure (.ci/run installs them with the server it runs).
func NewPGCluster(t testing.TB, opts pgcluster.Options) *pgcluster.Cluster {
	t.Helper()
	bin, err := pgcluster.Binaries()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %v", err)
		}
		t.Skip(err)
	}
	c, err := pgcluster.Start(bin, opts)
	if err != nil {
		t.Fatalf("start a primary and a standby: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes() {
				t.Logf("node %s logged:\n%s", n.Name, tailLines(n.Logs(), 60))
			}
		}
		c.Close()
	})
	return c
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
