package rules

import (
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/kubediff/kubediff/pkg/record"
)

// prefilter is what a rule's top-level conjuncts require of a record's
// plain fields: record.kind == "Node", record.type in ["added",
// "deleted"]. A record that fails one cannot match the rule (CEL's &&
// is false when one side is), so the rule is not evaluated at all: with
// many rules, each about a few kinds, most records skip most rules for
// the price of a string comparison.
type prefilter []requirement

// requirement is one field's allowed values.
type requirement struct {
	field  string
	values []string
}

// prefilterFields are the record's fields a prefilter reads.
var prefilterFields = []string{"type", "kind", "apiVersion", "resource", "namespace", "name"}

// admits says whether c may match.
func (p prefilter) admits(c *record.Change) bool {
	for _, r := range p {
		if !slices.Contains(r.values, fieldOf(c, r.field)) {
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
	}
	return c.Name
}

// prefilterOf reads checked's top-level conjuncts for requirements.
func prefilterOf(checked *cel.Ast) prefilter {
	var p prefilter
	for _, e := range conjuncts(checked.NativeRep().Expr()) {
		if r, ok := requirementOf(e); ok {
			p = append(p, r)
		}
	}
	return p
}

// requirementOf reads record.FIELD == "v", "v" == record.FIELD and
// record.FIELD in ["a", "b"].
func requirementOf(e ast.Expr) (requirement, bool) {
	if e.Kind() != ast.CallKind || len(e.AsCall().Args()) != 2 {
		return requirement{}, false
	}
	call := e.AsCall()
	a, b := call.Args()[0], call.Args()[1]
	switch call.FunctionName() {
	case operators.Equals:
		if field, ok := recordField(a); ok {
			if v, ok := stringLiteral(b); ok {
				return requirement{field, []string{v}}, true
			}
		}
		if field, ok := recordField(b); ok {
			if v, ok := stringLiteral(a); ok {
				return requirement{field, []string{v}}, true
			}
		}
	case operators.In:
		field, ok := recordField(a)
		if !ok || b.Kind() != ast.ListKind {
			return requirement{}, false
		}
		var values []string
		for _, el := range b.AsList().Elements() {
			v, ok := stringLiteral(el)
			if !ok {
				return requirement{}, false
			}
			values = append(values, v)
		}
		return requirement{field, values}, true
	}
	return requirement{}, false
}

// recordField reads record.FIELD for a prefilter's field.
func recordField(e ast.Expr) (string, bool) {
	if e.Kind() != ast.SelectKind || e.AsSelect().IsTestOnly() {
		return "", false
	}
	sel := e.AsSelect()
	operand := sel.Operand()
	if operand.Kind() != ast.IdentKind || operand.AsIdent() != "record" || !slices.Contains(prefilterFields, sel.FieldName()) {
		return "", false
	}
	return sel.FieldName(), true
}

func stringLiteral(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}
