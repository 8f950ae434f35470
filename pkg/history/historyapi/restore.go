package historyapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubediff/kubediff/pkg/change"
	"github.com/kubediff/kubediff/pkg/diff"
	"github.com/kubediff/kubediff/pkg/history"
	"github.com/kubediff/kubediff/pkg/history/restore"
)

// restoreFrom makes the object's state at t a manifest for server-side
// apply, reading through src (its access checks and turns): the owners
// it names are looked up as they are now, in the same history. rules
// are the ones the history was kept under (nil: the built-in ones).
func restoreFrom(ctx context.Context, src Source, rules *diff.Differ, id change.ObjectID, t time.Time) (restore.Manifest, error) {
	raw, err := src.At(ctx, id, t)
	if err != nil {
		return restore.Manifest{}, err
	}
	obj, err := decodeState(raw)
	if err != nil {
		return restore.Manifest{}, err
	}
	if rules == nil {
		rules = watchDiffer()
	}
	group, resource, namespace, _ := id.Parts()
	o := restore.Options{Group: group, Resource: resource,
		OwnerExists: func(ref map[string]any) (bool, error) { return ownerExists(ctx, src, namespace, ref) }}
	if rules != nil {
		o.Ignored = rules.IgnoredPaths(resourceOf(id))
	}
	return restore.Prepare(obj, o)
}

// ownerExists says whether the object an owner reference names exists
// now, as far as the history knows (the same uid): owners are in the
// object's namespace, or cluster-scoped.
func ownerExists(ctx context.Context, src Source, namespace string, ref map[string]any) (bool, error) {
	apiVersion, _ := ref["apiVersion"].(string)
	kind, _ := ref["kind"].(string)
	name, _ := ref["name"].(string)
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		group = ""
	}
	types, err := src.Resolve(ctx, kind)
	if err != nil {
		return false, err
	}
	for _, r := range types {
		if r.GVR.Group != group || r.Kind != kind {
			continue
		}
		ns := namespace
		if !r.Namespaced {
			ns = ""
		}
		raw, err := src.At(ctx, change.NewObjectID(group, r.GVR.Resource, ns, name), time.Now())
		switch {
		case errors.Is(err, history.ErrNotFound):
			return false, nil
		case err != nil:
			return false, err
		}
		obj, err := decodeState(raw)
		if err != nil {
			return false, err
		}
		meta, _ := obj["metadata"].(map[string]any)
		return meta["uid"] == ref["uid"], nil
	}
	return false, fmt.Errorf("kubediff's history does not know the type %s %s", apiVersion, kind)
}

// ManifestYAML is a restore's manifest as YAML, its warnings first as
// comments: what the page offers to download.
func ManifestYAML(m restore.Manifest) ([]byte, error) {
	y, err := yaml.Marshal(m.Object)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, w := range m.Warnings {
		b.WriteString("# warning: " + strings.ReplaceAll(w, "\n", " ") + "\n")
	}
	b.Write(y)
	return b.Bytes(), nil
}
