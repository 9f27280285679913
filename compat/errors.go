package compat

import "errors"

// ErrIncompatible is wrapped by every refusal to restore or migrate state
// because the job's serializers cannot read it: the engine's restore,
// evolve.Migrate, Converter, and the CLI's exit code 3.
var ErrIncompatible = errors.New("incompatible")
