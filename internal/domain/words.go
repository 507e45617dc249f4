package domain

import (
	"fmt"
	"strings"
)

// Choices lists values for a sentence, each quoted: "a", "b" or "c". Every
// message that names the values of an enumeration (events, scopes,
// flavors, contexts) builds its list here from the enumeration itself.
func Choices(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	switch len(quoted) {
	case 0:
		return ""
	case 1:
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// DidYouMean is ` Did you mean "x"?` for the value of options nearest to
// value, when one is near enough to be a slip (an edit or two, a letter
// case), else "".
func DidYouMean(value string, options []string) string {
	if near, ok := Closest(value, options); ok {
		return fmt.Sprintf(" Did you mean %q?", near)
	}
	return ""
}

// Closest is the option nearest to value by edits (Levenshtein distance,
// letter case ignored), when it is within a third of value's length, and
// at most 3 edits.
func Closest(value string, options []string) (string, bool) {
	best, bestDist := "", -1
	v := []rune(strings.ToLower(value))
	for _, o := range options {
		d := editDistance(v, []rune(strings.ToLower(o)))
		if bestDist < 0 || d < bestDist {
			best, bestDist = o, d
		}
	}
	limit := min(3, max(1, len(v)/3))
	if bestDist < 0 || bestDist > limit || best == value {
		return "", false
	}
	return best, true
}

// editDistance counts the insertions, deletions and substitutions that
// turn a into b.
func editDistance(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
