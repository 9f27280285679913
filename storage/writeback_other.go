//go:build !linux

package storage

import "os"

// startWriteback has no portable form: the fsync at Close writes it all.
func startWriteback(*os.File, int64, int64) {}
