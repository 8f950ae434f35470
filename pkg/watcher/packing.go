package watcher

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// Objects of one type share most of their bytes: field names, labels,
// images, managers, the shape of their status. So each type's cached
// objects are compressed against a dictionary made of the type's first
// objects: a 1.6 KB ConfigMap keeps about 450 bytes.
//
// The codec is S2 (klauspost/compress, Snappy's successor) with a
// dictionary, chosen over zstd with one by measure (BenchmarkPack, and
// docs/benchmarks.md): zstd keeps 270 bytes of that ConfigMap but takes
// 13 µs to pack it, most of it resetting its 256 KB match table for the
// dictionary; S2 takes under 2 µs and unpacks in a third of one, with no
// encoder state to share. An update packs its new state and unpacks its
// old one, on the way to a diff of a few hundred µs.
//
// A type with fewer objects than a dictionary's sample is left as JSON:
// it is not worth the trouble.
const (
	dictSample   = 8        // objects a dictionary is made of
	maxDictBytes = 16 << 10 // ... at most
)

// packer holds the dictionaries of every type.
type packer struct {
	mu    sync.Mutex
	types map[string]*typePacker // by GroupVersionResource
}

func newPacker() *packer { return &packer{types: map[string]*typePacker{}} }

// forType returns the packer for one type (nil, which packs nothing, when
// p is nil: packing is off).
func (p *packer) forType(gvr string) *typePacker {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.types[gvr]
	if t == nil {
		t = &typePacker{}
		p.types[gvr] = t
	}
	return t
}

// typePacker packs one type's objects, shared by the targets of the type
// (one per namespace watched).
type typePacker struct {
	dict atomic.Pointer[s2.Dict]

	mu      sync.Mutex
	samples []byte
	sampled int
}

// scratch holds packing buffers: S2 wants room for the worst case, and
// the packed object is then copied at its size.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// pack returns raw packed, and the dictionary it is packed with; or raw
// itself and nil when the type has no dictionary yet (its first objects)
// or packing would not make it smaller.
func (p *typePacker) pack(raw []byte) ([]byte, *s2.Dict) {
	if p == nil {
		return raw, nil
	}
	d := p.dict.Load()
	if d == nil {
		if d = p.sample(raw); d == nil {
			return raw, nil
		}
	}
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	if n := s2.MaxEncodedLen(len(raw)); n < 0 {
		return raw, nil // too large for a block
	} else if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	packed := d.Encode((*buf)[:cap(*buf)], raw)
	if cap(*buf) > maxKeptLine {
		*buf = nil // one huge object is no reason to keep its size
	}
	if len(packed) >= len(raw) {
		return raw, nil
	}
	return bytes.Clone(packed), d
}

// sample adds raw to the type's sample, and makes the dictionary once the
// sample is complete.
func (p *typePacker) sample(raw []byte) *s2.Dict {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.dict.Load(); d != nil {
		return d
	}
	p.samples = append(p.samples, raw...)
	if p.sampled++; p.sampled < dictSample {
		return nil
	}
	// The end of a dictionary is the cheapest to refer to: keep the last
	// samples whole. Every object starts as the last sample does.
	d := s2.MakeDict(bytes.Clone(p.samples[max(0, len(p.samples)-maxDictBytes):]), raw[:min(len(raw), 32)])
	p.samples = nil
	if d != nil {
		p.dict.Store(d)
	}
	return d
}

// unpack returns the JSON of an object packed with d.
func unpack(d *s2.Dict, packed []byte) ([]byte, error) {
	n, err := s2.DecodedLen(packed)
	if err != nil {
		return nil, err
	}
	raw, err := d.Decode(make([]byte, n), packed)
	if err != nil {
		return nil, fmt.Errorf("unpack: %w", err)
	}
	return raw, nil
}
