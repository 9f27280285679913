package keygroup

import (
	"encoding/binary"
	"testing"
)

// The brief's independent vectors: hash, key group at max parallelism 128 and 720.
func TestVectors(t *testing.T) {
	int42 := binary.BigEndian.AppendUint64(nil, 42)
	for _, tc := range []struct {
		name  string
		key   []byte
		hash  uint32
		kg128 int
		kg720 int
	}{
		{`""`, []byte(""), 0x00000000, 0, 0},
		{`"hello"`, []byte("hello"), 0x248BFA47, 71, 631},
		{`"tenant-acme"`, []byte("tenant-acme"), 0xE7C54150, 80, 528},
		{`"r-1093"`, []byte("r-1093"), 0x8205CB82, 2, 18},
		{"int64 42", int42, 0x834A2B37, 55, 183},
	} {
		h, err := Murmur3.Sum(tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if h != tc.hash {
			t.Errorf("%s: hash %08X, want %08X", tc.name, h, tc.hash)
		}
		if got := Of(tc.key, 128); got != tc.kg128 {
			t.Errorf("%s: key group at 128 = %d, want %d", tc.name, got, tc.kg128)
		}
		if got := Of(tc.key, 720); got != tc.kg720 {
			t.Errorf("%s: key group at 720 = %d, want %d", tc.name, got, tc.kg720)
		}
	}
}

func TestRangesPartitionAndAgreeWithSubtask(t *testing.T) {
	for _, maxP := range []int{1, 7, 128, 720, 32768} {
		for _, p := range []int{1, 2, 3, 5, 7, 64, 127, 128} {
			if p > maxP {
				continue
			}
			next := 0
			for i := 0; i < p; i++ {
				r := ForSubtask(i, p, maxP)
				if r.Start != next {
					t.Fatalf("maxP %d p %d: subtask %d starts at %d, want %d", maxP, p, i, r.Start, next)
				}
				if r.Len() == 0 {
					t.Fatalf("maxP %d p %d: subtask %d owns no key group", maxP, p, i)
				}
				for kg := r.Start; kg <= r.End; kg += max(1, r.Len()/8) {
					if s := Subtask(kg, p, maxP); s != i {
						t.Fatalf("maxP %d p %d: key group %d in range of %d but Subtask says %d", maxP, p, kg, i, s)
					}
				}
				if s := Subtask(r.End, p, maxP); s != i {
					t.Fatalf("maxP %d p %d: last key group %d of %d assigned to %d", maxP, p, r.End, i, s)
				}
				next = r.End + 1
			}
			if next != maxP {
				t.Fatalf("maxP %d p %d: ranges end at %d", maxP, p, next)
			}
		}
	}
}

func TestDefaultMaxParallelism(t *testing.T) {
	for _, tc := range []struct{ p, want int }{
		{1, 128}, {85, 128}, {86, 256}, {100, 256}, {1000, 2048}, {30000, 32768},
	} {
		if got := DefaultMaxParallelism(tc.p); got != tc.want {
			t.Errorf("DefaultMaxParallelism(%d) = %d, want %d", tc.p, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		p, maxP int
		ok      bool
	}{
		{1, 1, true}, {7, 720, true}, {1, 32768, true}, {0, 128, false},
		{129, 128, false}, {1, 0, false}, {1, 32769, false},
	} {
		if err := Validate(tc.p, tc.maxP); (err == nil) != tc.ok {
			t.Errorf("Validate(%d, %d) = %v", tc.p, tc.maxP, err)
		}
	}
}
