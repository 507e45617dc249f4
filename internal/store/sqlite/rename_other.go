//go:build !linux

package sqlite

// renameNoReplace gives the file at from the name to only if nothing has
// that name: fs.ErrExist otherwise.
func renameNoReplace(from, to string) error { return linkThenUnlink(from, to) }
