package rbacwords

import (
	"cmp"
	"slices"
)

// How dangerous a permission is, for the order of sentences: the ones a
// reviewer must not miss come first. A wildcard grants what exists and
// what will; escalate, bind and impersonate let a holder grant itself
// more or act as someone else; secrets hold credentials; pods/exec and
// creating pods run commands with a pod's ServiceAccount.
const (
	dangerNone = iota
	dangerCreatePods
	dangerExec
	dangerSecrets
	dangerEscalation
	dangerWildcard
)

func dangerOf(t thing, verb string) int {
	switch {
	case verb == "*" || t.resource == "*" || t.group == "*" || t.url == "*":
		return dangerWildcard
	case verb == "escalate" || verb == "bind" || verb == "impersonate":
		return dangerEscalation
	case t.resource == "secrets" && t.group == "":
		return dangerSecrets
	case t.resource == "pods/exec" && t.group == "":
		return dangerExec
	case t.resource == "pods" && t.group == "" && verb == "create":
		return dangerCreatePods
	}
	return dangerNone
}

// sortSentences orders sentences the most dangerous first, gains before
// losses, then by their words, so that the same change always reads the
// same.
func sortSentences(ss []sentence) {
	slices.SortFunc(ss, func(a, b sentence) int {
		if c := cmp.Compare(b.danger, a.danger); c != 0 {
			return c
		}
		if a.gained != b.gained {
			if a.gained {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.text, b.text)
	})
}
