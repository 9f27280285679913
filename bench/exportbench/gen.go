package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/examples/sessionfeatures/sessions"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// runGen writes a savepoint of the shape of the brief's sessions-large
// without running the job, which takes the better part of an hour on two
// cores: the SessionFeatures operators as the job's build declares them
// (parallelism 2, max parallelism 128), and for each user about 20
// category-counts entries with TTL timestamps within the last five days, a
// session value for one user in twenty, and an event-time timer per open
// session. Values are synthetic but of the job's types, encoded by the
// restored serializers.
func runGen(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory to write the savepoint to (must not exist)")
	users := fs.Int("users", 1_000_000, "number of users")
	perUser := fs.Int("categories", 20, "category-counts entries per user")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("gen: -out is required")
	}
	g, err := newGenerator(*users, *perUser)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := g.write(ctx, *out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "gen: %d users, %d category-counts entries, %d sessions in %v\n", *users, g.entries, g.sessions, time.Since(start).Round(time.Millisecond))
	return nil
}

const (
	genNow        = int64(1_767_225_600_000) // 2026-01-01T00:00:00Z
	genCategories = 40
	genDay        = int64(24 * time.Hour / time.Millisecond)
)

var genStrides = []int{1, 3, 7, 9, 11, 13, 17, 19, 21, 23, 27, 29, 31, 33, 37, 39}

type generator struct {
	meta                       *savepoint.Metadata
	op                         int
	session, counts, timers    savepoint.StateRef
	sessionTTL                 bool
	sessionSer                 serializers.Serializer
	users, perUser             int
	byKeyGroup                 [][][]byte // user keys per key group, sorted
	entries, sessions          int
	categoryNames              [][]byte
	maxParallelism, subtaskCnt int
}

func newGenerator(users, perUser int) (*generator, error) {
	cfg := sessions.Config{Seed: 1, Users: int64(max(users, sessions.MinUsers)), Parallelism: 2, MaxParallelism: 128}
	src, err := sessions.NewSource(cfg)
	if err != nil {
		return nil, err
	}
	job, err := sessions.Build(cfg, src, nil)
	if err != nil {
		return nil, err
	}
	man, err := job.Manifest()
	if err != nil {
		return nil, err
	}
	ops, err := man.Model()
	if err != nil {
		return nil, err
	}
	// A manifest leaves operator state empty; the format wants one (here
	// empty) list per subtask.
	for i := range ops {
		for j := range ops[i].OperatorStates {
			ops[i].OperatorStates[j].Subtasks = make([][][]byte, ops[i].Parallelism)
		}
	}
	g := &generator{meta: &savepoint.Metadata{ID: 1, CreatedAt: genNow, Operators: ops}, users: users, perUser: min(perUser, genCategories), op: -1}
	for i := range ops {
		if st, ok := ops[i].State("category-counts"); ok && st.Kind == savepoint.Map {
			g.op = i
		}
	}
	if g.op < 0 {
		return nil, fmt.Errorf("gen: the SessionFeatures job has no category-counts map state")
	}
	op := &ops[g.op]
	g.maxParallelism, g.subtaskCnt = op.MaxParallelism, op.Parallelism
	for i, st := range op.States {
		switch st.Name {
		case "session":
			g.session, g.sessionTTL = savepoint.StateRef{Operator: g.op, State: i}, st.TTL != nil
			if g.sessionSer, err = serializers.Restore(st.Value); err != nil {
				return nil, err
			}
		case "category-counts":
			g.counts = savepoint.StateRef{Operator: g.op, State: i}
		}
	}
	for i, t := range op.Timers {
		if t.Name == "event-time" {
			g.timers = savepoint.StateRef{Operator: g.op, State: i, Timer: true}
		}
	}
	for c := range genCategories {
		g.categoryNames = append(g.categoryNames, fmt.Appendf(nil, "cat-%03d", c))
	}
	g.byKeyGroup = make([][][]byte, g.maxParallelism)
	for u := range users {
		k := fmt.Appendf(nil, "u-%d", u)
		kg := keygroup.Of(k, g.maxParallelism)
		g.byKeyGroup[kg] = append(g.byKeyGroup[kg], k)
	}
	for _, keys := range g.byKeyGroup {
		slices.SortFunc(keys, bytes.Compare)
	}
	return g, nil
}

// write writes one data file per subtask, both at once.
func (g *generator) write(ctx context.Context, dir string) error {
	staging, err := storage.Stage(dir, false)
	if err != nil {
		return err
	}
	w, err := snapshotfmt.NewWriter(staging, g.meta, snapshotfmt.Options{})
	if err != nil {
		staging.Abort()
		return err
	}
	counts := make([][2]int, g.subtaskCnt)
	eg, ctx := errgroup.WithContext(ctx)
	for sub := range g.subtaskCnt {
		eg.Go(func() error {
			f, err := w.CreateDataFile(ctx, fmt.Sprintf("data-%03d", sub))
			if err != nil {
				return err
			}
			kgs := keygroup.ForSubtask(sub, g.subtaskCnt, g.maxParallelism)
			for kg := kgs.Start; kg <= kgs.End; kg++ {
				n, s, err := g.keyGroup(f, kg)
				if err != nil {
					return err
				}
				counts[sub][0] += n
				counts[sub][1] += s
			}
			return f.Close()
		})
	}
	if err := eg.Wait(); err != nil {
		w.Abort()
		return err
	}
	for _, c := range counts {
		g.entries += c[0]
		g.sessions += c[1]
	}
	return w.Finish(ctx)
}

// keyGroup writes the three segments of one key group and returns its
// number of category-counts entries and sessions.
func (g *generator) keyGroup(f *snapshotfmt.DataFileWriter, kg int) (int, int, error) {
	rng := rand.New(rand.NewPCG(uint64(kg), 1))
	keys := g.byKeyGroup[kg]
	open := make([]bool, len(keys))
	for i := range open {
		open[i] = rng.IntN(20) == 0
	}
	var sessionsN, entries int
	var timers []savepoint.Entry
	seg, err := f.Segment(g.session, kg)
	if err != nil {
		return 0, 0, err
	}
	for i, k := range keys {
		if !open[i] {
			continue
		}
		last := genNow - rng.Int64N(genDay/24)
		v := map[string]any{"start_ts": time.UnixMilli(last - rng.Int64N(genDay/24)).UTC(), "last_ts": time.UnixMilli(last).UTC(), "clicks": int32(1 + rng.IntN(30))}
		var val []byte
		if g.sessionTTL {
			val = binary.BigEndian.AppendUint64(val, uint64(last))
		}
		if val, err = g.sessionSer.AppendAny(val, v); err != nil {
			return 0, 0, err
		}
		if err := seg.Add(&savepoint.Entry{Key: k, Value: val}); err != nil {
			return 0, 0, err
		}
		timers = append(timers, savepoint.Entry{Key: k, Timestamp: last + int64(sessions.SessionGap/time.Millisecond)})
		sessionsN++
	}
	if err := seg.Close(); err != nil {
		return 0, 0, err
	}
	if seg, err = f.Segment(g.counts, kg); err != nil {
		return 0, 0, err
	}
	val := make([]byte, 16)
	for _, k := range keys {
		// A stride coprime with the number of categories visits distinct
		// ones.
		first, stride := rng.IntN(genCategories), genStrides[rng.IntN(len(genStrides))]
		cats := make([]int, g.perUser)
		for j := range cats {
			cats[j] = (first + j*stride) % genCategories
		}
		slices.Sort(cats)
		for _, c := range cats {
			binary.BigEndian.PutUint64(val, uint64(genNow-rng.Int64N(5*genDay)))
			binary.BigEndian.PutUint64(val[8:], uint64(1+rng.IntN(10)))
			if err := seg.Add(&savepoint.Entry{Key: k, MapKey: g.categoryNames[c], Value: val}); err != nil {
				return 0, 0, err
			}
			entries++
		}
	}
	if err := seg.Close(); err != nil {
		return 0, 0, err
	}
	slices.SortFunc(timers, func(a, b savepoint.Entry) int {
		return cmp.Or(cmp.Compare(a.Timestamp, b.Timestamp), bytes.Compare(a.Key, b.Key))
	})
	if seg, err = f.Segment(g.timers, kg); err != nil {
		return 0, 0, err
	}
	for i := range timers {
		if err := seg.Add(&timers[i]); err != nil {
			return 0, 0, err
		}
	}
	return entries, sessionsN, seg.Close()
}
