package restore

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	at := metav1.NewTime(time.Date(2026, 11, 23, 21, 3, 0, 0, time.UTC))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, Time: &at,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

// A Deployment restored after kubectl set env added FOO to its container
// and kubectl label a label: the apply sets neither, so both are kept,
// each named with who set it; what the apply sets too (the image,
// shared with kubectl-set), the status and the Deployment's revision,
// which its controller rewrites, are not named.
func TestKeptNamesWhatOthersAddedThatTheApplyDoesNotSet(t *testing.T) {
	container := `"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}`
	restore := entry("kubediff-restore", metav1.ManagedFieldsOperationApply, "",
		`{"f:metadata":{"f:labels":{"f:app":{}},"f:finalizers":{"v:\"example.com/a\"":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{`+container+`}}}}}`)
	setEnv := entry("kubectl-set", metav1.ManagedFieldsOperationUpdate, "",
		`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{},"f:env":{".":{},"k:{\"name\":\"FOO\"}":{".":{},"f:name":{},"f:value":{}}}}}}}}}`)
	label := entry("kubectl-label", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:labels":{"f:tier":{}}}}`)
	revision := entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "",
		`{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}}}`)
	ports := entry("kubectl-patch", metav1.ManagedFieldsOperationUpdate, "",
		`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{}}}}}}}},"f:metadata":{"f:finalizers":{"v:\"example.com/keep\"":{}}}}`)
	status := entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:replicas":{}}}`)

	kept, err := Kept([]metav1.ManagedFieldsEntry{restore, setEnv, label, revision, ports, status}, "kubediff-restore")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"metadata.finalizers[example.com/keep] (set by kubectl-patch (Update, 2026-11-23T21:03:00Z))",
		"metadata.labels.tier (set by kubectl-label (Update, 2026-11-23T21:03:00Z))",
		"spec.template.spec.containers[name=app].env (set by kubectl-set (Update, 2026-11-23T21:03:00Z))",
		"spec.template.spec.containers[name=app].ports (set by kubectl-patch (Update, 2026-11-23T21:03:00Z))",
	}
	if got := fmt.Sprint(kept); got != fmt.Sprint(want) {
		t.Errorf("kept:\n%s\nwant:\n%s", got, want)
	}
}

// An object the apply sets whole keeps nothing.
func TestKeptIsEmptyWhenTheApplySetsEverything(t *testing.T) {
	fields := `{"f:data":{"f:a":{}}}`
	kept, err := Kept([]metav1.ManagedFieldsEntry{
		entry("kubediff-restore", metav1.ManagedFieldsOperationApply, "", fields),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", fields),
	}, "kubediff-restore")
	if err != nil || len(kept) != 0 {
		t.Errorf("kept %v, %v", kept, err)
	}
}
