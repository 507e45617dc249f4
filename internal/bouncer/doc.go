// Package bouncer runs Debian's pgbouncer in transaction mode in front of a
// PostgreSQL server, for the tests and the benchmark: the pooler operators
// put between a fleet of pds instances and their database. Each database is
// a schema reached through a database entry whose server connections start
// with its search_path. It runs on Linux only; elsewhere Start refuses.
package bouncer
