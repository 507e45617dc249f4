package main

import (
	"os"
	"path/filepath"
	"strings"
)

// startPDS starts the pds binary's serve on database as a user starts
// it: its defaults, on a free loopback port, its JSON log written to
// dir/NAME.log as pds serve 2> pds.log would. extra are the flags a group
// needs beyond those (the webhook rows' receivers on loopback). With
// --cpuprofile it also serves net/http/pprof (--pprof-addr), for the
// profile of its rows (profileRows).
func startPDS(c config, name, dir, database string, extra ...string) (*process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// No load balancer watches /readyz here: on SIGTERM stop accepting at
	// once, rather than for the default 5 s of --shutdown-drain.
	args := []string{"serve", "--database", database, "--addr", addr, "--shutdown-drain", "0s"}
	pprofAddr := ""
	if c.cpuProfile != "" {
		if pprofAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof-addr", pprofAddr)
	}
	metricsAddr := ""
	if c.replica != "" && strings.HasPrefix(database, "postgres") {
		replica, err := replicaOf(c.replica, database)
		if err != nil {
			return nil, err
		}
		if metricsAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		args = append(args, "--database-replica", replica, "--metrics-addr", metricsAddr)
	}
	args = append(args, extra...)
	p, err := startProcess("pds serve "+name, filepath.Join(dir, name+".log"), addr, "/readyz", withoutSettings(os.Environ()), c.pdsBin, args...)
	if err != nil {
		return nil, err
	}
	p.pprofAddr, p.metricsAddr = pprofAddr, metricsAddr
	return p, nil
}

// withoutSettings is env without the PDS_ variables, which pds serve would
// read as settings: the server measured has the flags startPDS gives it and
// the defaults, whatever the shell that runs pdsbench exports.
func withoutSettings(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PDS_") {
			out = append(out, kv)
		}
	}
	return out
}

// profileRows starts the CPU profile of the rows this server serves from
// now until it is stopped, to --cpuprofile's file with .ENGINE-NAME added
// (nothing without --cpuprofile).
func (p *process) profileRows(c config, engine, name string) error {
	if p.pprofAddr == "" {
		return nil
	}
	prof, err := startCPUProfile(p.pprofAddr, c.cpuProfile+"."+engine+"-"+name)
	if err != nil {
		return err
	}
	p.profile = prof
	return nil
}
