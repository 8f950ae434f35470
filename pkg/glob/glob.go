// Package glob matches names against the shell-style patterns users write
// for namespaces (prod-*, team-?), the same way everywhere in kubediff.
package glob

import (
	"path"
	"slices"
)

// MatchAny reports whether name matches any of the patterns. A malformed
// pattern matches nothing; config validation reports it.
func MatchAny(patterns []string, name string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool {
		ok, _ := path.Match(p, name)
		return ok
	})
}

// Valid returns the first malformed pattern's error, or nil.
func Valid(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return err
		}
	}
	return nil
}
