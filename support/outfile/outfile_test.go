package outfile

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path, text string) error {
	t.Helper()
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	return f.Commit()
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leftovers fails when a temporary file stayed in dir.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

func TestNewAndReplacedRegularFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.csv")
	if err := write(t, p, "one\n"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", fi.Mode().Perm())
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := write(t, p, "two\n"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); got != "two\n" {
		t.Errorf("replaced file reads %q", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want its own 0600 kept", fi.Mode().Perm())
	}
	leftovers(t, dir)
}

func TestAbortKeepsTheTarget(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.csv")
	if err := os.WriteFile(p, []byte("earlier\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half a fi"))
	f.Abort()
	f.Abort()
	if got := read(t, p); got != "earlier\n" {
		t.Errorf("aborted write changed the target: %q", got)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	leftovers(t, dir)
}

// A symbolic link is followed: the file it names is replaced and the link
// stays a link, also through a chain of relative links and when the link
// dangles (as a shell's > creates the file).
func TestSymlinkIsFollowed(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.csv")
	if err := os.WriteFile(real, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.csv", filepath.Join(dir, "hop")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(filepath.Join(dir, "hop"), link); err != nil {
		t.Fatal(err)
	}
	if err := write(t, link, "new\n"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if got := read(t, real); got != "new\n" {
		t.Errorf("the link's target reads %q", got)
	}

	dangling := filepath.Join(dir, "dangling.csv")
	if err := os.Symlink("made.csv", dangling); err != nil {
		t.Fatal(err)
	}
	if err := write(t, dangling, "made\n"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "made.csv")); got != "made\n" {
		t.Errorf("dangling link's target reads %q", got)
	}

	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	if err := write(t, loop, "x"); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Errorf("a loop of links: %v", err)
	}
	leftovers(t, dir)
}

// refused checks that writing to path fails naming it and what it is, and
// that path is the same kind of file afterwards.
func refused(t *testing.T, path, what string, kind fs.FileMode) {
	t.Helper()
	err := write(t, path, "bill\n")
	if err == nil {
		t.Fatalf("writing to %s (%s) succeeded", path, what)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), what) {
		t.Errorf("error %q does not name %s and %q", err, path, what)
	}
	fi, lerr := os.Lstat(path)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if fi.Mode().Type() != kind {
		t.Errorf("%s is now %v, was %v", path, fi.Mode().Type(), kind)
	}
	leftovers(t, filepath.Dir(path))
}

func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()

	sub := filepath.Join(dir, "subdir")
	os.Mkdir(sub, 0o755)
	refused(t, sub, "a directory", fs.ModeDir)

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, fifo, "a FIFO", fs.ModeNamedPipe)

	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	refused(t, sock, "a socket", fs.ModeSocket)

	// A link to a FIFO: the link is followed, and the FIFO refused.
	link := filepath.Join(dir, "to-fifo")
	os.Symlink(fifo, link)
	if err := write(t, link, "x"); err == nil || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("a link to a FIFO: %v", err)
	}
}

// A real character device, made with mknod in a scratch directory (never the
// host's /dev/null: a rename over it as root would replace it). Needs root,
// as CI runs.
func TestRefusesACharacterDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	dir := t.TempDir()
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(mkdev(1, 3))); err != nil {
		t.Fatalf("mknod: %v", err)
	}
	refused(t, null, "a character device", fs.ModeDevice|fs.ModeCharDevice)
	link := filepath.Join(dir, "out.csv")
	os.Symlink(null, link)
	if err := write(t, link, "x"); err == nil || !strings.Contains(err.Error(), "a character device") {
		t.Errorf("a link to a device: %v", err)
	}
}

// The target checked again at Commit: a FIFO made while the output was being
// written is not replaced.
func TestCommitRechecksTheTarget(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.csv")
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("bill\n"))
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err == nil || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("Commit over a FIFO made meanwhile: %v", err)
	}
	if fi, _ := os.Lstat(p); fi.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v", fi.Mode())
	}
	leftovers(t, dir)
}

func mkdev(major, minor uint32) uint64 {
	return uint64(major)<<8 | uint64(minor)
}
