package detgen

// Field tells apart the independent values drawn for one index (its tenant,
// its latency, ...): each field is a separate stream of numbers.
type Field uint64

// Hash returns a 64-bit pseudo-random number for (seed, index, field). It is
// splitmix64's finalizer over the three inputs, which is all a generator
// needs: no state, so record i can be produced without producing records
// 0..i-1, and the same inputs always give the same number.
func Hash(seed int64, index uint64, f Field) uint64 {
	x := uint64(seed)*0x9e3779b97f4a7c15 ^ uint64(f)*0xd1b54a32d192ed03
	x = mix64(x) + index*0x9e3779b97f4a7c15
	return mix64(x)
}

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Below returns Hash reduced to [0, n). The bias of the modulo is below
// n/2^64, far under anything a test could see.
func Below(seed int64, index uint64, f Field, n uint64) uint64 {
	return Hash(seed, index, f) % n
}

// Between returns Hash reduced to [lo, hi].
func Between(seed int64, index uint64, f Field, lo, hi int64) int64 {
	return lo + int64(Below(seed, index, f, uint64(hi-lo+1)))
}
