package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/spf13/pflag"
)

// deployDir holds the deploy examples TestDeployExamples holds to the binary.
var deployDir = filepath.Join("..", "..", "deploy")

// commandSettings reads a pds command line of a deploy example, and its
// environment, with the flags of that command: a flag or a PDS_* variable
// the command does not have fails the test. Variables go in first and the
// flags win, as in parse. A value from a secret is given as "".
func commandSettings(t *testing.T, where string, args []string, env map[string]string) (*serveConfig, *commonFlags) {
	t.Helper()
	if len(args) == 0 {
		t.Fatalf("%s: no command", where)
	}
	fs := pflag.NewFlagSet(args[0], pflag.ContinueOnError)
	common := commonFlagsOn(fs)
	var cfg *serveConfig
	switch args[0] {
	case "serve":
		cfg = serveFlags(fs)
	case "migrate":
	default:
		t.Fatalf("%s runs pds %s; the examples run pds serve and pds migrate", where, args[0])
	}
	byVariable := map[string]*pflag.Flag{}
	fs.VisitAll(func(f *pflag.Flag) { byVariable[envName(f.Name)] = f })
	for name, value := range env {
		f := byVariable[name]
		if f == nil {
			t.Errorf("%s sets %s, which pds %s does not read", where, name, args[0])
			continue
		}
		if value == "" {
			continue // from a secret
		}
		if err := f.Value.Set(value); err != nil {
			t.Errorf("%s: %s=%q: %v", where, name, value, err)
		}
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		t.Errorf("%s: pds %s refuses %v: %v", where, args[0], args[1:], err)
	}
	return cfg, common
}

// addrPort is the port pds serve listens on.
func addrPort(t *testing.T, cfg *serveConfig) string {
	t.Helper()
	_, port, err := net.SplitHostPort(cfg.addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// stopTakes is how long pds serve may take to stop after SIGTERM: the
// drain and the grace. An orchestrator that kills it sooner cuts requests
// and deliveries off.
func stopTakes(cfg *serveConfig) time.Duration { return cfg.shutdownDrain + cfg.shutdownGracePeriod }

// checkProbePaths: the paths the examples probe answer 200 on a server
// that is up.
func checkProbePaths(t *testing.T, paths ...string) {
	t.Helper()
	serveOnce(t, filepath.Join(t.TempDir(), "pds.db"), func(base, _ string) {
		for _, p := range paths {
			res, err := http.Get(base + p)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("the examples probe %s, which answers %d", p, res.StatusCode)
			}
		}
	})
}

// TestDeployExamplesCompose holds deploy/compose.yaml to the binary. It is
// loaded by compose-go, the library docker compose loads files with,
// against the Compose Specification's schema, which refuses any attribute
// it does not define.
func TestDeployExamplesCompose(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yaml")}},
		Environment: types.Mapping{}, // nothing from this machine's environment
	}
	project, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) { o.SetProjectName("pds", true) })
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	image := defaultImageTag(t)
	bouncer := pgbouncerConfig(t, project)

	var migrators, servers []string
	for name, svc := range project.Services {
		if svc.Image != image {
			continue
		}
		where := "compose service " + name
		if svc.Entrypoint != nil {
			t.Errorf("%s replaces the image's entrypoint (/pds) with %v", where, svc.Entrypoint)
		}
		env := map[string]string{}
		for k, v := range svc.Environment {
			if v == nil {
				t.Errorf("%s: %s has no value", where, k)
				continue
			}
			env[k] = *v
		}
		cfg, common := commandSettings(t, where, svc.Command, env)
		db, err := url.Parse(common.database)
		if err != nil || !isPostgres(common.database) {
			t.Errorf("%s: database %q is not a PostgreSQL URL", where, common.database)
			continue
		}
		if svc.Command[0] == "migrate" {
			migrators = append(migrators, name)
			if _, ok := project.Services[db.Hostname()]; !ok || db.Hostname() == bouncer.service {
				t.Errorf("%s migrates through %s; it should reach PostgreSQL itself", where, db.Host)
			}
			continue
		}
		servers = append(servers, name)
		if cfg.migrate {
			t.Errorf("%s runs pds serve without --migrate=false", where)
		}
		if db.Hostname() != bouncer.service || db.Port() != bouncer.settings["pgbouncer"]["listen_port"] {
			t.Errorf("%s reaches the database at %s, not through PgBouncer (%s:%s)", where, db.Host, bouncer.service, bouncer.settings["pgbouncer"]["listen_port"])
		}
		if _, ok := bouncer.settings["databases"][strings.TrimPrefix(db.Path, "/")]; !ok {
			t.Errorf("%s asks PgBouncer for database %s, which it does not pool", where, db.Path)
		}
		if dep, ok := svc.DependsOn["migrate"]; !ok || dep.Condition != types.ServiceConditionCompletedSuccessfully {
			t.Errorf("%s does not wait for the migrations (depends_on migrate: %+v)", where, dep)
		}
		if len(svc.Ports) != 1 || svc.Ports[0].Target == 0 || strconv.FormatUint(uint64(svc.Ports[0].Target), 10) != addrPort(t, cfg) {
			t.Errorf("%s publishes %+v; pds serve listens on %s", where, svc.Ports, cfg.addr)
		}
		if svc.StopGracePeriod == nil || time.Duration(*svc.StopGracePeriod) < stopTakes(cfg) {
			t.Errorf("%s: stop_grace_period %v is shorter than the drain and the grace (%s)", where, svc.StopGracePeriod, stopTakes(cfg))
		}
		if svc.HealthCheck != nil {
			t.Errorf("%s replaces the image's HEALTHCHECK (pds healthcheck)", where)
		}
	}
	if len(migrators) != 1 || len(servers) < 2 {
		t.Errorf("compose.yaml runs pds migrate in %v and pds serve in %v: want one migrate and two servers", migrators, servers)
	}
	if mode := bouncer.settings["pgbouncer"]["pool_mode"]; mode != "transaction" {
		t.Errorf("PgBouncer pools in %q mode; the example is of transaction mode", mode)
	}
}

// defaultImageTag is the tag ./scripts/image gives the image by default.
func defaultImageTag(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "image"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`tag="\$\{1:-([^}]+)\}"`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/image names no default tag")
	}
	return string(m[1])
}

type pgbouncer struct {
	service  string
	settings map[string]map[string]string // section, key, value
}

// pgbouncerConfig reads the pgbouncer.ini the PgBouncer service runs with:
// the file its command names, found through the directory it mounts.
func pgbouncerConfig(t *testing.T, project *types.Project) pgbouncer {
	t.Helper()
	for name, svc := range project.Services {
		command := append(append([]string{}, svc.Entrypoint...), svc.Command...)
		if len(command) != 2 || command[0] != "pgbouncer" {
			continue
		}
		for _, v := range svc.Volumes {
			rel, err := filepath.Rel(v.Target, command[1])
			if v.Type != types.VolumeTypeBind || err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			f, err := os.Open(filepath.Join(v.Source, rel))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			return pgbouncer{service: name, settings: readINI(t, f)}
		}
		t.Fatalf("PgBouncer's configuration %s is not in a directory of compose.yaml's", command[1])
	}
	t.Fatal("compose.yaml runs no PgBouncer (pgbouncer CONFIG)")
	return pgbouncer{}
}

// readINI reads PgBouncer's configuration format.
func readINI(t *testing.T, r io.Reader) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	section := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == ';' || line[0] == '#':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			out[section] = map[string]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("pgbouncer.ini: %q", line)
			}
			out[section][strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}
