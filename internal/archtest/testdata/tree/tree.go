// Package tree is the root package of a small module that Load reads.
package tree

import _ "example.com/tree/a"
