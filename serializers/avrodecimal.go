package serializers

import (
	"math"
	"math/big"

	"github.com/hamba/avro/v2"
)

// decimalLimit checks that a decimal's unscaled value has at most precision
// digits. Wider values are not values of the type: hamba, like any
// conforming writer, refuses to write them, so accepting them would give the
// toolkit values it cannot write back.
type decimalLimit struct {
	precision int
	// bound is 10^precision; values must be below it in magnitude.
	bound *big.Int
	// shortLen is the longest encoding that cannot reach bound, which
	// spares most values the big.Int arithmetic.
	shortLen int
}

func decimalOf(s avro.Schema) *decimalLimit {
	lt, ok := s.(avro.LogicalTypeSchema)
	if !ok {
		return nil
	}
	d, ok := lt.Logical().(*avro.DecimalLogicalSchema)
	if !ok {
		return nil
	}
	p := d.Precision()
	// An n-byte two's complement value is below 2^(8n-1) in magnitude.
	short := int(math.Floor((float64(p)*math.Log2(10) + 1) / 8 * 0.999999))
	return &decimalLimit{
		precision: p,
		bound:     new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil),
		shortLen:  short,
	}
}

func (d *decimalLimit) check(b []byte) error {
	if len(b) <= d.shortLen {
		return nil
	}
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(len(b))*8))
	}
	if v.CmpAbs(d.bound) >= 0 {
		return decodeErr("decimal %v has more than the %d digits of its precision", v, d.precision)
	}
	return nil
}
