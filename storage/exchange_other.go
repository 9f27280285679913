//go:build !linux && !darwin

package storage

func exchange(_, _ string) error { return errNoExchange }

func renameNoReplace(a, b string) error { return renameChecked(a, b) }
