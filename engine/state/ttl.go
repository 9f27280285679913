package state

import (
	"time"

	"github.com/stateproc/stateproc/ttl"
)

// TTLConfig is a state's time-to-live, for WithTTL: package ttl's, named
// here so that a job needs no import beyond engine, state and serializers.
type TTLConfig = ttl.Config

// TTL returns a time-to-live of d: its clock restarts on create and write,
// expired entries are never returned, and nothing is cleaned up but on
// read until the cleanup fields say so.
func TTL(d time.Duration) TTLConfig { return ttl.New(d) }

// The update types and visibilities of a TTLConfig.
const (
	OnCreateAndWrite            = ttl.OnCreateAndWrite
	OnReadAndWrite              = ttl.OnReadAndWrite
	NeverReturnExpired          = ttl.NeverReturnExpired
	ReturnExpiredIfNotCleanedUp = ttl.ReturnExpiredIfNotCleanedUp
)
