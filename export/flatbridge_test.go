package export

import "github.com/stateproc/stateproc/savepoint"

// WithBuilders is o writing every dataset through Arrow builders.
func WithBuilders(o Options) Options {
	o.builders = true
	return o
}

// FlatDatasets lists the directories of the datasets of src that o writes
// from flat columns.
func FlatDatasets(src savepoint.Source, o Options) ([]string, error) {
	o.defaults()
	dss, err := selectDatasets(src, &o)
	if err != nil {
		return nil, err
	}
	wo := writerOptions{format: o.Format, builders: o.builders}
	var out []string
	for _, ds := range dss {
		if wo.flat(ds) {
			out = append(out, ds.dir)
		}
	}
	return out, nil
}
