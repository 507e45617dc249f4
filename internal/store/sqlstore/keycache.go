package sqlstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// KeySync keeps an instance's key cache true to the database, across
// instances and processes. Sync returns nil only once every change to a key
// committed before it was called has reached the cache (ForgetKey,
// ForgetKeys); then a cached key is as good as one read now. An error says
// it cannot promise that (a lost connection, say): the key is then read from
// the database, and the cache is neither used nor filled.
//
// Each engine brings its own (CacheKeys): PostgreSQL a LISTEN connection
// that every key change notifies; SQLite a change counter that every key
// change bumps, read per request.
type KeySync interface {
	Sync(ctx context.Context) error
	Close() error
}

// keyCacheMaxAge bounds how long a cached key is used before it is read
// again, whatever the KeySync says: a fallback for a change that reached the
// database without passing its triggers, and what keeps last_used_at fresh
// when other instances touch the key.
const keyCacheMaxAge = 5 * time.Second

// keyCacheSize bounds the keys kept. Only keys found are kept (an unknown
// hash is read from the database every time), so filling the cache takes
// valid keys.
const keyCacheSize = 10_000

// keyCache holds keys read by the hash of their secret.
type keyCache struct {
	sync KeySync
	now  func() time.Time // real time: the age of entries, not the server's clock

	mu sync.RWMutex
	// gen counts forgets: a key read while one happened is not kept, as it
	// may predate the change the forget was for.
	gen    uint64
	byHash map[[32]byte]*cachedKey
	byID   map[string][32]byte
}

// cachedKey is never changed once kept: a touch replaces it.
type cachedKey struct {
	key domain.APIKey
	at  time.Time
}

// CacheKeys turns on the key cache, kept true by ks (see KeySync); Close
// closes ks.
func (s *Store) CacheKeys(ks KeySync) {
	s.keys = &keyCache{sync: ks, now: time.Now, byHash: map[[32]byte]*cachedKey{}, byID: map[string][32]byte{}}
}

// KeySync is the cache's KeySync; nil when the cache is off.
func (s *Store) KeySync() KeySync {
	if s.keys == nil {
		return nil
	}
	return s.keys.sync
}

// ForgetKey drops the key with this hash from the cache, if kept.
func (s *Store) ForgetKey(hash []byte) {
	if c := s.keys; c != nil {
		c.mu.Lock()
		c.gen++
		if h, ok := hashKey(hash); ok {
			if e := c.byHash[h]; e != nil {
				delete(c.byID, e.key.ID)
			}
			delete(c.byHash, h)
		}
		c.mu.Unlock()
	}
}

// ForgetKeys empties the cache.
func (s *Store) ForgetKeys() {
	if c := s.keys; c != nil {
		c.mu.Lock()
		c.gen++
		clear(c.byHash)
		clear(c.byID)
		c.mu.Unlock()
	}
}

func hashKey(hash []byte) ([32]byte, bool) {
	if len(hash) != 32 {
		return [32]byte{}, false
	}
	return [32]byte(hash), true
}

// get returns the key with this hash, from the cache when the KeySync
// vouches for it, else through read.
func (c *keyCache) get(ctx context.Context, hash []byte, read func(context.Context, []byte) (*domain.APIKey, error)) (*domain.APIKey, error) {
	h, ok := hashKey(hash)
	if !ok {
		return read(ctx, hash)
	}
	if err := c.sync.Sync(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, err
		}
		return read(ctx, hash)
	}
	c.mu.RLock()
	e, gen := c.byHash[h], c.gen
	c.mu.RUnlock()
	now := c.now()
	if e != nil && now.Sub(e.at) < keyCacheMaxAge {
		k := e.key
		return &k, nil
	}
	k, err := read(ctx, hash)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if len(c.byHash) >= keyCacheSize {
			for old, e := range c.byHash {
				delete(c.byHash, old)
				delete(c.byID, e.key.ID)
				break
			}
		}
		c.byHash[h] = &cachedKey{key: *k, at: now}
		c.byID[k.ID] = h
	}
	c.mu.Unlock()
	return k, nil
}

// touched records this instance's own touch of a key in its cached copy, so
// that the next request does not touch it again.
func (c *keyCache) touched(keyID string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.byID[keyID]; ok {
		if e := c.byHash[h]; e != nil {
			next := *e
			stored := domain.FromMillis(at.UnixMilli()) // as a read would give it
			next.key.LastUsedAt = &stored
			c.byHash[h] = &next
		}
	}
}

// forgetID drops a key this instance changed, at once.
func (c *keyCache) forgetID(keyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if h, ok := c.byID[keyID]; ok {
		delete(c.byHash, h)
		delete(c.byID, keyID)
	}
}
