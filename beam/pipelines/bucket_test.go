package pipelines

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/storage"
)

// The export pipeline into a bucket (versitygw) writes the files the CLI's
// export in as many shards, committed on disk, writes: each under its
// number and its content's digits, listed in _SUCCESS, which the commit
// writes last; and no part is left in the bucket.
func TestExportToABucket(t *testing.T) {
	srv := storetest.StartWithBucket(t, "state")
	in := checkedIn(t, "sessions-p2-heap")
	const n = 3
	local := filepath.Join(t.TempDir(), "cli")
	for i := range n {
		stateproc(t, "export", in, "--out", local, "--now", "2026-01-06T00:00:00Z", "--shard", fmt.Sprintf("%d/%d", i, n))
	}
	stateproc(t, "commit", "--export", "--out", local, "--shards", fmt.Sprint(n))
	want := dirBytes(t, local)
	now := time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC).UnixMilli()
	err := run(t, func(ctx context.Context, s beam.Scope) (int, error) {
		return Export(ctx, s, ExportConfig{Input: in, Out: storetest.URL(srv.Endpoint(), "state", "exported"), Options: export.Options{Now: &now}, Sharding: Sharding{Shards: n}})
	})
	if err != nil {
		t.Fatal(err)
	}
	objs := srv.Objects(t, "state", "")
	var marker export.MarkerContent
	if err := json.Unmarshal(objs["exported/"+export.Marker], &marker); err != nil {
		t.Fatalf("%s: %v", export.Marker, err)
	}
	if len(want) < 4 || len(marker.Files) != len(want) || len(objs) != len(want)+1 {
		t.Fatalf("%d files from the CLI, %d listed in %s, %d objects in the bucket", len(want), len(marker.Files), export.Marker, len(objs))
	}
	for name, b := range want {
		name = filepath.ToSlash(name)
		ext := path.Ext(name)
		named := storage.NameByContent(strings.TrimSuffix(name, ext), storage.ContentSum(b), ext)
		if !bytes.Equal(objs["exported/"+named], b) {
			t.Errorf("%s of the CLI is not %s in the bucket, with the same bytes", name, named)
		}
	}
}
