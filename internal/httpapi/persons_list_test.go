package httpapi_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/testenv"
)

func TestListPersons(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		red, blue := createTag(env, key, "red", "person"), createTag(env, key, "blue", "person")

		old := upsertPerson(env, key, map[string]any{"external_id": "old"}, 201)
		env.Clock.Advance(20 * 24 * time.Hour)
		start := nowText(env)
		var ps []personView
		for i := range 4 {
			ps = append(ps, upsertPerson(env, key, map[string]any{"external_id": fmt.Sprintf("p%d", i), "email": fmt.Sprintf("P%d@x.test", i)}, 201))
			env.Clock.Advance(time.Minute)
		}
		// Tagging is a change: p1 and p3 move to now, where they tie and go by id.
		env.Post(key, "/persons/"+ps[1].ID+"/tags", map[string]any{"tag_ids": []string{red.ID, blue.ID}}).Want(200)
		env.Post(key, "/persons/"+ps[3].ID+"/tags", map[string]any{"tag_ids": []string{red.ID}}).Want(200)
		ties := []string{ps[1].ID, ps[3].ID}
		slices.Sort(ties)
		window := append([]string{ps[0].ID, ps[2].ID}, ties...)

		since := url.QueryEscape(start)
		var got []string
		for page := 1; page <= 2; page++ {
			res := listOf[personView](env, key, fmt.Sprintf("/persons?updated_since=%s&size=3&page=%d", since, page))
			if res.Total != 4 {
				t.Fatalf("window total %d", res.Total)
			}
			got = append(got, personIDs(res.Items)...)
		}
		if !slices.Equal(got, window) {
			t.Fatalf("window %v, want %v", got, window)
		}
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"&tag_ids=" + red.ID + "&tag_ids=" + blue.ID, []string{ps[1].ID}},
			{"&tag_ids=" + red.ID + "," + blue.ID, []string{ps[1].ID}},
			{"&tag_ids=" + red.ID, ties},
			{"&tag_ids=tag_missing", nil},
			{"&external_id=p2", []string{ps[2].ID}},
			{"&external_id=p2&tag_ids=" + red.ID, nil},
			{"&email=nobody@x.test", window},
			// email is ignored in window mode, however malformed.
			{"&email=", window},
		} {
			res := listOf[personView](env, key, "/persons?updated_since="+since+tc.query)
			if !slices.Equal(personIDs(res.Items), nonNil(tc.want)) || res.Total != len(tc.want) {
				t.Fatalf("window%s: %v (total %d), want %v", tc.query, personIDs(res.Items), res.Total, tc.want)
			}
		}
		// The window holds what was last seen at or after updated_since,
		// whatever the offset it is written with.
		local := env.Clock.Now().In(time.FixedZone("x", 2*3600)).Format(time.RFC3339)
		if res := listOf[personView](env, key, "/persons?updated_since="+url.QueryEscape(local)); !slices.Equal(personIDs(res.Items), ties) {
			t.Fatalf("since now with an offset: %v", personIDs(res.Items))
		}

		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"external_id=p1&email=p2@x.test", []string{ps[1].ID}},
			{"email=p2@X.TEST", []string{ps[2].ID}},
			{"email=P2@x.test&tag_ids=tag_missing", []string{ps[2].ID}},
			{"external_id=old", []string{old.ID}},
			{"external_id=nobody&email=p2@x.test", nil},
			// external_id decides, so email is not even read.
			{"external_id=p1&email=", []string{ps[1].ID}},
		} {
			res := listOf[personView](env, key, "/persons?"+tc.query)
			if !slices.Equal(personIDs(res.Items), nonNil(tc.want)) || res.Total != len(tc.want) {
				t.Fatalf("lookup %s: %v (total %d), want %v", tc.query, personIDs(res.Items), res.Total, tc.want)
			}
		}
		if res := listOf[personView](env, key, "/persons?external_id=p1&page=2"); len(res.Items) != 0 || res.Total != 1 {
			t.Fatalf("lookup page 2: %+v", res)
		}
		// A page whose offset overflows 64 bits is past the end, not a 500.
		if res := listOf[personView](env, key, "/persons?external_id=p1&size=100&page=9223372036854775807"); len(res.Items) != 0 || res.Total != 1 {
			t.Fatalf("page far past the end: %+v", res)
		}

		other := env.Key(env.NewAccount())
		for _, q := range []string{"updated_since=" + since, "external_id=p1", "email=p1@x.test"} {
			if res := listOf[personView](env, other, "/persons?"+q); res.Total != 0 || len(res.Items) != 0 {
				t.Fatalf("another account lists %v for %s", personIDs(res.Items), q)
			}
		}
	})
}

func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

func TestListPersonsRefusesBadQueries(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		wantInvalid(t, env.Get(key, "/persons").Want(400).Problem(), "updated_since", "external_id", "email")
		wantInvalid(t, env.Get(key, "/persons?tag_ids=x&size=5").Want(400).Problem(), "updated_since")

		monthAgo := env.Clock.Now().Add(-30 * 24 * time.Hour)
		env.Get(key, "/persons?updated_since="+monthAgo.Format(time.RFC3339Nano)).Want(200)
		tooOld := env.Get(key, "/persons?updated_since="+monthAgo.Add(-time.Millisecond).Format(time.RFC3339Nano)).Want(400).Problem()
		wantInvalid(t, tooOld, "updated_since")
		if !strings.Contains(tooOld.Detail, "30 days") {
			t.Fatalf("the 400 does not say why: %q", tooOld.Detail)
		}
		for _, q := range []string{"updated_since=yesterday", "updated_since=2026-11-21", "updated_since=2026-11-21T10:00:00"} {
			wantInvalid(t, env.Get(key, "/persons?"+q).Want(400).Problem(), "updated_since")
		}
		wantInvalid(t, env.Get(key, "/persons?email=").Want(400).Problem(), "email")
		wantInvalid(t, env.Get(key, "/persons?external_id=").Want(400).Problem(), "external_id")
		wantInvalid(t, env.Get(key, "/persons?external_id=x&size=101").Want(400).Problem(), "size")

		now := url.QueryEscape(nowText(env))
		many := strings.TrimSuffix(strings.Repeat("tag_x,", 101), ",")
		wantInvalid(t, env.Get(key, "/persons?updated_since="+now+"&tag_ids="+many).Want(400).Problem(), "tag_ids")
		// tag_ids is ignored in lookup mode, its bound included.
		env.Get(key, "/persons?external_id=x&tag_ids="+many).Want(200)
	})
}

func TestPersonTags(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		one, two, three := createTag(env, key, "one", "person"), createTag(env, key, "two", "event"), createTag(env, key, "three", "person")
		archived := createTag(env, key, "archived", "person")
		env.Delete(key, "/tags/"+archived.ID).Want(204)
		other := env.Key(env.NewAccount())
		foreign := createTag(env, other, "foreign", "person")
		p := upsertPerson(env, key, map[string]any{"external_id": "t"}, 201)

		env.Clock.Advance(time.Minute)
		var got personView
		env.Post(key, "/persons/"+p.ID+"/tags", map[string]any{"tag_ids": []string{one.ID, two.ID, one.ID}}).Want(200).JSON(&got)
		if len(got.TagIDs) != 2 || !slices.Contains(got.TagIDs, one.ID) || !slices.Contains(got.TagIDs, two.ID) || got.DateLastSeen != nowText(env) {
			t.Fatalf("attached: %+v", got)
		}
		attachedAt := got.DateLastSeen
		env.Clock.Advance(time.Minute)
		if again := addTags(env, key, p.ID, one.ID); len(again.TagIDs) != 2 || again.DateLastSeen != attachedAt {
			t.Fatalf("re-attaching a held tag: %+v", again)
		}

		for _, bad := range []string{"tag_missing", archived.ID, foreign.ID} {
			wantNotFound(t, env.Post(key, "/persons/"+p.ID+"/tags", map[string]any{"tag_ids": []string{three.ID, bad}}), "tag", bad)
			if held := getPerson(env, key, p.ID).TagIDs; slices.Contains(held, three.ID) {
				t.Fatalf("a refused attachment attached %s", three.ID)
			}
		}
		for _, body := range []any{map[string]any{}, map[string]any{"tag_ids": []string{}}, map[string]any{"tag_ids": nil},
			map[string]any{"tag_ids": "x"}} {
			wantInvalid(t, env.Post(key, "/persons/"+p.ID+"/tags", body).Want(400).Problem(), "/tag_ids")
		}
		// A null or empty item is not a tag id but a malformed body.
		for _, items := range []any{[]any{one.ID, nil}, []any{one.ID, ""}} {
			wantInvalid(t, env.Post(key, "/persons/"+p.ID+"/tags", map[string]any{"tag_ids": items}).Want(400).Problem(), "/tag_ids/1")
		}
		wantNotFound(t, env.Post(key, "/persons/per_missing/tags", map[string]any{"tag_ids": []string{one.ID}}), "person", "per_missing")
		wantNotFound(t, env.Post(other, "/persons/"+p.ID+"/tags", map[string]any{"tag_ids": []string{foreign.ID}}), "person", p.ID)

		env.Delete(key, "/persons/"+p.ID+"/tags/"+one.ID).Want(204)
		removedAt := nowText(env)
		env.Clock.Advance(time.Minute)
		for _, notHeld := range []string{one.ID, three.ID, "tag_missing"} {
			env.Delete(key, "/persons/"+p.ID+"/tags/"+notHeld).Want(204)
		}
		if after := getPerson(env, key, p.ID); !slices.Equal(after.TagIDs, []string{two.ID}) || after.DateLastSeen != removedAt {
			t.Fatalf("after removals: %+v", after)
		}
		wantNotFound(t, env.Delete(key, "/persons/per_missing/tags/"+one.ID), "person", "per_missing")
		wantNotFound(t, env.Delete(other, "/persons/"+p.ID+"/tags/"+two.ID), "person", p.ID)
		if after := getPerson(env, key, p.ID); !slices.Equal(after.TagIDs, []string{two.ID}) {
			t.Fatalf("another account removed a tag: %+v", after)
		}

		// An archived tag leaves the person's tag_ids and comes back when revived.
		env.Delete(key, "/tags/"+two.ID).Want(204)
		if after := getPerson(env, key, p.ID); len(after.TagIDs) != 0 {
			t.Fatalf("archived tag still listed: %v", after.TagIDs)
		}
		env.Post(key, "/tags", map[string]any{"name": "two", "context": "event"}).Want(200)
		if after := getPerson(env, key, p.ID); !slices.Equal(after.TagIDs, []string{two.ID}) {
			t.Fatalf("revived tag not back: %v", after.TagIDs)
		}
	})
}

func addTags(env *apitest.Env, key, personID string, tagIDs ...string) personView {
	env.T.Helper()
	var p personView
	env.Post(key, "/persons/"+personID+"/tags", map[string]any{"tag_ids": tagIDs}).Want(200).JSON(&p)
	return p
}
