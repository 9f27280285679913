package chkstore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/stateproc/stateproc/engine/internal/chkdir"
	"github.com/stateproc/stateproc/engine/pebblebackend"
	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/storage"
)

// SnapshotNative writes the part of a Pebble subtask in an incremental
// checkpoint, subtask subtask of operator op (uid uid), whose database is b: a native checkpoint of its database, whose immutable files go
// to shared/ (only those that no earlier checkpoint of the attempt put
// there) and whose small files go to the checkpoint's directory. The shared
// files are synced (in a bucket: uploaded, which makes them durable) before
// the subtask acknowledges, so they are durable before the checkpoint that
// references them is published.
func (s *Store) SnapshotNative(ctx context.Context, cp *Pending, uid string, op, subtask int, b *pebblebackend.Backend) error {
	tmp := filepath.Join(s.work, fmt.Sprintf("%s-%d.chk-%d", chkdir.Sanitize(uid), subtask, cp.id))
	native, err := b.Checkpoint(tmp)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	db := chkdir.DB{Operator: uid, Subtask: subtask, DB: native.DB, Keyspace: native.Keyspace}
	dir := chkdir.NativeDirName(op, subtask)
	var shared, reused int64
	for _, f := range native.Files {
		src := filepath.Join(tmp, f.Name)
		if !f.Immutable {
			name := path.Join(dir, f.Name)
			size, crc, err := copyToStaging(ctx, cp.staging, src, name)
			if err != nil {
				return err
			}
			db.Files = append(db.Files, chkdir.File{Name: f.Name, Path: path.Join(chkdir.Name(cp.id), name), Size: size, CRC32C: crc})
			continue
		}
		nf, added, err := s.share(ctx, src, f, chkdir.SharedName(uid, subtask, native.DB, f.Name))
		if err != nil {
			return err
		}
		if added {
			shared += f.Size
		} else {
			reused += f.Size
		}
		db.Files = append(db.Files, nf)
	}
	if shared > 0 && s.bucket == nil {
		if err := chkdir.SyncDir(filepath.Join(s.root, chkdir.SharedDir)); err != nil {
			return err
		}
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.native = append(cp.native, db)
	cp.shared += shared
	cp.reused += reused
	return nil
}

// share returns the shared file rel for the immutable file src, writing it
// unless this attempt already did; added says whether it did. On disk it
// is linked where it can be; in a bucket it is uploaded.
func (s *Store) share(ctx context.Context, src string, f pebblebackend.CheckpointFile, rel string) (nf chkdir.File, added bool, err error) {
	s.mu.Lock()
	known, ok := s.published[rel]
	s.mu.Unlock()
	if ok {
		if known.Size != f.Size {
			return nf, false, fmt.Errorf("engine: immutable file %s was %d bytes and is now %d", src, known.Size, f.Size)
		}
		return known, false, nil
	}
	var crc uint32
	if s.bucket != nil {
		var size int64
		if size, crc, err = s.bucket.Upload(ctx, src, rel); err != nil {
			return nf, false, fmt.Errorf("engine: publishing %s: %w", rel, err)
		}
		if size != f.Size {
			return nf, false, fmt.Errorf("engine: immutable file %s is %d bytes, its database lists %d", src, size, f.Size)
		}
	} else {
		dst := filepath.Join(s.root, filepath.FromSlash(rel))
		if crc, err = chkdir.LinkOrCopy(src, dst, true); err != nil {
			return nf, false, fmt.Errorf("engine: publishing %s: %w", dst, err)
		}
	}
	nf = chkdir.File{Name: f.Name, Path: rel, Size: f.Size, CRC32C: crc}
	s.mu.Lock()
	s.published[rel] = nf
	s.mu.Unlock()
	return nf, true, nil
}

// copyToStaging copies the file src into the checkpoint's directory as
// name, which the target syncs, and returns its size and CRC-32C.
func copyToStaging(ctx context.Context, st storage.Target, src, name string) (int64, uint32, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	out, err := st.Create(ctx, name)
	if err != nil {
		return 0, 0, err
	}
	h := crc.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("engine: copying %s: %w", src, err)
	}
	return n, h.Sum32(), nil
}

// writeManifest writes the list of an incremental checkpoint's native
// databases into its directory, in job order; a checkpoint without any
// gets none.
func (cp *Pending) writeManifest(ctx context.Context) error {
	if len(cp.native) == 0 {
		return nil
	}
	m := &chkdir.Manifest{Version: chkdir.Version, Databases: slices.Clone(cp.native)}
	uids := map[string]int{}
	for i, op := range cp.meta.Operators {
		uids[op.UID] = i
	}
	slices.SortFunc(m.Databases, func(a, b chkdir.DB) int {
		if d := uids[a.Operator] - uids[b.Operator]; d != 0 {
			return d
		}
		return a.Subtask - b.Subtask
	})
	b, err := chkdir.Encode(m)
	if err != nil {
		return err
	}
	out, err := cp.staging.Create(ctx, chkdir.ManifestName)
	if err != nil {
		return err
	}
	if _, err := out.Write(b); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
