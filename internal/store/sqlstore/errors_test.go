package sqlstore_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store/sqlstore"
	"github.com/pds-dev/pds/internal/store/storetest"
	"github.com/pds-dev/pds/internal/testenv"
)

// TestFailuresNameTheirOperation: a failure leaves the store named by the
// operation it failed in, its cause still reachable; an answer about the
// input (a person not found) leaves it in the words a client reads.
func TestFailuresNameTheirOperation(t *testing.T) {
	ctx := context.Background()
	st := testenv.SQLite.NewStore(t).(*sqlstore.Store)
	acc := storetest.NewAccount(t, st)

	_, err := st.GetPerson(ctx, acc, "per_absent")
	var op *sqlstore.OpError
	if !errors.Is(err, domain.ErrNotFound) || errors.As(err, &op) || strings.Contains(err.Error(), "sqlstore") {
		t.Errorf("a person not found: %v, want the not-found answer as it is", err)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		op  string
		run func() error
	}{
		{"GetPerson", func() error { _, err := st.GetPerson(ctx, acc, "per_absent"); return err }},
		{"ListTags", func() error { _, _, err := st.ListTags(ctx, acc, nil, domain.PageRequest{Size: 10}); return err }},
	}
	for _, c := range cases {
		err := c.run()
		if !errors.As(err, &op) || op.Op != c.op || !strings.HasPrefix(err.Error(), "sqlstore: "+c.op+": ") {
			t.Errorf("%s on a closed store: %v, want it named", c.op, err)
		}
	}
}

// TestEveryOperationIsNamed holds every exported method of *Store that can
// fail to naming its failures: its first statement defers named with the
// method's own name.
func TestEveryOperationIsNamed(t *testing.T) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() || fd.Name.Name == "Classify" || !onStore(fd) || !failing(fd) {
				continue
			}
			checked++
			if !defersNamed(fd) {
				t.Errorf("(*Store).%s does not begin with defer named(%q, &err)", fd.Name.Name, fd.Name.Name)
			}
		}
	}
	if checked < 90 {
		t.Errorf("checked %d methods: the package's files were not all read", checked)
	}
}

func onStore(fd *ast.FuncDecl) bool {
	star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "Store"
}

func failing(fd *ast.FuncDecl) bool {
	res := fd.Type.Results
	if res == nil || len(res.List) == 0 {
		return false
	}
	id, ok := res.List[len(res.List)-1].Type.(*ast.Ident)
	return ok && id.Name == "error"
}

func defersNamed(fd *ast.FuncDecl) bool {
	if len(fd.Body.List) == 0 {
		return false
	}
	ds, ok := fd.Body.List[0].(*ast.DeferStmt)
	if !ok {
		return false
	}
	fn, ok := ds.Call.Fun.(*ast.Ident)
	if !ok || fn.Name != "named" || len(ds.Call.Args) != 2 {
		return false
	}
	lit, ok := ds.Call.Args[0].(*ast.BasicLit)
	if !ok {
		return false
	}
	name, err := strconv.Unquote(lit.Value)
	return err == nil && name == fd.Name.Name
}
