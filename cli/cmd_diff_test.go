package cli_test

// diffDataPaths are the parts of diff's examples that hold decoded data:
// keys, namespaces, map keys and values, on either side, of every kind.
func diffDataPaths() []string {
	var out []string
	for _, list := range []string{"states", "operator_states"} {
		for _, kind := range []string{"only_a", "only_b", "changed", "unchanged"} {
			ex := list + "[].examples." + kind + "[]."
			out = append(out, ex+"key")
			for _, side := range []string{"a", "b"} {
				for _, part := range []string{"namespace", "map_key", "value"} {
					out = append(out, ex+side+"[]."+part)
				}
			}
		}
	}
	return out
}
