package savepoint

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// Manifest is what a built job declares, written as JSON without running
// the job: its operators, their keyed states with serializer snapshots and
// TTL, timer services, and operator and broadcast states. `stateproc check`
// and `stateproc migrate` compare it with a savepoint.
type Manifest struct {
	Job       string             `json:"job"`
	Operators []ManifestOperator `json:"operators"`
}

// ManifestOperator is one operator of a manifest.
type ManifestOperator struct {
	UID            string `json:"uid"`
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
	// MaxParallelismSet says that the job fixed MaxParallelism; otherwise
	// it is the default, and a restore adopts the savepoint's.
	MaxParallelismSet bool                   `json:"maxParallelismSet,omitempty"`
	Key               *serializers.Snapshot  `json:"key,omitempty"`
	States            []ManifestState        `json:"states,omitempty"`
	Timers            []ManifestTimerService `json:"timers,omitempty"`
	OperatorStates    []ManifestOpState      `json:"operatorStates,omitempty"`
	Broadcast         []ManifestBroadcast    `json:"broadcastStates,omitempty"`
}

// ManifestState is one keyed state descriptor.
type ManifestState struct {
	Name      string                `json:"name"`
	Kind      string                `json:"kind"`
	Namespace serializers.Snapshot  `json:"namespace"`
	MapKey    *serializers.Snapshot `json:"mapKey,omitempty"`
	Value     serializers.Snapshot  `json:"value"`
	TTL       *ManifestTTL          `json:"ttl,omitempty"`
}

// ManifestTTL is a TTL configuration with readable names.
type ManifestTTL struct {
	TTL                 string `json:"ttl"`
	Update              string `json:"update"`
	Visibility          string `json:"visibility"`
	CleanupFullSnapshot bool   `json:"cleanupFullSnapshot,omitempty"`
	CleanupIncremental  int    `json:"cleanupIncremental,omitempty"`
	SweepBudget         int    `json:"sweepBudget,omitempty"`
}

// ManifestTimerService is one timer service.
type ManifestTimerService struct {
	Name      string               `json:"name"`
	Namespace serializers.Snapshot `json:"namespace"`
}

// ManifestOpState is one operator (non-keyed) list state.
type ManifestOpState struct {
	Name         string               `json:"name"`
	Distribution string               `json:"distribution"`
	Element      serializers.Snapshot `json:"element"`
}

// ManifestBroadcast is one broadcast state.
type ManifestBroadcast struct {
	Name  string               `json:"name"`
	Key   serializers.Snapshot `json:"key"`
	Value serializers.Snapshot `json:"value"`
}

// NewManifest describes operators (as a job builds them) as a manifest.
func NewManifest(job string, ops []Operator) Manifest {
	m := Manifest{Job: job}
	for _, o := range ops {
		mo := ManifestOperator{UID: o.UID, Name: o.Name, Parallelism: o.Parallelism, MaxParallelism: o.MaxParallelism}
		if o.Keyed() {
			k := o.Key
			mo.Key = &k
		}
		for _, s := range o.States {
			ms := ManifestState{Name: s.Name, Kind: s.Kind.String(), Namespace: s.Namespace, Value: s.Value}
			if s.Kind == Map {
				mk := s.MapKey
				ms.MapKey = &mk
			}
			if s.TTL != nil {
				ms.TTL = &ManifestTTL{
					TTL: s.TTL.TTL.String(), Update: s.TTL.Update.String(), Visibility: s.TTL.Visibility.String(),
					CleanupFullSnapshot: s.TTL.CleanupFullSnapshot, CleanupIncremental: s.TTL.CleanupIncremental, SweepBudget: s.TTL.SweepBudget,
				}
			}
			mo.States = append(mo.States, ms)
		}
		for _, t := range o.Timers {
			mo.Timers = append(mo.Timers, ManifestTimerService(t))
		}
		for _, s := range o.OperatorStates {
			mo.OperatorStates = append(mo.OperatorStates, ManifestOpState{Name: s.Name, Distribution: s.Distribution.String(), Element: s.Element})
		}
		for _, b := range o.BroadcastStates {
			mo.Broadcast = append(mo.Broadcast, ManifestBroadcast{Name: b.Name, Key: b.Key, Value: b.Value})
		}
		m.Operators = append(m.Operators, mo)
	}
	return m
}

// Write writes m as indented JSON.
func (m Manifest) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// ReadManifest parses a manifest and checks every name in it.
func ReadManifest(r io.Reader) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("savepoint: manifest: %w", err)
	}
	_, err := m.Model()
	return m, err
}

// Model converts the manifest back to operators (with empty operator and
// broadcast state contents).
func (m Manifest) Model() ([]Operator, error) {
	var ops []Operator
	for _, mo := range m.Operators {
		o := Operator{UID: mo.UID, Name: mo.Name, Parallelism: mo.Parallelism, MaxParallelism: mo.MaxParallelism}
		if mo.UID == "" {
			return nil, fmt.Errorf("savepoint: manifest: operator %q has no uid", mo.Name)
		}
		if mo.Key != nil {
			o.Key, o.KeyHash = *mo.Key, keygroup.Murmur3
			if err := serializers.CheckDeclared(o.Key); err != nil {
				return nil, fmt.Errorf("savepoint: manifest: operator %q key: %w", mo.UID, err)
			}
		}
		for _, ms := range mo.States {
			kind, err := ParseKind(ms.Kind)
			if err != nil {
				return nil, fmt.Errorf("savepoint: manifest: operator %q state %q: %w", mo.UID, ms.Name, err)
			}
			s := KeyedState{Name: ms.Name, Kind: kind, Namespace: ms.Namespace, Value: ms.Value}
			if ms.MapKey != nil {
				s.MapKey = *ms.MapKey
			}
			if err := checkDeclared(map[string]*serializers.Snapshot{"namespace": &ms.Namespace, "map key": ms.MapKey, "value": &ms.Value}); err != nil {
				return nil, fmt.Errorf("savepoint: manifest: operator %q state %q: %w", mo.UID, ms.Name, err)
			}
			if ms.TTL != nil {
				c, err := ms.TTL.config()
				if err != nil {
					return nil, fmt.Errorf("savepoint: manifest: operator %q state %q: %w", mo.UID, ms.Name, err)
				}
				s.TTL = &c
			}
			o.States = append(o.States, s)
		}
		for _, t := range mo.Timers {
			if err := serializers.CheckDeclared(t.Namespace); err != nil {
				return nil, fmt.Errorf("savepoint: manifest: operator %q timer service %q: namespace: %w", mo.UID, t.Name, err)
			}
			o.Timers = append(o.Timers, TimerService(t))
		}
		for _, s := range mo.OperatorStates {
			d := EvenSplit
			switch s.Distribution {
			case EvenSplit.String():
			case Union.String():
				d = Union
			default:
				return nil, fmt.Errorf("savepoint: manifest: operator %q state %q: unknown distribution %q", mo.UID, s.Name, s.Distribution)
			}
			if err := serializers.CheckDeclared(s.Element); err != nil {
				return nil, fmt.Errorf("savepoint: manifest: operator %q state %q: element: %w", mo.UID, s.Name, err)
			}
			o.OperatorStates = append(o.OperatorStates, OperatorState{Name: s.Name, Distribution: d, Element: s.Element})
		}
		for _, b := range mo.Broadcast {
			if err := checkDeclared(map[string]*serializers.Snapshot{"key": &b.Key, "value": &b.Value}); err != nil {
				return nil, fmt.Errorf("savepoint: manifest: operator %q broadcast state %q: %w", mo.UID, b.Name, err)
			}
			o.BroadcastStates = append(o.BroadcastStates, BroadcastState{Name: b.Name, Key: b.Key, Value: b.Value})
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// checkDeclared checks the serializer snapshots of one state, by their
// part's name; a nil one is absent.
func checkDeclared(parts map[string]*serializers.Snapshot) error {
	for _, part := range []string{"key", "namespace", "map key", "value"} {
		if s := parts[part]; s != nil {
			if err := serializers.CheckDeclared(*s); err != nil {
				return fmt.Errorf("%s: %w", part, err)
			}
		}
	}
	return nil
}

func (t ManifestTTL) config() (ttl.Config, error) {
	d, err := time.ParseDuration(t.TTL)
	if err != nil {
		return ttl.Config{}, fmt.Errorf("ttl %q: %w", t.TTL, err)
	}
	c := ttl.Config{TTL: d, CleanupFullSnapshot: t.CleanupFullSnapshot, CleanupIncremental: t.CleanupIncremental, SweepBudget: t.SweepBudget}
	switch t.Update {
	case ttl.OnCreateAndWrite.String():
		c.Update = ttl.OnCreateAndWrite
	case ttl.OnReadAndWrite.String():
		c.Update = ttl.OnReadAndWrite
	default:
		return c, fmt.Errorf("unknown update type %q", t.Update)
	}
	switch t.Visibility {
	case ttl.NeverReturnExpired.String():
		c.Visibility = ttl.NeverReturnExpired
	case ttl.ReturnExpiredIfNotCleanedUp.String():
		c.Visibility = ttl.ReturnExpiredIfNotCleanedUp
	default:
		return c, fmt.Errorf("unknown visibility %q", t.Visibility)
	}
	return c, c.Validate()
}
