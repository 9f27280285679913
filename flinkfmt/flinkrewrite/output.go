package flinkrewrite

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"runtime"
	"sync"

	"github.com/stateproc/stateproc/flinkfmt"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
)

// Options are what every rewrite takes.
type Options struct {
	// InlineThreshold is the size up to which a written state stream goes
	// into the metadata, as Flink's state.storage.fs.memory-threshold does:
	// 0 means flinkfmt.DefaultInlineThreshold, a negative value writes every
	// stream to a file.
	InlineThreshold int
	// Workers is how many goroutines read and write; 0 means one per core.
	Workers int
	// Progress, when set, is told the bytes of input processed so far and
	// in all, for a progress bar.
	Progress func(done, total int64)
}

func (o *Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func (o *Options) inline() int {
	if o.InlineThreshold == 0 {
		return flinkfmt.DefaultInlineThreshold
	}
	return o.InlineThreshold
}

// refused wraps err, a reason a request cannot succeed, as a refusal.
func refused(err error) error { return fmt.Errorf("%w: %w", rewrite.ErrRefused, err) }

// checkWritable refuses inputs whose metadata this package cannot write
// again: versions other than 2 to 5, and handles the metadata writer does
// not keep whole. Everything the output's metadata holds is either such a
// handle copied or one this package makes, so the check is made on the
// input, before anything is written.
func checkWritable(m *flinkfmt.Metadata) ([]byte, error) {
	b, err := flinkfmt.EncodeMetadata(m)
	if err != nil {
		return nil, refused(err)
	}
	return b, nil
}

// output is the savepoint a rewrite writes: its staging, the names its
// files take and the input files copied into it.
type output struct {
	ctx    context.Context
	dst    storage.Target
	src    *flinkfmt.Reader
	inline int
	seed   [sha256.Size]byte
	meter  *rewrite.Meter

	mu sync.Mutex
	// taken maps every file name of the output, and every name the input's
	// handles use, to the input file it holds ("" for a new file).
	taken map[string]string
	// copied maps an input file to its name in the output.
	copied map[string]string
}

// newOutput prepares the output of a rewrite of src described by what; the
// names of its new files depend only on the input's metadata and what.
func newOutput(ctx context.Context, src *flinkfmt.Reader, inputMeta []byte, dst storage.Target, what string, opts Options, meter *rewrite.Meter) (*output, error) {
	o := &output{ctx: ctx, dst: dst, src: src, inline: opts.inline(), meter: meter,
		taken: map[string]string{flinkfmt.MetadataFile: ""}, copied: map[string]string{}}
	h := sha256.New()
	h.Write(inputMeta)
	h.Write([]byte(what))
	h.Sum(o.seed[:0])
	var err error
	forEachStream(src.Metadata(), func(s *flinkfmt.StreamHandle) {
		if err != nil || s.Kind != flinkfmt.StreamRelativeFile && s.Kind != flinkfmt.StreamFile {
			return
		}
		var dir storage.Dir
		var name string
		if dir, name, err = src.Locate(s); err == nil {
			o.taken[path.Base(name)] = dir.Location() + "\x00" + name
		}
	})
	return o, err
}

// fileName returns a new file name, shaped as the UUIDs Flink names its
// files with, from the seed and what the file is; never one the output or
// the input uses.
func (o *output) fileName(what string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.newNameLocked(what)
}

func (o *output) newNameLocked(what string) string {
	for i := 0; ; i++ {
		h := sha256.New()
		h.Write(o.seed[:])
		fmt.Fprintf(h, "%s/%d", what, i)
		var b [sha256.Size]byte
		h.Sum(b[:0])
		b[6] = b[6]&0x0F | 0x50
		b[8] = b[8]&0x3F | 0x80
		name := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		if _, ok := o.taken[name]; !ok {
			o.taken[name] = ""
			return name
		}
	}
}

// stream starts a new state stream of the output.
func (o *output) stream(what string) *flinkfmt.StreamWriter {
	return flinkfmt.NewStreamWriter(o.ctx, o.dst, o.fileName(what), o.inline)
}

// keepStream copies what a stream handle refers to into the output and
// returns the handle that refers to the copy.
func (o *output) keepStream(s *flinkfmt.StreamHandle) (*flinkfmt.StreamHandle, error) {
	if s == nil {
		return nil, nil
	}
	switch s.Kind {
	case flinkfmt.StreamInline:
		return s, nil
	case flinkfmt.StreamKeyGroups:
		k, err := o.keepKeyed(s.KeyGroups)
		if err != nil {
			return nil, err
		}
		c := *s
		c.KeyGroups = k
		return &c, nil
	case flinkfmt.StreamRelativeFile, flinkfmt.StreamFile:
	default:
		return nil, fmt.Errorf("flinkrewrite: a %s stream handle cannot be copied", s.Kind)
	}
	dir, name, err := o.src.Locate(s)
	if err != nil {
		return nil, err
	}
	out, err := o.copyFile(dir, name)
	if err != nil {
		return nil, err
	}
	if s.Kind == flinkfmt.StreamRelativeFile && out == s.Name {
		return s, nil
	}
	return &flinkfmt.StreamHandle{Kind: flinkfmt.StreamRelativeFile, Name: out, Size: s.Size}, nil
}

// copyFile copies an input file into the output once, under its base name
// unless another input file has it, and returns its name there.
func (o *output) copyFile(dir storage.Dir, name string) (string, error) {
	loc := dir.Location() + "\x00" + name
	o.mu.Lock()
	out, done := o.copied[loc]
	if !done {
		out = path.Base(name)
		if holder, ok := o.taken[out]; ok && holder != loc {
			out = o.newNameLocked("copy of " + loc)
		}
		o.taken[out], o.copied[loc] = loc, out
	}
	o.mu.Unlock()
	if done {
		return out, nil
	}
	f, err := dir.Open(o.ctx, name)
	if err != nil {
		return "", fmt.Errorf("flinkrewrite: opening %s: %w", name, err)
	}
	defer f.Close()
	// The store copies the file itself where the input lies in it.
	if err := o.dst.Copy(o.ctx, dir, name, out); err != nil {
		return "", fmt.Errorf("flinkrewrite: copying %s: %w", name, err)
	}
	o.meter.Add(f.Size())
	return out, nil
}

func (o *output) keepKeyed(k *flinkfmt.KeyedHandle) (*flinkfmt.KeyedHandle, error) {
	if k == nil {
		return nil, nil
	}
	c := *k
	var err error
	switch k.Kind {
	case flinkfmt.KeyedKeyGroups, flinkfmt.KeyedSavepointKeyGroups, flinkfmt.KeyedKeyGroupsV2:
		c.Stream, err = o.keepStream(k.Stream)
	case flinkfmt.KeyedIncremental, flinkfmt.KeyedIncrementalV2:
		if c.Meta, err = o.keepStream(k.Meta); err == nil {
			if c.Shared, err = o.keepNamed(k.Shared); err == nil {
				c.Private, err = o.keepNamed(k.Private)
			}
		}
	default:
		err = fmt.Errorf("flinkrewrite: a %s keyed handle cannot be copied", k.Kind)
	}
	return &c, err
}

func (o *output) keepNamed(l []flinkfmt.NamedHandle) ([]flinkfmt.NamedHandle, error) {
	out := make([]flinkfmt.NamedHandle, len(l))
	for i, f := range l {
		h, err := o.keepStream(f.Handle)
		if err != nil {
			return nil, err
		}
		out[i] = flinkfmt.NamedHandle{LocalPath: f.LocalPath, Handle: h}
	}
	return out, nil
}

func (o *output) keepOperatorHandle(h *flinkfmt.OperatorStateHandle) (*flinkfmt.OperatorStateHandle, error) {
	if h == nil {
		return nil, nil
	}
	s, err := o.keepStream(h.Stream)
	return &flinkfmt.OperatorStateHandle{States: h.States, Stream: s}, err
}

// keepSubtask copies every handle of a subtask's state; managed keyed
// state too unless keyed is false, when the caller writes its own.
func (o *output) keepSubtask(st flinkfmt.Subtask, keyed bool) (flinkfmt.Subtask, error) {
	out := flinkfmt.Subtask{Index: st.Index, Finished: st.Finished}
	var errs [5]error
	out.ManagedOperator, errs[0] = o.keepOperatorHandle(st.ManagedOperator)
	out.RawOperator, errs[1] = o.keepOperatorHandle(st.RawOperator)
	if keyed {
		out.ManagedKeyed, errs[2] = o.keepKeyed(st.ManagedKeyed)
	}
	out.RawKeyed, errs[3] = o.keepKeyed(st.RawKeyed)
	for _, l := range []struct {
		in  []flinkfmt.ChannelHandle
		out *[]flinkfmt.ChannelHandle
	}{{st.InputChannels, &out.InputChannels}, {st.ResultSubpartitions, &out.ResultSubpartitions}} {
		for _, c := range l.in {
			s, err := o.keepStream(c.Stream)
			if err != nil {
				errs[4] = err
				break
			}
			c.Stream = s
			*l.out = append(*l.out, c)
		}
	}
	return out, errors.Join(errs[:]...)
}

// keepOperator copies an operator the rewrite does not change.
func (o *output) keepOperator(op *flinkfmt.Operator) (*flinkfmt.Operator, error) {
	c := *op
	var err error
	if c.Coordinator, err = o.keepStream(op.Coordinator); err != nil {
		return nil, err
	}
	c.Subtasks = make([]flinkfmt.Subtask, len(op.Subtasks))
	for i, st := range op.Subtasks {
		if c.Subtasks[i], err = o.keepSubtask(st, true); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// finish writes the output's metadata, the last file of a savepoint.
func (o *output) finish(m *flinkfmt.Metadata) error {
	b, err := flinkfmt.EncodeMetadata(m)
	if err != nil {
		return err
	}
	w, err := o.dst.Create(o.ctx, flinkfmt.MetadataFile)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// outputMetadata is the output's metadata before its operators are added:
// the input's version, checkpoint id, master states and properties.
func outputMetadata(in *flinkfmt.Metadata) *flinkfmt.Metadata {
	return &flinkfmt.Metadata{Version: in.Version, CheckpointID: in.CheckpointID, Masters: in.Masters, Properties: in.Properties}
}

// forEachStream calls f with every stream handle of m, nested ones too.
func forEachStream(m *flinkfmt.Metadata, f func(*flinkfmt.StreamHandle)) {
	var stream func(s *flinkfmt.StreamHandle)
	var keyed func(k *flinkfmt.KeyedHandle)
	stream = func(s *flinkfmt.StreamHandle) {
		if s == nil {
			return
		}
		f(s)
		keyed(s.KeyGroups)
	}
	keyed = func(k *flinkfmt.KeyedHandle) {
		if k == nil {
			return
		}
		stream(k.Stream)
		stream(k.Meta)
		for _, l := range [][]flinkfmt.NamedHandle{k.Shared, k.Private, k.Increments} {
			for _, n := range l {
				stream(n.Handle)
			}
		}
		for _, l := range [][]*flinkfmt.KeyedHandle{k.Materialized, k.NonMaterialized} {
			for _, c := range l {
				keyed(c)
			}
		}
	}
	for _, op := range m.Operators {
		stream(op.Coordinator)
		for _, st := range op.Subtasks {
			for _, h := range []*flinkfmt.OperatorStateHandle{st.ManagedOperator, st.RawOperator} {
				if h != nil {
					stream(h.Stream)
				}
			}
			keyed(st.ManagedKeyed)
			keyed(st.RawKeyed)
			for _, c := range append(append([]flinkfmt.ChannelHandle(nil), st.InputChannels...), st.ResultSubpartitions...) {
				stream(c.Stream)
			}
		}
	}
}

// fileBytes sums the files the state of op refers to, those of its managed
// keyed state only when keyed is true: what copying them costs.
func fileBytes(op *flinkfmt.Operator, keyed bool) int64 {
	c := *op
	if !keyed {
		c.Subtasks = make([]flinkfmt.Subtask, len(op.Subtasks))
		for i, st := range op.Subtasks {
			st.ManagedKeyed = nil
			c.Subtasks[i] = st
		}
	}
	var n int64
	forEachStream(&flinkfmt.Metadata{Operators: []*flinkfmt.Operator{&c}}, func(s *flinkfmt.StreamHandle) {
		if s.Kind == flinkfmt.StreamRelativeFile || s.Kind == flinkfmt.StreamFile {
			n += s.Size
		}
	})
	return n
}
