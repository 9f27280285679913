//go:build linux || darwin || freebsd

package rewrite

import "syscall"

// freeBytes returns the bytes an unprivileged user may still write on the
// file system holding dir.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
