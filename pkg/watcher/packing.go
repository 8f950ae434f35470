package watcher

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// Objects of one type share most of their bytes: field names, labels,
// images, managers, the shape of their status. So each type's cached
// objects are compressed with zstd against a dictionary made of the
// type's first objects: a 1.6 KB ConfigMap keeps about 300 bytes, where
// zstd without a dictionary keeps 550 (docs/benchmarks.md). Packing costs
// about 10 µs an object, unpacking one, on the way to a diff of
// hundreds. A type with fewer objects than a dictionary's sample is left
// as JSON: it is not worth an encoder's attention.
const (
	dictSample   = 8        // objects a dictionary is made of
	maxDictBytes = 16 << 10 // ... at most
	// encoderWindow bounds how far back an encoder looks, and so its
	// memory: past the dictionary and the start of a large object.
	encoderWindow = 64 << 10
)

// packer holds the dictionaries of every type, and the codec they
// share.
type packer struct {
	codec codec
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
		t = &typePacker{codec: &p.codec}
		p.types[gvr] = t
	}
	return t
}

// typePacker packs one type's objects, shared by the targets of the type
// (one per namespace watched).
type typePacker struct {
	codec *codec
	dict  atomic.Pointer[dictionary]

	mu      sync.Mutex
	samples []byte
	sampled int
}

// dictionary is one type's zstd dictionary; it never changes, so objects
// packed with it can always be unpacked.
type dictionary struct {
	id      uint32
	content []byte
	codec   *codec
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
	packed := p.codec.encode(d, raw)
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
	d := &dictionary{id: lastDictID.Add(1), content: bytes.Clone(p.samples[max(0, len(p.samples)-maxDictBytes):]), codec: p.codec}
	p.samples = nil
	p.dict.Store(d)
	return d
}

func (d *dictionary) unpack(packed []byte) ([]byte, error) {
	return d.codec.decode(d, packed)
}

// codec is the zstd encoder and decoder every type shares: an encoder
// costs about 1.5 MB, a type's dictionary 16 KB, so there is one rather
// than one per type. Packing is a tenth of the work of caching an object,
// so one codec keeps up with every core: the sync caches about 10,000
// objects a second here, one codec packs 100,000. It switches
// dictionaries in a few microseconds; objects come in runs of one type (a
// list, a rollout), so it seldom has to.
type codec struct {
	mu      sync.Mutex
	enc     *zstd.Encoder
	encDict uint32 // the dictionary enc is set up with
	dec     *zstd.Decoder
	known   map[uint32]bool // the dictionaries dec has
	buf     []byte
}

// encode returns raw packed with d (nil if it cannot be: the options are
// fixed, so never in practice).
func (c *codec) encode(d *dictionary, raw []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.encDict != d.id {
		var err error
		if c.enc == nil {
			// The fastest level: the dictionary does most of the work,
			// and better levels gain a few percent for twice the time.
			c.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
				zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(encoderWindow), zstd.WithEncoderCRC(false), zstd.WithEncoderDictRaw(d.id, d.content))
		} else {
			err = c.enc.ResetWithOptions(nil, zstd.WithEncoderDictRaw(d.id, d.content))
		}
		if err != nil {
			c.enc, c.encDict = nil, 0
			return nil
		}
		c.encDict = d.id
	}
	c.buf = c.enc.EncodeAll(raw, c.buf[:0])
	packed := bytes.Clone(c.buf)
	if cap(c.buf) > maxKeptLine {
		c.buf = nil // one huge object is no reason to keep its size
	}
	return packed
}

// decode returns packed unpacked with d.
func (c *codec) decode(d *dictionary, packed []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	switch {
	case c.dec == nil:
		c.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderDictRaw(d.id, d.content))
		c.known = map[uint32]bool{}
	case !c.known[d.id]:
		err = c.dec.ResetWithOptions(nil, zstd.WithDecoderDictRaw(d.id, d.content))
	}
	if err != nil {
		c.dec = nil
		return nil, err
	}
	c.known[d.id] = true
	return c.dec.DecodeAll(packed, nil)
}
