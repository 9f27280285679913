package flinkfmt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stateproc/stateproc/flinkfmt/rocksdb"
	"github.com/stateproc/stateproc/flinkfmt/rocksdb/sst"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// The native RocksDB layout (incremental key-group handles, tags 5 and
// 11): the handle's metadata stream holds the keyed-state header, and its
// shared and private files are the files of one RocksDB instance, a
// RocksDB checkpoint of the subtask's database (RocksIncrementalSnapshotStrategy,
// RocksNativeFullSnapshotStrategy). Such a checkpoint holds only live
// files, so its tables are read as they are and its MANIFEST is not. Each
// state is the column family of its name; keys are the canonical layout's
// composite keys and values its values (list elements joined by the merge
// operator), so entries are parsed as canonical ones.

// nativeFiles are the files of a native handle by role.
type nativeFiles struct {
	tables  []NamedHandle
	options *NamedHandle
	// current and manifests are the files RocksDB opens the database by:
	// the reader reads the tables without them, but checks that they are
	// there, since without them RocksDB cannot open the checkpoint.
	current   *NamedHandle
	manifests []NamedHandle
	// dbChecked and dbErr hold checkDBFiles' verdict: every instance of
	// the handle shares it, so that the files are read once.
	dbChecked sync.Once
	dbErr     error
	// unreadable, when set, is why the instance cannot be read; it is
	// reported when entries are read, so that the states stay listed.
	unreadable error
}

// classifyNative sorts a native handle's files by their names in the
// RocksDB directory, which must be plain file names, each once. It
// returns notes on files that are neither read nor needed.
func classifyNative(h *KeyedHandle) (*nativeFiles, []string, error) {
	nf := &nativeFiles{}
	var notes []string
	optionsNo := int64(-1)
	seen := map[string]bool{}
	for _, list := range [][]NamedHandle{h.Shared, h.Private} {
		for _, f := range list {
			name := f.LocalPath
			if storage.CheckName(name) != nil || strings.Contains(name, "/") {
				return nil, nil, corruptf("native handle file %q is not a file name of a RocksDB directory", name)
			}
			if seen[name] {
				return nil, nil, corruptf("native handle lists file %q twice", name)
			}
			seen[name] = true
			if f.Handle == nil {
				return nil, nil, corruptf("native handle file %q without a stream handle", name)
			}
			switch {
			case strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".ldb"):
				nf.tables = append(nf.tables, f)
			case strings.HasPrefix(name, "OPTIONS-"):
				// The newest OPTIONS file has the largest number.
				if n, err := strconv.ParseInt(strings.TrimPrefix(name, "OPTIONS-"), 10, 64); err == nil && n > optionsNo {
					optionsNo, nf.options = n, &f
				}
			case name == "CURRENT":
				nf.current = &f
			case strings.HasPrefix(name, "MANIFEST-"):
				// A checkpoint's live tables are its files; the MANIFEST
				// would only list them again.
				nf.manifests = append(nf.manifests, f)
			case strings.HasSuffix(name, ".log"):
				// Flink writes with the write-ahead log disabled; a log
				// with records would hold writes no table has.
				if f.Handle.Size > 0 && nf.unreadable == nil {
					nf.unreadable = unsupportedf("native handle has a write-ahead log %s of %d bytes, which this reader does not replay", name, f.Handle.Size)
				}
			case strings.HasSuffix(name, ".blob"):
				if nf.unreadable == nil {
					nf.unreadable = unsupportedf("native handle has a blob file %s (RocksDB's BlobDB), which this reader does not read", name)
				}
			default:
				notes = append(notes, fmt.Sprintf("native handle file %s of %d bytes: not a RocksDB table or OPTIONS file, not read", name, f.Handle.Size))
			}
		}
	}
	return nf, notes, nil
}

// checkDBFiles checks the files RocksDB opens a checkpoint by: CURRENT
// names a MANIFEST of the handle, and that MANIFEST is there with the size
// the metadata records.
func (r *Reader) checkDBFiles(ctx context.Context, nf *nativeFiles) error {
	if nf.current == nil {
		return corruptf("native handle without a CURRENT file: RocksDB cannot open its database")
	}
	// Each is opened with the read of its tail, all of CURRENT: in a
	// bucket one request, no HEAD.
	const tail = 4 << 10
	f, name, err := r.openWindowed(ctx, nf.current.Handle, tail)
	if err != nil {
		return err
	}
	defer f.Close()
	const maxCurrent = 256
	if f.Size() > maxCurrent {
		return corruptf("%s (CURRENT) holds %d bytes, not the name of a MANIFEST", name, f.Size())
	}
	b := make([]byte, f.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	manifest, ok := strings.CutSuffix(string(b), "\n")
	i := slices.IndexFunc(nf.manifests, func(m NamedHandle) bool { return m.LocalPath == manifest })
	if !ok || i < 0 {
		return corruptf("%s (CURRENT) reads %q, not the name of a MANIFEST the handle lists", name, b)
	}
	m := nf.manifests[i]
	mf, mname, err := r.openWindowed(ctx, m.Handle, tail)
	if err != nil {
		return err
	}
	defer mf.Close()
	if want := m.Handle.Size; mf.Size() == 0 || want > 0 && mf.Size() != want {
		return corruptf("%s (%s) holds %d bytes, the metadata records %d", mname, m.LocalPath, mf.Size(), want)
	}
	return nil
}

// nativeInstance is the open RocksDB instance of one native handle: its
// tables grouped into the column families of the header's states. It holds
// each table's index block and, per state being read, one data block per
// table.
type nativeInstance struct {
	files []storage.File
	// byState maps the subtask header's state ids to their column family,
	// nil for a state without tables.
	byState []*rocksdb.ColumnFamily
	iters   []*rocksdb.Iter
}

func (n *nativeInstance) close() {
	for _, it := range n.iters {
		if it != nil {
			it.Close()
		}
	}
	for _, f := range n.files {
		f.Close()
	}
	n.files, n.iters, n.byState = nil, nil, nil
}

// iter returns the iterator of header state sid, nil when the state has
// no tables.
func (n *nativeInstance) iter(sid int) *rocksdb.Iter {
	if n.byState[sid] == nil {
		return nil
	}
	if n.iters[sid] == nil {
		n.iters[sid] = n.byState[sid].NewIter()
	}
	return n.iters[sid]
}

// A table in a bucket is read through a window (storage.Windowed), so that
// its blocks, which the iterators read in order, cost a request per window
// rather than one each. An instance's tables share tableWindows between
// them, each window at least minTableWindow: every worker of a walk opens
// its own instance, so this is held once per worker.
const (
	tableWindows   = 8 << 20
	minTableWindow = 128 << 10
)

func tableWindow(tables int) int64 {
	return max(minTableWindow, tableWindows/int64(max(tables, 1)))
}

// openNative opens the tables and the OPTIONS file of a native handle.
func (r *Reader) openNative(ctx context.Context, sk *subtaskKeyed) (*nativeInstance, error) {
	nf := sk.native
	if nf.unreadable != nil {
		return nil, nf.unreadable
	}
	inst := &nativeInstance{}
	ok := false
	defer func() {
		if !ok {
			inst.close()
		}
	}()
	nf.dbChecked.Do(func() { nf.dbErr = r.checkDBFiles(ctx, nf) })
	if nf.dbErr != nil {
		return nil, nf.dbErr
	}
	window := tableWindow(len(nf.tables))
	open := func(f NamedHandle) (storage.File, string, error) {
		file, name, err := r.openWindowed(ctx, f.Handle, window)
		if err != nil {
			return nil, name, err
		}
		inst.files = append(inst.files, file)
		return file, name + " (" + f.LocalPath + ")", nil
	}
	var opts *rocksdb.Options
	if nf.options != nil {
		file, name, err := open(*nf.options)
		if err != nil {
			return nil, err
		}
		if opts, err = rocksdb.ReadOptions(file, name); err != nil {
			return nil, err
		}
	}
	maxBlock := sst.DefaultMaxBlockSize
	if r.opts.MaxKeyGroupBytes < int64(maxBlock) {
		maxBlock = int(r.opts.MaxKeyGroupBytes)
	}
	var tables []*sst.Table
	for _, f := range nf.tables {
		file, name, err := open(f)
		if err != nil {
			return nil, err
		}
		t, err := sst.Open(file, name, sst.Options{MaxBlockSize: maxBlock})
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	inst.byState = make([]*rocksdb.ColumnFamily, len(sk.header.States))
	inst.iters = make([]*rocksdb.Iter, len(sk.header.States))
	if len(tables) == 0 {
		ok = true
		return inst, nil
	}
	cfs, err := rocksdb.Group(tables, opts)
	if err != nil {
		return nil, err
	}
	byName := map[string]int{}
	for sid, m := range sk.header.States {
		byName[m.Name] = sid
	}
	for _, cf := range cfs {
		sid, named := byName[cf.Name]
		if !named {
			if cf.Name == "default" {
				// Flink keeps no state in RocksDB's default column family
				// and does not read it on restore.
				continue
			}
			return nil, corruptf("column family %q holds %d tables (%s), but the keyed-state header has no state of that name", cf.Name, len(cf.Tables()), cf.Tables()[0].Name())
		}
		cf.MaxValueSize = int(min(r.opts.MaxKeyGroupBytes, int64(^uint(0)>>1)))
		inst.byState[sid] = cf
	}
	ok = true
	return inst, nil
}

// locateNative places an error of reading a native handle: in the table
// or OPTIONS file it names when it comes from package rocksdb or sst (with
// this package's sentinels added), else in file.
func locateNative(file, op string, kg int, err error) error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	off, msg := int64(-1), err.Error()
	var se *sst.Error
	if errors.As(err, &se) {
		file, off, msg = se.File, se.Offset, se.Err.Error()
	}
	kinds := []error{err}
	switch {
	case errors.Is(err, ErrUnsupported) || errors.Is(err, sst.ErrUnsupported):
		kinds = []error{ErrUnsupported, savepoint.ErrUnsupported, err}
	case errors.Is(err, ErrCorrupt) || errors.Is(err, sst.ErrCorrupt):
		kinds = []error{ErrCorrupt, savepoint.ErrCorrupt, snapshotfmt.ErrCorrupt, err}
	}
	return at(file, op, kg, off, &problem{msg: msg, kind: kinds})
}

// A key group of a native handle may be of any size, so it is streamed in
// chunks of at most this many entries or bytes of keys and values (a
// single value may be larger).
const (
	nativeChunkEntries = 4096
	nativeChunkBytes   = 1 << 20
)

// nativeCursor reads the native handles of an EntryIterator, one instance
// open at a time, and resumes within a key group from chunk to chunk.
type nativeCursor struct {
	sub  int // the subtask of inst, an index into Keyed.subtasks
	inst *nativeInstance
	// The key group being read: its step, the header state ids to read,
	// the next of them and the iterator positioned in the current one.
	active bool
	kg     int
	prefix []byte
	sids   []int
	si     int
	cur    *rocksdb.Iter
	// arenaHint is the size of the last chunk's keys and values, which
	// the next chunk's memory starts at.
	arenaHint int
}

func (c *nativeCursor) close() {
	if c.inst != nil {
		c.inst.close()
		c.inst = nil
	}
	c.active, c.cur = false, nil
}

// start positions the cursor at key group kg of subtask sub.
func (c *nativeCursor) start(it *EntryIterator, sub, kg int) error {
	k := it.k
	sk := k.subtasks[sub]
	if c.inst == nil || c.sub != sub {
		c.close()
		inst, err := k.r.openNative(it.ctx, sk)
		if err != nil {
			return locateNative(sk.file, k.Operator.ID.String(), kg, err)
		}
		c.inst, c.sub = inst, sub
	}
	prefix, err := rocksdb.KeyGroupPrefix(kg, k.Operator.MaxParallelism)
	if err != nil {
		return at(sk.file, k.Operator.ID.String(), kg, -1, corrupt(err))
	}
	c.active, c.kg, c.prefix, c.si, c.cur = true, kg, prefix, 0, nil
	c.sids = c.sids[:0]
	for sid, idx := range sk.ids {
		if it.state < 0 || it.state == idx {
			c.sids = append(c.sids, sid)
		}
	}
	return nil
}

// fill appends the next entries of the current key group to it.buf, at
// most a chunk's worth, and marks the cursor inactive at the key group's
// end. Keys and values are copied into memory of the chunk's own.
func (c *nativeCursor) fill(it *EntryIterator) error {
	k := it.k
	sk := k.subtasks[c.sub]
	arena := make([]byte, 0, c.arenaHint)
	p := &kgParser{k: k, sk: sk, kg: c.kg, state: it.state, out: &it.buf, prefix: prefixLen(k.Operator.MaxParallelism)}
	defer func() {
		c.arenaHint = min(len(arena), nativeChunkBytes)
		if p.warn != nil {
			p.warn.File = sk.file
			it.warnings = append(it.warnings, *p.warn)
		}
	}()
	for c.si < len(c.sids) {
		sid := c.sids[c.si]
		var ok bool
		if c.cur == nil {
			if c.cur = c.inst.iter(sid); c.cur == nil {
				c.si++
				continue
			}
			ok = c.cur.SeekPrefix(c.prefix)
		} else {
			ok = c.cur.Next()
		}
		idx := sk.ids[sid]
		m := k.States[idx]
		for ; ok; ok = c.cur.Next() {
			key, val := c.cur.Key(), c.cur.Value()
			start := len(arena)
			arena = append(append(arena, key...), val...)
			key = arena[start : start+len(key) : start+len(key)]
			val = arena[start+len(key) : len(arena) : len(arena)]
			if err := p.canonicalEntry(m, idx, key, val); err != nil {
				return at(sk.file, k.Operator.ID.String(), c.kg, -1, corrupt(fmt.Errorf("column family %q, key %x: %w", m.Name, key, err)))
			}
			if len(it.buf) >= nativeChunkEntries || len(arena) >= nativeChunkBytes {
				return nil
			}
		}
		if err := c.cur.Err(); err != nil {
			return locateNative(sk.file, k.Operator.ID.String(), c.kg, err)
		}
		c.cur = nil
		c.si++
	}
	c.active = false
	return nil
}
