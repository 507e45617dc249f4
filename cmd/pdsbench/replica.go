package main

import (
	"bufio"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/store/postgres"
)

// replicaOf is the --replica URL reaching the schema database's URL names
// (its search_path), as the standby holds every schema of its primary.
func replicaOf(replica, database string) (string, error) {
	u, err := neturl.Parse(database)
	if err != nil {
		return "", err
	}
	schema := u.Query().Get("search_path")
	if schema == "" {
		return replica, nil
	}
	return postgres.WithSetting(replica, "search_path", schema)
}

// printReadTargets prints, with --replica, where the server's reads safe on
// a replica went (pds_db_reads_total) and how its replica fared
// (pds_db_replica_*), as its metrics say after the rows.
func (p *process) printReadTargets(logf func(string, ...any)) {
	if p.metricsAddr == "" {
		return
	}
	client := &http.Client{Timeout: 5 * time.Second}
	res, err := client.Get("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		logf("read targets: %v", err)
		return
	}
	defer res.Body.Close()
	var lines []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "pds_db_reads_total") || strings.HasPrefix(line, "pds_db_replica_") {
			lines = append(lines, line)
		}
	}
	logf("read targets:\n%s", strings.Join(lines, "\n"))
	if err := sc.Err(); err != nil {
		logf("read targets: %v", err)
	}
}
