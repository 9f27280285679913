package chkdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/stateproc/stateproc/internal/crc"
	"github.com/stateproc/stateproc/storage"
)

// Bucket is a checkpoint root in an object store. Nothing there can be
// renamed, so the layout is the same as on disk but published the storage
// layer's way: a checkpoint's objects are written under chk-<id>/ in place,
// its manifest before its _metadata, and _metadata last and create-only, so
// that a checkpoint exists exactly when its _metadata does. Shared files are
// uploaded under shared/ once and referenced afterwards; retention deletes
// them when no checkpoint does.
type Bucket struct {
	loc storage.Location
	dir storage.DirCloser
}

// OpenBucket opens the checkpoint root at location, a bucket URL.
func OpenBucket(ctx context.Context, location string) (*Bucket, error) {
	loc, err := storage.ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if !loc.IsBucket() {
		return nil, fmt.Errorf("engine: checkpoint root %s is not in a bucket", location)
	}
	d, err := storage.OpenDir(ctx, location, storage.Options{})
	if err != nil {
		return nil, err
	}
	return &Bucket{loc: loc, dir: d}, nil
}

// Close releases the connection.
func (b *Bucket) Close() error { return b.dir.Close() }

// Dir is the root as a Dir, for reading its files by their names relative
// to it (a manifest's paths).
func (b *Bucket) Dir() storage.Dir { return b.dir }

// Counters counts the root's traffic, for the checkpoints' statistics.
func (b *Bucket) Counters() *storage.Counters { return storage.CountersOf(b.dir) }

// Location is the URL of rel, a name relative to the root.
func (b *Bucket) Location(rel string) string { return b.loc.Join(rel).URL() }

// where names rel in messages, without the URL's parameters.
func (b *Bucket) where(rel string) string { return b.loc.Join(rel).String() }

// ReadManifest reads the incremental manifest of checkpoint id; ok is
// false when it has none.
func (b *Bucket) ReadManifest(ctx context.Context, id uint64) (*Manifest, bool, error) {
	return readManifest(ctx, b.dir, path.Join(Name(id), ManifestName), b.where(path.Join(Name(id), ManifestName)))
}

// checkpoints lists the ids of the checkpoint directories under the root,
// complete or not, ascending.
func (b *Bucket) checkpoints(ctx context.Context) (complete, all []uint64, err error) {
	objs, err := storage.ListUnder(ctx, b.dir, "chk-")
	if err != nil {
		return nil, nil, err
	}
	seen := map[uint64]bool{}
	for _, o := range objs {
		dir, rest, ok := strings.Cut(o.Name, "/")
		id, isChk := ParseName(dir)
		if !ok || !isChk {
			continue
		}
		if !seen[id] {
			seen[id] = true
			all = append(all, id)
		}
		if rest == storage.MetadataName {
			complete = append(complete, id)
		}
	}
	sort.Slice(complete, func(i, j int) bool { return complete[i] < complete[j] })
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return complete, all, nil
}

// List returns the ids of the complete checkpoints, ascending.
func (b *Bucket) List(ctx context.Context) ([]uint64, error) {
	complete, _, err := b.checkpoints(ctx)
	return complete, err
}

// Incomplete returns the ids of the checkpoint directories that hold
// objects but no _metadata: checkpoints that a run began and did not
// finish, if only a temporary upload of theirs is left.
func (b *Bucket) Incomplete(ctx context.Context) ([]uint64, error) {
	complete, all, err := b.checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	done := map[uint64]bool{}
	for _, id := range complete {
		done[id] = true
	}
	var out []uint64
	for _, id := range all {
		if !done[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// HasCheckpoint reports whether checkpoint id is complete.
func (b *Bucket) HasCheckpoint(ctx context.Context, id uint64) (bool, error) {
	f, err := b.dir.Open(ctx, path.Join(Name(id), storage.MetadataName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	f.Close()
	return true, nil
}

// RemoveCheckpoint deletes every object of checkpoint id: its _metadata
// first, so that no reader takes what is left for a checkpoint, and the
// temporary uploads that writers killed or ousted meanwhile left there.
// Each delete is made under the context under gives for it.
func (b *Bucket) RemoveCheckpoint(ctx context.Context, id uint64, under storage.Under) error {
	if err := b.Remove(ctx, path.Join(Name(id), storage.MetadataName), under); err != nil {
		return err
	}
	objs, err := storage.ListUnder(ctx, b.dir, Name(id)+"/")
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := b.Remove(ctx, o.Name, under); err != nil {
			return err
		}
	}
	return nil
}

// Shared lists the names, relative to the root, of the objects under
// shared/.
func (b *Bucket) Shared(ctx context.Context) ([]string, error) {
	objs, err := storage.ListUnder(ctx, b.dir, SharedDir+"/")
	if err != nil {
		return nil, err
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.Name
	}
	return names, nil
}

// Remove deletes the object rel under the context under gives for it.
func (b *Bucket) Remove(ctx context.Context, rel string, under storage.Under) error {
	hctx, cancel, err := under(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return storage.Remove(hctx, b.dir, rel)
}

// Upload writes the local file src as the object rel and returns its size
// and CRC-32C, computed from the bytes sent.
func (b *Bucket) Upload(ctx context.Context, src, rel string) (int64, uint32, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc.New()
	n := &countReader{r: io.TeeReader(f, h)}
	if err := storage.Put(ctx, b.dir, rel, n); err != nil {
		return 0, 0, err
	}
	return n.n, h.Sum32(), nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (r *countReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	return n, err
}

// Download copies the object rel, which must be size bytes long, into the
// new local file dst and returns its CRC-32C. It reads in the large ranges
// that suit a bucket, not in io.Copy's small ones. A failed download
// leaves no dst behind.
func (b *Bucket) Download(ctx context.Context, rel, dst string, size int64) (sum uint32, err error) {
	f, err := b.dir.Open(ctx, rel)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if f.Size() != size {
		return 0, fmt.Errorf("%w: %s is %d bytes, the checkpoint lists %d", ErrCorrupt, b.where(rel), f.Size(), size)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	h := crc.New()
	buf := make([]byte, min(size, max(storage.ReadSize(f), 1<<20)))
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n := int(min(int64(len(buf)), size-off))
		if _, err := f.ReadAt(buf[:n], off); err != nil && !(errors.Is(err, io.EOF) && off+int64(n) == size) {
			return 0, fmt.Errorf("reading %s: %w", b.where(rel), err)
		}
		h.Write(buf[:n])
		if _, err := out.Write(buf[:n]); err != nil {
			return 0, err
		}
		off += int64(n)
	}
	return h.Sum32(), nil
}
