package service

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"

	"github.com/pds-dev/pds/internal/domain"
)

// The cursors of the change feed (GET /persons/changes) are opaque to
// clients: a version, a tag of the account whose feed it is, when it was
// issued, and the store's position, as URL-safe base64.
const cursorVersion = 1

// accountTag names an account in a cursor without spelling it out.
func accountTag(accountID string) [8]byte {
	sum := sha256.Sum256([]byte("pds change cursor " + accountID))
	return [8]byte(sum[:8])
}

// EncodeChangeCursor is the cursor of a position of the account's feed,
// issued at issued.
func EncodeChangeCursor(accountID string, pos domain.ChangePosition, issued time.Time) string {
	tag := accountTag(accountID)
	b := make([]byte, 0, 32+len(pos.Base)+len(pos.Cut))
	b = append(b, cursorVersion)
	b = append(b, tag[:]...)
	b = binary.AppendVarint(b, issued.Unix())
	b = binary.AppendVarint(b, pos.Seq)
	b = binary.AppendUvarint(b, pos.Xid)
	for _, s := range []string{pos.Base, pos.Cut} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// errBadCursor is every way a cursor can fail to be one.
var errBadCursor = errors.New("not a cursor of the change feed")

// DecodeChangeCursor reads a cursor of the account's feed: a 400 naming
// after when it does not parse or is another account's, a
// *domain.CursorExpiredError when it was issued longer than retention
// before now.
func DecodeChangeCursor(accountID, cursor string, now time.Time, retention time.Duration) (domain.ChangePosition, error) {
	pos, issued, tag, err := decodeCursor(cursor)
	if err != nil {
		return pos, domain.ParamError("after", "after is not a cursor of the change feed: pass back a cursor or next of an earlier answer, or an export's Pds-Changes-Cursor, as it was given.")
	}
	if tag != accountTag(accountID) {
		return pos, domain.ParamError("after", "after is a cursor of another account's change feed; a key reads its own account's.")
	}
	if now.Sub(issued) > retention {
		return pos, &domain.CursorExpiredError{Issued: issued, Retention: retention}
	}
	return pos, nil
}

func decodeCursor(cursor string) (pos domain.ChangePosition, issued time.Time, tag [8]byte, err error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil || len(b) < 1+len(tag) || b[0] != cursorVersion {
		return pos, issued, tag, errBadCursor
	}
	copy(tag[:], b[1:])
	b = b[1+len(tag):]
	var n int
	var at int64
	if at, n = binary.Varint(b); n <= 0 {
		return pos, issued, tag, errBadCursor
	}
	b = b[n:]
	if pos.Seq, n = binary.Varint(b); n <= 0 {
		return pos, issued, tag, errBadCursor
	}
	b = b[n:]
	if pos.Xid, n = binary.Uvarint(b); n <= 0 {
		return pos, issued, tag, errBadCursor
	}
	b = b[n:]
	for _, s := range []*string{&pos.Base, &pos.Cut} {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return pos, issued, tag, errBadCursor
		}
		*s = string(b[n : n+int(l)])
		b = b[n+int(l):]
	}
	if len(b) != 0 || !snapshotText(pos.Base) || !snapshotText(pos.Cut) {
		return pos, issued, tag, errBadCursor
	}
	return pos, time.Unix(at, 0), tag, nil
}

// snapshotText says whether s may be a pg_snapshot's text ("" included):
// digits, colons and commas alone, so that nothing else reaches a cast.
func snapshotText(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && c != ':' && c != ',' {
			return false
		}
	}
	return true
}
