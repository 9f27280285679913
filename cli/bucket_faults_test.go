package cli_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/cli"
	"github.com/stateproc/stateproc/internal/storetest"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// slowProxy forwards to the fault proxy after a pause per request, so that
// a command over a small savepoint runs long enough to be killed or cut
// off partway.
func slowProxy(t *testing.T, p *storetest.Proxy, pause time.Duration) *slowServer {
	sp := &slowServer{pause: pause}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sp.serving.Add(1)
		defer sp.serving.Add(-1)
		time.Sleep(pause)
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	sp.URL = s.URL
	return sp
}

// slowServer is a slowProxy.
type slowServer struct {
	URL     string
	pause   time.Duration
	serving atomic.Int64
}

// settle waits until the requests the proxy took are served: those of a
// client killed meanwhile still reach the server, a _metadata among them.
func (s *slowServer) settle(t *testing.T) {
	t.Helper()
	// What the client sent before it died is taken within a pause.
	time.Sleep(2 * s.pause)
	for deadline := time.Now().Add(10 * time.Second); s.serving.Load() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still served after 10 s", s.serving.Load())
		}
	}
}

// stateproc runs the command as its own process (testscript.Main puts it
// on PATH), so that it can be killed.
func stateproc(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "stateproc", args...)
	cmd.Env = os.Environ()
	return cmd
}

// hasMetadata reports whether the bucket shows a _metadata under prefix.
func (f *bucketFixture) hasMetadata(t *testing.T, prefix string) bool {
	t.Helper()
	_, err := f.srv.Client(f.srv.Endpoint()).HeadObject(context.Background(),
		&s3.HeadObjectInput{Bucket: aws.String("state"), Key: aws.String(prefix + "/" + snapshotfmt.MetadataName)})
	return err == nil
}

// sameFiles fails unless the bucket holds exactly want's files under
// prefix, byte for byte.
func (f *bucketFixture) sameFiles(t *testing.T, what, prefix string, want map[string][]byte) {
	t.Helper()
	got := f.objects(t, prefix)
	if len(got) != len(want) {
		t.Errorf("%s: %d objects under %s, want %d", what, len(got), prefix, len(want))
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s: %s differs from the run on disk", what, name)
		}
	}
}

// A rescale into a bucket killed at random points never leaves a visible
// partial savepoint: the target has no _metadata, or a whole one. verify
// reports what the dead run left, a rerun completes with the bytes a run
// on disk writes, and --remove-orphans leaves exactly the savepoint.
func TestBucketWriteKilled(t *testing.T) {
	f := newBucketFixture(t)
	checkedIn, _ := filepath.Abs("../testdata/savepoints/v2/gateway-p2-pebble")
	// The input's name is recorded in the output's lineage: the same on
	// disk and in the bucket.
	f.upload(t, checkedIn, "in/gateway-p2-pebble")
	ref := filepath.Join(f.dir, "ref")
	args := func(in, out string) []string {
		return []string{"rescale", in, "--max-parallelism", "256", "--out", out}
	}
	if _, stderr, code := runCLI(t, args(checkedIn, ref)...); code != 0 {
		t.Fatalf("rescale on disk: exit %d: %s", code, stderr)
	}
	want := localFiles(t, ref)
	slow := slowProxy(t, f.proxy, 4*time.Millisecond)
	in := storetest.URL(slow.URL, "state", "in/gateway-p2-pebble")
	// One run to completion gives the span to kill within.
	start := time.Now()
	if out, err := stateproc(context.Background(), args(in, storetest.URL(slow.URL, "state", "out/whole"))...).CombinedOutput(); err != nil {
		t.Fatalf("rescale into the bucket: %v: %s", err, out)
	}
	span := time.Since(start)
	f.sameFiles(t, "an unkilled run", "out/whole", want)
	rng := rand.New(rand.NewPCG(16, uint64(time.Now().UnixNano())))
	// Six kills at random instants, then one as soon as the first object
	// of the run is in the bucket, so that at least one strikes while it
	// writes whatever the machine's speed.
	const kills = 7
	var killed, orphaned, whole int
	for i := range kills {
		prefix := "out/killed-" + string(rune('a'+i))
		target := storetest.URL(slow.URL, "state", prefix)
		cmd := stateproc(context.Background(), args(in, target)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if i < kills-1 {
			// The run reads most of its span and writes at its end.
			time.Sleep(span/4 + time.Duration(rng.Int64N(int64(span*3/4))))
		} else {
			for deadline := time.Now().Add(4 * span); len(f.objects(t, prefix)) == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		cmd.Process.Kill()
		if err := cmd.Wait(); err != nil {
			killed++
		}
		slow.settle(t)
		if f.hasMetadata(t, prefix) {
			// It published before the kill: the savepoint is whole.
			whole++
			f.sameFiles(t, "a run that published before its kill", prefix, want)
			continue
		}
		_, stderr, code := runCLI(t, "verify", target)
		if code != 4 {
			t.Fatalf("verify of a killed run's target: exit %d, want 4: %s", code, stderr)
		}
		if len(f.objects(t, prefix)) > 0 {
			orphaned++
			if !strings.Contains(stderr, "orphaned files") || !strings.Contains(stderr, "--remove-orphans") {
				t.Errorf("verify of a killed run's leftovers does not report them: %s", stderr)
			}
		}
		// The rerun completes over the leftovers; the orphans it did not
		// reuse are removed.
		fast := f.url(prefix)
		if _, stderr, code := runCLI(t, args(f.url("in/gateway-p2-pebble"), fast)...); code != 0 {
			t.Fatalf("rerun after a kill: exit %d: %s", code, stderr)
		}
		if stdout, stderr, code := runCLI(t, "verify", "--remove-orphans", "--orphan-age", "0s", fast); code != 0 {
			t.Fatalf("verify --remove-orphans: exit %d: %s%s", code, stdout, stderr)
		}
		f.sameFiles(t, "a rerun after a kill, orphans removed", prefix, want)
	}
	t.Logf("%d runs killed within %v: %d left orphans and no _metadata, %d had published whole, none partial", kills, span, orphaned, whole)
	if killed == 0 || orphaned == 0 {
		t.Errorf("of %d kills %d struck a running command and %d left orphans: the kills missed the writes", kills, killed, orphaned)
	}
}

// Throttling and connection resets injected while commands read and write
// a bucket are retried: the commands succeed, every fault struck, and the
// output is the same bytes.
func TestBucketCommandsRetry(t *testing.T) {
	f := newBucketFixture(t)
	in := f.url("in/sp")
	ref := filepath.Join(f.dir, "ref")
	if _, stderr, code := runCLI(t, "prune-ttl", f.sp, "--out", ref); code != 0 {
		t.Fatalf("prune-ttl on disk: exit %d: %s", code, stderr)
	}
	f.proxy.Throttle("GetObject", 3)
	f.proxy.Inject(storetest.Reset, "GetObject", 2, 0, "", 0)
	f.proxy.Throttle("PutObject", 2)
	f.proxy.Inject(storetest.Reset, "PutObject", 1, 0, "", 0)
	if _, stderr, code := runCLI(t, "prune-ttl", in, "--out", f.url("out/retried")); code != 0 {
		t.Fatalf("prune-ttl through throttling and resets: exit %d: %s", code, stderr)
	}
	if n := f.proxy.Pending(); n != 0 {
		t.Errorf("%d injected faults did not strike", n)
	}
	f.sameFiles(t, "prune-ttl through faults", "out/retried", localFiles(t, ref))
	f.proxy.Throttle("GetObject", 2)
	if _, stderr, code := runCLI(t, "verify", "--deep", f.url("out/retried")); code != 0 {
		t.Errorf("verify through throttling: exit %d: %s", code, stderr)
	}
	// More throttling than the retries allow fails with exit 1 and the
	// store's reason.
	f.proxy.Throttle("", 100)
	_, stderr, code := runCLI(t, "inspect", in)
	if code != cli.ExitFailure || !strings.Contains(stderr, "503") || !strings.Contains(stderr, "in/sp/_metadata") {
		t.Errorf("inspect throttled beyond its retries: exit %d, %q; want %d, the status and the object", code, stderr, cli.ExitFailure)
	}
	// Two requests start together (_metadata's size, and the look for an
	// incremental checkpoint's manifest), each tried at most Attempts times.
	struck := 100 - f.proxy.Pending()
	if limit := 2 * storage.DefaultRetryPolicy.Attempts; struck > limit {
		t.Errorf("inspect made %d attempts under throttling, more than %d: the retries are not bounded", struck, limit)
	}
	t.Logf("7 faults while writing, 2 while verifying, then endless throttling: inspect gave up after %d attempts", struck)
}

// The server stopped while a command reads or writes: the command fails
// with exit 1 and a message naming the object, and nothing becomes visible
// at the target.
func TestBucketServerStopped(t *testing.T) {
	f := newBucketFixture(t)
	slow := slowProxy(t, f.proxy, 30*time.Millisecond)
	in := storetest.URL(slow.URL, "state", "in/sp")
	files, err := os.ReadDir(f.sp)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		args []string
		// The server stops once the proxy has seen this many requests of
		// op: the metadata and every data file's preamble read, so that
		// the next read, of data, meets a stopped server; or some data
		// written.
		op string
		n  int
	}{
		{"mid-read", []string{"verify", "--deep", in}, "GetObject", len(files)},
		{"mid-write", []string{"rescale", in, "--max-parallelism", "256", "--out", storetest.URL(slow.URL, "state", "out/stopped")}, "PutObject", 1},
	} {
		base := f.proxy.Ops(c.op)
		cmd := stateproc(context.Background(), c.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); f.proxy.Ops(c.op) < base+c.n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("%s: %d %s requests in a minute, want %d", c.what, f.proxy.Ops(c.op)-base, c.op, c.n)
			}
		}
		f.srv.Stop()
		err := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != cli.ExitFailure {
			t.Errorf("%s: the command ended with %v, want exit %d: %s", c.what, err, cli.ExitFailure, stderr.String())
		}
		// The proxy answers 502 for the server it cannot reach.
		if msg := stderr.String(); !strings.Contains(msg, "502") || !strings.Contains(msg, "s3://state/") {
			t.Errorf("%s: the message does not say which object could not be reached: %s", c.what, msg)
		}
		f.srv.Restart(t)
		if f.hasMetadata(t, "out/stopped") {
			t.Errorf("%s: a _metadata is visible at the target after the server stopped", c.what)
		}
	}
}

// Two rescales into one bucket target at once: one publishes, the other
// fails, and the target holds the winner's savepoint alone.
func TestBucketConcurrentWriters(t *testing.T) {
	f := newBucketFixture(t)
	ref := filepath.Join(f.dir, "ref")
	if _, stderr, code := runCLI(t, "rescale", f.sp, "--max-parallelism", "256", "--out", ref); code != 0 {
		t.Fatalf("rescale on disk: exit %d: %s", code, stderr)
	}
	slow := slowProxy(t, f.proxy, 10*time.Millisecond)
	in, target := storetest.URL(slow.URL, "state", "in/sp"), storetest.URL(slow.URL, "state", "out/raced")
	const rounds = 3
	for round := range rounds {
		prefix := "out/raced-" + string(rune('a'+round))
		target = storetest.URL(slow.URL, "state", prefix)
		var wg sync.WaitGroup
		codes := make([]int, 2)
		msgs := make([]string, 2)
		for i := range 2 {
			wg.Go(func() {
				out, err := stateproc(context.Background(), "rescale", in, "--max-parallelism", "256", "--out", target).CombinedOutput()
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					codes[i] = exit.ExitCode()
				} else if err != nil {
					codes[i] = -1
				}
				msgs[i] = string(out)
			})
		}
		wg.Wait()
		if (codes[0] == 0) == (codes[1] == 0) {
			t.Fatalf("round %d: exits %v, want one success and one failure: %q", round, codes, msgs)
		}
		loser := msgs[0]
		if codes[0] == 0 {
			loser = msgs[1]
		}
		if !strings.Contains(loser, "first") && !strings.Contains(loser, "holds a savepoint") {
			t.Errorf("round %d: the loser's message does not say another writer won: %s", round, loser)
		}
		if _, stderr, code := runCLI(t, "verify", "--remove-orphans", "--orphan-age", "0s", target); code != 0 {
			t.Fatalf("round %d: verify of the winner: exit %d: %s", round, code, stderr)
		}
		f.sameFiles(t, "the race's winner", prefix, localFiles(t, ref))
	}
}

// A prune-ttl bucket to bucket that changes nothing has the server copy
// each data file: unread, or with --check-copies to the name its input
// claims while it reads the file to check the claim. Killed once those
// copies are in the bucket, with its _metadata or its reads held back so
// that it cannot have published, it leaves no savepoint: verify reports
// the copies as orphans, a rerun completes over them with the bytes a run
// on disk writes, and --remove-orphans leaves exactly that.
func TestBucketPruneKilledAfterCopies(t *testing.T) {
	f := newBucketFixture(t)
	// At this instant nothing of the demo savepoint has expired yet.
	const now = "2000-01-01T00:00:00Z"
	ref := filepath.Join(f.dir, "ref")
	if _, stderr, code := runCLI(t, "prune-ttl", f.sp, "--now", now, "--out", ref); code != 0 {
		t.Fatalf("prune-ttl on disk: exit %d: %s", code, stderr)
	}
	want := localFiles(t, ref)
	for _, c := range []struct {
		prefix string
		flags  []string
		// held says which requests wait.
		held func(r *http.Request) bool
	}{
		{"out/unread", nil, func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/"+snapshotfmt.MetadataName)
		}},
		{"out/claimed", []string{"--check-copies"}, func(r *http.Request) bool {
			return storetest.Operation(r) == "GetObject" && !strings.HasSuffix(r.URL.Path, "/"+snapshotfmt.MetadataName)
		}},
	} {
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c.held(r) {
				time.Sleep(500 * time.Millisecond)
			}
			f.proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(slow.Close)
		killAfterCopies(t, f, slow.URL, c.prefix, now, c.flags, want)
	}
}

// killAfterCopies runs prune-ttl of the fixture's input into prefix at
// now, through the server at url, kills it once the bucket holds as many
// objects as want has data files, and checks what it left, its rerun and
// --remove-orphans.
func killAfterCopies(t *testing.T, f *bucketFixture, url, prefix, now string, flags []string, want map[string][]byte) {
	t.Helper()
	args := append([]string{"prune-ttl", storetest.URL(url, "state", "in/sp"), "--now", now, "--out", storetest.URL(url, "state", prefix)}, flags...)
	cmd := stateproc(context.Background(), args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	files := len(want) - 1
	for deadline := time.Now().Add(time.Minute); len(f.objects(t, prefix)) < files; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%v: the copies did not land: %d objects of %d", flags, len(f.objects(t, prefix)), files)
		}
	}
	cmd.Process.Kill()
	if err := cmd.Wait(); err == nil {
		t.Fatalf("%v: prune-ttl finished before it was killed", flags)
	}
	if f.hasMetadata(t, prefix) {
		t.Fatalf("%v: a savepoint is visible after the kill", flags)
	}
	// The copies are the input's files, under the names those claim: the
	// same as the run on disk writes, since the claims are true.
	for name, b := range f.objects(t, prefix) {
		if !bytes.Equal(b, want[name]) {
			t.Errorf("the killed run left %s, which the run on disk does not write", name)
		}
	}
	target := f.url(prefix)
	_, stderr, code := runCLI(t, "verify", target)
	if code != 4 || !strings.Contains(stderr, "orphaned files") || !strings.Contains(stderr, "--remove-orphans") {
		t.Fatalf("verify of the killed run's target: exit %d, want 4 and its orphans: %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, append([]string{"prune-ttl", f.url("in/sp"), "--now", now, "--out", target}, flags...)...); code != 0 {
		t.Fatalf("rerun after the kill: exit %d: %s", code, stderr)
	}
	if stdout, stderr, code := runCLI(t, "verify", "--remove-orphans", "--orphan-age", "0s", target); code != 0 {
		t.Fatalf("verify --remove-orphans: exit %d: %s%s", code, stdout, stderr)
	}
	f.sameFiles(t, "a rerun after the kill", prefix, want)
}

// TestRemovalOfOrphansWhileAnotherRuns: verify --remove-orphans where
// another removal holds the lease (a _cleanup renewed just now) removes
// nothing and exits 1, saying so.
func TestRemovalOfOrphansWhileAnotherRuns(t *testing.T) {
	f := newBucketFixture(t)
	for _, key := range []string{"in/sp/op001-00000-0123456789abcdef.data", "in/sp/" + storage.CleanupName} {
		if _, err := f.srv.Client(f.srv.Endpoint()).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("state"),
			Key: aws.String(key), Body: strings.NewReader(`{"holder":"another"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	before := f.objects(t, "in/sp")
	stdout, stderr, code := runCLI(t, "verify", "--remove-orphans", "--orphan-age", "0s", f.url("in/sp"))
	if code != 1 || !strings.Contains(stderr, "another removal of orphans is under way") {
		t.Fatalf("exit %d: %s%s; want 1, saying another removal is under way", code, stdout, stderr)
	}
	if after := f.objects(t, "in/sp"); len(after) != len(before) {
		t.Fatalf("%d objects before, %d after: a refused removal removed some", len(before), len(after))
	}
}
