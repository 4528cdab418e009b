// Package outfile writes a command's output file (`--out`) so that a failed
// write never leaves a truncated file that reads as complete, and so that
// `--out` can never replace something that is not an ordinary file.
//
// The output is written to a temporary file beside its final name and
// renamed into place on Commit. A rename replaces whatever the name points
// at: run as root, `--out /dev/null` would turn the host's /dev/null into a
// regular file. So the target is checked first (and again just before the
// rename): it must be absent or a regular file. A symbolic link is followed
// to the file it names, as a shell's `>` does, and that file is replaced;
// the link itself stays. A directory, a device, a FIFO or a socket is
// refused with an error naming it.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// maxLinks bounds how many symbolic links Create follows (Linux's own
// limit is 40), so a loop of links is an error, not a hang.
const maxLinks = 40

// File is an output being written. Write to it, then Commit to put it in
// place, or Abort to leave the target as it was. Abort after Commit does
// nothing, so `defer f.Abort()` is safe.
type File struct {
	tmp    *os.File
	target string
	perm   fs.FileMode
	done   bool
}

// Resolve returns the file that writing to path would replace: path itself,
// or where its symbolic links lead. It fails when that is not a regular file
// or absent, naming path and what it is.
func Resolve(path string) (string, fs.FileInfo, error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil, nil
		}
		if err != nil {
			return "", nil, fmt.Errorf("cannot write %s: %w", path, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if err := regular(path, p, fi); err != nil {
				return "", nil, err
			}
			return p, fi, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", nil, fmt.Errorf("cannot write %s: cannot read the link %s: %w", path, p, err)
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return "", nil, fmt.Errorf("cannot write %s: more than %d symbolic links", path, maxLinks)
}

// regular refuses anything but a regular file at p (reached from path).
func regular(path, p string, fi fs.FileInfo) error {
	var what string
	switch m := fi.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	default:
		what = "not a regular file"
	}
	if p != path {
		return fmt.Errorf("cannot write %s: it leads to %s, which is %s; --out writes only regular files (use --out - for standard output)", path, p, what)
	}
	return fmt.Errorf("cannot write %s: it is %s; --out writes only regular files (use --out - for standard output)", path, what)
}

// Create starts writing the output whose final name is path. A new file
// gets mode 0644 (an output is an ordinary file); a file replaced keeps its
// permission bits.
func Create(path string) (*File, error) {
	target, fi, err := Resolve(path)
	if err != nil {
		return nil, err
	}
	perm := fs.FileMode(0o644)
	if fi != nil {
		perm = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", path, err)
	}
	return &File{tmp: tmp, target: target, perm: perm}, nil
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) { return f.tmp.Write(p) }

// Target is the file Commit replaces (path with its links followed).
func (f *File) Target() string { return f.target }

// Commit syncs the output and renames it over its target, after checking
// once more that the target is still absent or a regular file (it may have
// changed while the output was written).
func (f *File) Commit() error {
	if f.done {
		return errors.New("cannot commit " + f.target + ": already committed or aborted")
	}
	f.done = true
	err := errors.Join(f.tmp.Chmod(f.perm), f.tmp.Sync(), f.tmp.Close())
	if err == nil {
		if fi, lerr := os.Lstat(f.target); lerr == nil {
			err = regular(f.target, f.target, fi)
		} else if !errors.Is(lerr, fs.ErrNotExist) {
			err = lerr
		}
	}
	if err == nil {
		err = os.Rename(f.tmp.Name(), f.target)
	}
	if err != nil {
		os.Remove(f.tmp.Name())
		return fmt.Errorf("cannot write %s: %w", f.target, err)
	}
	return nil
}

// Abort removes the temporary file; the target stays as it was.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.tmp.Close()
	os.Remove(f.tmp.Name())
}
