package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// cpuProfile is a CPU profile of a pds serve process, taken through its
// --pprof-addr from start to finish. net/http/pprof profiles for the
// seconds it is asked for, and the measured rows' length is not known
// beforehand: so it is asked for a day, and finish half-closes the
// connection. The server's net/http notices the end of what the client
// sends and cancels the request's context, which ends the profile; the
// handler then writes it on the half still open.
type cpuProfile struct {
	conn *net.TCPConn
	path string
}

func startCPUProfile(addr, path string) (*cpuProfile, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(conn, "GET /debug/pprof/profile?seconds=86400 HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		conn.Close()
		return nil, err
	}
	return &cpuProfile{conn: conn.(*net.TCPConn), path: path}, nil
}

// finish ends the profile and writes it to its file.
func (p *cpuProfile) finish() error {
	defer p.conn.Close()
	if err := p.conn.CloseWrite(); err != nil {
		return err
	}
	_ = p.conn.SetReadDeadline(time.Now().Add(time.Minute))
	res, err := http.ReadResponse(bufio.NewReader(p.conn), nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("%s: %s", res.Status, b)
	}
	f, err := os.Create(p.path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
