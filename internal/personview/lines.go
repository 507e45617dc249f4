package personview

import (
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/pds-dev/pds/internal/domain"
)

// AppendCompactLine appends the compact representation of p and a newline
// to dst: the bytes a json.Encoder writes for Compact(p), without its
// reflection and allocations per value (an export writes a million of
// them). TestAppendCompactLineMatchesEncoder holds the two equal.
func AppendCompactLine(dst []byte, p *domain.Person) []byte {
	return appendLine(dst, p, false)
}

// AppendExportLine appends a line of GET /persons/export: the compact
// representation with f_id after external_id (Exported(p)), so that the
// export holds every identifier a restore (pds import persons) matches on,
// and the person's aliases when it has any.
func AppendExportLine(dst []byte, p *domain.Person) []byte {
	return appendLine(dst, p, true)
}

func appendLine(dst []byte, p *domain.Person, withFID bool) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, p.ID)
	dst = append(dst, `,"email":`...)
	dst = appendText(dst, p.Email)
	dst = append(dst, `,"external_id":`...)
	dst = appendText(dst, p.ExternalID)
	if withFID {
		dst = append(dst, `,"f_id":`...)
		dst = appendText(dst, p.FID)
	}
	dst = append(dst, `,"first_name":`...)
	dst = appendText(dst, p.FirstName)
	dst = append(dst, `,"last_name":`...)
	dst = appendText(dst, p.LastName)
	dst = append(dst, `,"phone":`...)
	dst = appendText(dst, p.Phone)
	dst = append(dst, `,"custom_fields":{`...)
	if len(p.CustomFields) > 0 {
		var keys [16]string
		sorted := keys[:0]
		for k := range p.CustomFields {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted) // as encoding/json orders a map's keys
		for i, k := range sorted {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = appendString(dst, p.CustomFields[k])
		}
	}
	dst = append(dst, `},"tag_ids":[`...)
	for i, id := range p.TagIDs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, id)
	}
	dst = append(dst, `],"date_created":"`...)
	dst = domain.AppendTime(dst, p.DateCreated)
	dst = append(dst, `","date_last_seen":"`...)
	dst = domain.AppendTime(dst, p.DateLastSeen)
	dst = append(dst, '"')
	if withFID && len(p.Aliases) > 0 {
		dst = appendAliases(dst, p.Aliases)
	}
	return append(dst, "}\n"...)
}

// appendAliases appends an export line's aliases member, as ExportedPerson
// encodes it.
func appendAliases(dst []byte, aliases []domain.PersonAlias) []byte {
	dst = append(dst, `,"aliases":[`...)
	for i, a := range aliases {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"kind":`...)
		dst = appendString(dst, a.Kind)
		dst = append(dst, `,"value":`...)
		dst = appendString(dst, a.Value)
		dst = append(dst, `,"from":`...)
		dst = appendString(dst, a.From)
		dst = append(dst, `,"date_merged":"`...)
		dst = domain.AppendTime(dst, a.DateMerged.Time)
		dst = append(dst, `"}`...)
	}
	return append(dst, ']')
}

func appendText(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendString(dst, *s)
}

// appendString appends s as a JSON string as encoding/json writes it: a
// string of printable ASCII that JSON and HTML leave alone is copied as
// it is; any other is left to encoding/json itself, so that its escapes
// (HTML characters, control characters, U+2028, invalid UTF-8) are its own.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always marshals
			return append(dst, quoted...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
