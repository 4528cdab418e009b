// Package tenancy holds the words every layer shares about who holds a
// GPU and how: the sharing modes of the ledger contract with their
// properties in one table, and which team pays for a namespace's
// containers (ResolveTeam, TeamResolver). Standard library only, so the
// maths (attribution), the price book and the quota readers agree on them
// without importing one another.
package tenancy
