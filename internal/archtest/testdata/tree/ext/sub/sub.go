// Package sub is an outside module's package below its root.
package sub

// Sub is for a.
func Sub() int { return 2 }
