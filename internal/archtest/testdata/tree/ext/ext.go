// Package ext is an outside module's root package.
package ext

// Ext is for b's test.
func Ext() int { return 1 }
