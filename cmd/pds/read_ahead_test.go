package main

import (
	"errors"
	"iter"
	"slices"
	"testing"
)

// numbers yields 0, 1, ... up to n (forever when n < 0), then err if any,
// and counts what it yielded.
func numbers(n int, err error, yielded *int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := 0; n < 0 || i < n; i++ {
			*yielded++
			if !yield(i, nil) {
				return
			}
		}
		if err != nil {
			yield(0, err)
		}
	}
}

func TestReadAhead(t *testing.T) {
	boom := errors.New("line 8 changed")
	for _, c := range []struct {
		name    string
		n       int
		err     error
		batch   int
		take    int // stop after this many items; 0 takes all
		want    []int
		wantErr error
	}{
		{"empty", 0, nil, 4, 0, nil, nil},
		{"less than a batch", 3, nil, 4, 0, []int{0, 1, 2}, nil},
		{"whole batches", 8, nil, 4, 0, []int{0, 1, 2, 3, 4, 5, 6, 7}, nil},
		{"a part batch at the end", 6, nil, 4, 0, []int{0, 1, 2, 3, 4, 5}, nil},
		{"an error after its items", 5, boom, 2, 0, []int{0, 1, 2, 3, 4}, boom},
		{"an error first", 0, boom, 2, 0, nil, boom},
		{"stopped early, endless source", -1, nil, 4, 6, []int{0, 1, 2, 3, 4, 5}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			yielded := 0
			var got []int
			var gotErr error
			for v, err := range readAhead(numbers(c.n, c.err, &yielded), c.batch) {
				if err != nil {
					gotErr = err
					break
				}
				if got = append(got, v); len(got) == c.take {
					break
				}
			}
			if !slices.Equal(got, c.want) || !errors.Is(gotErr, c.wantErr) {
				t.Fatalf("got %v, %v; want %v, %v", got, gotErr, c.want, c.wantErr)
			}
			// readAhead returned, so the source has stopped: past the
			// batch taken from, it went at most the two batches the
			// channel holds and the one being filled.
			if c.take > 0 && yielded > c.take+4*c.batch {
				t.Fatalf("the source yielded %d items for %d taken", yielded, c.take)
			}
		})
	}
}
