// Package workload names the workload a pod belongs to, the one way the
// FOCUS export, the advisor and anything else naming workloads do it, so
// one CronJob is not two workloads in two reports. Standard library only.
package workload

import "strings"

// safeAlphabet is what Kubernetes draws generated name suffixes and pod
// template hashes from: no vowels and no 0, 1 or 3, so they never spell
// words ("llm-serve" keeps its "-serve").
const safeAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// FromPod guesses the workload from the pod's name alone, the way the
// controllers name their pods:
//
//   - Deployment: <deployment>-<template hash, 6-10 safe chars>-<5 safe chars>
//   - CronJob: <cronjob>-<scheduled minute, digits>-<5 safe chars>
//   - Job, DaemonSet, bare ReplicaSet: <name>-<5 safe chars>
//   - StatefulSet: <name>-<ordinal>
//
// A generated five-character suffix is dropped, then a template hash or a
// number before it; without one, a trailing number (a StatefulSet's
// ordinal) is. A name with none of them is its own workload. It is a
// heuristic: a hand-named pod that merely looks generated ("cache-2") is
// merged with its namesakes.
func FromPod(pod string) string {
	head, tail, ok := cutLast(pod)
	switch {
	case ok && generated(tail, 5, 5):
		if head2, tail2, ok := cutLast(head); ok && (generated(tail2, 6, 10) || digits(tail2)) {
			return head2
		}
		return head
	case ok && digits(tail):
		return head
	}
	return pod
}

// FromOwner names the workload of a pod whose owning controller is known
// (kind "ReplicaSet", "StatefulSet", "Job", "DaemonSet"...): a
// Deployment's ReplicaSet is named after the Deployment plus a template
// hash, a CronJob's Job after the CronJob plus its scheduled minute; any
// other controller is the workload. It gives what FromPod gives for the
// pods those controllers name.
func FromOwner(kind, name string) string {
	head, tail, ok := cutLast(name)
	switch {
	case !ok:
	case kind == "ReplicaSet" && generated(tail, 6, 10):
		return head
	case kind == "Job" && digits(tail):
		return head
	}
	return name
}

// cutLast splits s at its last '-', false when there is none or it is the
// first byte.
func cutLast(s string) (head, tail string, ok bool) {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

func generated(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for _, c := range []byte(s) {
		if strings.IndexByte(safeAlphabet, c) < 0 {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
