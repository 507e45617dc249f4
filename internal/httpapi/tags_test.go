package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pds-dev/pds/internal/httpapi/apitest"
	"github.com/pds-dev/pds/internal/service"
	"github.com/pds-dev/pds/internal/testenv"
)

type tagView struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Context     string `json:"context"`
	DateCreated string `json:"date_created"`
}

func createTag(env *apitest.Env, key, name, tagContext string) tagView {
	env.T.Helper()
	var tag tagView
	env.Post(key, "/tags", map[string]any{"name": name, "context": tagContext}).Want(201).JSON(&tag)
	return tag
}

func tagIDs(tags []tagView) string {
	ids := make([]string, len(tags))
	for i, tg := range tags {
		ids[i] = tg.ID
	}
	return strings.Join(ids, ",")
}

func TestTagsCreateGetList(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())

		first := createTag(env, key, "vip", "person")
		if !strings.HasPrefix(first.ID, "tag_") || first.Name != "vip" || first.Context != "person" || first.DateCreated != "2026-11-21T10:00:00.000Z" {
			t.Fatalf("created %+v", first)
		}
		env.Clock.Advance(time.Second)
		// Two tags created in the same millisecond are ordered by id.
		a, b := createTag(env, key, "summit", "event"), createTag(env, key, "newsletter", "person")
		if a.ID > b.ID {
			a, b = b, a
		}
		env.Clock.Advance(time.Second)
		last := createTag(env, key, "vip", "event")

		var got tagView
		env.Get(key, "/tags/"+first.ID).Want(200).JSON(&got)
		if got != first {
			t.Fatalf("get %+v, want %+v", got, first)
		}
		all := listOf[tagView](env, key, "/tags")
		if tagIDs(all.Items) != tagIDs([]tagView{first, a, b, last}) || all.Total != 4 || all.Page != 1 || all.Size != 25 {
			t.Fatalf("list %+v", all)
		}
		second := listOf[tagView](env, key, "/tags?page=2&size=3")
		if tagIDs(second.Items) != last.ID || second.Total != 4 || second.Page != 2 || second.Size != 3 {
			t.Fatalf("page 2 of size 3: %+v", second)
		}
		past := listOf[tagView](env, key, "/tags?page=9&size=3")
		if len(past.Items) != 0 || past.Total != 4 {
			t.Fatalf("past the end: %+v", past)
		}
		events := listOf[tagView](env, key, "/tags?context=event")
		if events.Total != 2 || events.Items[0].Context != "event" || events.Items[1].ID != last.ID {
			t.Fatalf("context=event: %+v", events)
		}
		if none := listOf[tagView](env, key, "/tags?context=partner"); none.Total != 0 || len(none.Items) != 0 {
			t.Fatalf("context=partner: %+v", none)
		}
	})
}

func TestTagsDuplicateAndRevive(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		tag := createTag(env, key, "vip", "person")

		env.Clock.Advance(time.Minute)
		wantConflict(t, env.Post(key, "/tags", map[string]any{"name": "vip", "context": "person"}), tag.ID)
		createTag(env, key, "vip", "event")
		createTag(env, key, "VIP", "person")

		env.Clock.Advance(time.Hour)
		env.Delete(key, "/tags/"+tag.ID).Want(204)
		wantNotFound(t, env.Get(key, "/tags/"+tag.ID), "tag", tag.ID)
		wantNotFound(t, env.Delete(key, "/tags/"+tag.ID), "tag", tag.ID)
		wantNotFound(t, env.Patch(key, "/tags/"+tag.ID, map[string]any{"name": "x"}), "tag", tag.ID)
		if l := listOf[tagView](env, key, "/tags?context=person"); l.Total != 1 || l.Items[0].Name != "VIP" {
			t.Fatalf("list after archive: %+v", l)
		}

		env.Clock.Advance(time.Hour)
		var revived tagView
		env.Post(key, "/tags", map[string]any{"name": "vip", "context": "person"}).Want(200).JSON(&revived)
		if revived != tag {
			t.Fatalf("revived %+v, want the archived tag %+v back unchanged", revived, tag)
		}
		env.Get(key, "/tags/"+tag.ID).Want(200)
		if l := listOf[tagView](env, key, "/tags?context=person"); l.Total != 2 || l.Items[0].ID != tag.ID {
			t.Fatalf("the revived tag keeps its place: %+v", l)
		}
		wantConflict(t, env.Post(key, "/tags", map[string]any{"name": "vip", "context": "person"}), tag.ID)
	})
}

func TestTagsUpdate(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		tag := createTag(env, key, "vip", "person")
		live := createTag(env, key, "gold", "person")
		archived := createTag(env, key, "old", "event")
		env.Delete(key, "/tags/"+archived.ID).Want(204)

		var got tagView
		env.Patch(key, "/tags/"+tag.ID, map[string]any{"name": "platinum"}).Want(200).JSON(&got)
		if got.ID != tag.ID || got.Name != "platinum" || got.Context != "person" || got.DateCreated != tag.DateCreated {
			t.Fatalf("rename: %+v", got)
		}
		env.Patch(key, "/tags/"+tag.ID, map[string]any{"context": "event", "name": nil}).Want(200).JSON(&got)
		if got.Name != "platinum" || got.Context != "event" {
			t.Fatalf("move with a null name: %+v", got)
		}
		env.Patch(key, "/tags/"+tag.ID, map[string]any{}).Want(200).JSON(&got)
		if got.Name != "platinum" || got.Context != "event" {
			t.Fatalf("empty patch: %+v", got)
		}
		env.Patch(key, "/tags/"+tag.ID, map[string]any{"name": "platinum", "context": "event"}).Want(200)

		wantConflict(t, env.Patch(key, "/tags/"+tag.ID, map[string]any{"name": "gold", "context": "person"}), live.ID)
		// An archived tag keeps its pair (creating it again revives it), so
		// moving onto it is a conflict as well.
		wantConflict(t, env.Patch(key, "/tags/"+tag.ID, map[string]any{"name": "old"}), archived.ID)
		env.Get(key, "/tags/"+tag.ID).Want(200).JSON(&got)
		if got.Name != "platinum" || got.Context != "event" {
			t.Fatalf("a refused update changed the tag: %+v", got)
		}
		wantNotFound(t, env.Patch(key, "/tags/tag_missing", map[string]any{"name": "x"}), "tag", "tag_missing")
	})
}

func TestTagsValidation(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		key := env.Key(env.NewAccount())
		// Bounds count characters, not bytes: "é" is two bytes, "😀" four.
		for _, name := range []string{"a", strings.Repeat("a", 64), strings.Repeat("é", 64), strings.Repeat("😀", 64)} {
			createTag(env, key, name, "person")
		}
		for _, name := range []string{"", strings.Repeat("b", 65), strings.Repeat("é", 65), strings.Repeat("😀", 65)} {
			wantInvalid(t, env.Post(key, "/tags", map[string]any{"name": name, "context": "person"}).Want(400).Problem(), "/name")
		}
		for _, body := range []map[string]any{
			{"context": "person"},
			{"name": nil, "context": "person"},
			{"name": 5, "context": "person"},
		} {
			wantInvalid(t, env.Post(key, "/tags", body).Want(400).Problem(), "/name")
		}
		for _, body := range []map[string]any{
			{"name": "x"},
			{"name": "x", "context": "people"},
			{"name": "x", "context": "Person"},
			{"name": "x", "context": ""},
		} {
			wantInvalid(t, env.Post(key, "/tags", body).Want(400).Problem(), "/context")
		}
		wantInvalid(t, env.Post(key, "/tags", map[string]any{}).Want(400).Problem(), "/name", "/context")
		wantInvalid(t, env.Post(key, "/tags", map[string]any{"name": "x", "context": "person", "account_id": "acc_x"}).Want(400).Problem(), "/account_id")

		tag := createTag(env, key, "vip", "person")
		for _, name := range []string{"", strings.Repeat("c", 65), strings.Repeat("é", 65)} {
			wantInvalid(t, env.Patch(key, "/tags/"+tag.ID, map[string]any{"name": name}).Want(400).Problem(), "/name")
		}
		env.Patch(key, "/tags/"+tag.ID, map[string]any{"name": strings.Repeat("ü", 64)}).Want(200)
		wantInvalid(t, env.Patch(key, "/tags/"+tag.ID, map[string]any{"context": "everyone"}).Want(400).Problem(), "/context")
		wantInvalid(t, env.Patch(key, "/tags/"+tag.ID, map[string]any{"name": true}).Want(400).Problem(), "/name")
		wantInvalid(t, env.Patch(key, "/tags/"+tag.ID, map[string]any{"id": "tag_x"}).Want(400).Problem(), "/id")

		for _, q := range []string{"context=everyone", "context=", "context=PERSON"} {
			wantInvalid(t, env.Get(key, "/tags?"+q).Want(400).Problem(), "context")
		}
		for _, q := range []string{"size=0", "size=101", "size=x"} {
			wantInvalid(t, env.Get(key, "/tags?"+q).Want(400).Problem(), "size")
		}
		wantInvalid(t, env.Get(key, "/tags?page=0").Want(400).Problem(), "page")

		env.Do(apitest.Request{Method: "POST", Path: "/tags", Key: key, Body: "name=x", ContentType: "text/plain"}).Want(415).Problem()
	})
}

func TestTagsOfAnotherAccount(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		mine := env.Key(env.NewAccount())
		theirs := env.Key(env.NewAccount())
		tag := createTag(env, mine, "vip", "person")

		wantNotFound(t, env.Get(theirs, "/tags/"+tag.ID), "tag", tag.ID)
		wantNotFound(t, env.Patch(theirs, "/tags/"+tag.ID, map[string]any{"name": "stolen"}), "tag", tag.ID)
		wantNotFound(t, env.Delete(theirs, "/tags/"+tag.ID), "tag", tag.ID)
		if l := listOf[tagView](env, theirs, "/tags"); l.Total != 0 || len(l.Items) != 0 {
			t.Fatalf("the second account lists %+v", l)
		}
		own := createTag(env, theirs, "vip", "person")
		if own.ID == tag.ID {
			t.Fatal("the second account's create revived the first account's tag")
		}
		var got tagView
		env.Get(mine, "/tags/"+tag.ID).Want(200).JSON(&got)
		if got != tag {
			t.Fatalf("the first account's tag changed: %+v", got)
		}
	})
}

// TestCatalogRateLimit runs a real route into its budget: counted responses
// carry the RateLimit headers and the one over the budget is a 429 with
// Retry-After, all as the contract documents them.
func TestCatalogRateLimit(t *testing.T) {
	t.Parallel()
	testenv.ForEachConfiguration(t, func(t *testing.T, eng testenv.Engine) {
		env := apitest.New(t, eng)
		acc := env.NewAccount()
		two := 2
		key, _ := env.KeyWith(service.KeyRequest{AccountID: acc, RateLimit: &two})
		for i := range 2 {
			res := env.Get(key, "/tags").Want(200)
			if res.Header.Get("RateLimit-Policy") != `"per-key";q=2;w=60` || !strings.Contains(res.Header.Get("RateLimit"), fmt.Sprintf("r=%d;", 1-i)) {
				t.Fatalf("request %d: RateLimit-Policy %q RateLimit %q", i+1, res.Header.Get("RateLimit-Policy"), res.Header.Get("RateLimit"))
			}
		}
		res := env.Get(key, "/tags").Want(429)
		if res.Header.Get("Retry-After") != "60" || res.Header.Get("RateLimit") == "" || res.Header.Get("RateLimit-Policy") == "" {
			t.Fatalf("429 headers: %v", res.Header)
		}
		res.Problem()
		env.Clock.Advance(time.Minute)
		env.Get(key, "/tags").Want(200)
	})
}
