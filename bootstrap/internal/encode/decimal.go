package encode

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// decimalNode is an Avro decimal, of bytes (size 0) or of a fixed size:
// the unscaled value in two's complement, big-endian, as hamba/avro writes
// it (the serializers' bytes for the same value).
type decimalNode struct {
	precision, scale int
	size             int
	limit            *big.Int // 10^precision
}

func newDecimal(precision, scale, size int) (node, error) {
	if precision < 1 || scale < 0 || scale > precision {
		return nil, errorf("decimal(%d,%d) is not a valid decimal", precision, scale)
	}
	return decimalNode{precision: precision, scale: scale, size: size, limit: pow10(precision)}, nil
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

func (n decimalNode) what() string { return fmt.Sprintf("decimal(%d,%d)", n.precision, n.scale) }

// put encodes the decimal whose unscaled value at scale from is u. u may
// be changed.
func (n decimalNode) put(dst []byte, u *big.Int, from int) ([]byte, error) {
	switch {
	case from < n.scale:
		u.Mul(u, pow10(n.scale-from))
	case from > n.scale:
		var r big.Int
		u.QuoRem(u, pow10(from-n.scale), &r)
		if r.Sign() != 0 {
			return dst, errorf("the value has more than the %d fractional digits of %s", n.scale, n.what())
		}
	}
	if new(big.Int).Abs(u).Cmp(n.limit) >= 0 {
		return dst, errorf("the value has more than the %d digits of %s", n.precision, n.what())
	}
	b := twosComplement(u, n.size)
	if n.size == 0 {
		return append(putVarint(dst, int64(len(b))), b...), nil
	}
	if len(b) != n.size {
		return dst, errorf("the value takes %d bytes, more than the %d of %s", len(b), n.size, n.what())
	}
	return append(dst, b...), nil
}

// twosComplement writes u big-endian in two's complement: for bytes (size
// 0), in the length hamba/avro gives it (a byte for zero, a leading zero
// byte before a positive value whose top bit is set, BitLen/8+1 bytes for
// a negative value); for a fixed, sign-extended to size, or in another
// length when it does not fit.
func twosComplement(u *big.Int, size int) []byte {
	switch u.Sign() {
	case 0:
		return make([]byte, max(size, 1))
	case 1:
		b := u.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		if len(b) < size {
			b = append(make([]byte, size-len(b)), b...)
		}
		return b
	}
	if size == 0 {
		return new(big.Int).Add(u, new(big.Int).Lsh(big.NewInt(1), uint(8*(u.BitLen()/8+1)))).Bytes()
	}
	b := new(big.Int).Add(u, new(big.Int).Lsh(big.NewInt(1), uint(8*size))).Bytes()
	if len(b) != size || b[0]&0x80 == 0 {
		// Below -2^(8*size-1): it does not fit.
		return make([]byte, size+1)
	}
	return b
}

func (n decimalNode) forArrow(dt arrow.DataType) (arrowEnc, error) {
	if d, ok := dt.(arrow.DecimalType); ok {
		return &decimalEnc{n: n, scale: int(d.GetScale())}, nil
	}
	if isInteger(dt) {
		return &decimalEnc{n: n}, nil
	}
	return nil, errorf("a column of %s cannot hold %s values", dt, n.what())
}

type decimalEnc struct {
	n     decimalNode
	scale int
	arr   arrow.Array
	get   func(i int) *big.Int
}

func (e *decimalEnc) bind(arr arrow.Array) {
	e.arr = arr
	switch a := arr.(type) {
	case *array.Decimal32:
		e.get = func(i int) *big.Int { return big.NewInt(int64(a.Value(i))) }
	case *array.Decimal64:
		e.get = func(i int) *big.Int { return big.NewInt(int64(a.Value(i))) }
	case *array.Decimal128:
		e.get = func(i int) *big.Int { return a.Value(i).BigInt() }
	case *array.Decimal256:
		e.get = func(i int) *big.Int { return a.Value(i).BigInt() }
	case *array.Uint64:
		e.get = func(i int) *big.Int { return new(big.Int).SetUint64(a.Value(i)) }
	default:
		ints := intValues(arr)
		e.get = nil
		if ints != nil {
			e.get = func(i int) *big.Int { v, _ := ints(i); return big.NewInt(v) }
		}
	}
}

func (e *decimalEnc) append(dst []byte, i int) ([]byte, error) {
	if isNull(e.arr, i) {
		return dst, errNull(e.n)
	}
	if e.get == nil {
		return dst, errType(e.arr, e.n)
	}
	return e.n.put(dst, e.get(i), e.scale)
}

// appendJSON reads a decimal written in digits, as a string (as export
// writes it) or a number.
func (n decimalNode) appendJSON(dst []byte, v any) ([]byte, error) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = string(x)
	case nil:
		return dst, errNull(n)
	default:
		return dst, errorf("want a decimal in digits, got %s", jsonKind(v))
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || strings.ContainsRune(s, '/') {
		return dst, errorf("%q is not a decimal", truncate(s))
	}
	r.Mul(r, new(big.Rat).SetInt(pow10(n.scale)))
	if !r.IsInt() {
		return dst, errorf("%s has more than the %d fractional digits of %s", s, n.scale, n.what())
	}
	return n.put(dst, new(big.Int).Set(r.Num()), n.scale)
}
