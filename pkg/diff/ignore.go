package diff

import "fmt"

// DefaultIgnorePaths are fields whose changes carry no meaning for a reader:
// bookkeeping the API server or kubectl updates on every write.
var DefaultIgnorePaths = []string{
	"/metadata/managedFields",
	"/metadata/resourceVersion",
	"/metadata/generation",
	"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
}

func errWholeObject(p string) error {
	return fmt.Errorf("path %q would match the whole object", p)
}

// prune returns v without the fields the rules match.
func prune(v any, rules pathRules) any {
	out, _ := applyRules(v, rules, func(any) (any, action) { return nil, drop })
	return out
}
