package problems_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/problems"
)

func TestFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		err    error
		status int
		title  string
	}{
		{"bad input", domain.BodyError("/email", "bad"), 400, "Bad Request"},
		{"absent, wrapped", fmt.Errorf("get: %w", domain.NotFound("tag", "t1")), 404, "Not Found"},
		{"absent, the sentinel", domain.ErrNotFound, 404, "Not Found"},
		{"a conflict", &domain.ConflictError{Detail: "taken", ExistingID: "tag_1"}, 409, "Conflict"},
		{"a read-only field", &domain.ForbiddenError{Detail: "read-only"}, 403, "Forbidden"},
		{"a missing scope", &domain.ScopeError{Scope: domain.ScopeTagsWrite}, 403, "Forbidden"},
		{"a limit", &domain.LimitError{Detail: "full", Limit: 100, Current: 100}, 422, "Unprocessable Entity"},
		{"a database that did not answer", &domain.UnavailableError{Cause: domain.CauseTimeout, Err: errors.New("x")}, 503, "Database Timeout"},
		{"a full disk", &domain.UnavailableError{Cause: domain.CauseDiskFull, Err: errors.New("x")}, 503, "Database Disk Full"},
		{"a defect", errors.New("boom"), 0, ""},
	} {
		p := problems.For(c.err)
		if c.status == 0 {
			if p != nil {
				t.Errorf("%s: %+v, want none (a 500)", c.name, p)
			}
			continue
		}
		if p == nil || p.Status != c.status || p.Title != c.title || p.Type != "about:blank" || p.Detail == "" {
			t.Errorf("%s: %+v, want %d %q", c.name, p, c.status, c.title)
		}
	}
	if p := problems.For(&domain.ScopeError{Scope: domain.ScopeTagsWrite}); p.MissingScope != domain.ScopeTagsWrite {
		t.Errorf("a missing scope names it: %+v", p)
	}
	suppressed := problems.For(fmt.Errorf("batch item: %w", &domain.SuppressedError{Kind: domain.SuppressEmail, Pointer: "/email",
		SuppressionID: "sup_1"}))
	if suppressed == nil || suppressed.Status != 409 || suppressed.Type != domain.SuppressedProblemType ||
		len(suppressed.Errors) != 1 || suppressed.Errors[0].Pointer != "/email" || suppressed.ExistingID != "" ||
		suppressed.Errors[0].SuppressionID != "sup_1" || !strings.Contains(suppressed.Detail, "DELETE /suppressions/sup_1") {
		t.Errorf("a suppressed identifier: a 409 whose type names suppression, pointing at the member and naming the suppression: %+v", suppressed)
	}
	if p := problems.For(&domain.UnavailableError{Cause: domain.CauseDiskFull}); p.RetryAfter != 30 || p.Cause != domain.CauseDiskFull {
		t.Errorf("a full disk: %+v", p)
	}
}
