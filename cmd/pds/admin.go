package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

func (e cmdEnv) accountsCreate(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	name := fs.String("name", "", "account name (required)")
	return func([]string) error {
		if strings.TrimSpace(*name) == "" {
			return usageError{errors.New("accounts create: --name is required; e.g. --name acme")}
		}
		st, err := openStore(e.ctx, c)
		if err != nil {
			return err
		}
		defer st.Close()
		a := domain.Account{ID: domain.NewID("acc"), Name: *name, CreatedAt: time.Now().UTC()}
		if err := st.CreateAccount(e.ctx, a); err != nil {
			return err
		}
		if c.json {
			return e.printJSON(accountJSON(a))
		}
		fmt.Fprintf(e.stdout, "Created account %s (%s).\n", a.ID, a.Name)
		return nil
	}
}

func (e cmdEnv) accountsList(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	return func([]string) error {
		st, err := openStore(e.ctx, c)
		if err != nil {
			return err
		}
		defer st.Close()
		list, err := st.ListAccounts(e.ctx)
		if err != nil {
			return err
		}
		if c.json {
			out := make([]map[string]any, len(list))
			for i, a := range list {
				out[i] = accountJSON(a)
			}
			return e.printJSON(map[string]any{"accounts": out})
		}
		rows := make([][]string, len(list))
		for i, a := range list {
			rows[i] = []string{a.ID, a.Name, a.CreatedAt.Format(time.RFC3339)}
		}
		e.table("ID\tNAME\tCREATED", rows)
		return nil
	}
}

func accountJSON(a domain.Account) map[string]any {
	return map[string]any{"id": a.ID, "name": a.Name, "created_at": domain.T(a.CreatedAt)}
}

func (e cmdEnv) keysCreate(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	account := fs.String("account", "", "account id (required)")
	scopes := fs.String("scopes", "", "comma-separated scopes, or all (required)")
	name := fs.String("name", "", "service name shown by GET /me")
	expiresIn := fs.Duration("expires-in", 0, "lifetime as a Go duration (90s, 720h); none by default")
	rate := fs.Int("rate-limit", 0, "requests per minute for this key; the server default when 0")
	return func([]string) error {
		if *account == "" {
			return usageError{errors.New("keys create: --account is required; e.g. --account acc_01a209d69f8a9aba61380d0e (pds accounts list)")}
		}
		sc, err := domain.ParseScopes(*scopes)
		if err != nil {
			return badSetting("scopes", *scopes, err.Error())
		}
		req := service.KeyRequest{AccountID: *account, Scopes: sc, ExpiresIn: *expiresIn}
		if *name != "" {
			req.Name = name
		}
		if *rate != 0 {
			req.RateLimit = rate
		}
		st, err := openStore(e.ctx, c)
		if err != nil {
			return err
		}
		defer st.Close()
		k, full, err := service.MintKey(e.ctx, st, req, time.Now().UTC())
		if err != nil {
			return err
		}
		if c.json {
			out := keyJSON(k)
			out["key"] = full
			return e.printJSON(out)
		}
		fmt.Fprintf(e.stdout, "Created key %s for account %s with scopes %s.\n", k.ID, k.AccountID, strings.Join(scopeStrings(k.Scopes), ","))
		fmt.Fprintf(e.stdout, "The key is shown once; store it now:\n\n  %s\n\n", full)
		return nil
	}
}

func (e cmdEnv) keysList(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	account := fs.String("account", "", "account id (required)")
	return func([]string) error {
		if *account == "" {
			return usageError{errors.New("keys list: --account is required; e.g. --account acc_01a209d69f8a9aba61380d0e (pds accounts list)")}
		}
		st, err := openAccountStore(e.ctx, c, "keys list", *account)
		if err != nil {
			return err
		}
		defer st.Close()
		list, err := st.ListKeys(e.ctx, *account)
		if err != nil {
			return err
		}
		if c.json {
			out := make([]map[string]any, len(list))
			for i, k := range list {
				out[i] = keyJSON(k)
			}
			return e.printJSON(map[string]any{"keys": out})
		}
		rows := make([][]string, len(list))
		for i, k := range list {
			state := "valid"
			if k.RevokedAt != nil {
				state = "revoked"
			} else if !k.Usable(time.Now()) {
				state = "expired"
			}
			rows[i] = []string{k.ID, orDash(k.Name), k.Prefix + "…" + k.LastFour, state, scopesLabel(k.Scopes),
				timeOrDash(k.ExpiresAt, "never"), timeOrDash(k.LastUsedAt, "never")}
		}
		e.table("ID\tNAME\tKEY\tSTATE\tSCOPES\tEXPIRES\tLAST USED", rows)
		return nil
	}
}

func (e cmdEnv) keysRevoke(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	return func(args []string) error {
		st, err := openStore(e.ctx, c)
		if err != nil {
			return err
		}
		defer st.Close()
		id := args[0]
		now := time.Now().UTC()
		revokedAt, err := st.RevokeKey(e.ctx, id, now)
		if errors.Is(err, domain.ErrNotFound) {
			return noKeyError{id}
		}
		if err != nil {
			return err
		}
		already := revokedAt.Before(now.Truncate(time.Millisecond))
		if c.json {
			return e.printJSON(map[string]any{"id": id, "revoked": true, "revoked_at": domain.T(revokedAt), "already_revoked": already})
		}
		if already {
			fmt.Fprintf(e.stdout, "Key %s was already revoked, at %s; nothing changed.\n", id, revokedAt.Format(time.RFC3339))
			return nil
		}
		fmt.Fprintf(e.stdout, "Revoked key %s.\n", id)
		return nil
	}
}

func keyJSON(k domain.APIKey) map[string]any {
	out := map[string]any{
		"id": k.ID, "account_id": k.AccountID, "name": k.Name, "prefix": k.Prefix, "last_four": k.LastFour,
		"scopes": scopeStrings(k.Scopes), "rate_limit": k.RateLimit, "expires_at": domain.TP(k.ExpiresAt),
		"revoked": k.RevokedAt != nil, "last_used_at": domain.TP(k.LastUsedAt), "created_at": domain.T(k.CreatedAt),
	}
	return out
}

func scopeStrings(sc []domain.Scope) []string {
	out := make([]string, len(sc))
	for i, s := range sc {
		out[i] = string(s)
	}
	return out
}

// orDash is a name, or "-" for none.
func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// timeOrDash is a time to the second, or none when there is no time.
func timeOrDash(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}

// noKeyError names a key no account holds.
type noKeyError struct{ id string }

func (e noKeyError) Error() string {
	return fmt.Sprintf("keys revoke: there is no key %q (pds keys list --account ID lists an account's keys)", e.id)
}

func (e noKeyError) Is(target error) bool { return target == domain.ErrNotFound }

// scopesLabel lists a key's scopes for a table: "all" when it holds every
// one, as --scopes all minted it.
func scopesLabel(sc []domain.Scope) string {
	if len(sc) == len(domain.AllScopes) && !slices.ContainsFunc(domain.AllScopes, func(s domain.Scope) bool { return !slices.Contains(sc, s) }) {
		return "all"
	}
	return strings.Join(scopeStrings(sc), ",")
}
