// Package b imports only the standard library outside its tests.
package b

import "strings"

// B uses its import.
func B() string { return strings.ToUpper("b") }
