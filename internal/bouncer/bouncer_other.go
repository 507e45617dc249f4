//go:build !linux

package bouncer

import (
	"context"
	"errors"
)

var errLinuxOnly = errors.New("bouncer: pgbouncer is run on Linux only")

// Bouncer is unavailable here.
type Bouncer struct{}

// Binary finds no pgbouncer here.
func Binary() string { return "" }

// Start fails here.
func Start(string, string, int) (*Bouncer, error) { return nil, errLinuxOnly }

// URL is empty here.
func (b *Bouncer) URL(string) string { return "" }

// AddSchema fails here.
func (b *Bouncer) AddSchema(context.Context, string) (string, error) { return "", errLinuxOnly }

// Close does nothing here.
func (b *Bouncer) Close() {}
