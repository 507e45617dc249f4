package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/pds-dev/pds/internal/domain"
	"github.com/pds-dev/pds/internal/store"
)

// The merge group (--rows merge, or --only 15): Merge Persons (POST
// /persons/{id}/merge) of pairs of seeded persons, each of whom the row
// first gives mergedCrumbs breadcrumbs, one merge after another. Issue 65
// asks for each to answer within one second at a million persons: a
// merge moves every breadcrumb of the merged person in its transaction.
func init() { rowGroups[mergeGroup] = (*measure).mergeRows }

const (
	mergeGroup = "merge"
	// mergeRow is the row's number, which --only names.
	mergeRow = "15"
	// mergedCrumbs are the breadcrumbs each person of a pair holds on top
	// of the seed's.
	mergedCrumbs = 10_000
	// mergePairs is how many pairs the row merges (fewer when the seed is
	// smaller).
	mergePairs = 20
)

func (m *measure) mergeRows() {
	n := min(mergePairs, m.fx.seeded/2)
	name := fmt.Sprintf("%s. Merge Persons (POST /persons/{id}/merge), both of each pair holding %d breadcrumbs more than the seed's",
		mergeRow, mergedCrumbs)
	if n == 0 {
		m.fail("%s: the seed holds no pair of persons to merge", name)
		return
	}
	m.logf("%s: adding the breadcrumbs of %d pairs", name, n)
	before, err := m.breadcrumbTotal("")
	if err != nil {
		m.fail("%s: %v", name, err)
		return
	}
	// The last seeded persons still there (the erasure row, run before,
	// took the very last): the rows before this one pick seeded persons at
	// random, and a merged one would answer them 404.
	ids, err := m.lastSeededWithCrumbs(2*n, mergedCrumbs)
	if err != nil {
		m.fail("%s: %v", name, err)
		return
	}
	if err := m.setup(func(st store.Store) error { return foldTimelines(m.ctx, st) }); err != nil {
		m.fail("%s: %v", name, err)
		return
	}
	if total, err := m.breadcrumbTotal(""); err != nil || total != before+2*n*mergedCrumbs {
		m.fail("%s: %d breadcrumbs after adding %d to %d, %v", name, total, 2*n*mergedCrumbs, before, err)
		return
	}
	persons, err := m.personTotal()
	if err != nil {
		m.fail("%s: %v", name, err)
		return
	}
	// Pair i: ids[2i] survives, ids[2i+1] is merged into it. What each
	// survivor holds afterwards: both persons' breadcrumbs.
	held := make([]int, n)
	for i := range n {
		for _, id := range ids[2*i : 2*i+2] {
			total, err := m.breadcrumbTotal("&person_id=" + id)
			if err != nil {
				m.fail("%s: the breadcrumbs of %s: %v", name, id, err)
				return
			}
			held[i] += total
		}
	}
	res := m.sequentialAt(name, fmt.Sprintf("%d pairs of %d persons, each with %d breadcrumbs", n, m.fx.persons, mergedCrumbs+m.c.perPerson),
		n, func(i int) request {
			body, _ := json.Marshal(domain.MergeRequest{From: ids[2*i+1]})
			return request{method: http.MethodPost, path: "/persons/" + ids[2*i] + "/merge", body: body, want: http.StatusOK}
		})
	if res.n() > 0 {
		r := &m.rows[len(m.rows)-1]
		r.note += fmt.Sprintf("; max %.2f ms", float64(res.latencies[len(res.latencies)-1].Microseconds())/1000)
		if worst := res.latencies[len(res.latencies)-1]; worst > time.Second {
			r.note += " (over the one second issue 65 asks for)"
		}
	}
	if res.errors > 0 {
		return
	}
	m.fx.seeded -= 2 * n
	m.fx.persons -= n
	m.checkMerged(name, ids, held, before+2*n*mergedCrumbs, persons-n)
}

// checkMerged checks what the merges left: each merged id answers 404
// urn:pds:problem:merged naming its survivor, each survivor holds both
// persons' breadcrumbs, and the account's totals are exact (one person
// fewer per pair, every breadcrumb kept).
func (m *measure) checkMerged(name string, ids []string, held []int, breadcrumbs, persons int) {
	l := load{client: newClient(1), base: m.base, key: m.fx.key}
	for i := range held {
		survivor, merged := ids[2*i], ids[2*i+1]
		body, err := l.do(m.ctx, request{method: http.MethodGet, path: "/persons/" + merged, want: http.StatusNotFound})
		var pr struct {
			Type       string `json:"type"`
			MergedInto string `json:"merged_into"`
		}
		if err == nil {
			err = json.Unmarshal(body, &pr)
		}
		if err != nil || pr.Type != domain.MergedProblemType || pr.MergedInto != survivor {
			m.fail("%s: the merged person %s: %s, %v", name, merged, body, err)
		}
		if total, err := m.breadcrumbTotal("&person_id=" + survivor); err != nil || total != held[i] {
			m.fail("%s: the survivor %s holds %d breadcrumbs, not %d: %v", name, survivor, total, held[i], err)
		}
	}
	if total, err := m.breadcrumbTotal(""); err != nil || total != breadcrumbs {
		m.fail("%s: after the merges the breadcrumbs' total is %d, not %d: %v", name, total, breadcrumbs, err)
	}
	if total, err := m.personTotal(); err != nil || total != persons {
		m.fail("%s: after the merges the persons' total is %d, not %d: %v", name, total, persons, err)
	}
}

// personTotal is the account's persons seen since the seed began (every
// one), as List Persons counts them.
func (m *measure) personTotal() (int, error) {
	body, err := (load{client: newClient(1), base: m.base, key: m.fx.key}).do(m.ctx, request{method: http.MethodGet,
		path: "/persons?size=1&updated_since=" + url.QueryEscape(m.fx.since.Format("2006-01-02T15:04:05Z")), want: http.StatusOK})
	if err != nil {
		return 0, err
	}
	var p page
	err = json.Unmarshal(body, &p)
	return p.Total, err
}
