package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// changesPage is an answer of List Person Changes.
type changesPage struct {
	Items   []json.RawMessage `json:"items"`
	Next    string            `json:"next"`
	HasMore bool              `json:"has_more"`
}

// wantChanges checks a page of the feed holds n items.
func wantChanges(n int) func(int, []byte) error {
	return func(_ int, b []byte) error {
		var p changesPage
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		if len(p.Items) != n || p.Next == "" {
			return fmt.Errorf("a page of %d items (next %q), want %d", len(p.Items), p.Next, n)
		}
		return nil
	}
}

// changeFeed measures the change feed: a page of 100 from the beginning
// (the oldest cursor there is) and from near the head, and a follower
// reading the whole feed.
func (m *measure) changeFeed() {
	m.sequential("14. List Person Changes, a page of 100 from the beginning", "the oldest entries",
		get("/persons/changes?size=100"), wantChanges(100))

	// The head: an export that selects nobody still says where its
	// snapshot stands in the feed.
	head, err := m.exportCursor()
	if err != nil {
		m.fail("14. the head of the feed: %v", err)
		return
	}
	for i := range 100 {
		body := fmt.Sprintf(`{"external_id":"feed-head-%d-%d"}`, time.Now().UnixNano(), i)
		if _, err := m.send(http.MethodPost, "/persons", []byte(body), http.StatusCreated); err != nil {
			m.fail("14. a change after the head: %v", err)
			return
		}
	}
	m.sequential("14. List Person Changes, a page of 100 near the head", "the 100 changes after an export's cursor",
		get("/persons/changes?size=100&after="+url.QueryEscape(head)), wantChanges(100))

	m.followFeed()
}

// followFeed reads the feed from its beginning, a page of 100 after
// another, for as long as a sustained row runs (or to its end).
func (m *measure) followFeed() {
	const name = "14. Following the feed from the beginning, pages of 100"
	m.logf("%s", name)
	start := time.Now()
	var persons, pages int
	after := ""
	for time.Since(start) < max(m.c.duration, 10*time.Second) {
		path := "/persons/changes?size=100"
		if after != "" {
			path += "&after=" + url.QueryEscape(after)
		}
		b, err := m.send(http.MethodGet, path, nil, http.StatusOK)
		if err != nil {
			m.fail("%s: %v", name, err)
			return
		}
		var p changesPage
		if err := json.Unmarshal(b, &p); err != nil {
			m.fail("%s: %v", name, err)
			return
		}
		persons += len(p.Items)
		pages++
		after = p.Next
		if !p.HasMore {
			break
		}
	}
	took := time.Since(start)
	m.rows = append(m.rows, row{engine: m.engine, name: name, n: pages,
		throughput: fmt.Sprintf("%.0f persons/s", float64(persons)/took.Seconds()),
		note:       fmt.Sprintf("%d persons in %d pages, %s", persons, pages, took.Round(time.Millisecond))})
}

// exportCursor is the feed's position of an export that selects nobody.
func (m *measure) exportCursor() (string, error) {
	res, err := m.do(http.MethodGet, "/persons/export?updated_since="+url.QueryEscape(time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339)), nil)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if cursor := res.Header.Get("Pds-Changes-Cursor"); res.StatusCode == http.StatusOK && cursor != "" {
		return cursor, nil
	}
	return "", fmt.Errorf("export: %s, cursor %q", res.Status, res.Header.Get("Pds-Changes-Cursor"))
}

// send makes one request with the fixture's key and returns the body of an
// answer of status want.
func (m *measure) send(method, path string, body []byte, want int) ([]byte, error) {
	res, err := m.do(method, path, body)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, res.Status, b)
	}
	return b, nil
}

func (m *measure) do(method, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(m.ctx, method, m.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+m.fx.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return feedClient.Do(req)
}

var feedClient = newClient(1)
