package crc

import "testing"

// TestCastagnoli checks the check value of CRC-32C from RFC 3720
// (iSCSI), appendix B.4: 32 bytes of zeros.
func TestCastagnoli(t *testing.T) {
	zeros := make([]byte, 32)
	if got := Checksum(zeros); got != 0x8a9136aa {
		t.Errorf("Checksum(32 zeros) = %08x, want 8a9136aa", got)
	}
	h := New()
	h.Write(zeros[:10])
	h.Write(zeros[10:])
	if got := h.Sum32(); got != 0x8a9136aa {
		t.Errorf("New over two writes = %08x, want 8a9136aa", got)
	}
	if got := Checksum([]byte("123456789")); got != 0xe3069283 {
		t.Errorf(`Checksum("123456789") = %08x, want e3069283`, got)
	}
}
