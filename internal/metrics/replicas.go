package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pds-dev/pds/internal/store"
)

// ReplicaSource says where the reads safe on a replica went and how far
// each replica is behind (PostgreSQL with --database-replica); ok is false
// without replicas.
type ReplicaSource interface {
	ReplicaStats() (store.ReplicaStats, bool)
}

// WatchReplicas reports the replicas' reads and lag at every scrape.
func (m *Metrics) WatchReplicas(src ReplicaSource) {
	m.Registry.MustRegister(&replicaCollector{src: src})
}

var (
	replicaReadsDesc = prometheus.NewDesc("pds_db_reads_total",
		"Reads safe on a replica, by where they ran (target: replica, primary, fallback: a replica failed the read and the primary served it) "+
			"and why (reason: caught_up, waited; behind, down, no_floor; recovery_conflict, down, error).",
		[]string{"target", "reason"}, nil)
	replicaServedDesc = prometheus.NewDesc("pds_db_replica_reads_total",
		"Reads each replica was picked for (those it failed are counted again as pds_db_reads_total{target=\"fallback\"}).",
		[]string{"replica"}, nil)
	replicaUpDesc = prometheus.NewDesc("pds_db_replica_up",
		"Whether the replica served its last probe or read (1) or is passed over until it does (0).", []string{"replica"}, nil)
	replicaLagBytesDesc = prometheus.NewDesc("pds_db_replica_lag_bytes",
		"How far the replica's replay is behind the primary's WAL insert position, at its last probe.", []string{"replica"}, nil)
	replicaLagSecondsDesc = prometheus.NewDesc("pds_db_replica_lag_seconds",
		"The age of the replica's last replayed commit while it has more to replay (0 when it has replayed all it received).",
		[]string{"replica"}, nil)
)

type replicaCollector struct{ src ReplicaSource }

func (c *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{replicaReadsDesc, replicaServedDesc, replicaUpDesc, replicaLagBytesDesc, replicaLagSecondsDesc} {
		ch <- d
	}
}

func (c *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.src.ReplicaStats()
	if !ok {
		return
	}
	for _, r := range st.Reads {
		ch <- prometheus.MustNewConstMetric(replicaReadsDesc, prometheus.CounterValue, float64(r.N), r.Target, r.Reason)
	}
	for _, r := range st.Replicas {
		up := 0.0
		if r.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(replicaServedDesc, prometheus.CounterValue, float64(r.Reads), r.Name)
		ch <- prometheus.MustNewConstMetric(replicaUpDesc, prometheus.GaugeValue, up, r.Name)
		ch <- prometheus.MustNewConstMetric(replicaLagBytesDesc, prometheus.GaugeValue, float64(r.LagBytes), r.Name)
		ch <- prometheus.MustNewConstMetric(replicaLagSecondsDesc, prometheus.GaugeValue, r.LagSeconds, r.Name)
	}
}
