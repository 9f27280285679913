// Command hostilegen writes the hostile corpus, testdata/hostile: the
// savepoints of package internal/hostile that every command of the CLI is
// run over by its tests. Run it from the module root, or through go
// generate:
//
//	go run ./internal/hostilegen
//
// It replaces the directory whole; internal/hostile's test checks that the
// checked-in corpus is what this writes.
package main

//go:generate go run . -out ../../testdata/hostile

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stateproc/stateproc/internal/hostile"
)

func main() {
	out := flag.String("out", "testdata/hostile", "the corpus `directory`, replaced whole")
	flag.Parse()
	tmp := filepath.Join(filepath.Dir(*out), ".hostile-new")
	os.RemoveAll(tmp)
	if err := hostile.WriteCorpus(tmp); err != nil {
		fail(err)
	}
	if err := os.RemoveAll(*out); err != nil {
		fail(err)
	}
	if err := os.Rename(tmp, *out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hostilegen:", err)
	os.Exit(1)
}
