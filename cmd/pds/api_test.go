package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// callAPI sends method path to the server at base with key, body (when not
// nil) as JSON, and returns the status and the JSON object answered (nil
// for an empty body; any other body that is not JSON fails the test).
func callAPI(t *testing.T, base, key, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: %d with a body that is not JSON: %v", method, path, res.StatusCode, err)
		}
	}
	return res.StatusCode, out
}

// apiCaller calls the API at base with key and fails the test unless the
// answer has the status wanted.
func apiCaller(t *testing.T, base, key string) func(method, path string, body any, want int) map[string]any {
	return func(method, path string, body any, want int) map[string]any {
		t.Helper()
		status, out := callAPI(t, base, key, method, path, body)
		if status != want {
			t.Fatalf("%s %s: %d %v", method, path, status, out)
		}
		return out
	}
}
