package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/pds-dev/pds/internal/domain"
)

// erasuresPage is how many erasures one read of the list takes.
const erasuresPage = 100

// erasures lists the record of an account's erasures, newest first: when,
// by which key, the person's id, whether its identifiers were suppressed.
// The record holds no identifier, so neither does the list.
func (e cmdEnv) erasuresList(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	account := fs.String("account", "", "account id (required)")
	return func([]string) error {
		if *account == "" {
			return usageError{errors.New("erasures list: --account is required; e.g. --account acc_01a209d69f8a9aba61380d0e (pds accounts list)")}
		}
		st, err := openAccountStore(e.ctx, c, "erasures list", *account)
		if err != nil {
			return err
		}
		defer st.Close()
		var all []domain.Erasure
		for page := 1; ; page++ {
			list, total, err := st.ListErasures(e.ctx, *account, domain.PageRequest{Page: page, Size: erasuresPage})
			if err != nil {
				return err
			}
			all = append(all, list...)
			if len(list) == 0 || len(all) >= total {
				break
			}
		}
		if c.json {
			out := make([]map[string]any, len(all))
			for i, x := range all {
				out[i] = map[string]any{"id": x.ID, "erased_at": domain.T(x.At), "key_id": x.KeyID, "person_id": x.PersonID,
					"suppressed": x.Suppressed}
			}
			return e.printJSON(map[string]any{"erasures": out})
		}
		rows := make([][]string, len(all))
		for i, x := range all {
			rows[i] = []string{x.At.UTC().Format(time.RFC3339), x.KeyID, x.PersonID, strconv.FormatBool(x.Suppressed)}
		}
		e.table("ERASED AT\tKEY\tPERSON\tSUPPRESSED", rows)
		if len(all) == 0 {
			fmt.Fprintln(e.stdout, "No person of this account was erased.")
		}
		return nil
	}
}
