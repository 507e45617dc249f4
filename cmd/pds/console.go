package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/console"
	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

// consoleCmd is pds console link: a one-time sign-in link to the console
// for an operator on the server's machine, who holds no API key. It mints
// a key for the account (named for the operator, expiring with the
// session it starts, revocable like any other) and a link that starts a
// session acting as that key, once, within --valid.
func (e cmdEnv) consoleLink(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	account := fs.String("account", "", "account id (required)")
	scopes := fs.String("scopes", "all", "the scopes the console may use: comma-separated, or all")
	valid := fs.Duration("valid", 10*time.Minute, "how long the link may be followed, once")
	session := fs.Duration("session", 8*time.Hour, "how long the key it mints, and so the session, lasts")
	publicURL := fs.String("public-url", "", "the server's base URL (default: the one the last pds serve to start on this database uses)")
	return func([]string) error {
		if *account == "" {
			return usageError{errors.New("console link: --account is required; e.g. --account acc_01a209d69f8a9aba61380d0e (pds accounts list)")}
		}
		sc, err := domain.ParseScopes(*scopes)
		if err != nil {
			return badSetting("scopes", *scopes, err.Error())
		}
		if err := errors.Join(positiveDuration("valid", *valid), positiveDuration("session", *session)); err != nil {
			return usageError{err}
		}
		st, err := openAccountStore(e.ctx, c, "console link", *account)
		if err != nil {
			return err
		}
		defer st.Close()
		now := time.Now().UTC()
		name := "console link (" + operator() + ")"
		key, _, err := service.MintKey(e.ctx, st, service.KeyRequest{AccountID: *account, Scopes: sc, Name: &name, ExpiresIn: *session}, now)
		if err != nil {
			return err
		}
		path, err := console.MintLink(e.ctx, st, *account, key.Hash, now, *valid)
		if err != nil {
			return err
		}
		base, err := servedURL(e.ctx, st, *publicURL)
		if err != nil {
			return err
		}
		link := base + path
		if c.json {
			return e.printJSON(map[string]any{"link": link, "key_id": key.ID, "expires_at": domain.T(now.Add(*valid))})
		}
		fmt.Fprintf(e.stdout, "Open this link within %s and press Sign in; it signs in once, as key %s (%s), for %s:\n\n  %s\n\n", *valid, key.ID, name, *session, link)
		fmt.Fprintf(e.stdout, "pds keys revoke %s ends that session.\n", key.ID)
		return nil
	}
}

// operator names who asked for a link, for the key's name.
func operator() string {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	return who + "@" + host
}
