package chkdir

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/stateproc/stateproc/storage"
)

// Path is where checkpoint id lives under the checkpoint root: a local
// path, or the URL of a prefix in a bucket when the root is one.
func Path(root string, id uint64) string {
	if loc, err := storage.ParseLocation(root); err == nil && loc.IsBucket() {
		return loc.Join(Name(id)).URL()
	}
	return filepath.Join(root, Name(id))
}

// Name is the name of checkpoint id's directory in the root.
func Name(id uint64) string { return fmt.Sprintf("chk-%d", id) }

// List returns the ids of the checkpoints under root, ascending.
func List(root string) ([]uint64, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "chk-") {
			continue
		}
		if id, ok := ParseName(e.Name()); ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// ParseName returns the id of a checkpoint directory's name.
func ParseName(name string) (uint64, bool) {
	digits, ok := strings.CutPrefix(name, "chk-")
	if !ok || digits == "" || digits[0] == '+' {
		return 0, false
	}
	id, err := strconv.ParseUint(digits, 10, 64)
	return id, err == nil
}

// Sanitize makes an operator uid safe in a file name: every byte other
// than a letter, a digit, '-' and '_' becomes '_'.
func Sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
