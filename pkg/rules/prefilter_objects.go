package rules

import (
	"slices"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
)

// objectFilter is what a rule's top-level conjuncts require of the
// object's states, read in Go as the prefilter reads the record:
// has(object.data.mode) and "mode" in object.data. A rule about a key
// most objects lack (a ConfigMap's mode, a Pod's hostNetwork) is then
// not evaluated on them. CEL's has() is true for a key that is present,
// whatever its value, and an absent parent (or no object) makes the
// rule not match; Go says false there too.
type objectFilter []func(*Input) bool

func (f objectFilter) admits(in *Input) bool {
	for _, requires := range f {
		if !requires(in) {
			return false
		}
	}
	return true
}

// objectFilterOf reads the conjuncts of e that test the objects.
func objectFilterOf(e ast.Expr) objectFilter {
	var f objectFilter
	for _, c := range conjuncts(e) {
		if r := objectRequirement(c); r != nil {
			f = append(f, r)
		}
	}
	return f
}

// objectRequirement reads has(object.a.b) and "k" in object.a, or
// returns nil.
func objectRequirement(e ast.Expr) func(*Input) bool {
	var root, key string
	var path []string
	var ok bool
	switch e.Kind() {
	case ast.SelectKind:
		if !e.AsSelect().IsTestOnly() {
			return nil
		}
		root, path, ok = objectPath(e.AsSelect().Operand())
		key = e.AsSelect().FieldName()
	case ast.CallKind:
		call := e.AsCall()
		if call.FunctionName() != operators.In || len(call.Args()) != 2 {
			return nil
		}
		var isString bool
		key, isString = stringLiteral(call.Args()[0])
		root, path, ok = objectPath(call.Args()[1])
		ok = ok && isString
	}
	if !ok {
		return nil
	}
	return func(in *Input) bool {
		obj := in.Object
		if root == "oldObject" {
			obj = in.OldObject
		}
		return holds(obj, path, key)
	}
}

// objectPath reads object.a.b (or oldObject's) as its root and path.
func objectPath(e ast.Expr) (root string, path []string, ok bool) {
	for e.Kind() == ast.SelectKind && !e.AsSelect().IsTestOnly() {
		path = append(path, e.AsSelect().FieldName())
		e = e.AsSelect().Operand()
	}
	if e.Kind() != ast.IdentKind || (e.AsIdent() != "object" && e.AsIdent() != "oldObject") {
		return "", nil, false
	}
	slices.Reverse(path)
	return e.AsIdent(), path, true
}

// holds says whether the value at path in obj (each step a map) holds
// key: a map with the key (its value may be null: has() is true), or,
// for "k" in a list, a list with the string.
func holds(obj map[string]any, path []string, key string) bool {
	if obj == nil {
		return false
	}
	var v any = obj
	for _, step := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[step]; !ok {
			return false
		}
	}
	switch container := v.(type) {
	case map[string]any:
		_, ok := container[key]
		return ok
	case []any:
		return slices.Contains(container, any(key))
	}
	return false
}
