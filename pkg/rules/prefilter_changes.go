package rules

import (
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/kubediff/kubediff/pkg/record"
)

// changesExist reads record.changes.exists(c, P) for what P requires of
// a change's plain strings (c.op, c.path, c.field compared with
// constants, &&, ||): a record none of whose changes meets that cannot
// match, as P is false on each of them (false && anything is false in
// CEL, errors included). nil when P requires nothing the prefilter can
// test, such as c.to == 0 alone.
func changesExist(e ast.Expr) func(*record.Change) bool {
	comp := e.AsComprehension()
	if comp.HasIterVar2() || !isRecordChanges(comp.IterRange()) {
		return nil
	}
	// The exists macro: accumulate @result || P, from false.
	step := comp.LoopStep()
	if step.Kind() != ast.CallKind || step.AsCall().FunctionName() != operators.LogicalOr || len(step.AsCall().Args()) != 2 {
		return nil
	}
	accu, pred := step.AsCall().Args()[0], step.AsCall().Args()[1]
	if accu.Kind() != ast.IdentKind || accu.AsIdent() != comp.AccuVar() {
		return nil
	}
	if init := comp.AccuInit(); init.Kind() != ast.LiteralKind || init.AsLiteral() != types.False {
		return nil
	}
	test := changeTest(pred, comp.IterVar())
	if test == nil {
		return nil
	}
	return func(c *record.Change) bool {
		for i := range c.Changes {
			if test(&c.Changes[i]) {
				return true
			}
		}
		return false
	}
}

// changeTest reads what e, over the change named v, requires of the
// change's op, path and field; nil when it requires nothing so read.
func changeTest(e ast.Expr, v string) func(*record.FieldChange) bool {
	if e.Kind() != ast.CallKind {
		return nil
	}
	call := e.AsCall()
	switch call.FunctionName() {
	case operators.LogicalAnd, operators.LogicalOr:
		return combined(call, v)
	case operators.Equals:
		if len(call.Args()) != 2 {
			return nil
		}
		get, lit := call.Args()[0], call.Args()[1]
		if _, ok := stringLiteral(get); ok {
			get, lit = lit, get
		}
		field, okField := changeField(get, v)
		want, okLit := stringLiteral(lit)
		if !okField || !okLit {
			return nil
		}
		return func(fc *record.FieldChange) bool { return field(fc) == want }
	}
	if !call.IsMemberFunction() {
		return nil
	}
	field, ok := changeField(call.Target(), v)
	test := stringFunc(call)
	if !ok || test == nil {
		return nil
	}
	return func(fc *record.FieldChange) bool { return test(field(fc)) }
}

// combined reads a && b (what either requires) and a || b (what one of
// them requires, when both require something the prefilter reads).
func combined(call ast.CallExpr, v string) func(*record.FieldChange) bool {
	and := call.FunctionName() == operators.LogicalAnd
	var parts []func(*record.FieldChange) bool
	for _, arg := range call.Args() {
		t := changeTest(arg, v)
		if t == nil && !and {
			return nil
		}
		if t != nil {
			parts = append(parts, t)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return func(fc *record.FieldChange) bool {
		for _, t := range parts {
			if t(fc) != and {
				return !and
			}
		}
		return and
	}
}

// changeField reads v.op, v.path and v.field.
func changeField(e ast.Expr, v string) (func(*record.FieldChange) string, bool) {
	if e.Kind() != ast.SelectKind || e.AsSelect().IsTestOnly() {
		return nil, false
	}
	sel := e.AsSelect()
	if sel.Operand().Kind() != ast.IdentKind || sel.Operand().AsIdent() != v {
		return nil, false
	}
	switch sel.FieldName() {
	case "op":
		return func(fc *record.FieldChange) string { return fc.Op }, true
	case "path":
		return func(fc *record.FieldChange) string { return fc.Path }, true
	case "field":
		return func(fc *record.FieldChange) string { return fc.Field }, true
	}
	return nil, false
}

// sizeTest reads record.changes.size() > N and >= N (size(...) too).
func sizeTest(call ast.CallExpr) func(*record.Change) bool {
	name := call.FunctionName()
	if (name != operators.Greater && name != operators.GreaterEquals) || len(call.Args()) != 2 {
		return nil
	}
	size, lit := call.Args()[0], call.Args()[1]
	if lit.Kind() != ast.LiteralKind || size.Kind() != ast.CallKind || size.AsCall().FunctionName() != "size" {
		return nil
	}
	n, ok := lit.AsLiteral().(types.Int)
	if !ok {
		return nil
	}
	sc := size.AsCall()
	operand := sc.Target()
	if !sc.IsMemberFunction() {
		if len(sc.Args()) != 1 {
			return nil
		}
		operand = sc.Args()[0]
	}
	if !isRecordChanges(operand) {
		return nil
	}
	if name == operators.Greater {
		return func(c *record.Change) bool { return int64(len(c.Changes)) > int64(n) }
	}
	return func(c *record.Change) bool { return int64(len(c.Changes)) >= int64(n) }
}

func isRecordChanges(e ast.Expr) bool {
	return e.Kind() == ast.SelectKind && !e.AsSelect().IsTestOnly() && e.AsSelect().FieldName() == "changes" && isRecord(e.AsSelect().Operand())
}
