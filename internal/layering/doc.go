// Package layering holds the module's architecture against its imports:
// its test reads the layer of every package from the layout table of the
// README and fails when a package imports a layer after its own, when a
// tool other than the layout opener and the rewrite framework imports the
// savepoint format, or when anything but the command imports the CLI. It
// has no code of its own.
package layering
