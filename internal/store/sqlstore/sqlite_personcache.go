package sqlstore

import (
	"context"
	"errors"
	"sync"

	"github.com/pds-dev/pds/internal/domain"
)

// personCacheSize bounds the persons kept (a few kilobytes each).
const personCacheSize = 20_000

// personCache holds persons as Get Person returns them, for an engine
// whose KeySync also vouches that no write of any kind was committed, by
// any process, since the cache was last emptied (SQLite's changeCounter:
// PRAGMA data_version, which moves on every commit of another connection).
// The cache is coarse on purpose: any commit empties it, so no write path
// (a tag renamed, a breadcrumb moving last_seen, an import in another
// process) can leave a person stale, and it serves the reads that come
// while nothing is written.
type personCache struct {
	sync KeySync

	mu sync.RWMutex
	// gen counts emptyings: a person read while one happened may predate
	// the commit it was for, and is not kept.
	gen  uint64
	byID map[personKey]*domain.Person
}

type personKey struct{ account, id string }

// CachePersons turns on the person cache, kept true by ks, which must
// call ForgetPersons whenever anything was committed (see personCache).
func (s *Store) CachePersons(ks KeySync) {
	s.persons = &personCache{sync: ks, byID: map[personKey]*domain.Person{}}
}

// ForgetPersons empties the person cache.
func (s *Store) ForgetPersons() {
	if c := s.persons; c != nil {
		c.mu.Lock()
		c.gen++
		clear(c.byID)
		c.mu.Unlock()
	}
}

// get returns the person from the cache once the KeySync vouches that
// nothing committed before this call is missing from it, else through read.
// The person returned shares its slices and map with the cached one: callers
// only read it.
func (c *personCache) get(ctx context.Context, k personKey, read func(context.Context) (*domain.Person, error)) (*domain.Person, error) {
	if err := c.sync.Sync(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, err
		}
		return read(ctx)
	}
	c.mu.RLock()
	e, gen := c.byID[k], c.gen
	c.mu.RUnlock()
	if e != nil {
		p := *e
		return &p, nil
	}
	p, err := read(ctx)
	if err != nil {
		return nil, err
	}
	kept := *p
	c.mu.Lock()
	if c.gen == gen {
		if len(c.byID) >= personCacheSize {
			for old := range c.byID {
				delete(c.byID, old)
				break
			}
		}
		c.byID[k] = &kept
	}
	c.mu.Unlock()
	return p, nil
}
