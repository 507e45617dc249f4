package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/service"
)

func (e cmdEnv) accounts(args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("accounts: say create or list")}
	}
	fs, c := e.newFlags("accounts " + args[0])
	switch args[0] {
	case "create":
		name := fs.String("name", "", "account name (required)")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
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
	case "list":
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
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
	return usageError{fmt.Errorf("accounts: unknown subcommand %q; say create or list", args[0])}
}

func accountJSON(a domain.Account) map[string]any {
	return map[string]any{"id": a.ID, "name": a.Name, "created_at": domain.T(a.CreatedAt)}
}

func (e cmdEnv) keys(args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("keys: say create, list or revoke")}
	}
	fs, c := e.newFlags("keys " + args[0])
	switch args[0] {
	case "create":
		account := fs.String("account", "", "account id (required)")
		scopes := fs.String("scopes", "", "comma-separated scopes, or all (required)")
		name := fs.String("name", "", "service name shown by GET /me")
		expiresIn := fs.Duration("expires-in", 0, "lifetime as a Go duration (90s, 720h); none by default")
		rate := fs.Int("rate-limit", 0, "requests per minute for this key; the server default when 0")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
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
	case "list":
		account := fs.String("account", "", "account id (required)")
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
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
			rows[i] = []string{k.ID, k.Prefix + "…" + k.LastFour, state, strings.Join(scopeStrings(k.Scopes), ",")}
		}
		e.table("ID\tKEY\tSTATE\tSCOPES", rows)
		return nil
	case "revoke":
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usageError{errors.New("keys revoke: give exactly one KEY_ID (pds keys list)")}
		}
		st, err := openStore(e.ctx, c)
		if err != nil {
			return err
		}
		defer st.Close()
		id := fs.Arg(0)
		if err := st.RevokeKey(e.ctx, id, time.Now().UTC()); err != nil {
			return err
		}
		if c.json {
			return e.printJSON(map[string]any{"id": id, "revoked": true})
		}
		fmt.Fprintf(e.stdout, "Revoked key %s.\n", id)
		return nil
	}
	return usageError{fmt.Errorf("keys: unknown subcommand %q; say create, list or revoke", args[0])}
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
