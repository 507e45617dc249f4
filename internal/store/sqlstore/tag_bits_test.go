package sqlstore

import (
	"testing"
)

// TestTagBitsCount folds runs of deltas into chunks, partly, and counts
// the persons holding every tag, as a reader does with some deltas folded
// and the rest applied on top.
func TestTagBitsCount(t *testing.T) {
	t.Parallel()
	link := func(tag string, ord int64) bitDelta { return bitDelta{"acc", tag, ord, 1} }
	unlink := func(tag string, ord int64) bitDelta { return bitDelta{"acc", tag, ord, -1} }
	for _, tc := range []struct {
		name          string
		folded, later []bitDelta
		tags          []string
		want          int
	}{
		{"nothing", nil, nil, []string{"a"}, 0},
		{"one tag", []bitDelta{link("a", 1), link("a", 2)}, nil, []string{"a"}, 2},
		{"both tags", []bitDelta{link("a", 1), link("a", 2), link("b", 2), link("b", 3)}, nil, []string{"a", "b"}, 1},
		{"words and chunks apart", []bitDelta{link("a", 0), link("a", 63), link("a", 64), link("a", 4095), link("a", 4096), link("a", 1<<40),
			link("b", 63), link("b", 4096), link("b", 1<<40), link("b", 5)}, nil, []string{"a", "b"}, 3},
		{"a tag nobody holds", []bitDelta{link("a", 1)}, nil, []string{"a", "c"}, 0},
		{"unlinked later", []bitDelta{link("a", 1), link("a", 2)}, []bitDelta{unlink("a", 2)}, []string{"a"}, 1},
		{"linked later", []bitDelta{link("a", 1)}, []bitDelta{link("a", 7000), link("b", 7000)}, []string{"a", "b"}, 1},
		{"made, broken and made again in one run", []bitDelta{link("a", 9), unlink("a", 9), link("a", 9)}, nil, []string{"a"}, 1},
		{"made and broken in one run", []bitDelta{link("a", 9), unlink("a", 9)}, []bitDelta{link("a", 10), unlink("a", 10)}, []string{"a"}, 0},
		{"the last chunk emptied", []bitDelta{link("a", 9)}, []bitDelta{unlink("a", 9)}, []string{"a"}, 0},
	} {
		// Folded as foldTagBits does, into stored chunks.
		stored := map[tagChunk]*chunk{}
		for k, ch := range chunkChanges(sumDeltas(tc.folded)) {
			c := stored[k]
			if c == nil {
				c = &chunk{}
			}
			ch.apply(c)
			if c.empty() {
				delete(stored, k)
			} else {
				decoded, err := decodeChunk(c.encode())
				if err != nil || decoded != *c {
					t.Fatalf("%s: chunk %v does not survive its encoding: %v", tc.name, k, err)
				}
				stored[k] = c
			}
		}
		// Read as tagHolders does: the stored chunks, the rest applied.
		chunks := make([]map[int64]*chunk, len(tc.tags))
		for i, tag := range tc.tags {
			chunks[i] = map[int64]*chunk{}
			for k, c := range stored {
				if k.tag == tag {
					copied := *c
					chunks[i][k.number] = &copied
				}
			}
			for k, ch := range chunkChanges(sumDeltas(tc.later)) {
				if k.tag == tag {
					ch.applyTo(chunks[i], k.number)
				}
			}
		}
		if got := countAll(chunks); got != tc.want {
			t.Errorf("%s: %d holders, want %d", tc.name, got, tc.want)
		}
	}
}
