// Package a imports the standard library, its own module and an outside
// module's package.
package a

import (
	"fmt"

	"example.com/tree/b"
	"example.org/ext/sub"
)

// A uses every import.
func A() string { return fmt.Sprint(b.B(), sub.Sub()) }
