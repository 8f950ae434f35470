package rules

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/kubediff/kubediff/pkg/record"
)

// maxValueSize bounds every string, list and map a rule can see: no
// object is larger than the API server takes in one request (3 MiB, the
// bound it assumes itself for CRD fields without one), and a record's
// values come from two such objects.
const maxValueSize = 2 * 3 << 20

// plan is how a rule is evaluated. Tracking CEL's cost costs about four
// times the evaluation of a cheap rule, and kubediff evaluates every
// rule on every record: a rule that cannot exceed CostLimit, whatever the
// record (its worst case, estimated as the API server estimates CRD
// rules, is within it), runs untracked. Another runs tracked, behind its
// guard when it has one: the cheap conjuncts of a rule "a && b && c"
// (those whose worst case is within the limit) run untracked first, and
// when they say false the rule does not match, as CEL's && says whatever
// the other conjuncts would; otherwise the whole rule runs tracked.
//
// A rule costs what the sizes of what it reads make it cost; most records
// and most objects are small (see smallRecord and smallObject), and on
// small ones a rule runs untracked when its worst case on small values
// is within the limit: a rule that reads the objects only when they are
// small too. A rule that reads record.rbac never does: the permissions
// are computed from the objects, and are not bounded by their sizes.
type plan struct {
	prefilter    prefilter
	objects      objectFilter
	program      cel.Program // tracked unless cheap
	guard        cel.Program // nil: none
	small        cel.Program // untracked, for small values; nil: none
	readsObjects bool        // small needs the objects small too
}

// eval evaluates the rule on act.
func (p plan) eval(act *activation) (any, error) {
	if p.guard != nil {
		if out, _, err := p.guard.Eval(act); err == nil && out == types.False {
			return types.False, nil
		}
	}
	prg := p.program
	if p.small != nil && act.small(p.readsObjects) {
		prg = p.small
	}
	out, _, err := prg.Eval(act)
	return out, err
}

// newPlan checks a rule's cost and plans its evaluation.
func newPlan(env *cel.Env, checked *cel.Ast) (plan, error) {
	est, err := estimate(env, checked, noSizes{})
	if err != nil {
		return plan{}, err
	}
	if est.Min > CostLimit {
		return plan{}, fmt.Errorf("costs at least %d to evaluate, over the limit of %d per evaluation", est.Min, CostLimit)
	}
	if cheap(env, checked) {
		prg, err := env.Program(checked, untrackedOptions()...)
		return plan{prefilter: prefilterOf(checked), objects: objectFilterOf(checked.NativeRep().Expr()), program: prg}, err
	}
	prg, err := env.Program(checked, programOptions()...)
	if err != nil {
		return plan{}, err
	}
	p := plan{prefilter: prefilterOf(checked), objects: objectFilterOf(checked.NativeRep().Expr()), program: prg, guard: guardOf(env, checked),
		readsObjects: readsObjects(checked)}
	if !readsRBAC(checked) && cheapOn(env, checked, smallSizes{}) {
		if p.small, err = env.Program(checked, untrackedOptions()...); err != nil {
			return plan{}, err
		}
	}
	return p, nil
}

// readsObjects says whether checked reads object or oldObject.
func readsObjects(checked *cel.Ast) bool {
	for _, ref := range checked.NativeRep().ReferenceMap() {
		if ref.Name == "object" || ref.Name == "oldObject" {
			return true
		}
	}
	return false
}

// readsRBAC says whether checked reads record.rbac, which is computed
// from the states and is not bounded by their sizes (a few rules of long
// lists grant thousands of permissions).
func readsRBAC(checked *cel.Ast) bool {
	rbac := false
	ast.PreOrderVisit(checked.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.SelectKind && e.AsSelect().FieldName() == "rbac" {
			rbac = true
		}
	}))
	return rbac
}

// guardOf compiles the cheap conjuncts of checked, untracked; nil when
// it has none, or when all are (checked is cheap then).
func guardOf(env *cel.Env, checked *cel.Ast) cel.Program {
	native := checked.NativeRep()
	var cheapParts []string
	for _, e := range conjuncts(native.Expr()) {
		text, err := parser.Unparse(e, native.SourceInfo())
		if err != nil {
			continue // not a guard: it stays in the whole rule
		}
		part, iss := env.Compile(text)
		if iss.Err() != nil || part.OutputType() != cel.BoolType || !cheap(env, part) {
			continue
		}
		cheapParts = append(cheapParts, "("+text+")")
	}
	if len(cheapParts) == 0 {
		return nil
	}
	guard, iss := env.Compile(strings.Join(cheapParts, " && "))
	if iss.Err() != nil || !cheap(env, guard) {
		return nil
	}
	prg, err := env.Program(guard, untrackedOptions()...)
	if err != nil {
		return nil
	}
	return prg
}

// conjuncts flattens e's top-level &&.
func conjuncts(e ast.Expr) []ast.Expr {
	if e.Kind() == ast.CallKind && e.AsCall().FunctionName() == operators.LogicalAnd {
		var out []ast.Expr
		for _, arg := range e.AsCall().Args() {
			out = append(out, conjuncts(arg)...)
		}
		return out
	}
	return []ast.Expr{e}
}

// cheap says whether checked's worst case is within CostLimit whatever
// the record.
func cheap(env *cel.Env, checked *cel.Ast) bool {
	return cheapOn(env, checked, boundedSizes{})
}

func cheapOn(env *cel.Env, checked *cel.Ast, sizes checker.CostEstimator) bool {
	est, err := estimate(env, checked, sizes)
	return err == nil && est.Max <= CostLimit
}

func estimate(env *cel.Env, checked *cel.Ast, sizes checker.CostEstimator) (checker.CostEstimate, error) {
	est, err := env.EstimateCost(checked, &library.CostEstimator{SizeEstimator: sizes}, checker.PresenceTestHasCost(false))
	if err != nil {
		return est, fmt.Errorf("estimating its cost: %w", err)
	}
	return est, nil
}

// noSizes leaves sizes unknown: a minimum cost then counts only what
// every evaluation does.
type noSizes struct{}

func (noSizes) EstimateSize(checker.AstNode) *checker.SizeEstimate { return nil }
func (noSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// boundedSizes bounds every size by maxValueSize.
type boundedSizes struct{}

func (boundedSizes) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: maxValueSize}
}
func (boundedSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// The sizes of a small record and small objects: the record's strings
// of at most smallString bytes (a record cuts a value's string over 4 KiB
// to an excerpt), lists and maps of at most smallEntries. A value whose
// type the rule cannot know (an object's fields, a change's from and to)
// is estimated at smallDyn whatever it is, a string's bytes or a list's
// entries, so such values are small when their strings are at most
// smallDyn bytes and their lists and maps at most smallEntries long.
const (
	smallString  = 8 << 10
	smallEntries = 256
	smallDyn     = 1 << 10
	// smallWalk bounds the values smallRecord looks at: a record with
	// more is not small.
	smallWalk = 4096
)

// smallSizes bounds sizes as small values have them.
type smallSizes struct{}

func (smallSizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if t := n.Type(); t != nil {
		switch t.Kind() {
		case types.StringKind, types.BytesKind:
			return &checker.SizeEstimate{Min: 0, Max: smallString}
		case types.ListKind, types.MapKind:
			return &checker.SizeEstimate{Min: 0, Max: smallEntries}
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: smallDyn}
}
func (smallSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// smallRecord says whether every string of c is at most smallString
// bytes, every list and map at most smallEntries long, and the values of
// its changes and its drift small (smallValue). It looks at every field
// a rule can read but rbac, which no untracked plan reads.
func smallRecord(c *record.Change) bool {
	strs, lengths := recordStrings(c)
	for _, n := range lengths {
		if n > smallEntries {
			return false
		}
	}
	for _, s := range strs {
		if len(s) > smallString {
			return false
		}
	}
	budget := smallWalk
	for _, fc := range c.Changes {
		if !smallValue(fc.From, &budget) || !smallValue(fc.To, &budget) {
			return false
		}
	}
	if g := c.GitOps; g != nil {
		for _, d := range g.Drift {
			if !smallValue(d.Declared, &budget) || !smallValue(d.Before, &budget) || !smallValue(d.Now, &budget) {
				return false
			}
		}
	}
	return true
}

// recordStrings are the strings of c a rule can read, and the lengths of
// its lists and maps.
func recordStrings(c *record.Change) (strs []string, lengths []int) {
	strs = []string{c.Type, c.APIVersion, c.Kind, c.Resource, c.Namespace, c.Name, c.UID, c.ResourceVersion, c.Changed}
	strs = append(strs, c.Access...)
	lengths = []int{len(c.Access), len(c.Labels), len(c.Changes)}
	if o := c.Owner; o != nil {
		strs = append(strs, o.Kind, o.Name)
	}
	if cl := c.Cluster; cl != nil {
		strs = append(strs, cl.Name, cl.ID)
	}
	if m := c.Manager; m != nil {
		strs = append(strs, m.Name, m.Operation, m.Subresource, m.Time)
	}
	if u := c.User; u != nil {
		strs = append(append(strs, u.Name), u.Groups...)
		lengths = append(lengths, len(u.Groups))
		if sa := u.ServiceAccount; sa != nil {
			strs = append(strs, sa.Namespace, sa.Name)
		}
	}
	if r := c.Release; r != nil {
		strs = append(strs, r.Tool, r.Kind, r.Namespace, r.Name, r.Status, r.Chart, r.AppVersion, r.GitRevision, r.StartedAt, r.FinishedAt)
	}
	if g := c.GitOps; g != nil {
		strs = append(strs, g.Via, g.Tool, g.Kind, g.Namespace, g.Name, g.DeclaredFrom, g.Reverts)
		lengths = append(lengths, len(g.Drift))
		for _, d := range g.Drift {
			strs = append(strs, d.Path, d.Field)
		}
	}
	for k, v := range c.Labels {
		strs = append(strs, k, v)
	}
	for _, fc := range c.Changes {
		strs = append(strs, fc.Op, fc.Path, fc.Field)
	}
	return strs, lengths
}

// smallObject says whether an object's state is a small value
// (smallValue); nil is. Objects of more than smallWalk values are not.
func smallObject(obj map[string]any) bool {
	budget := smallWalk
	return obj == nil || smallValue(obj, &budget)
}

// smallValue says whether v, a value of unknown type, is small: its
// strings (map keys included) at most smallDyn bytes, its lists and maps
// at most smallEntries long. It spends budget on the values it looks at.
func smallValue(v any, budget *int) bool {
	if *budget--; *budget < 0 {
		return false
	}
	switch v := v.(type) {
	case string:
		return len(v) <= smallDyn
	case map[string]any:
		if len(v) > smallEntries {
			return false
		}
		for k, e := range v {
			if len(k) > smallDyn || !smallValue(e, budget) {
				return false
			}
		}
	case []any:
		if len(v) > smallEntries {
			return false
		}
		for _, e := range v {
			if !smallValue(e, budget) {
				return false
			}
		}
	}
	return true
}
