package chkdir

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Path is where checkpoint id lives under the checkpoint root.
func Path(root string, id uint64) string {
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
		id, err := strconv.ParseUint(strings.TrimPrefix(e.Name(), "chk-"), 10, 64)
		if err == nil {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
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
