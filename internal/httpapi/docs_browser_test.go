//go:build unix

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

// chromiumRun is what headless Chromium made of one page: the DOM once the
// page's scripts have run, and what it logged, the page's console included.
type chromiumRun struct {
	dom, log string
	err      error
}

// headless loads url in a fresh profile, with no host but the test
// server's resolvable, and returns the DOM and the log; with a screenshot
// path it also writes a PNG of the window. --virtual-time-budget lets the
// page's scripts run (and the page settle) before the DOM is taken.
func headless(bin, url, screenshot string) chromiumRun {
	profile, err := os.MkdirTemp("", "pds-chromium-")
	if err != nil {
		return chromiumRun{err: err}
	}
	defer os.RemoveAll(profile)
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile,
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--enable-logging=stderr", "--v=0",
		"--window-size=1400,1000", "--hide-scrollbars",
		"--virtual-time-budget=10000",
		"--dump-dom",
	}
	if screenshot != "" {
		args = append(args, "--screenshot="+screenshot)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	// Chromium starts a process tree; a timeout ends all of it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	return chromiumRun{dom: stdout.String(), log: stderr.String(), err: err}
}

// TestDocsInChromium renders /docs in headless Chromium and checks what a
// reader gets: navigation by every tag of the contract, the description's
// lists as lists, an operation reached by its anchor with its request and
// response examples from the contract, a screenshot that shows a page, and
// no request the Content-Security-Policy had to refuse (nothing from
// elsewhere) nor any that failed. Two runs, side by side: headless
// Chromium's screenshot of a page scrolled to an anchor comes out blank, and
// the page renders an operation only when it is scrolled into view.
//
// PDS_DOCS_SCREENSHOTS=DIR keeps the screenshot in DIR as docs.png.
func TestDocsInChromium(t *testing.T) {
	bin := testenv.Chromium(t)
	t.Parallel()
	doc, err := apitest.Document()
	if err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t, testenv.SQLite)

	dir := os.Getenv("PDS_DOCS_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "docs.png")
	_ = os.Remove(shot)

	// The operation is the upsert of a batch, whose examples the contract has
	// for both its request and its answer.
	const anchor = "#tag/persons/POST/persons/batch"
	op := doc.Paths.Find("/persons/batch").Post
	var top, deep chromiumRun
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); top = headless(bin, env.HTTP.URL+"/docs", shot) }()
	go func() { defer wg.Done(); deep = headless(bin, env.HTTP.URL+"/docs"+anchor, "") }()
	wg.Wait()
	for _, run := range []chromiumRun{top, deep} {
		if run.err != nil {
			t.Fatal(run.err)
		}
		for _, bad := range []string{"Content Security Policy", "Failed to load resource", "Uncaught"} {
			for _, line := range strings.Split(run.log, "\n") {
				if strings.Contains(line, bad) {
					t.Errorf("the browser logged: %s", line)
				}
			}
		}
	}

	// Navigation by resource: a link to every tag, and the first tag open
	// on its operations.
	for _, tag := range doc.Tags {
		if !strings.Contains(top.dom, `href="#tag/`+tag.Name+`"`) {
			t.Errorf("no navigation link to the tag %s", tag.Name)
		}
	}
	for _, summary := range []string{"List persons (window or lookup mode)", "Upsert a person", op.Summary} {
		if !strings.Contains(top.dom, summary) {
			t.Errorf("the navigation does not show the operation %q", summary)
		}
	}
	// The description's bullet list became a list.
	if !regexp.MustCompile(`<li>\s*A resource that is absent, archived or owned by another account`).MatchString(top.dom) {
		t.Error("the description's list is not rendered as <li> items")
	}

	// The anchor leads to the operation, shown with the contract's examples.
	if !strings.Contains(deep.dom, op.Summary) {
		t.Errorf("%s does not show %q", anchor, op.Summary)
	}
	request := exampleWords(op.RequestBody.Value.Content.Get("application/json").Example)
	response := exampleWords(op.Responses.Status(200).Value.Content.Get("application/json").Example)
	for what, words := range map[string][]string{"request": request, "response": response} {
		if len(words) == 0 {
			t.Fatalf("the contract has no %s example for %s to look for", what, op.OperationID)
		}
		for _, w := range words {
			if !strings.Contains(deep.dom, `"`+w+`"`) {
				t.Errorf("%s does not show the %s example's %q", anchor, what, w)
			}
		}
	}

	checkScreenshot(t, shot)
}

// exampleWords are up to three distinct string values of an example, in
// the order of its sorted members, that read the same in HTML.
func exampleWords(example any) []string {
	plain := regexp.MustCompile(`^[A-Za-z0-9_.@:-]{5,}$`)
	var words []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			if plain.MatchString(v) && !slices.Contains(words, v) && len(words) < 3 {
				words = append(words, v)
			}
		}
	}
	// An example read from YAML may hold map[any]any; JSON gives one shape.
	raw, err := json.Marshal(example)
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	walk(v)
	return words
}

// checkScreenshot: a PNG of the window, and a page in it rather than one
// colour (a blank or failed render).
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, format, err := image.Decode(f)
	if err != nil || format != "png" {
		t.Fatalf("the screenshot is not a PNG: format %q, %v", format, err)
	}
	b := img.Bounds()
	if b.Dx() < 800 || b.Dy() < 600 {
		t.Errorf("the screenshot is %dx%d, want the 1400x1000 window", b.Dx(), b.Dy())
	}
	colours := map[[4]uint32]int{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}]++
		}
	}
	var most int
	for _, n := range colours {
		most = max(most, n)
	}
	total := (b.Dx() + 1) / 2 * ((b.Dy() + 1) / 2)
	if len(colours) < 32 || most > total*98/100 {
		t.Errorf("the screenshot is nearly blank: %d colours, the commonest on %d of %d pixels", len(colours), most, total)
	}
}
