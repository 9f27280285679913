package cli

import (
	"encoding/hex"
	"testing"

	"github.com/stateproc/stateproc/serializers"
)

func TestEncodeKeyArg(t *testing.T) {
	const schema = `{"type":"record","name":"K","fields":[{"name":"tenant","type":"string"},{"name":"shard","type":"int"},{"name":"id","type":"long"}]}`
	for _, c := range []struct {
		snap serializers.Snapshot
		arg  string
		hex  string
	}{
		{serializers.Snapshot{Kind: serializers.KindString}, "r-1093", "722d31303933"},
		{serializers.Snapshot{Kind: serializers.KindInt64}, "42", "000000000000002a"},
		{serializers.Snapshot{Kind: serializers.KindInt32}, "-2", "fffffffe"},
		{serializers.Snapshot{Kind: serializers.KindBytes}, "00ff", "00ff"},
		{serializers.Snapshot{Kind: serializers.KindTimestamp}, "2023-11-14T22:13:20Z", "0000018bcfe56800"},
		// Avro binary: "acme" as length 4 (zigzag 08) and bytes, int 3 as 06, long -1 as 01.
		{serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}, `{"tenant":"acme","shard":3,"id":-1}`, "0861636d650601"},
	} {
		ser, err := serializers.Restore(c.snap)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeKeyArg(ser, c.arg)
		if err != nil {
			t.Errorf("%s %q: %v", c.snap, c.arg, err)
			continue
		}
		if hex.EncodeToString(got) != c.hex {
			t.Errorf("%s %q = %x, want %s", c.snap, c.arg, got, c.hex)
		}
	}
	for _, c := range []struct {
		snap serializers.Snapshot
		arg  string
	}{
		{serializers.Snapshot{Kind: serializers.KindInt64}, "x"},
		{serializers.Snapshot{Kind: serializers.KindInt32}, "3000000000"},
		{serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}, `{"tenant":"acme"`},
		{serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}, `{"tenant":1,"shard":3,"id":1}`},
		{serializers.Snapshot{Kind: serializers.KindList, Args: []serializers.Snapshot{{Kind: serializers.KindInt64}}}, "[1]"},
	} {
		ser, err := serializers.Restore(c.snap)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := encodeKeyArg(ser, c.arg); ExitCode(err) != ExitUsage {
			t.Errorf("%s %q: %v, want a usage error", c.snap, c.arg, err)
		}
	}
}

func TestParseKeyGroups(t *testing.T) {
	for in, want := range map[string][2]int{"0-127": {0, 127}, "5": {5, 5}, "3-3": {3, 3}} {
		r, err := parseKeyGroups(in, 128)
		if err != nil || r.Start != want[0] || r.End != want[1] {
			t.Errorf("parseKeyGroups(%q) = %v, %v; want %v", in, r, err, want)
		}
	}
	for _, bad := range []string{"", "-", "5-3", "0-128", "-1", "a-b", "1-2-3"} {
		if _, err := parseKeyGroups(bad, 128); ExitCode(err) != ExitUsage {
			t.Errorf("parseKeyGroups(%q) = %v, want a usage error", bad, err)
		}
	}
}
