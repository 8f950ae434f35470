package rules

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/kubediff/kubediff/pkg/record"
)

// celRecord is the record as rules see it (recordDeclType), made of CEL
// values once per record: every rule then reads its fields without
// converting them again. A field that is unknown (no user, no manager)
// is left out, so that has(record.user) is false.
func celRecord(c *record.Change) ref.Val {
	a := types.DefaultTypeAdapter
	m := map[ref.Val]ref.Val{
		keyType: types.String(c.Type), keyAPIVersion: types.String(c.APIVersion), keyKind: types.String(c.Kind),
		keyResource: types.String(c.Resource), keyNamespace: types.String(c.Namespace), keyName: types.String(c.Name),
		keyUID: types.String(c.UID), keyResourceVersion: types.String(c.ResourceVersion), keyAfterGap: types.Bool(c.AfterGap),
		keyChanged: types.String(c.Changed), keyChanges: celChanges(c.Changes),
	}
	if c.Labels != nil {
		m[keyLabels] = types.NewStringStringMap(a, c.Labels)
	} else {
		m[keyLabels] = types.NewStringStringMap(a, map[string]string{})
	}
	if o := c.Owner; o != nil {
		m[keyOwner] = strings2(keyKind, o.Kind, keyName, o.Name)
	}
	if mg := c.Manager; mg != nil {
		m[keyManager] = types.NewRefValMap(a, map[ref.Val]ref.Val{keyName: types.String(mg.Name),
			keyOperation: types.String(mg.Operation), keySubresource: types.String(mg.Subresource), keyTime: types.String(mg.Time)})
	}
	if u := c.User; u != nil {
		user := map[ref.Val]ref.Val{keyName: types.String(u.Name), keyGroups: types.NewStringList(a, stringsOrEmpty(u.Groups))}
		if sa := u.ServiceAccount; sa != nil {
			user[keyServiceAccount] = strings2(keyNamespace, sa.Namespace, keyName, sa.Name)
		}
		m[keyUser] = types.NewRefValMap(a, user)
	}
	if cl := c.Cluster; cl != nil {
		m[keyCluster] = strings2(keyName, cl.Name, keyID, cl.ID)
	}
	return types.NewRefValMap(a, m)
}

func strings2(k1 ref.Val, v1 string, k2 ref.Val, v2 string) ref.Val {
	return types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{k1: types.String(v1), k2: types.String(v2)})
}

// celChanges are the changes; from is null for an add, to for a remove.
func celChanges(changes []record.FieldChange) ref.Val {
	a := types.DefaultTypeAdapter
	out := make([]ref.Val, len(changes))
	for i, fc := range changes {
		out[i] = types.NewRefValMap(a, map[ref.Val]ref.Val{
			keyOp: types.String(fc.Op), keyPath: types.String(fc.Path), keyField: types.String(fc.Field),
			keyFrom: a.NativeToValue(fc.From), keyTo: a.NativeToValue(fc.To),
		})
	}
	return types.NewRefValList(a, out)
}

// The record's keys, made once.
var (
	keyType, keyAPIVersion, keyKind, keyResource      = types.String("type"), types.String("apiVersion"), types.String("kind"), types.String("resource")
	keyNamespace, keyName, keyUID, keyResourceVersion = types.String("namespace"), types.String("name"), types.String("uid"), types.String("resourceVersion")
	keyAfterGap, keyChanged, keyChanges, keyLabels    = types.String("afterGap"), types.String("changed"), types.String("changes"), types.String("labels")
	keyOwner, keyManager, keyUser, keyCluster         = types.String("owner"), types.String("manager"), types.String("user"), types.String("cluster")
	keyOperation, keySubresource, keyTime, keyGroups  = types.String("operation"), types.String("subresource"), types.String("time"), types.String("groups")
	keyServiceAccount, keyID                          = types.String("serviceAccount"), types.String("id")
	keyOp, keyPath, keyField, keyFrom, keyTo          = types.String("op"), types.String("path"), types.String("field"), types.String("from"), types.String("to")
)
