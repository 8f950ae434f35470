package diff

import "fmt"

func errWholeObject(p string) error {
	return fmt.Errorf("path %q would match the whole object", p)
}

// prune returns v without the fields the rules match.
func prune(v any, rules pathRules) any {
	out, _ := applyRules(v, rules, func(string, any) (any, action) { return nil, drop })
	return out
}
