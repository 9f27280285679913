// Package encode turns the cells of a dataset, Arrow values or decoded JSON,
// into the bytes of a serializer: the inverse of export's mapping. A
// Column is compiled once from a serializer snapshot; Arrow binds it to the
// Arrow type of one file's column, checking that the type can hold the
// serializer's values, and AppendJSON encodes a value of a JSON line.
//
// The bytes are those the serializers write (package serializers, and the
// Avro binary encoding in its canonical form: one block per array and map,
// map entries sorted by key bytes, decimals as hamba/avro writes them), so
// that export followed by this package gives back the stored bytes.
//
// What a column accepts is what export writes and what a query engine
// writes for the same values: an integer serializer takes any Arrow integer
// whose values fit it, a float32 a float64 that it holds exactly, a string
// a dictionary of strings, a timestamp any unit that converts exactly, a
// decimal another scale that converts exactly; a JSON value is read by the
// conventions of every command's output (package internal/jsonvalue). A
// value that does not fit (null in a column that cannot be null, an integer
// out of range, a string that is not UTF-8, an enum symbol the schema lacks,
// a repeated map key) is an *Error naming its place within the column.
//
// It sits under package bootstrap, whose dataset reader is its only user.
package encode
