// Package state is the keyed-state API of the engine: descriptors declared
// when the job graph is built, typed handles (Value, List, Map, Reducing,
// Aggregating) scoped to the current key and namespace, the TTL logic that
// every backend shares, and the Backend interface that the heap and Pebble
// backends implement.
//
// Layering: job code uses typed handles; handles apply TTL (expiry on read,
// timestamp refresh, incremental cleanup) and talk to a Backend through the
// untyped Raw* interfaces, passing Go values. The heap backend keeps those
// values as they are; the Pebble backend serializes them with the
// descriptor's serializers. Because TTL lives above the backends, both
// behave identically, which the conformance suite in statetest checks.
package state
