package main

// A scratch image has no CA bundle and no zoneinfo, so the binary carries
// both, at a small cost in size.
import (
	// The Mozilla roots, used only when the system has none: HTTPS
	// deliveries from a scratch image. A system bundle, where there is
	// one, still wins.
	_ "golang.org/x/crypto/x509roots/fallback"
	// Time zones for TZ (the log's timestamps) where there is no
	// /usr/share/zoneinfo.
	_ "time/tzdata"
)
