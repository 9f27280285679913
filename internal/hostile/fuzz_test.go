package hostile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/layouts"
	"github.com/stateproc/stateproc/operatoredit"
	"github.com/stateproc/stateproc/prunettl"
	"github.com/stateproc/stateproc/rescale"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/storage"
)

// fuzzSeeds are the savepoints the fuzz test mutates: the corpus's valid
// one (every kind of state, uncompressed) and small savepoints of the
// example jobs (Avro values, TTL, timers, operator and broadcast state,
// zstd blocks).
var fuzzSeeds = sync.OnceValue(func() []map[string][]byte {
	seeds := []map[string][]byte{Valid()}
	for _, name := range []string{"tiny", "gateway-drained-p2-heap", "gateway-p3-heap-zstd"} {
		dir := filepath.Join("../../testdata/savepoints/v2", name)
		entries, err := os.ReadDir(dir)
		if err != nil {
			panic(err)
		}
		files := map[string][]byte{}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				panic(err)
			}
			files[e.Name()] = b
		}
		seeds = append(seeds, files)
	}
	return seeds
})

// mutate applies ops to a copy of files, five bytes an op, below the
// checksums, and reseals it. An op changes a byte of the metadata body,
// inserts or deletes one (keeping the body length field true), changes a
// byte of a block's stored payload, or sets a block's raw length.
func mutate(files map[string][]byte, ops []byte) map[string][]byte {
	out := map[string][]byte{}
	for name, b := range files {
		out[name] = bytes.Clone(b)
	}
	var data []string
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if name != MetadataName {
			data = append(data, name)
		}
	}
	for ; len(ops) >= 5; ops = ops[5:] {
		kind, a, v := ops[0]%5, int(binary.BigEndian.Uint16(ops[1:])), ops[3]
		m := out[MetadataName]
		if len(m) < preambleLen+8+4 {
			break
		}
		body := m[preambleLen+8 : len(m)-4]
		switch kind {
		case 0:
			if len(body) > 0 {
				body[a%len(body)] ^= v | 1
			}
		case 1, 2:
			at := 0
			if len(body) > 0 {
				at = a % len(body)
			}
			nb := slices.Clone(body)
			if kind == 1 {
				nb = slices.Insert(nb, at, v)
			} else if len(nb) > 0 {
				nb = slices.Delete(nb, at, at+1)
			}
			out[MetadataName] = MetadataFile(nb, binary.BigEndian.Uint32(m[8:]))
		case 3, 4:
			if len(data) == 0 {
				continue
			}
			f := out[data[int(v)%len(data)]]
			blocks := Blocks(f)
			if len(blocks) == 0 {
				continue
			}
			at := blocks[a%len(blocks)]
			stored := int(binary.BigEndian.Uint32(f[at+1:]))
			if kind == 4 {
				binary.BigEndian.PutUint32(f[at+5:], binary.BigEndian.Uint32(ops[1:])^uint32(ops[4])<<24)
			} else if stored > 0 {
				f[at+blockHeader+(int(ops[4])<<16+a)%stored] ^= v | 1
			}
		}
	}
	Reseal(out)
	return out
}

// readable reports whether err is what the CLI maps to exit 4 (or, for a
// request the savepoint cannot meet, 2): anything else is a failure of the
// tool, not of its input.
func readable(err error) bool {
	return err == nil || errors.Is(err, savepoint.ErrCorrupt) || errors.Is(err, savepoint.ErrNotSavepoint) ||
		errors.Is(err, savepoint.ErrUnsupported) || errors.Is(err, serializers.ErrDecode) ||
		errors.Is(err, export.ErrUnmappable) || errors.Is(err, rewrite.ErrRefused)
}

// FuzzSavepoint mutates whole savepoints below their checksums and runs
// them through verify, verify --deep, export and every rewrite: none may
// panic or fail other than as a corrupt savepoint does; an export that
// succeeds read nothing verify --deep refuses; a rewrite that read every
// segment succeeds only on a savepoint verify accepts; and what a rewrite
// publishes passes verify.
func FuzzSavepoint(f *testing.F) {
	for i := range fuzzSeeds() {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), []byte{0, 0, 40, 1, 0})
		f.Add(uint8(i), []byte{3, 0, 1, 0, 20, 4, 0, 0, 0, 7})
	}
	f.Fuzz(func(t *testing.T, seed uint8, ops []byte) {
		seeds := fuzzSeeds()
		files := mutate(seeds[int(seed)%len(seeds)], ops)
		dir := t.TempDir()
		sp := filepath.Join(dir, "sp")
		if err := os.Mkdir(sp, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(sp, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		src, err := layouts.Open(ctx, sp)
		if err != nil {
			if !readable(err) {
				t.Fatalf("open: %v", err)
			}
			return
		}
		defer src.Close()
		_, plain := inspect.Verify(ctx, src, inspect.VerifyOptions{Workers: 2})
		_, deep := inspect.Verify(ctx, src, inspect.VerifyOptions{Workers: 2, Deep: true})
		if !readable(plain) || !readable(deep) {
			t.Fatalf("verify: %v; verify --deep: %v", plain, deep)
		}

		staging, err := export.Stage(sp, filepath.Join(dir, "export"), false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = export.Run(ctx, src, staging, export.Options{Workers: 2, MaxRowsPerFile: 7, RowGroupRows: 3})
		staging.Abort()
		switch {
		case !readable(err):
			t.Fatalf("export: %v", err)
		case err == nil && deep != nil:
			t.Fatalf("export read a savepoint that verify --deep refuses: %v", deep)
		}

		m := src.Metadata()
		out := func(name string) rewrite.Options { return rewrite.Options{Out: filepath.Join(dir, name)} }
		check := func(what string, whole bool, err error, o rewrite.Options) {
			t.Helper()
			switch {
			case !readable(err):
				t.Fatalf("%s: %v", what, err)
			case err != nil:
				return
			case whole && plain != nil:
				t.Fatalf("%s rewrote a savepoint that verify refuses: %v", what, plain)
			}
			r, err := layouts.Open(ctx, o.Out)
			if err == nil {
				_, err = inspect.Verify(ctx, r, inspect.VerifyOptions{Workers: 2})
				r.Close()
			}
			if err != nil {
				t.Fatalf("%s published a savepoint that verify refuses: %v", what, err)
			}
		}
		o := out("pruned")
		_, err = prunettl.Run(ctx, src, sp, prunettl.Options{Now: m.CreatedAt, Workers: 2}, o)
		check("prune-ttl", false, err, o)
		if len(m.Operators) == 0 {
			return
		}
		uid := m.Operators[0].UID
		o = out("renamed")
		_, err = operatoredit.Rename(ctx, src, sp, uid, uid+"-renamed", o)
		check("operator rename", true, err, o)
		o = out("removed")
		_, err = operatoredit.Remove(ctx, src, sp, m.Operators[len(m.Operators)-1].UID, o)
		check("operator remove", len(m.Operators) == 1, err, o)
		maxP := 0
		for _, op := range m.Operators {
			maxP = max(maxP, op.MaxParallelism)
		}
		o = out("rescaled")
		_, err = rescale.Run(ctx, src, sp, rescale.Options{MaxParallelism: min(2*maxP, 32768), Workers: 2, Memory: 1 << 20}, o)
		check("rescale", true, err, o)
	})
}

// TestFuzzSeedsAreWhole: the seeds read, verify and rewrite cleanly, so
// that what the fuzz test finds comes from its mutations.
func TestFuzzSeedsAreWhole(t *testing.T) {
	ctx := context.Background()
	for i, files := range fuzzSeeds() {
		resealed := mutate(files, nil)
		for name, b := range files {
			if !bytes.Equal(resealed[name], b) {
				t.Errorf("seed %d: resealing %s without a mutation changed it", i, name)
			}
		}
		dir := filepath.Join(t.TempDir(), "sp")
		os.Mkdir(dir, 0o755)
		for name, b := range files {
			os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		src, err := layouts.OpenDir(ctx, storage.LocalDir(dir))
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if _, err := inspect.Verify(ctx, src, inspect.VerifyOptions{Deep: true}); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
		src.Close()
	}
}
