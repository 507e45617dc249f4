package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
)

// Tag bits keep each tag's holders as a bitmap over persons.ord, one row
// per chunk of 4,096 persons (migration 00050): counting the holders of
// every tag of a filter is then an AND of a few hundred rows per tag
// instead of a walk over every link of each. Triggers append a delta per
// link made (+1) or broken (-1), except an import's new links, whose bits
// the import sets itself; foldTagBits moves deltas into tag_bits, and
// readers apply the deltas not yet folded, in the same snapshot, so counts
// are exact whether or not the fold has run.
//
// The links of one person and tag are made and broken one after the
// other (person_tags' primary key orders them), so their deltas alternate
// and their sum over any run of them is -1, 0 or +1: the last one wins.

const (
	chunkWords = 64 // a chunk is 64 words of 64 bits
	chunkBytes = chunkWords * 8
)

// chunk is the bits of 4,096 consecutive ords; bit i of word w stands
// for ord chunkNumber*4096 + w*64 + i.
type chunk [chunkWords]uint64

// chunkOf is the chunk that holds ord's bit, the word within it and the bit.
func chunkOf(ord int64) (number int64, word int, bit uint64) {
	return ord >> 12, int(ord>>6) & (chunkWords - 1), uint64(1) << (ord & 63)
}

// decodeChunk reads a chunk as stored: its words, little-endian.
func decodeChunk(b []byte) (chunk, error) {
	var c chunk
	if len(b) != chunkBytes {
		return c, fmt.Errorf("tag bits: a chunk of %d bytes, want %d", len(b), chunkBytes)
	}
	for i := range c {
		c[i] = binary.LittleEndian.Uint64(b[i*8:])
	}
	return c, nil
}

func (c *chunk) encode() []byte {
	b := make([]byte, chunkBytes)
	for i, w := range c {
		binary.LittleEndian.PutUint64(b[i*8:], w)
	}
	return b
}

func (c *chunk) empty() bool { return *c == chunk{} }

// chunkChange is what a run of deltas does to one chunk: the bits it sets
// and the bits it clears.
type chunkChange struct{ set, clear chunk }

// apply changes c.
func (ch *chunkChange) apply(c *chunk) {
	for i := range c {
		c[i] = c[i]&^ch.clear[i] | ch.set[i]
	}
}

// applyTo applies the change to chunk number of one tag's chunks, making
// it if the tag has none there yet.
func (ch *chunkChange) applyTo(chunks map[int64]*chunk, number int64) {
	c := chunks[number]
	if c == nil {
		c = &chunk{}
		chunks[number] = c
	}
	ch.apply(c)
}

// tagChunk names one row of tag_bits.
type tagChunk struct {
	account, tag string
	number       int64
}

// bitDelta is the sum of one person's deltas for one tag.
type bitDelta struct {
	account, tag string
	ord          int64
	n            int64
}

// chunkChanges turns summed deltas into the change of each chunk they touch.
func chunkChanges(deltas []bitDelta) map[tagChunk]*chunkChange {
	changes := map[tagChunk]*chunkChange{}
	for _, d := range deltas {
		if d.n == 0 {
			continue
		}
		number, word, bit := chunkOf(d.ord)
		k := tagChunk{d.account, d.tag, number}
		ch := changes[k]
		if ch == nil {
			ch = &chunkChange{}
			changes[k] = ch
		}
		if d.n > 0 {
			ch.set[word], ch.clear[word] = ch.set[word]|bit, ch.clear[word]&^bit
		} else {
			ch.set[word], ch.clear[word] = ch.set[word]&^bit, ch.clear[word]|bit
		}
	}
	return changes
}

// countAll counts the bits set in every one of tags: one map per tag, from
// chunk number to its bits.
func countAll(tags []map[int64]*chunk) int {
	if len(tags) == 0 {
		return 0
	}
	smallest := slices.MinFunc(tags, func(a, b map[int64]*chunk) int { return cmp.Compare(len(a), len(b)) })
	n := 0
	for number, c := range smallest {
		all := *c
		for _, other := range tags {
			o := other[number]
			if o == nil {
				all = chunk{}
				break
			}
			for i := range all {
				all[i] &= o[i]
			}
		}
		for _, w := range all {
			n += bits.OnesCount64(w)
		}
	}
	return n
}

// tagHolders counts the persons of the account who hold every one of tags
// (distinct ids), in the caller's snapshot.
func tagHolders(ctx context.Context, q querier, accountID string, tags []string) (int, error) {
	chunks, err := tagChunks(ctx, q, accountID, tags)
	if err != nil {
		return 0, err
	}
	return countAll(chunks), nil
}

// TagHolderCounts counts each tag's holders from its bits, in one statement
// (one snapshot): its chunks by the primary key of tag_bits, its deltas
// not yet folded by tag_bit_deltas_tag.
func (s *Store) TagHolderCounts(ctx context.Context, accountID string, tagIDs []string) (_ map[string]int, err error) {
	defer named("TagHolderCounts", &err)
	out := make(map[string]int, len(tagIDs))
	if len(tagIDs) == 0 {
		return out, nil
	}
	tags := slices.Compact(slices.Sorted(slices.Values(tagIDs)))
	chunks, err := safeValue(ctx, s, func(q querier) ([]map[int64]*chunk, error) { return tagChunks(ctx, q, accountID, tags) })
	if err != nil {
		return nil, err
	}
	for i, tag := range tags {
		out[tag] = countAll(chunks[i : i+1])
	}
	return out, nil
}

// tagChunks reads the bits of each of tags (distinct ids), its deltas not
// yet folded applied: one map per tag, from chunk number to its bits.
func tagChunks(ctx context.Context, q querier, accountID string, tags []string) ([]map[int64]*chunk, error) {
	index := map[string]int{}
	chunks := make([]map[int64]*chunk, len(tags))
	for i, t := range tags {
		index[t] = i
		chunks[i] = map[int64]*chunk{}
	}
	// The folded chunks (kind 0), then the summed deltas not yet folded
	// (kind 1: number holds the ord, n the sum).
	var args sqlArgs
	account := args.add(accountID)
	in := args.inList(tags)
	rows, err := q.query(ctx, `SELECT 0, tag_id, chunk, bits, 0 FROM tag_bits WHERE account_id = `+account+` AND tag_id IN (`+in+`)
		UNION ALL SELECT 1, tag_id, ord, NULL, CAST(SUM(n) AS BIGINT) FROM tag_bit_deltas
		WHERE account_id = `+account+` AND tag_id IN (`+in+`) GROUP BY tag_id, ord`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var deltas []bitDelta
	for rows.Next() {
		var (
			kind      int
			tag       string
			number, n int64
			stored    []byte
		)
		if err := rows.Scan(&kind, &tag, &number, &stored, &n); err != nil {
			return nil, err
		}
		if kind == 1 {
			deltas = append(deltas, bitDelta{accountID, tag, number, n})
			continue
		}
		c, err := decodeChunk(stored)
		if err != nil {
			return nil, err
		}
		chunks[index[tag]][number] = &c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Applied once every chunk is read, whatever order the rows came in.
	for k, ch := range chunkChanges(deltas) {
		ch.applyTo(chunks[index[k.tag]], k.number)
	}
	return chunks, nil
}

func scanBitDelta(sc scanner) (bitDelta, error) {
	var d bitDelta
	err := sc.Scan(&d.account, &d.tag, &d.ord, &d.n)
	return d, err
}

// foldTagBits folds the oldest chunk of tag bit deltas into tag_bits and
// reports how many deltas it moved.
func (s *Store) foldTagBits(ctx context.Context, limit int) (int, error) {
	var moved int
	err := s.inTx(ctx, func(q querier) error {
		// Reset: the committer may run this function again (see committer).
		moved = 0
		if s.dialect.SerialFold != "" {
			if _, err := q.exec(ctx, s.dialect.SerialFold); err != nil {
				return err
			}
		}
		last, n, err := oldestDeltas(ctx, q, "tag_bit_deltas", limit)
		if err != nil || n == 0 {
			return err
		}
		moved = n
		// Deleted and returned in one statement: a delta committed
		// meanwhile with a smaller id (PostgreSQL) is left for the next fold.
		deltas, err := queryAll(ctx, q, scanBitDelta, `DELETE FROM tag_bit_deltas WHERE id <= $1 RETURNING account_id, tag_id, ord, n`, last)
		if err != nil {
			return err
		}
		return applyChunkChanges(ctx, q, chunkChanges(sumDeltas(deltas)))
	})
	return moved, err
}

// sumDeltas sums the deltas of each person and tag.
func sumDeltas(deltas []bitDelta) []bitDelta {
	type key struct {
		account, tag string
		ord          int64
	}
	sums := map[key]int64{}
	for _, d := range deltas {
		sums[key{d.account, d.tag, d.ord}] += d.n
	}
	out := make([]bitDelta, 0, len(sums))
	for k, n := range sums {
		out = append(out, bitDelta{k.account, k.tag, k.ord, n})
	}
	return out
}

// applyChunkChanges rewrites each changed chunk, in key order so that the
// writes walk tag_bits' pages in turn. Only folds and imports write
// tag_bits, one at a time (Dialect.SerialFold), so a chunk read here is
// still the stored one when it is written back.
func applyChunkChanges(ctx context.Context, q querier, changes map[tagChunk]*chunkChange) error {
	keys := slices.SortedFunc(maps.Keys(changes), func(a, b tagChunk) int {
		return cmp.Or(strings.Compare(a.account, b.account), strings.Compare(a.tag, b.tag), cmp.Compare(a.number, b.number))
	})
	for _, k := range keys {
		var (
			c      chunk
			stored []byte
		)
		err := q.queryRow(ctx, `SELECT bits FROM tag_bits WHERE account_id = $1 AND tag_id = $2 AND chunk = $3`,
			k.account, k.tag, k.number).Scan(&stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			if c, err = decodeChunk(stored); err != nil {
				return err
			}
		}
		changes[k].apply(&c)
		if c.empty() {
			_, err = q.exec(ctx, `DELETE FROM tag_bits WHERE account_id = $1 AND tag_id = $2 AND chunk = $3`, k.account, k.tag, k.number)
		} else {
			_, err = q.exec(ctx, `INSERT INTO tag_bits (account_id, tag_id, chunk, bits) VALUES ($1, $2, $3, $4)
				ON CONFLICT (account_id, tag_id, chunk) DO UPDATE SET bits = excluded.bits`, k.account, k.tag, k.number, c.encode())
		}
		if err != nil {
			return err
		}
	}
	return nil
}
