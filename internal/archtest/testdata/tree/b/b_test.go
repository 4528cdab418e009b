package b

import (
	"testing"

	"example.org/ext"
)

// A test's import is not part of the package's imports.
func TestB(t *testing.T) { _ = ext.Ext() }
