// Package sqlstore implements store.Store once, over database/sql, for every
// engine. SQL that is the same on every engine lives here, written with
// numbered placeholders ($1, $2, ...) that SQLite and PostgreSQL both read.
// What must differ is declared by each engine package in its Dialect.
package sqlstore
