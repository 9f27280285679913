package engine

import (
	"github.com/stateproc/stateproc/serializers"
)

// TimerNamespace gives a keyed operator's timers namespaces serialized by
// ns, as Flink's window operator keys its timers by (key, window): both
// timer services of the operator then carry them, the savepoint records ns
// as their namespace serializer, and the function registers its timers
// with the *In methods of Context (the methods without a namespace fail:
// they would store timers that ns cannot read back). Without it timers are
// in the void namespace.
func TimerNamespace(ns serializers.Serializer) OperatorOption {
	return func(n *node) { n.timerNS = ns }
}

func (n *node) timerNamespace() serializers.Serializer {
	if n.timerNS == nil {
		return serializers.Void()
	}
	return n.timerNS
}

// timerNamespaceOf decodes a fired timer's namespace; nil for the void one.
func (n *node) timerNamespaceOf(ns []byte) (any, error) {
	if n.timerNS == nil {
		return nil, nil
	}
	return n.timerNS.DecodeAny(ns)
}

// voidNamespace fails the timer methods without a namespace on an operator
// whose timers have one.
func (c *Context[K, OUT]) voidNamespace() error {
	if c.t.n.timerNS != nil {
		return c.t.errorf("its timers have namespaces (TimerNamespace): register and delete them with the methods ending in In")
	}
	return nil
}

func (c *Context[K, OUT]) timerNamespace(ns any) ([]byte, error) {
	b, err := c.t.n.timerNamespace().AppendAny(c.ns[:0], ns)
	if err != nil {
		return nil, c.t.errorf("timer namespace: %w", err)
	}
	c.ns = b
	return b, nil
}

// RegisterEventTimeTimerIn sets an event-time timer for the current key in
// namespace ns, a value of the operator's TimerNamespace type. It fires
// with TimerInfo.Namespace set to ns.
func (c *Context[K, OUT]) RegisterEventTimeTimerIn(ns any, ts int64) error {
	b, err := c.timerNamespace(ns)
	if err != nil {
		return err
	}
	return c.et.Register(b, ts)
}

// DeleteEventTimeTimerIn removes an event-time timer of the current key in
// namespace ns.
func (c *Context[K, OUT]) DeleteEventTimeTimerIn(ns any, ts int64) error {
	b, err := c.timerNamespace(ns)
	if err != nil {
		return err
	}
	return c.et.Delete(b, ts)
}

// RegisterProcessingTimeTimerIn sets a processing-time timer for the
// current key in namespace ns.
func (c *Context[K, OUT]) RegisterProcessingTimeTimerIn(ns any, ts int64) error {
	b, err := c.timerNamespace(ns)
	if err != nil {
		return err
	}
	return c.pt.Register(b, ts)
}

// DeleteProcessingTimeTimerIn removes a processing-time timer of the
// current key in namespace ns.
func (c *Context[K, OUT]) DeleteProcessingTimeTimerIn(ns any, ts int64) error {
	b, err := c.timerNamespace(ns)
	if err != nil {
		return err
	}
	return c.pt.Delete(b, ts)
}
