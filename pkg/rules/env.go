package rules

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/kubediff/kubediff/pkg/rbacwords"
)

// CostLimit bounds one rule's evaluation of one record, in CEL's cost
// units: the limit the API server sets on each expression of a
// ValidatingAdmissionPolicy (PerCallLimit, about a tenth of a second).
const CostLimit = 1_000_000

// newEnv is the CEL environment rules compile in: the API server's base
// environment (k8s.io/apiserver/pkg/cel/environment, base.go, at
// Kubernetes 1.37) — its language options, the Kubernetes libraries
// (lists, regex, urls, quantity, semver, format, ip, cidr), the string,
// set and list extensions, and its cost model — with kubediff's variables:
// record, typed so that a misspelt field fails to compile, and object and
// oldObject, as untyped as the objects are. The environment is built
// from the libraries, not from that package, which would bring
// component-base's feature gates and version registry along for a
// version number kubediff fixes here.
func newEnv() (*cel.Env, error) {
	recordType := recordDeclType()
	provider := apiservercel.NewDeclTypeProvider(recordType)
	opts := []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		cel.ASTValidators(cel.ValidateDurationLiterals(), cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(), cel.ValidateHomogeneousAggregateLiterals()),
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		library.URLs(), library.Regex(), library.Quantity(), library.IP(), library.CIDR(), library.Format(),
		library.SemverLib(library.SemverVersion(1)), library.Lists(library.ListsVersion(1)),
		ext.Strings(ext.StringsVersion(2)), ext.Sets(), ext.TwoVarComprehensions(), ext.Lists(ext.ListsVersion(3)),
		cel.Variable("record", recordType.CelType()),
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("the rules' CEL environment: %w", err)
	}
	typed, err := provider.EnvOptions(env.CELTypeProvider())
	if err != nil {
		return nil, fmt.Errorf("the record's CEL type: %w", err)
	}
	return env.Extend(typed...)
}

// programOptions are the API server's: optimized, cost tracked with the
// Kubernetes libraries' cost estimator, and stopped at CostLimit.
func programOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
		cel.CostLimit(CostLimit),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostTracking(&library.CostEstimator{}),
	}
}

// untrackedOptions are for a rule that cannot exceed the cost limit
// (see plan): optimized, without the cost tracking.
func untrackedOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
}

// Sizes for the record's declaration. The lists' bounds only inform the
// cost estimate at compile time (see checkCost).
const (
	maxChanges = 10_000
	maxLabels  = 64
	maxGroups  = 64
	// maxPermissions is the most a role's permissions rbacwords compares.
	maxPermissions = 200_000
	maxSubjects    = 10_000
	maxSentences   = rbacwords.MaxSentences + 1 // and "and K more"
)

// rbacDeclType declares record.rbac: the permissions a role gained and
// lost, the subjects a binding gained and lost (celRBAC).
func rbacDeclType(field func(string, *apiservercel.DeclType) *apiservercel.DeclField,
	object func(string, ...*apiservercel.DeclField) *apiservercel.DeclType) *apiservercel.DeclType {
	str := apiservercel.StringType
	permission := apiservercel.NewListType(object("kubediff.Permission", field("verb", str), field("apiGroup", str),
		field("resource", str), field("resourceName", str), field("nonResourceURL", str)), maxPermissions)
	subject := apiservercel.NewListType(object("kubediff.Subject", field("kind", str), field("name", str),
		field("namespace", str)), maxSubjects)
	return object("kubediff.RBAC", field("gained", permission), field("lost", permission),
		field("subjectsGained", subject), field("subjectsLost", subject))
}

// recordDeclType declares what a rule sees as record: the fields of the
// record (docs/record-schema.md) a rule can test. from and to are dyn,
// the values of whatever field changed.
func recordDeclType() *apiservercel.DeclType {
	str := apiservercel.StringType
	field := func(name string, t *apiservercel.DeclType) *apiservercel.DeclField {
		return apiservercel.NewDeclField(name, t, false, nil, nil)
	}
	object := func(name string, fields ...*apiservercel.DeclField) *apiservercel.DeclType {
		m := map[string]*apiservercel.DeclField{}
		for _, f := range fields {
			m[f.Name] = f
		}
		return apiservercel.NewObjectType(name, m)
	}
	change := object("kubediff.Change", field("op", str), field("path", str), field("field", str),
		field("from", apiservercel.DynType), field("to", apiservercel.DynType))
	user := object("kubediff.User", field("name", str),
		field("groups", apiservercel.NewListType(str, maxGroups)),
		field("serviceAccount", object("kubediff.ServiceAccount", field("namespace", str), field("name", str))))
	release := object("kubediff.Release", field("tool", str), field("kind", str), field("namespace", str), field("name", str),
		field("revision", apiservercel.IntType), field("status", str), field("chart", str), field("appVersion", str),
		field("gitRevision", str), field("startedAt", str), field("finishedAt", str))
	drifted := object("kubediff.DriftedField", field("path", str), field("field", str), field("declared", apiservercel.DynType),
		field("undeclared", apiservercel.BoolType), field("before", apiservercel.DynType), field("now", apiservercel.DynType),
		field("truncated", apiservercel.BoolType))
	gitops := object("kubediff.GitOps", field("via", str), field("tool", str), field("kind", str), field("namespace", str),
		field("name", str), field("declaredFrom", str), field("drift", apiservercel.NewListType(drifted, maxChanges)),
		field("reverts", str), field("driftSeconds", apiservercel.DoubleType))
	return object("kubediff.Record",
		field("type", str), field("apiVersion", str), field("kind", str), field("resource", str),
		field("namespace", str), field("name", str), field("uid", str), field("resourceVersion", str),
		field("afterGap", apiservercel.BoolType),
		field("namespaceDeleting", apiservercel.BoolType),
		field("labels", apiservercel.NewMapType(str, str, maxLabels)),
		field("owner", object("kubediff.Owner", field("kind", str), field("name", str))),
		field("changed", str),
		field("changes", apiservercel.NewListType(change, maxChanges)),
		field("manager", object("kubediff.Manager", field("name", str), field("operation", str),
			field("subresource", str), field("time", str))),
		field("user", user),
		field("release", release),
		field("gitops", gitops),
		field("cluster", object("kubediff.Cluster", field("name", str), field("id", str))),
		field("access", apiservercel.NewListType(str, maxSentences)),
		field("rbac", rbacDeclType(field, object)),
	)
}
