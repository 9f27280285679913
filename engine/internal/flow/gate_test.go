package flow

import (
	"context"
	"testing"
	"time"
)

type testBarrier struct{ id, epoch int64 }

func (b *testBarrier) CheckpointID() uint64 { return uint64(b.id) }
func (b *testBarrier) Epoch() int64         { return b.epoch }

type testControl = Control[*testBarrier]

func twoChannels(t *testing.T) (*Gate[*testBarrier], []chan string) {
	t.Helper()
	g := NewGate[*testBarrier](context.Background(), nil)
	chans := []chan string{make(chan string, 4), make(chan string, 4)}
	for i, ch := range chans {
		g.Add(i, ch, MinWatermark)
	}
	return g, chans
}

// The combined watermark is the lowest of the channels' and moves only
// when that lowest does.
func TestGateCombinesWatermarks(t *testing.T) {
	g, _ := twoChannels(t)
	if r := g.OnControl(0, testControl{Kind: WatermarkControl, Watermark: 10}); r.WatermarkAdvanced || g.Watermark() != MinWatermark {
		t.Fatalf("one channel at 10: advanced %v, watermark %d", r.WatermarkAdvanced, g.Watermark())
	}
	if r := g.OnControl(1, testControl{Kind: WatermarkControl, Watermark: 7}); !r.WatermarkAdvanced || g.Watermark() != 7 {
		t.Fatalf("channels at 10 and 7: advanced %v, watermark %d, want 7", r.WatermarkAdvanced, g.Watermark())
	}
	if r := g.OnControl(1, testControl{Kind: WatermarkControl, Watermark: 5}); r.WatermarkAdvanced || g.Watermark() != 7 {
		t.Fatalf("a watermark going back moved the gate's: %d", g.Watermark())
	}
	// An idle channel holds nothing back.
	if r := g.OnControl(1, testControl{Kind: StatusControl, Status: Idle}); !r.WatermarkAdvanced || g.Watermark() != 10 {
		t.Fatalf("channel 1 idle: watermark %d, want 10", g.Watermark())
	}
	if s := g.OutputStatus(); s != Active {
		t.Fatalf("output status %v with one channel active", s)
	}
}

// A channel that delivered the barrier is not read until every channel
// has; the last barrier completes the alignment.
func TestGateAlignsBarriers(t *testing.T) {
	g, chans := twoChannels(t)
	cp := &testBarrier{id: 1, epoch: MaxWatermark}
	if r := g.OnControl(0, testControl{Kind: BarrierControl, Barrier: cp}); r.Aligned != nil {
		t.Fatal("aligned after one of two barriers")
	}
	chans[0] <- "after the barrier"
	chans[1] <- "before the barrier"
	ch, v, err := g.Next()
	if err != nil || ch != 1 || v.(string) != "before the barrier" {
		t.Fatalf("Next = %d %v %v, want channel 1's record while channel 0 is blocked", ch, v, err)
	}
	if r := g.OnControl(1, testControl{Kind: BarrierControl, Barrier: cp}); r.Aligned != cp {
		t.Fatalf("aligned %v after both barriers, want the checkpoint", r.Aligned)
	}
	ch, v, err = g.Next()
	if err != nil || ch != 0 || v.(string) != "after the barrier" {
		t.Fatalf("Next = %d %v %v, want channel 0's record once aligned", ch, v, err)
	}
	// A barrier of a checkpoint already aligned is passed over.
	if r := g.OnControl(0, testControl{Kind: BarrierControl, Barrier: cp}); r.Aligned != nil {
		t.Fatal("an old barrier aligned again")
	}
	g.OnControl(0, testControl{Kind: EndControl})
	if r := g.OnControl(1, testControl{Kind: EndControl}); !r.Ended {
		t.Fatal("both channels ended, the gate not")
	}
}

// An ordered gate aligns a channel by its watermark reaching the epoch,
// and reads no channel ahead of the others.
func TestOrderedGateAlignsAtEpoch(t *testing.T) {
	g, chans := twoChannels(t)
	cp := &testBarrier{id: 1, epoch: 100}
	var pending *testBarrier
	g.Order(func() *testBarrier { return pending })
	g.OnControl(0, testControl{Kind: WatermarkControl, Watermark: 50})
	g.OnControl(1, testControl{Kind: WatermarkControl, Watermark: 20})
	chans[0] <- "at 50"
	chans[1] <- "at 20"
	if ch, _, _ := g.Next(); ch != 1 {
		t.Fatalf("read channel %d, want channel 1, the one behind", ch)
	}
	pending = cp
	if r := g.OnControl(0, testControl{Kind: WatermarkControl, Watermark: 100}); r.Aligned != nil {
		t.Fatal("aligned with channel 1 still below the epoch")
	}
	if r := g.OnControl(1, testControl{Kind: WatermarkControl, Watermark: 120}); r.Aligned != cp {
		t.Fatalf("aligned %v with both channels at the epoch, want the checkpoint", r.Aligned)
	}
}

func TestAlignGroupLowest(t *testing.T) {
	g := NewAlignGroup[string]()
	g.Join("a")
	g.Join("b")
	g.Update("a", 30, false)
	g.Update("b", 10, false)
	if w, _ := g.Lowest(); w != 10 {
		t.Fatalf("lowest %d, want 10", w)
	}
	_, changed := g.Lowest()
	g.Update("b", 10, true)
	select {
	case <-changed:
	default:
		t.Fatal("an update did not signal a change")
	}
	if w, _ := g.Lowest(); w != 30 {
		t.Fatalf("lowest %d with b out, want 30", w)
	}
	g.Update("a", 30, true)
	if w, _ := g.Lowest(); w != MaxWatermark {
		t.Fatalf("lowest %d with nobody in, want MaxWatermark", w)
	}
}

// An ordered gate reads a channel whose input has ended (its watermark is
// MaxWatermark) between checkpoints, though it is ahead of every other:
// nothing but barriers comes from it any more, and its source, which
// sends one per checkpoint, must not find it full.
func TestOrderedGateReadsAnEndedChannel(t *testing.T) {
	g, chans := twoChannels(t)
	var pending *testBarrier
	g.Order(func() *testBarrier { return pending })
	g.OnControl(0, testControl{Kind: WatermarkControl, Watermark: 50})
	g.OnControl(1, testControl{Kind: WatermarkControl, Watermark: MaxWatermark})
	for id := int64(1); id <= int64(2*cap(chans[1])); id++ {
		cp := &testBarrier{id: id, epoch: 50 + 10*id}
		pending = cp
		if r := g.OnControl(0, testControl{Kind: WatermarkControl, Watermark: cp.epoch}); r.Aligned != cp {
			t.Fatalf("checkpoint %d: aligned %v with both channels at its epoch", id, r.Aligned)
		}
		pending = nil
		// The ended channel's source sends the barrier after the
		// alignment; the gate passes over it.
		chans[1] <- "barrier"
		got := make(chan int, 1)
		go func() {
			ch, _, _ := g.Next()
			got <- ch
		}()
		select {
		case ch := <-got:
			if ch != 1 {
				t.Fatalf("checkpoint %d: read channel %d, want the ended one", id, ch)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("checkpoint %d: the gate does not read the ended channel, whose source then blocks on a full channel", id)
		}
		g.OnControl(1, testControl{Kind: BarrierControl, Barrier: cp})
	}
}

// An ordered gate whose channels all reached a checkpoint's epoch before
// the checkpoint started (a stateless operator fed by sources already
// past the epoch) reports the alignment from Next, rather than waiting on
// channels it no longer reads, behind which its sources then block.
func TestOrderedGateAlignedBeforeTheCheckpoint(t *testing.T) {
	g := NewGate[*testBarrier](context.Background(), nil)
	ch := make(chan string, 4)
	g.Add(0, ch, MinWatermark)
	var pending *testBarrier
	g.Order(func() *testBarrier { return pending })
	if r := g.OnControl(0, testControl{Kind: WatermarkControl, Watermark: 500}); r.Aligned != nil {
		t.Fatalf("aligned %v with no checkpoint pending", r.Aligned)
	}
	cp := &testBarrier{id: 1, epoch: 300}
	pending = cp
	got := make(chan int, 1)
	go func() {
		c, _, _ := g.Next()
		got <- c
	}()
	select {
	case c := <-got:
		if c != AlignedChannel {
			t.Fatalf("Next gave channel %d, want AlignedChannel", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the gate waits on the channel it aligned by its watermark, which no longer brings anything it reads")
	}
	if a := g.TakeAligned(); a != cp {
		t.Fatalf("TakeAligned = %v, want the pending checkpoint", a)
	}
	// The channel is read again; the source's late barrier is passed over.
	ch <- "barrier"
	go func() {
		c, _, _ := g.Next()
		got <- c
	}()
	select {
	case c := <-got:
		if c != 0 {
			t.Fatalf("Next gave channel %d, want 0", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the channel is not read after the alignment")
	}
	if r := g.OnControl(0, testControl{Kind: BarrierControl, Barrier: cp}); r.Aligned != nil {
		t.Fatalf("the late barrier aligned %v again", r.Aligned)
	}
}
