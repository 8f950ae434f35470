package rules

import (
	"regexp"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/kubediff/kubediff/pkg/record"
)

// prefilter is what a rule's top-level conjuncts require of a record's
// plain fields: record.kind == "Node", record.type in ["added",
// "deleted"], record.namespace.startsWith("prod-"), record.labels["team"]
// == "shop", has(record.user). A record that fails one cannot match the
// rule (CEL's && is false when one side is), so the rule is not
// evaluated at all. Rules are interpreted, and an interpreter's work on
// a record that arrives between other programs' costs several times
// what a benchmark's loop shows (on the bench, about 4 µs a rule): with
// many rules, each about some kinds or namespaces, most records skip
// most rules for the price of a string comparison.
type prefilter []func(*record.Change) bool

// prefilterFields are the record's string fields a prefilter reads.
var prefilterFields = []string{"type", "kind", "apiVersion", "resource", "namespace", "name", "changed"}

// getter reads a string a prefilter tests: false when the record lacks
// it (record.manager.name without a manager), where CEL says the key is
// absent and the rule does not match.
type getter func(*record.Change) (string, bool)

// admits says whether c may match.
func (p prefilter) admits(c *record.Change) bool {
	for _, requires := range p {
		if !requires(c) {
			return false
		}
	}
	return true
}

func fieldOf(c *record.Change, field string) string {
	switch field {
	case "type":
		return c.Type
	case "kind":
		return c.Kind
	case "apiVersion":
		return c.APIVersion
	case "resource":
		return c.Resource
	case "namespace":
		return c.Namespace
	case "changed":
		return c.Changed
	}
	return c.Name
}

// prefilterOf reads checked's top-level conjuncts for requirements.
func prefilterOf(checked *cel.Ast) prefilter {
	var p prefilter
	for _, e := range conjuncts(checked.NativeRep().Expr()) {
		if r := requirementOf(e); r != nil {
			p = append(p, r)
		}
	}
	return p
}

// requirementOf reads a conjunct that tests the record's plain fields
// only, or returns nil.
func requirementOf(e ast.Expr) func(*record.Change) bool {
	switch e.Kind() {
	case ast.SelectKind:
		return presence(e)
	case ast.ComprehensionKind:
		return changesExist(e)
	case ast.CallKind:
	default:
		return nil
	}
	call := e.AsCall()
	if r := sizeTest(call); r != nil {
		return r
	}
	if call.IsMemberFunction() {
		return stringTest(call)
	}
	if len(call.Args()) != 2 {
		return nil
	}
	a, b := call.Args()[0], call.Args()[1]
	switch call.FunctionName() {
	case operators.Equals:
		if r := equality(a, b); r != nil {
			return r
		}
		return equality(b, a)
	case operators.In:
		get, ok := recordField(a)
		if !ok || b.Kind() != ast.ListKind {
			return nil
		}
		var values []string
		for _, el := range b.AsList().Elements() {
			v, ok := stringLiteral(el)
			if !ok {
				return nil
			}
			values = append(values, v)
		}
		return func(c *record.Change) bool { v, ok := get(c); return ok && slices.Contains(values, v) }
	}
	return nil
}

// equality reads record.FIELD == "v" and record.labels["k"] == "v".
func equality(a, b ast.Expr) func(*record.Change) bool {
	v, ok := stringLiteral(b)
	if !ok {
		return nil
	}
	if get, ok := recordField(a); ok {
		return func(c *record.Change) bool { s, ok := get(c); return ok && s == v }
	}
	if key, ok := labelIndex(a); ok {
		return func(c *record.Change) bool { l, ok := c.Labels[key]; return ok && l == v }
	}
	return nil
}

// stringTest reads record.FIELD.startsWith("p"), endsWith, contains and
// matches (with a constant pattern: Go's regexp is CEL's).
func stringTest(call ast.CallExpr) func(*record.Change) bool {
	get, ok := recordField(call.Target())
	if !ok {
		return nil
	}
	test := stringFunc(call)
	if test == nil {
		return nil
	}
	return func(c *record.Change) bool { s, ok := get(c); return ok && test(s) }
}

// stringFunc reads .startsWith("p"), .endsWith, .contains and .matches
// with a constant argument as a Go test; nil for any other call.
func stringFunc(call ast.CallExpr) func(string) bool {
	if len(call.Args()) != 1 {
		return nil
	}
	arg, ok := stringLiteral(call.Args()[0])
	if !ok {
		return nil
	}
	var test func(string) bool
	switch call.FunctionName() {
	case "startsWith":
		test = func(s string) bool { return strings.HasPrefix(s, arg) }
	case "endsWith":
		test = func(s string) bool { return strings.HasSuffix(s, arg) }
	case "contains":
		test = func(s string) bool { return strings.Contains(s, arg) }
	case "matches":
		re, err := regexp.Compile(arg)
		if err != nil {
			return nil
		}
		test = re.MatchString
	default:
		return nil
	}
	return test
}

// presence reads has(record.user), has(record.manager), has(record.owner),
// has(record.release), has(record.gitops) and has(record.cluster).
func presence(e ast.Expr) func(*record.Change) bool {
	sel := e.AsSelect()
	if !sel.IsTestOnly() || sel.Operand().Kind() != ast.IdentKind || sel.Operand().AsIdent() != "record" {
		return nil
	}
	switch sel.FieldName() {
	case "user":
		return func(c *record.Change) bool { return c.User != nil }
	case "release":
		return func(c *record.Change) bool { return c.Release != nil }
	case "gitops":
		return func(c *record.Change) bool { return c.GitOps != nil }
	case "manager":
		return func(c *record.Change) bool { return c.Manager != nil }
	case "owner":
		return func(c *record.Change) bool { return c.Owner != nil }
	case "cluster":
		return func(c *record.Change) bool { return c.Cluster != nil }
	}
	return nil
}

// labelIndex reads record.labels["k"].
func labelIndex(e ast.Expr) (string, bool) {
	if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != operators.Index || len(e.AsCall().Args()) != 2 {
		return "", false
	}
	m, k := e.AsCall().Args()[0], e.AsCall().Args()[1]
	if m.Kind() != ast.SelectKind || m.AsSelect().IsTestOnly() || m.AsSelect().FieldName() != "labels" ||
		m.AsSelect().Operand().Kind() != ast.IdentKind || m.AsSelect().Operand().AsIdent() != "record" {
		return "", false
	}
	return stringLiteral(k)
}

// recordField reads record.FIELD for a prefilter's field, and
// record.manager.name and record.user.name.
func recordField(e ast.Expr) (getter, bool) {
	if e.Kind() != ast.SelectKind || e.AsSelect().IsTestOnly() {
		return nil, false
	}
	sel := e.AsSelect()
	operand := sel.Operand()
	if isRecord(operand) && slices.Contains(prefilterFields, sel.FieldName()) {
		field := sel.FieldName()
		return func(c *record.Change) (string, bool) { return fieldOf(c, field), true }, true
	}
	if sel.FieldName() != "name" || operand.Kind() != ast.SelectKind || operand.AsSelect().IsTestOnly() || !isRecord(operand.AsSelect().Operand()) {
		return nil, false
	}
	switch operand.AsSelect().FieldName() {
	case "manager":
		return func(c *record.Change) (string, bool) {
			if c.Manager == nil {
				return "", false
			}
			return c.Manager.Name, true
		}, true
	case "user":
		return func(c *record.Change) (string, bool) {
			if c.User == nil {
				return "", false
			}
			return c.User.Name, true
		}, true
	}
	return nil, false
}

func isRecord(e ast.Expr) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == "record" }

func stringLiteral(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}
