package sqlstore

import "strconv"

// Anonymous parameters for SQLite. The shared SQL numbers its parameters
// ($1, $2, ...), which both engines read, but SQLite binds a numbered
// parameter only after finding its name in the statement's list of names
// (a walk of that list, and the name copied into a Go string, for every
// parameter of every execution); an anonymous ? is bound by its position
// alone. With BareParams (Dialect.Statements) each statement is prepared with its
// numbered parameters written as ?, and its arguments are passed in the
// order of the ?s (a number used twice passes its argument twice).

// BareParams runs statements prepared, each with its numbered parameters
// written as anonymous ones.
var BareParams Statements = prepared{}

// bareStatement is a statement rewritten with anonymous parameters.
type bareStatement struct {
	text string
	// order holds, for each ?, the index of its argument.
	order []int
}

// bareParams rewrites query's numbered parameters outside quotes and
// comments as ?; nil when it has none, or a ? of its own already.
func bareParams(query string) *bareStatement {
	var (
		out   []byte
		order []int
	)
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			end := i + 1
			for end < len(query) && query[end] != c {
				end++
			}
			out = append(out, query[i:min(end+1, len(query))]...)
			i = end
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			end := i
			for end < len(query) && query[end] != '\n' {
				end++
			}
			out = append(out, query[i:end]...)
			i = end - 1
		case c == '/' && i+1 < len(query) && query[i+1] == '*':
			end := i + 2
			for end+1 < len(query) && (query[end] != '*' || query[end+1] != '/') {
				end++
			}
			out = append(out, query[i:min(end+2, len(query))]...)
			i = end + 1
		case c == '?':
			return nil
		case c == '$' && i+1 < len(query) && query[i+1] >= '1' && query[i+1] <= '9':
			end := i + 1
			for end < len(query) && query[end] >= '0' && query[end] <= '9' {
				end++
			}
			n, err := strconv.Atoi(query[i+1 : end])
			if err != nil {
				return nil
			}
			out = append(out, '?')
			order = append(order, n-1)
			i = end - 1
		default:
			out = append(out, c)
		}
	}
	if len(order) == 0 {
		return nil
	}
	return &bareStatement{text: string(out), order: order}
}

// bare returns query rewritten by bareParams, once per query text; nil
// when query keeps its own.
func (s *Store) bare(query string) *bareStatement {
	if v, ok := s.bareStmts.Load(query); ok {
		return v.(*bareStatement)
	}
	b := bareParams(query)
	s.bareStmts.Store(query, b)
	return b
}

// sqlText is the text to prepare for query.
func (s *Store) sqlText(query string) string {
	if b := s.bare(query); b != nil {
		return b.text
	}
	return query
}

// bindArgs lays args out for the statement prepared from query. An
// argument a ? refers to that args lacks is left for the driver to report.
func (s *Store) bindArgs(query string, args []any) []any {
	b := s.bare(query)
	if b == nil {
		return args
	}
	out := make([]any, len(b.order))
	for i, k := range b.order {
		if k >= len(args) {
			return args
		}
		out[i] = args[k]
	}
	return out
}
