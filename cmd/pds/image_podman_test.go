package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
)

// image is what podman image inspect says of an image.
type image struct {
	Size   int64
	Config struct {
		User         string
		Env          []string
		Entrypoint   []string
		Cmd          []string
		WorkingDir   string
		ExposedPorts map[string]struct{}
		Volumes      map[string]struct{}
	}
	Healthcheck struct{ Test []string }
}

func inspectImage(t *testing.T, podman, tag string) image {
	t.Helper()
	out, err := exec.Command(podman, "image", "inspect", tag).Output()
	if err != nil {
		t.Fatalf("podman image inspect: %v", err)
	}
	var imgs []image
	if err := json.Unmarshal(out, &imgs); err != nil || len(imgs) != 1 {
		t.Fatalf("podman image inspect: %v %s", err, out)
	}
	img := imgs[0]
	t.Logf("image size %.1f MB", float64(img.Size)/1e6)
	c := img.Config
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v, want 8080/tcp", c.ExposedPorts)
	}
	if _, ok := c.Volumes["/data"]; !ok {
		t.Errorf("volumes %v, want /data", c.Volumes)
	}
	if len(img.Healthcheck.Test) < 2 || img.Healthcheck.Test[0] != "CMD" || strings.Join(img.Healthcheck.Test[1:], " ") != "/pds healthcheck" {
		t.Errorf("HEALTHCHECK %v, want [CMD /pds healthcheck]", img.Healthcheck.Test)
	}
	if img.Size > 30e6 {
		t.Errorf("the image is %d bytes; the README promises under 30 MB", img.Size)
	}
	return img
}

// exportRootfs unpacks the image's files, owners and modes kept, into a
// directory of the test's.
func exportRootfs(t *testing.T, podman, tag string) string {
	t.Helper()
	name := "pds-imagetest-" + domain.RandomHex(6)
	// No healthcheck timers: this container is never started.
	if out, err := exec.Command(podman, "create", "--no-healthcheck", "--name", name, tag).CombinedOutput(); err != nil {
		t.Fatalf("podman create: %v %s", err, out)
	}
	defer func() { _ = exec.Command(podman, "rm", "--force", name).Run() }()
	rootfs := t.TempDir()
	// The directory above it must let the image's user through to /data.
	if err := os.Chmod(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	export := exec.Command(podman, "export", name)
	untar := exec.Command("tar", "--extract", "--same-owner", "--same-permissions", "--numeric-owner", "--directory", rootfs)
	pipe, err := export.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	var exportErr, untarErr bytes.Buffer // each written by a goroutine of its command
	export.Stderr, untar.Stderr = &exportErr, &untarErr
	if err := export.Start(); err != nil {
		t.Fatal(err)
	}
	if err := untar.Run(); err != nil {
		t.Fatalf("unpacking podman export: %v %s", err, untarErr.String())
	}
	if err := export.Wait(); err != nil {
		t.Fatalf("podman export: %v %s", err, exportErr.String())
	}
	return rootfs
}

// inImage runs argv as a container of the image would: chrooted into its
// files, as its user (no supplementary groups), in its working directory,
// with env alone. Go chroots before it changes user and directory, so Dir
// is the image's.
func inImage(t *testing.T, img image, rootfs string, env, argv []string) *exec.Cmd {
	t.Helper()
	uid, gid := ids(t, img.Config.User)
	return &exec.Cmd{
		Path: argv[0],
		Args: argv,
		Env:  env,
		Dir:  img.Config.WorkingDir,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     rootfs,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		},
	}
}

// ids reads a numeric USER, UID:GID or UID; a scratch image has no
// /etc/passwd to resolve a name.
func ids(t *testing.T, user string) (uid, gid uint32) {
	t.Helper()
	u, g, hasGroup := strings.Cut(user, ":")
	if !hasGroup {
		g = u
	}
	un, err1 := strconv.ParseUint(u, 10, 32)
	gn, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("USER %q is not numeric", user)
	}
	return uint32(un), uint32(gn)
}
