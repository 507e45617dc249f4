package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
)

// pageOf is the list envelope as a client decodes it.
type pageOf[T any] struct {
	Items []T `json:"items"`
	Page  int `json:"page"`
	Size  int `json:"size"`
	Total int `json:"total"`
}

func listOf[T any](env *apitest.Env, key, path string) pageOf[T] {
	env.T.Helper()
	var p pageOf[T]
	env.Get(key, path).Want(200).JSON(&p)
	return p
}

// wantInvalid fails unless p is a 400 that points at every one of the body
// members or query parameters named (a leading "/" marks a body member).
func wantInvalid(t *testing.T, p apitest.Problem, names ...string) {
	t.Helper()
	if p.Status != 400 {
		t.Fatalf("status %d, want 400: %+v", p.Status, p)
	}
	for _, name := range names {
		found := false
		for _, e := range p.Errors {
			if e.Pointer == name || e.Parameter == name {
				found = e.Detail != ""
			}
		}
		if !found {
			t.Errorf("400 %q does not point at %s: %+v", p.Detail, name, p.Errors)
		}
	}
}

// wantNotFound fails unless the response is the 404 that absent, archived
// and foreign ids all share.
func wantNotFound(t *testing.T, res *apitest.Response, kind, id string) {
	t.Helper()
	p := res.Want(404).Problem()
	if want := fmt.Sprintf("No %s with id %q exists in this account.", kind, id); p.Detail != want {
		t.Fatalf("404 detail %q, want %q", p.Detail, want)
	}
}

// wantConflict fails unless the response is a 409 naming existingID.
func wantConflict(t *testing.T, res *apitest.Response, existingID string) {
	t.Helper()
	if p := res.Want(409).Problem(); p.ExistingID != existingID || p.Detail == "" {
		t.Fatalf("409 %+v, want existing_id %s", p, existingID)
	}
}
