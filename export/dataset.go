package export

import "github.com/hamba/avro/v2"

// The names of an export's layout, for the tools that read datasets back
// (bootstrap): each a contract, since files written by one version of
// stateproc are read by another.

// DatasetDir is the directory, relative to an export's, of the dataset of
// the state (or timer service, operator state, broadcast state) name of
// operator uid.
func DatasetDir(uid, name string) string { return escapeName(uid) + "/" + escapeName(name) }

// Column names.
const (
	ColumnKeyGroup     = colKeyGroup
	ColumnKey          = colKey
	ColumnNamespace    = colNamespace
	ColumnWindowStart  = colWindowStart
	ColumnWindowEnd    = colWindowEnd
	ColumnMapKey       = colMapKey
	ColumnIndex        = colIndex
	ColumnValue        = colValue
	ColumnLastModified = colLastModified
	ColumnExpired      = colExpired
	ColumnTimestamp    = colTimestamp
	ColumnSubtask      = colSubtask
)

// Keys of the key-value metadata of every file.
const (
	MetaSavepointID = "stateproc.savepoint_id"
	MetaOperator    = "stateproc.operator"
	MetaState       = "stateproc.state"
	MetaKind        = "stateproc.kind"
	MetaSerializers = "stateproc.serializers"
	MetaNow         = "stateproc.now"
)

// UnionBranchNames names the fields of the struct that holds an Avro union
// other than [null, T]: a named type by its name (its full name if two
// share a name), any other by its type. The null branch has a name too,
// though no field.
func UnionBranchNames(types []avro.Schema) []string { return branchNames(types) }
