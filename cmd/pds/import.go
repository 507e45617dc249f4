package main

import "errors"

// importCmd loads campaigns, projects and custom fields from JSON lines.
func (e cmdEnv) importCmd(args []string) error {
	return errors.New("import: not built yet")
}
