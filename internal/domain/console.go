package domain

import "time"

// ConsoleSession is a browser's sign-in to the console. It acts as one API
// key: the key's account, the key's scopes, re-read on every page, so that
// a key revoked or expired ends its sessions at once. The browser holds
// only a random token whose SHA-256 is the session's id; neither the
// session nor the cookie holds the key.
type ConsoleSession struct {
	IDHash    []byte
	AccountID string
	KeyHash   []byte // the API key's hash (APIKey.Hash)
	// CSRF is the token every form that changes something must carry.
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// ConsoleLink is a one-time sign-in link for an operator on the server's
// machine (pds console link): following it starts a session as its key,
// once, before it expires.
type ConsoleLink struct {
	TokenHash []byte
	AccountID string
	KeyHash   []byte
	ExpiresAt time.Time
}
