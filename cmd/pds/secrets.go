package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
)

// secretsCmd runs pds secrets rotate-key: every secret the database holds
// is sealed again under the first key of --secrets-key-file, opened with
// any key the file holds. A rotation is three steps, none of which stops
// a server from signing: put the new key on the file's first line with
// the old one after it and restart the servers (they open both and seal
// under the new one), run this, then drop the old line.
func (e cmdEnv) secretsRotateKey(fs *pflag.FlagSet) func([]string) error {
	c := commonFlagsOn(fs)
	return func([]string) error {
		if c.secretsKeyFile == "" {
			return usageError{errors.New("secrets rotate-key: --secrets-key-file (PDS_SECRETS_KEY_FILE) is required: " +
				"its first line is the key to seal under, the others the keys the secrets are sealed under now")}
		}
		st, err := openStore(e.ctx, c)
		if err != nil {
			return err
		}
		defer st.Close()
		n, err := st.ResealSecrets(e.ctx, false)
		if err != nil {
			return fmt.Errorf("secrets rotate-key: %w", err)
		}
		keys, err := st.SecretKeys(e.ctx)
		if err != nil {
			return err
		}
		total := 0
		for _, count := range keys {
			total += count
		}
		if c.json {
			return e.printJSON(map[string]any{"resealed": n, "secrets": total})
		}
		fmt.Fprintf(e.stdout, "Sealed %d of the database's %d secrets again under the first key of %s; every one is sealed under it now.\n",
			n, total, c.secretsKeyFile)
		return nil
	}
}
