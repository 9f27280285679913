package cli

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stateproc/stateproc/internal/spgen"
	"github.com/stateproc/stateproc/internal/storetest"
)

// A savepoint replaced while verify read the one before is not robbed by
// --remove-orphans: what verify opened first names none of the new
// savepoint's files, so the removal reads _metadata again and keeps the
// files it names. The files of the replaced savepoint are orphans now,
// and go.
func TestOrphansOfASavepointReplacedMeanwhile(t *testing.T) {
	ctx := context.Background()
	srv := storetest.StartWithBucket(t, "state")
	loc := storetest.URL(srv.Endpoint(), "state", "sp")
	gen := func(seed uint64) string {
		dir := filepath.Join(t.TempDir(), "sp")
		if err := spgen.Write(dir, spgen.Config{Seed: seed, Users: 200, Accounts: 50, Parallelism: 2, MaxParallelism: 128, Now: 1_700_000_000_000}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	first := srv.Upload(t, gen(1), "state", "sp")
	src, err := openSavepoint(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	second := srv.Upload(t, gen(2), "state", "sp")
	time.Sleep(1100 * time.Millisecond)
	if _, err := findOrphans(ctx, loc, src, orphanOptions{remove: true, minAge: "1s"}); err != nil {
		t.Fatal(err)
	}
	left := srv.Objects(t, "state", "sp")
	for name := range second {
		if _, ok := left[name]; !ok {
			t.Errorf("%s of the savepoint there now was removed", name)
		}
	}
	for name := range first {
		if _, ok := second[name]; !ok {
			if _, ok := left[name]; ok {
				t.Errorf("%s of the replaced savepoint was kept", name)
			}
		}
	}
}
