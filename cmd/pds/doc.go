// Command pds serves the Public Data Service API and carries its
// administrative commands. The command tree is root (commands.go): each
// command a leaf whose function declares its flags (every flag has a PDS_*
// variable; flags win) and opens the store the --database value names
// (openStore, through internal/store/engines).
//
// # Serving
//
// pds serve (serve.go) checks every setting first (settings.go: a refused one
// names its flag, its PDS_* variable, the value and a valid example, and the
// command exits with status 2), binds its listeners (listen.go) before any
// database is touched, so that a taken port creates nothing, opens the store
// (which migrates it, or with --migrate=false refuses it while a migration is
// pending), starts the webhook worker and serves the API with the console
// mounted in it (instance.New), over TLS with --tls-cert and --tls-key.
//
// pds backup copies a live SQLite database (sqlite.Backup: a checked copy
// under a name that never replaces a file); PostgreSQL is pg_dump's.
//
// # Stopping
//
// At the signal, shutDown (serve.go) drains in the order a load balancer
// needs: /readyz turns 503 and every answer asks its client to close the
// connection (httpapi.Server.Drain), and the worker stops starting attempts
// and hands its queued deliveries back. After the drain period (SIGTERM
// only) the listener retires (retire.go: the accept queue shrunk, what is
// queued taken, then closed), keep-alives end, the server waits until every
// connection it accepted has sent its request (net/http drops a request it
// reads once shutting down), then http.Server.Shutdown lets the requests in
// flight finish within the grace period. A second signal ends the process
// at once (onSignals).
//
// # The image and the deploy examples
//
// The image (Containerfile, scripts/image) is the static binary on scratch:
// the script builds the binary on the host and hands the build a context of
// rootfs/ (pds, and a /tmp of mode 1777, since COPY keeps the modes of what
// a directory holds, not of one it creates) and data/, copied with --chown to
// the image's user. What scratch lacks the binary carries (embedded.go: the
// fallback CA roots and time/tzdata; TestRootsWithoutSystemBundle verifies
// the roots with the system bundle out of reach). Its HEALTHCHECK is pds
// healthcheck (healthcheck.go), which reads --addr and --tls-cert from the
// variables pds serve reads.
//
// TestImage (image_test.go; podman and root, under CI a failure without
// them) builds the image with the script, reads its config from podman image
// inspect, exports its files (podman create and export, which need no
// container runtime) and runs the image's entrypoint and command as its user,
// in its working directory, with its environment, through
// SysProcAttr.Chroot (Go chroots, then changes user and directory, which
// chroot(8) cannot). The test's own settings go in the environment, so the
// command line stays the image's.
//
// The deploy examples (deploy/) are held to the binary by deploy_test.go
// (compose-go, against the Compose Specification's schema) and
// deploy_kubernetes_test.go (k8s.io/api types, decoded strictly):
// commandSettings reads each command line and PDS_* variable with the
// command's own flag set (serveFlags), so a flag renamed or a default changed
// fails them, and the ports, probes, stop grace and the pooler's mode are
// compared with the settings that result.
//
// # The crash test
//
// TestCrashUnderLoadLosesNothing (crash_load_test.go) proves that nothing
// acknowledged is lost, on each engine. It builds the real binary, makes the
// account and a key with pds migrate, pds accounts create and pds keys
// create, and subscribes a real HTTPS receiver (its certificate passed with
// --webhook-ca-file) that verifies every delivery with pkg/webhookverify and
// answers some of them 503, so that retries run too. Concurrent writers
// upsert, patch, attach tags and append breadcrumbs while the server is
// SIGKILLed at random moments, each after it acknowledged a write, and
// restarted on the same database. Each writer owns its persons, so the last
// acknowledged value of every field is well defined; a write that got no 2xx
// may or may not have happened, so a field may also hold a value sent after
// its last acknowledged one. At the end every acknowledged person, value, tag
// and breadcrumb must read back, and every changed person must have a
// delivery showing at least its last acknowledged state (and a
// person.created when its creation was acknowledged). The kills and the
// writers' choices come from a logged seed (PDS_CRASH_SEED replays them; the
// timing still varies). Most of its time is the wait for the last
// deliveries: work a killed server had claimed stays leased to it until the
// lease runs out. go test -short skips it.
//
// # Tests with real faults
//
// faults_*_test.go run on a PostgreSQL cluster of the test's own
// (testenv.Cluster) and on a small tmpfs filled by a ballast file
// (testenv.SmallDisk): PostgreSQL stopped, restarted after a crash and
// frozen under two instances and several writers; SQLite's disk filled;
// SIGTERM with requests and attempts in flight. Each checks every answer,
// the longest answer, the time to write again, that nothing acknowledged is
// lost, that every change is delivered once and that nothing is left behind.
// failover_test.go runs a primary and a standby through a multi-host URL
// (testenv.NewPGCluster): the synchronous standby stopped (no write
// acknowledged; then the primary killed and the standby promoted, nothing
// acknowledged lost), failovers under many writers with the old primary
// rewound and re-joined, the old primary started alone after a promotion
// (nothing written to it), the first host hung (every request answered
// within its deadline). TestFleetThroughPgBouncer (fleet_test.go) runs many
// clients on one instance through a small transaction-mode server pool.
package main
