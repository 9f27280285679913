package export

import "github.com/stateproc/stateproc/savepoint"

// WithBuilders is o writing every dataset through Arrow builders.
func WithBuilders(o Options) Options {
	o.builders = true
	return o
}

// FlatDatasets maps the directory of each dataset of src that o writes
// from flat columns to whether its key column has a dictionary.
func FlatDatasets(src savepoint.Source, o Options) (map[string]bool, error) {
	o.defaults()
	dss, err := selectDatasets(src, &o)
	if err != nil {
		return nil, err
	}
	wo := writerOptions{format: o.Format, builders: o.builders}
	out := map[string]bool{}
	for _, ds := range dss {
		if wo.flat(ds) {
			out[ds.dir] = ds.dictKey()
		}
	}
	return out, nil
}
