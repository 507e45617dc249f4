package main

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/testenv"
	"github.com/pds-dev/pds/internal/webhook/webhooktest"
	"github.com/pds-dev/pds/pkg/webhookverify"
)

// TestImage builds the image with ./scripts/image and runs its root
// filesystem the way a container would, since containers cannot run on
// these machines: the image's entrypoint and command, environment, user
// and working directory, chrooted into the files podman exported. The
// image serves, creates its database under /data as its own user,
// delivers a webhook over HTTPS to a receiver whose CA it is given, answers
// its HEALTHCHECK, and stops cleanly on SIGTERM.
func TestImage(t *testing.T) {
	podman := testenv.Podman(t)
	t.Parallel()
	tag := "localhost/pds-imagetest:" + domain.RandomHex(6)
	build := exec.Command("bash", filepath.Join("..", "..", "scripts", "image"), tag)
	out, err := build.CombinedOutput()
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "--force", tag).Run() })
	if err != nil {
		t.Fatalf("scripts/image: %v\n%s", err, out)
	}
	t.Logf("%s", lastLine(out))

	img := inspectImage(t, podman, tag)
	rootfs := exportRootfs(t, podman, tag)
	checkImageFiles(t, img, rootfs)

	rc := webhooktest.NewReceiver(t)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.Server.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(rootfs, "receiver-ca.pem"), caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	// The test's own settings go in the environment, so that the command
	// line stays the image's; TZ shows the binary's time zones at work in a
	// root with no zoneinfo.
	env := append(img.Config.Env, "PDS_ADDR=127.0.0.1:0", "PDS_WEBHOOK_ALLOW_PRIVATE=true",
		"PDS_WEBHOOK_CA_FILE=/receiver-ca.pem", "PDS_WEBHOOK_WINDOW=100ms", "TZ=Asia/Kolkata")
	var stdout, logs testenv.Buffer
	serve := inImage(t, img, rootfs, env, append(img.Config.Entrypoint, img.Config.Cmd...))
	serve.Stdout, serve.Stderr = &stdout, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	addr := ""
	for deadline := time.Now().Add(30 * time.Second); addr == ""; time.Sleep(20 * time.Millisecond) {
		if addr = servingAddr(strings.NewReader(logs.String())); addr == "" && time.Now().After(deadline) {
			t.Fatalf("the image did not serve:\n%s%s", stdout.String(), logs.String())
		}
	}
	if !regexp.MustCompile(`^\{"time":"[^"]+\+05:30"`).MatchString(logs.String()) {
		t.Errorf("TZ=Asia/Kolkata did not reach the log's times (time zones missing?):\n%s", firstLine(logs.String()))
	}
	checkDataOwned(t, rootfs, img.Config.User)

	key := printedKey.FindString(stdout.String())
	base := "http://" + addr
	status, hook := callAPI(t, base, key, "POST", "/webhooks", map[string]any{"name": "image", "target_url": rc.URL, "events": []string{"person.created"}})
	if status != 201 {
		t.Fatalf("POST /webhooks: %d %v", status, hook)
	}
	if status, body := callAPI(t, base, key, "POST", "/persons", map[string]any{"email": "ada@image.test"}); status != 201 {
		t.Fatalf("POST /persons: %d %v", status, body)
	}
	delivery := rc.WaitFor(t, 1, 30*time.Second)[0]
	if err := webhookverify.Verify(delivery.Header, delivery.Body, []string{hook["secret"].(string)}, time.Now(), webhookverify.Options{}); err != nil {
		t.Errorf("the delivery does not verify: %v", err)
	}

	healthEnv := append(img.Config.Env, "PDS_ADDR="+addr)
	if out, err := inImage(t, img, rootfs, healthEnv, img.Healthcheck.Test[1:]).CombinedOutput(); err != nil {
		t.Errorf("the HEALTHCHECK %v: %v %s", img.Healthcheck.Test, err, out)
	}

	stopped := time.Now()
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := serve.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, logs.String())
	}
	t.Logf("stopped %s after SIGTERM", time.Since(stopped).Round(time.Millisecond))
	if !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the log:\n%s", logs.String())
	}
	err = inImage(t, img, rootfs, healthEnv, img.Healthcheck.Test[1:]).Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("the HEALTHCHECK with nothing listening: %v, want exit status 1", err)
	}
}

// checkImageFiles: a non-root user; the binary static, built without cgo,
// carrying its roots where there is no /etc/ssl; /data writable by the
// user.
func checkImageFiles(t *testing.T, img image, rootfs string) {
	t.Helper()
	if uid, _ := ids(t, img.Config.User); uid == 0 {
		t.Errorf("the image runs as %q, which is root", img.Config.User)
	}
	if _, err := os.Stat(filepath.Join(rootfs, "etc")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the image has an /etc (%v); it should hold the binary alone", err)
	}
	bin := filepath.Join(rootfs, img.Config.Entrypoint[0])
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("the binary was built with %v, want CGO_ENABLED=0 and -trimpath", settings)
	}
	roots := false
	for _, dep := range info.Deps {
		roots = roots || dep.Path == "golang.org/x/crypto/x509roots/fallback"
	}
	if !roots {
		t.Error("the binary carries no CA roots (golang.org/x/crypto/x509roots/fallback), and the image has no /etc/ssl")
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary is dynamically linked; scratch has no loader")
		}
	}
	if img.Config.WorkingDir != "/data" || !slices.Contains(img.Config.Env, "PDS_DATABASE=/data/pds.db") {
		t.Errorf("working directory %q, environment %v: the database should default to /data", img.Config.WorkingDir, img.Config.Env)
	}
}

// checkDataOwned: the server created its database in /data, as the image's
// user.
func checkDataOwned(t *testing.T, rootfs, user string) {
	t.Helper()
	uid, _ := ids(t, user)
	info, err := os.Stat(filepath.Join(rootfs, "data", "pds.db"))
	if err != nil {
		t.Fatalf("no database in /data: %v", err)
	}
	if owner := info.Sys().(*syscall.Stat_t).Uid; owner != uid {
		t.Errorf("/data/pds.db belongs to uid %d, want %d", owner, uid)
	}
}

func firstLine(s string) string { line, _, _ := strings.Cut(s, "\n"); return line }

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
