package watcher

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// Objects of one type share most of their bytes: field names, labels,
// images, managers, the shape of their status. So each type's cached
// objects are compressed with zstd against a dictionary made of the
// type's first objects: a 1.6 KB ConfigMap keeps about 300 bytes, where
// zstd without a dictionary keeps 550 (docs/benchmarks.md). Packing costs
// about 10 µs an object, unpacking a few, on the way to a diff of
// hundreds. A type with fewer objects than a dictionary's sample is left
// as JSON: it is not worth an encoder's attention.
const (
	dictSample   = 8        // objects a dictionary is made of
	maxDictBytes = 16 << 10 // ... at most
	// encoderWindow bounds how far back an encoder looks, and so its
	// memory: past the dictionary and the start of a large object.
	encoderWindow = 64 << 10
)

// packer holds the dictionaries of every type, and the encoders they
// share.
type packer struct {
	encoders encoderPool
	mu       sync.Mutex
	types    map[string]*typePacker // by GroupVersionResource
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
		t = &typePacker{encoders: &p.encoders}
		p.types[gvr] = t
	}
	return t
}

// typePacker packs one type's objects, shared by the targets of the type
// (one per namespace watched).
type typePacker struct {
	encoders *encoderPool
	dict     atomic.Pointer[dictionary]

	mu      sync.Mutex
	samples []byte
	sampled int
}

// dictionary is one type's zstd dictionary and its decoder; it never
// changes, so objects packed with it can always be unpacked.
type dictionary struct {
	id      uint32
	content []byte
	decoder *zstd.Decoder
}

var lastDictID atomic.Uint32

// pack returns raw packed, and the dictionary it is packed with; or raw
// itself and nil when the type has no dictionary yet (its first objects)
// or packing would not make it smaller.
func (p *typePacker) pack(raw []byte) ([]byte, *dictionary) {
	if p == nil {
		return raw, nil
	}
	d := p.dict.Load()
	if d == nil {
		if d = p.sample(raw); d == nil {
			return raw, nil
		}
	}
	packed := p.encoders.encode(d, raw)
	if packed == nil || len(packed) >= len(raw) {
		return raw, nil
	}
	return packed, d
}

// sample adds raw to the type's sample, and makes the dictionary once the
// sample is complete.
func (p *typePacker) sample(raw []byte) *dictionary {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.dict.Load(); d != nil {
		return d
	}
	p.samples = append(p.samples, raw...)
	if p.sampled++; p.sampled < dictSample {
		return nil
	}
	// zstd reaches the end of a dictionary most cheaply: keep the last
	// samples whole.
	content := bytes.Clone(p.samples[max(0, len(p.samples)-maxDictBytes):])
	p.samples = nil
	id := lastDictID.Add(1)
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderDictRaw(id, content))
	if err != nil {
		return nil // not for a raw dictionary of this size; the type stays unpacked
	}
	d := &dictionary{id: id, content: content, decoder: dec}
	p.dict.Store(d)
	return d
}

func (d *dictionary) unpack(packed []byte) ([]byte, error) {
	return d.decoder.DecodeAll(packed, nil)
}

// encoderPool shares a few zstd encoders among all types: an encoder
// costs about 700 KB, a type's dictionary 16 KB, so there is one encoder
// per core rather than one per type. An encoder switches dictionaries in
// a few microseconds; objects come in runs of one type (a list, a
// rollout), so it seldom has to.
type encoderPool struct {
	once sync.Once
	free chan *dictEncoder
}

type dictEncoder struct {
	*zstd.Encoder
	dictID uint32
	buf    []byte
}

// encode returns raw packed with d (nil if it cannot be).
func (e *encoderPool) encode(d *dictionary, raw []byte) []byte {
	e.once.Do(func() {
		n := runtime.GOMAXPROCS(0)
		e.free = make(chan *dictEncoder, n)
		for range n {
			e.free <- &dictEncoder{}
		}
	})
	enc := <-e.free
	defer func() { e.free <- enc }()
	if enc.dictID != d.id {
		var err error
		if enc.Encoder == nil {
			// The fastest level: the dictionary does most of the work,
			// and better levels gain a few percent for twice the time.
			enc.Encoder, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
				zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(encoderWindow), zstd.WithEncoderCRC(false), zstd.WithEncoderDictRaw(d.id, d.content))
		} else {
			err = enc.ResetWithOptions(nil, zstd.WithEncoderDictRaw(d.id, d.content))
		}
		if err != nil {
			enc.Encoder, enc.dictID = nil, 0
			return nil
		}
		enc.dictID = d.id
	}
	enc.buf = enc.EncodeAll(raw, enc.buf[:0])
	packed := bytes.Clone(enc.buf)
	if cap(enc.buf) > maxKeptLine {
		enc.buf = nil // one huge object is no reason to keep its size
	}
	return packed
}
