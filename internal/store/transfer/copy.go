package transfer

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// copier moves one snapshot of the source into the target's transaction.
type copier struct {
	o      Options
	src    side
	dst    target
	rep    *Report
	target string
	// counts are the source's rows, by table.
	counts map[string]int64
	// done and total are the rows copied so far and to copy, for Progress.
	done, total int64
	// written are the tables the transaction wrote, for the statistics.
	written []string
}

func (c *copier) run(ctx context.Context) error {
	srcTables, err := c.checkSchema(ctx)
	if err != nil {
		return err
	}
	if err := c.dst.lockAccounts(ctx); err != nil {
		return fmt.Errorf("lock the target: %w", err)
	}
	if err := c.refuseFilled(ctx); err != nil {
		return err
	}
	// The source's counts, in its snapshot: what the copy must match.
	c.counts = map[string]int64{}
	for _, t := range srcTables {
		if c.counts[t], err = count(ctx, c.src, t); err != nil {
			return fmt.Errorf("count %s in the source: %w", t, err)
		}
		if p, _ := planned(t); p.action == copied || p.action == renumbered {
			c.total += c.counts[t]
		}
	}
	if err := c.dst.hold(ctx); err != nil {
		return fmt.Errorf("hold the target's triggers: %w", err)
	}
	for _, t := range plan {
		switch t.action {
		case copied:
			err = c.copyTable(ctx, t.name)
		case renumbered:
			err = c.copyFeed(ctx, t.name)
		}
		if err != nil {
			return err
		}
	}
	for _, q := range append(rebuildAll, c.dst.rebuild()...) {
		if err := c.dst.exec(ctx, q); err != nil {
			return fmt.Errorf("rebuild the derived tables: %s: %w", strings.Fields(q)[0:3], err)
		}
	}
	if err := c.dst.restore(ctx); err != nil {
		return fmt.Errorf("restore the target's triggers: %w", err)
	}
	if err := c.check(ctx, srcTables); err != nil {
		return err
	}
	if err := c.dst.commit(ctx); err != nil {
		return fmt.Errorf("commit the target: %w", err)
	}
	return nil
}

// checkSchema holds both schemas to the plan: every table of each is
// planned, and the tables copied have the same columns on both sides. It
// returns the source's tables.
func (c *copier) checkSchema(ctx context.Context) ([]string, error) {
	srcTables, err := c.src.tables(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the source's tables: %w", err)
	}
	dstTables, err := c.dst.tables(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the target's tables: %w", err)
	}
	for _, side := range []struct {
		name   string
		tables []string
	}{{"source", srcTables}, {"target", dstTables}} {
		for _, t := range side.tables {
			if _, ok := planned(t); !ok {
				return nil, fmt.Errorf("the %s has a table %s that pds transfer does not know: a transfer would leave it behind "+
					"(is the %s migrated by a later pds than this one?)", side.name, t, side.name)
			}
		}
	}
	for _, t := range plan {
		if t.action != copied && t.action != renumbered {
			continue
		}
		for _, side := range []struct {
			name   string
			tables []string
		}{{"source", srcTables}, {"target", dstTables}} {
			if !slices.Contains(side.tables, t.name) {
				return nil, fmt.Errorf("the %s has no table %s", side.name, t.name)
			}
		}
	}
	trig, err := c.dst.triggers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the target's triggers: %w", err)
	}
	for name, on := range trig {
		if _, ok := triggers[name]; !ok {
			return nil, fmt.Errorf("the target has a trigger %s on %s that pds transfer does not know: "+
				"it cannot tell what the trigger would derive", name, on)
		}
	}
	return srcTables, nil
}

// refuseFilled refuses a target holding any row of what is copied: under
// the transaction's lock, so that no server fills it meanwhile.
func (c *copier) refuseFilled(ctx context.Context) error {
	for _, t := range plan {
		if t.action != copied && t.action != renumbered {
			continue
		}
		filled, err := holdsRows(ctx, c.dst, t.name)
		if err != nil {
			return fmt.Errorf("read the target's %s: %w", t.name, err)
		}
		if filled {
			return &NotEmptyError{Target: c.dst.engine(), Table: t.name}
		}
	}
	return nil
}

// columnsOf pairs a table's columns on both sides: the same names, read
// in the source's order and written as the target's kinds. skip names the
// target's columns the transfer fills itself.
func (c *copier) columnsOf(ctx context.Context, table string, skip ...string) (src []string, dst []column, err error) {
	sc, err := c.src.columns(ctx, table)
	if err != nil {
		return nil, nil, err
	}
	dc, err := c.dst.columns(ctx, table)
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]column{}
	for _, col := range dc {
		byName[col.name] = col
	}
	for _, col := range sc {
		if slices.Contains(skip, col.name) {
			continue
		}
		d, ok := byName[col.name]
		if !ok {
			return nil, nil, fmt.Errorf("%s.%s is in the source but not in the target", table, col.name)
		}
		if d.kind == kindOther {
			return nil, nil, fmt.Errorf("%s.%s is of a type (%s) pds transfer does not convert", table, col.name, d.decl)
		}
		src, dst = append(src, col.name), append(dst, d)
		delete(byName, col.name)
	}
	for _, s := range skip {
		delete(byName, s)
	}
	for name := range byName {
		return nil, nil, fmt.Errorf("%s.%s is in the target but not in the source", table, name)
	}
	return src, dst, nil
}

// copyTable copies every row of a table, a batch at a time.
func (c *copier) copyTable(ctx context.Context, table string) error {
	srcCols, dstCols, err := c.columnsOf(ctx, table)
	if err != nil {
		return err
	}
	n, err := c.stream(ctx, table, `SELECT `+list(srcCols)+` FROM `+table, dstCols, nil, nil)
	c.report(table, copied, n, "")
	return err
}

// copyFeed copies the change feed in the source's order (SQLite numbers
// it across accounts, PostgreSQL by transaction then number), numbering
// it again from 1 as the target places its entries.
func (c *copier) copyFeed(ctx context.Context, table string) error {
	extraCols, extra, err := c.dst.feedExtra(ctx)
	if err != nil {
		return err
	}
	skip := []string{"seq", "xid"}
	srcCols, dstCols, err := c.columnsOf(ctx, table, skip...)
	if err != nil {
		return err
	}
	order := `account_id, seq`
	if c.src.engine() == "postgres" {
		order = `account_id, xid, seq`
	}
	var seq int64
	n, err := c.stream(ctx, table, `SELECT `+list(srcCols)+` FROM `+table+` ORDER BY `+order, dstCols, extraCols,
		func() []any { seq++; return extra(seq) })
	p, _ := planned(table)
	c.report(table, renumbered, n, p.why)
	return err
}

// stream reads a query's rows from the source and writes them into table,
// converted to the kinds of cols, with the values more() makes appended
// (named by moreCols).
func (c *copier) stream(ctx context.Context, table, query string, cols []column, moreCols []string, more func() []any) (int64, error) {
	all := append(names(cols), moreCols...)
	batch := make([][]any, 0, c.o.Batch)
	var n int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := c.dst.insert(ctx, table, all, batch); err != nil {
			return fmt.Errorf("write %s: %w", table, err)
		}
		n += int64(len(batch))
		c.done += int64(len(batch))
		if c.o.Progress != nil {
			c.o.Progress(c.done, c.total)
		}
		batch = batch[:0]
		return nil
	}
	err := c.src.query(ctx, query, func(vals []any) error {
		row := make([]any, len(cols), len(all))
		for i, v := range vals {
			x, err := convert(v, cols[i].kind)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", table, cols[i].name, err)
			}
			row[i] = x
		}
		if more != nil {
			row = append(row, more()...)
		}
		batch = append(batch, row)
		if len(batch) == c.o.Batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return n, fmt.Errorf("copy %s: %w", table, err)
	}
	c.written = append(c.written, table)
	return n, nil
}

func (c *copier) report(table string, a action, n int64, note string) {
	c.rep.Tables = append(c.rep.Tables, TableReport{Table: table, Action: string(a), Source: c.counts[table], Target: n, Note: note})
	c.rep.Rows += n
}

// check counts every table the target holds at the end, in its
// transaction: what was copied must be what the source's snapshot held,
// row for row.
func (c *copier) check(ctx context.Context, srcTables []string) error {
	dstTables, err := c.dst.tables(ctx)
	if err != nil {
		return err
	}
	for i := range c.rep.Tables {
		r := &c.rep.Tables[i]
		n, err := count(ctx, c.dst, r.Table)
		if err != nil {
			return fmt.Errorf("count %s in the target: %w", r.Table, err)
		}
		if n != r.Source || r.Target != r.Source {
			return fmt.Errorf("%s: the source's snapshot holds %d rows, %d were copied and the target holds %d: nothing was committed",
				r.Table, r.Source, r.Target, n)
		}
		r.Target = n
	}
	for _, t := range plan {
		if t.action != rebuilt && t.action != notCarried {
			continue
		}
		inSrc, inDst := slices.Contains(srcTables, t.name), slices.Contains(dstTables, t.name)
		if !inSrc && !inDst {
			continue
		}
		r := TableReport{Table: t.name, Action: string(t.action), Note: t.why}
		if inSrc {
			r.Source = c.counts[t.name]
		}
		if inDst {
			if r.Target, err = count(ctx, c.dst, t.name); err != nil {
				return fmt.Errorf("count %s in the target: %w", t.name, err)
			}
		}
		c.rep.Tables = append(c.rep.Tables, r)
	}
	return nil
}
