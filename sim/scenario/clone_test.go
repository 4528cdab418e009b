package scenario

import (
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"unsafe"
)

// TestCloneIsDeepAndDetached clones every scenario of the repository's
// testdata: the clone must equal the original and share no string bytes,
// slice arrays or maps with it, so that a field added later and forgotten
// by Clone fails here.
func TestCloneIsDeepAndDetached(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/scenarios/*/scenario.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	loaded := 0
	for _, p := range paths {
		s, err := Load(p)
		if err != nil {
			continue // the bad-input scenarios are meant to fail
		}
		loaded++
		c := s.Clone()
		if !reflect.DeepEqual(s, c) {
			t.Errorf("%s: clone differs from the original", p)
		}
		if path, ok := shared(reflect.ValueOf(s).Elem(), reflect.ValueOf(c).Elem(), "Scenario"); ok {
			t.Errorf("%s: clone shares memory with the original at %s", p, path)
		}
	}
	if loaded < 5 {
		t.Fatalf("only %d scenarios loaded", loaded)
	}
}

// shared reports the first place where a and b (same type) share memory.
func shared(a, b reflect.Value, path string) (string, bool) {
	switch a.Kind() {
	case reflect.String:
		if a.Len() > 0 && unsafe.StringData(a.String()) == unsafe.StringData(b.String()) {
			return path, true
		}
	case reflect.Slice:
		if a.Cap() > 0 && a.UnsafePointer() == b.UnsafePointer() {
			return path, true
		}
		for i := 0; i < a.Len(); i++ {
			if p, ok := shared(a.Index(i), b.Index(i), path+"["+strconv.Itoa(i)+"]"); ok {
				return p, true
			}
		}
	case reflect.Map:
		if !a.IsNil() && a.UnsafePointer() == b.UnsafePointer() {
			return path, true
		}
		for _, k := range a.MapKeys() {
			if p, ok := shared(a.MapIndex(k), b.MapIndex(k), path+"."+k.String()); ok {
				return p, true
			}
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if p, ok := shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); ok {
				return p, true
			}
		}
	}
	return "", false
}
