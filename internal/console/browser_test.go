//go:build unix

package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The console in a real browser: Debian's Chromium, driven over the
// DevTools protocol (chromedp), with axe-core run inside every page.

// axeOrSkip reads axe-core, which .ci/run installs with npm (pinned in
// .ci/axe); PDS_AXE_JS names another copy.
func axeOrSkip(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PDS_AXE_JS")
	if path == "" {
		path = filepath.Join("..", "..", ".ci", "axe", "node_modules", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(path)
	if err == nil {
		return string(b)
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but axe-core is not at %s (.ci/run installs it): %v", path, err)
	}
	t.Skipf("axe-core is not at %s; npm ci --prefix .ci/axe installs it", path)
	return ""
}

// tab is one browser tab that keeps what the page did wrong: a script
// error, a console error, a load that failed, a request the
// Content-Security-Policy refused.
type tab struct {
	t   *testing.T
	ctx context.Context
	axe string
	// shots is where screenshots go, named by screen.
	shots string

	mu       sync.Mutex
	problems []string
	// pages are the documents loaded: a page answered with a 4xx on
	// purpose (a refused form) is checked by its text, not logged as a
	// failed load.
	pages map[string]bool
}

func newTab(t *testing.T, bin, axe, shots string) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	b := &tab{t: t, ctx: ctx, axe: axe, shots: shots, pages: map[string]bool{}}
	if err := chromedp.Listen(ctx, b.listen); err != nil {
		t.Fatal(err)
	}
	return b
}

// listen keeps every fault a page shows; it runs in the tab's loop.
func (b *tab) listen(ev any) {
	var fault string
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Type == network.ResourceTypeDocument {
			b.mu.Lock()
			b.pages[ev.Request.URL] = true
			b.mu.Unlock()
		}
	case *log.EventEntryAdded:
		b.mu.Lock()
		page := ev.Entry.Source == log.EntrySourceNetwork && b.pages[ev.Entry.URL]
		b.mu.Unlock()
		if page {
			break
		}
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Source == log.EntrySourceSecurity {
			fault = fmt.Sprintf("%s %s: %s (%s)", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	case *runtime.EventExceptionThrown:
		fault = "script error: " + ev.ExceptionDetails.Text
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			fault = "console.error"
		}
	case *network.EventLoadingFailed:
		fault = "load failed: " + ev.ErrorText
	}
	if fault != "" {
		b.mu.Lock()
		b.problems = append(b.problems, fault)
		b.mu.Unlock()
	}
}

// faults returns and forgets what the pages did wrong so far.
func (b *tab) faults() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.problems
	b.problems = nil
	return out
}

// step bounds one step, so that a page that lacks what a step waits for
// fails the test at once rather than at its end.
const step = 20 * time.Second

// do runs actions, failing the test on an error.
func (b *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text is the visible text of the page's main content.
func (b *tab) text() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.querySelector('main') || document.body).innerText`))
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

// wantText fails unless the page shows every one of want.
func (b *tab) wantText(screen string, want ...string) {
	b.t.Helper()
	text := b.text()
	for _, w := range want {
		if !strings.Contains(text, w) {
			b.t.Errorf("%s does not show %q; it shows:\n%s", screen, w, text)
		}
	}
}

// axeViolation is what axe-core reports of one rule.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []string `json:"target"`
	} `json:"nodes"`
}

// check holds a screen to the bar: axe-core finds nothing serious or
// critical in it, and it had no fault; then a screenshot of it in the
// light scheme and the dark.
func (b *tab) check(screen string) {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](b.axe+`;
		axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("axe on %s: %v", screen, err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(raw), &vs); err != nil {
		b.t.Fatalf("axe on %s: %v", screen, err)
	}
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			var where []string
			for _, n := range v.Nodes {
				where = append(where, strings.Join(n.Target, " "))
			}
			b.t.Errorf("axe-core on %s: %s (%s): %s, at %s", screen, v.ID, v.Impact, v.Help, strings.Join(where, "; "))
		}
	}
	for _, f := range b.faults() {
		b.t.Errorf("%s: %s", screen, f)
	}
	for _, scheme := range []string{"light", "dark"} {
		b.scheme(scheme)
		if scheme == "dark" {
			// Contrast is a property of each scheme: axe checks the dark one too.
			raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](
				`axe.run(document, {runOnly: ['color-contrast']}).then(r => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
			if err != nil {
				b.t.Fatal(err)
			}
			if raw != "[]" {
				b.t.Errorf("axe-core on %s in the dark scheme: %s", screen, raw)
			}
		}
		b.shoot(screen + "-" + scheme)
	}
	b.scheme("")
	b.atPhoneWidth(screen)
}

// phoneWidth is the narrowest phone the console is drawn for.
const phoneWidth = 375

// atPhoneWidth lays the screen out at a phone's width: nothing may run off
// its side, and it is photographed in both schemes; then back to the
// desktop's width.
func (b *tab) atPhoneWidth(screen string) {
	b.t.Helper()
	b.do("phone", chromedp.EmulateViewport(phoneWidth, 812, chromedp.EmulateMobile))
	wide, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if err != nil || wide {
		b.t.Errorf("%s is wider than a phone's screen of %d px (%v)", screen, phoneWidth, err)
	}
	for _, scheme := range []string{"light", "dark"} {
		b.scheme(scheme)
		b.shoot(screen + "-phone-" + scheme)
	}
	b.scheme("")
	b.do("desktop", chromedp.EmulateViewport(1280, 900))
}

// scheme emulates the system's light or dark setting ("": none).
func (b *tab) scheme(name string) {
	b.t.Helper()
	var p emulation.SetEmulatedMediaParams
	if name != "" {
		p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: name}}
	}
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, p); err != nil {
		b.t.Fatal(err)
	}
}

func (b *tab) shoot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	if os.Getenv("PDS_CONSOLE_SCREENSHOTS") != "" { // kept: made small
		if png, err = smallPNG(png); err != nil {
			b.t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// focused says what has the keyboard focus: its tag, and its id or name.
func (b *tab) focused() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](
		`(e => e.tagName.toLowerCase() + '#' + (e.id || e.name || e.textContent.trim()))(document.activeElement)`))
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

// tabTo presses Tab until want has the focus, as a keyboard user would.
func (b *tab) tabTo(want string) {
	b.t.Helper()
	for range 60 {
		b.do("tab", chromedp.KeyEvent("\t"))
		if b.focused() == want {
			return
		}
	}
	b.t.Fatalf("%s cannot be reached with the Tab key", want)
}

// submit clicks sel and waits for the page it leads to.
func (b *tab) submit(what string, sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, step)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// open loads a console path.
func (b *tab) open(base, path string) {
	b.t.Helper()
	if _, err := chromedp.RunResponse(b.ctx, chromedp.Navigate(base+path)); err != nil {
		b.t.Fatalf("open %s: %v", path, err)
	}
}

// setNamed replaces the value of the field named name.
func (b *tab) setNamed(name, value string) {
	b.t.Helper()
	b.do("fill "+name, chromedp.SetValue(chromedp.CSS(`[name="`+name+`"]`), value))
}

// set replaces the value of the field with id.
func (b *tab) set(id, value string) {
	b.t.Helper()
	b.do("fill "+id, chromedp.SetValue(chromedp.ID(id), value))
}
