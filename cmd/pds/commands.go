package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// root is the command tree: every command of pds, its words for help, and
// the function that declares its flags and runs it.
func (e cmdEnv) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "pds",
		Short: "the Public Data Service: its server and its administrative commands",
		Long: `pds: the Public Data Service, its server and its administrative commands.

Every command takes --json for machine-readable output, and every one but healthcheck, version
and transfer (--from and --to) takes --database (PDS_DATABASE): an SQLite file (pds.db by default)
or a postgres:// URL, and --secrets-key-file (PDS_SECRETS_KEY_FILE), the key that seals the
database's secrets.
Every flag has a PDS_* variable (--webhook-window is PDS_WEBHOOK_WINDOW); flags win.`,
		Version:       version().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		// Only the leaves run; pds alone says which of its commands to run.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q (pds --help lists them)", args[0])}
			}
			return cmd.Help()
		},
	}
	root.SetFlagErrorFunc(flagError)
	root.SetVersionTemplate("pds {{.Version}}\n")
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		e.leaf("serve", "serve the API and the console (SQLite file pds.db by default)",
			`Serve the API, the console and the webhook deliveries. With --migrate=false it never changes the
schema and refuses to start while migrations are pending.`, nil, e.serve),
		e.leaf("migrate", "apply database migrations (a deploy's own step, before servers roll)", "", nil, e.migrate),
		e.leaf("healthcheck", "exit 0 when pds serve on this machine answers /readyz with 200, else 1",
			`Ask the pds serve of this machine whether it is ready: the image's HEALTHCHECK. It reads
PDS_ADDR and PDS_TLS_CERT as pds serve does.`, nil, e.healthcheck),
		e.leaf("version", "print the version, VCS commit and commit time of this binary", "", nil, e.versionCmd),
		e.group("accounts", "create and list accounts",
			e.leaf("create --name N", "create an account", "", nil, e.accountsCreate),
			e.leaf("list", "list accounts", "", nil, e.accountsList)),
		e.group("keys", "mint, list and revoke API keys",
			e.leaf("create --account ID --scopes a,b|all", "mint a key; its secret is shown once", "", nil, e.keysCreate),
			e.leaf("list --account ID", "list an account's keys (never their secrets)", "", nil, e.keysList),
			e.leaf("revoke KEY_ID", "revoke a key, effective on the next request", "", exactlyOne("KEY_ID (pds keys list)"), e.keysRevoke)),
		e.group("erasures", "the record of an account's erasures",
			e.leaf("list --account ID", "the account's erasures: when, which key, the person's id, whether suppressed; never an identifier",
				"", nil, e.erasuresList)),
		e.group("import", "load JSON lines into an account",
			e.leaf("campaigns --account ID FILE", "import campaigns (JSON lines; - reads stdin)", importHelp["campaigns"]+"\n"+importCommonHelp,
				exactlyOne("FILE of JSON lines, or - to read stdin"), e.importKind("campaigns")),
			e.leaf("projects --account ID FILE", "import projects (JSON lines; - reads stdin)", importHelp["projects"]+"\n"+importCommonHelp,
				exactlyOne("FILE of JSON lines, or - to read stdin"), e.importKind("projects")),
			e.leaf("custom-fields --account ID FILE", "import custom fields (JSON lines; - reads stdin)", importHelp["custom-fields"]+"\n"+importCommonHelp,
				exactlyOne("FILE of JSON lines, or - to read stdin"), e.importKind("custom-fields")),
			e.leaf("persons --account ID FILE", "upsert persons: Upsert Person lines and tag_ids (JSON lines; - reads stdin)", importPersonsHelp,
				exactlyOne("FILE of JSON lines, or - to read stdin"), e.importPersons)),
		e.leaf("transfer --from DB --to DB", "copy a whole instance into an empty database: SQLite to PostgreSQL, or back",
			transferHelp, nil, e.transfer),
		e.leaf("backup FILE", "copy a live SQLite database to a new FILE, checked (PostgreSQL: pg_dump)", "",
			exactlyOne("FILE (a new file: the copy)"), e.backup),
		e.group("console", "the console at /console",
			e.leaf("link --account ID", "print a one-time sign-in link to the console", "", nil, e.consoleLink)),
		e.group("persons", "what is held about persons",
			e.leaf("report --account ID --person ID", "print everything held about a person as one JSON document (an access request)",
				"Print everything held about a person as one JSON document (an access request), streamed page by page.",
				nil, e.personsReport)),
		e.group("secrets", "the keys that seal the database's secrets",
			e.leaf("rotate-key --secrets-key-file F", "seal every webhook signing secret and suppression secret again under the first key of F",
				`Seal every webhook signing secret and suppression secret again under the first key of
--secrets-key-file, opened with any key the file holds (see "Secrets at rest" in the README).`, nil, e.secretsRotateKey)),
		e.group("webhooks", "webhooks for developing a receiver",
			e.leaf("listen --account ID", "receive the account's deliveries here (http://127.0.0.1) while it runs", listenHelp, nil, e.webhooksListen)),
	)
	return root
}
