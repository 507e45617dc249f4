// Package secrets seals the secrets pds keeps in its database (webhook
// signing secrets, suppression secrets) under a key the operator keeps
// outside it, so that a copy of the database or a backup holds no usable
// secret.
//
// A sealed value is text: "pds-sealed:v1:" then the id of the key that
// sealed it, ":" and the base64 (standard, unpadded) of a 12-byte random
// nonce followed by the AES-256-GCM ciphertext and tag. The value's place
// (what it is the secret of) is the additional data, so a sealed value
// moved to another row does not open. A value without the prefix is one
// stored in clear (before a key was set), and opens as itself.
package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Prefix starts every sealed value.
const Prefix = "pds-sealed:v1:"

// Keyring holds the keys that open sealed values; the first also seals.
// A nil *Keyring seals nothing: values are stored in clear.
type Keyring struct {
	keys []key
}

type key struct {
	id   string
	aead cipher.AEAD
}

// Load reads a key file: one key per line, each 32 bytes written as 64
// hexadecimal characters (what "openssl rand -hex 32" prints). The first
// line's key seals; the others, kept while a rotation runs, only open.
// Blank lines are skipped.
func Load(path string) (*Keyring, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(string(raw))
}

// Parse reads a key file's text (see Load).
func Parse(text string) (*Keyring, error) {
	k := &Keyring{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		raw, err := hex.DecodeString(line)
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("line %d is not a key: each line holds 32 bytes as 64 hexadecimal characters, as openssl rand -hex 32 prints", i+1)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.keys = append(k.keys, key{id: keyID(raw), aead: aead})
	}
	if len(k.keys) == 0 {
		return nil, errors.New("it holds no key: write 32 bytes as 64 hexadecimal characters (openssl rand -hex 32)")
	}
	return k, nil
}

// keyID names a key without revealing it: an HMAC of a fixed text under
// it, 8 bytes in hex.
func keyID(raw []byte) string {
	m := hmac.New(sha256.New, raw)
	m.Write([]byte("pds secrets key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// ID is the id of the key that seals; "" for a nil Keyring.
func (k *Keyring) ID() string {
	if k == nil {
		return ""
	}
	return k.keys[0].id
}

// Has says whether the keyring holds the key of this id.
func (k *Keyring) Has(id string) bool {
	if k == nil {
		return false
	}
	for _, key := range k.keys {
		if key.id == id {
			return true
		}
	}
	return false
}

// Seal returns value sealed under the keyring's first key, bound to place
// (what it is the secret of, e.g. "webhook:wh_..."); a nil Keyring returns
// value as it is.
func (k *Keyring) Seal(value []byte, place string) ([]byte, error) {
	if k == nil {
		return value, nil
	}
	cur := k.keys[0]
	nonce := make([]byte, cur.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	sealed := cur.aead.Seal(nonce, nonce, value, []byte(place))
	return []byte(Prefix + cur.id + ":" + base64.RawStdEncoding.EncodeToString(sealed)), nil
}

// SealString is Seal for text.
func (k *Keyring) SealString(value, place string) (string, error) {
	b, err := k.Seal([]byte(value), place)
	return string(b), err
}

// KeyOf returns the id of the key a stored value was sealed under, and
// false for a value stored in clear.
func KeyOf(stored []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(stored, []byte(Prefix))
	if !ok {
		return "", false
	}
	id, _, ok := bytes.Cut(rest, []byte(":"))
	return string(id), ok
}

// MissingKeyError says a value was sealed under a key the keyring lacks.
type MissingKeyError struct{ KeyID string }

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("a secret in the database is sealed under key %s, which --secrets-key-file (PDS_SECRETS_KEY_FILE) does not hold", e.KeyID)
}

// Open returns the value a stored one holds: a value in clear as it is, a
// sealed one opened with the key it names, which must be the keyring's
// and must have sealed it for place.
func (k *Keyring) Open(stored []byte, place string) ([]byte, error) {
	id, sealed := KeyOf(stored)
	if !sealed {
		return stored, nil
	}
	if k != nil {
		for _, key := range k.keys {
			if key.id != id {
				continue
			}
			raw, err := base64.RawStdEncoding.DecodeString(string(stored[len(Prefix)+len(id)+1:]))
			if err != nil || len(raw) < key.aead.NonceSize() {
				return nil, fmt.Errorf("a sealed secret of %s is damaged", place)
			}
			value, err := key.aead.Open(nil, raw[:key.aead.NonceSize()], raw[key.aead.NonceSize():], []byte(place))
			if err != nil {
				return nil, fmt.Errorf("a sealed secret of %s does not open: it was sealed for another place, or altered", place)
			}
			return value, nil
		}
	}
	return nil, &MissingKeyError{KeyID: id}
}

// OpenString is Open for text.
func (k *Keyring) OpenString(stored, place string) (string, error) {
	b, err := k.Open([]byte(stored), place)
	return string(b), err
}
