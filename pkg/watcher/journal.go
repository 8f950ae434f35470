package watcher

import "github.com/kubediff/kubediff/pkg/journal"

// Journal is where the watcher keeps each target's objects across
// restarts, and with each object's new state the records the pipeline
// kept of the change that led to it, in one call (the protocol is in
// pkg/journal's package comment). The watcher declares it, and imports
// no store: the state dir's store (pkg/state) is one, wired in by
// internal/app.
type Journal interface {
	// Put notes an object's new state with the records of its change.
	Put(target, key string, o *journal.Object, records ...journal.Entry)
	// Delete notes that an object is gone, with the records of its
	// deletion.
	Delete(target, key string, records ...journal.Entry)
	// Unstored notes the records of a change whose state cannot be
	// stored (it could not be encoded): the stored state stays as it was.
	Unstored(target, key string, records ...journal.Entry)
	// WriteFull writes a target's complete state (its first list, or its
	// stored objects passed through new rules) before it returns, with
	// the records of what the list reported and the fingerprint of the
	// rules its objects went through. On failure it keeps them for the
	// next write.
	WriteFull(target, rules string, list journal.List, records ...journal.Entry) error
	// Forget notes that a target is no longer watched.
	Forget(target string)
	// Rules is the fingerprint WriteFull last recorded for the target
	// ("": unknown).
	Rules(target string) string
	// Each calls fn with each of the target's stored objects, in key
	// order: o.Raw is valid only during the call. ok is false when
	// nothing was ever stored for the target.
	Each(target string, fn func(key string, o *journal.Object)) (ok bool, err error)
	// Rebind records that the cluster behind the address changed (etcd
	// restored or rebuilt): the stored objects are kept, since the
	// watcher compares the new cluster with them.
	Rebind(cluster string) error
}
