package sim

import (
	"errors"
	"reflect"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The go-nvml mocks are moq structs whose unset XxxFunc fields panic when
// called. The simulator overrides what it models with methods of its own
// and fills every other field once here, so an unexpected call answers
// ERROR_NOT_SUPPORTED (as a driver lacking the feature would) instead of
// crashing the collector.

var (
	returnType = reflect.TypeFor[nvml.Return]()
	errorType  = reflect.TypeFor[error]()

	errNotSupported = errors.New("not supported by the simulated node")

	defaultsMu    sync.Mutex
	defaultsCache = map[reflect.Type][]reflect.Value{}
)

// fillUnset sets every nil func field of the moq struct *ptr.
func fillUnset(ptr any) {
	v := reflect.ValueOf(ptr).Elem()
	funcs := defaultFuncs(v.Type())
	for i, f := range funcs {
		if f.IsValid() && v.Field(i).IsNil() {
			v.Field(i).Set(f)
		}
	}
}

// defaultFuncs builds (once per struct type) a default for each func field.
func defaultFuncs(t reflect.Type) []reflect.Value {
	defaultsMu.Lock()
	defer defaultsMu.Unlock()
	if fs, ok := defaultsCache[t]; ok {
		return fs
	}
	fs := make([]reflect.Value, t.NumField())
	for i := range fs {
		f := t.Field(i)
		if f.IsExported() && f.Type.Kind() == reflect.Func {
			fs[i] = defaultFunc(f.Name, f.Type)
		}
	}
	defaultsCache[t] = fs
	return fs
}

// defaultFunc returns a delegating func when the field is a library-level
// wrapper of a handle method (DeviceGetUUIDFunc(Device) -> Device.GetUUID),
// else one that answers ERROR_NOT_SUPPORTED.
func defaultFunc(name string, ft reflect.Type) reflect.Value {
	if d, ok := delegateFunc(name, ft); ok {
		return d
	}
	return reflect.MakeFunc(ft, func([]reflect.Value) []reflect.Value { return notSupported(ft) })
}

func delegateFunc(name string, ft reflect.Type) (reflect.Value, bool) {
	if ft.NumIn() == 0 || ft.IsVariadic() || ft.In(0).Kind() != reflect.Interface {
		return reflect.Value{}, false
	}
	recv := ft.In(0)
	method, ok := strings.CutPrefix(strings.TrimSuffix(name, "Func"), recv.Name())
	if !ok || method == "" {
		return reflect.Value{}, false
	}
	m, ok := recv.MethodByName(method)
	if !ok || !sameSignature(m.Type, ft) {
		return reflect.Value{}, false
	}
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		if args[0].IsNil() {
			return notSupported(ft)
		}
		return args[0].MethodByName(method).Call(args[1:])
	}), true
}

// sameSignature reports whether method m (no receiver) matches f minus its
// first parameter.
func sameSignature(m, f reflect.Type) bool {
	if m.NumIn() != f.NumIn()-1 || m.NumOut() != f.NumOut() {
		return false
	}
	for i := range m.NumIn() {
		if m.In(i) != f.In(i+1) {
			return false
		}
	}
	for i := range m.NumOut() {
		if m.Out(i) != f.Out(i) {
			return false
		}
	}
	return true
}

// notSupported returns zero results with every Return set to
// ERROR_NOT_SUPPORTED and every error to errNotSupported.
func notSupported(ft reflect.Type) []reflect.Value {
	out := make([]reflect.Value, ft.NumOut())
	for i := range out {
		switch t := ft.Out(i); t {
		case returnType:
			out[i] = reflect.ValueOf(nvml.ERROR_NOT_SUPPORTED)
		case errorType:
			out[i] = reflect.ValueOf(&errNotSupported).Elem()
		default:
			out[i] = reflect.Zero(t)
		}
	}
	return out
}
