package sqlstore

import (
	"slices"
	"testing"
)

func TestBareParams(t *testing.T) {
	for _, tc := range []struct {
		name, query, text string
		order             []int
	}{
		{"in order", `SELECT a FROM t WHERE x = $1 AND y = $2`, `SELECT a FROM t WHERE x = ? AND y = ?`, []int{0, 1}},
		{"a number used twice passes its argument twice", `INSERT INTO t VALUES ($2, $1, $2)`, `INSERT INTO t VALUES (?, ?, ?)`, []int{1, 0, 1}},
		{"two digits", `SELECT $10, $9`, `SELECT ?, ?`, []int{9, 8}},
		{"string literals are text", `SELECT '$1', x FROM t WHERE j = json_extract(v, '$.a') AND k = $1`,
			`SELECT '$1', x FROM t WHERE j = json_extract(v, '$.a') AND k = ?`, []int{0}},
		{"escaped quotes stay inside the literal", `SELECT 'it''s $1' WHERE a = $1`, `SELECT 'it''s $1' WHERE a = ?`, []int{0}},
		{"quoted identifiers are names", `SELECT "$1" FROM t WHERE a = $1`, `SELECT "$1" FROM t WHERE a = ?`, []int{0}},
		{"comments are text", "SELECT a -- $1 ?\nFROM t /* $2 ? */ WHERE b = $1", "SELECT a -- $1 ?\nFROM t /* $2 ? */ WHERE b = ?", []int{0}},
	} {
		got := bareParams(tc.query)
		if got == nil || got.text != tc.text || !slices.Equal(got.order, tc.order) {
			t.Errorf("%s: bareParams(%q) = %+v, want %q %v", tc.name, tc.query, got, tc.text, tc.order)
		}
	}
	for _, tc := range []struct{ name, query string }{
		{"no parameters", `SELECT 1`},
		{"anonymous parameters already", `INSERT INTO t VALUES (?, ?)`},
		{"a mix is left as written", `SELECT a FROM t WHERE x = $1 AND y = ?`},
		{"a dollar that is no parameter", `SELECT $0, $a`},
	} {
		if got := bareParams(tc.query); got != nil {
			t.Errorf("%s: bareParams(%q) = %+v, want it left as written", tc.name, tc.query, got)
		}
	}
}
