package main

import (
	"image"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// scripts/report-screenshot.sh, which makes the README's screenshot from
// the demo's real report, works: it writes a rendered page of the size the
// committed screenshot has.
func TestReportScreenshotScriptShootsTheDemoReport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs chromium")
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		testenv.RequireIntegration(t, "chromium not found", "apt-get install chromium")
	}
	shot := filepath.Join(t.TempDir(), "shot.png")
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "report-screenshot.sh"))
	cmd.Env = append(os.Environ(), "DAYS=1", "SHOT="+shot)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("report-screenshot.sh: %v\n%s", err, out)
	}
	got, n := decodePNG(t, shot)
	committed, _ := decodePNG(t, filepath.Join("..", "..", "docs", "report-screenshot.png"))
	if got != committed {
		t.Errorf("screenshot is %v, the committed one %v", got, committed)
	}
	if n < 50 {
		t.Errorf("screenshot has %d distinct colours: blank or unstyled", n)
	}
}

// decodePNG returns an image's size and how many distinct colours it has.
func decodePNG(t *testing.T, path string) (image.Point, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	return b.Size(), len(seen)
}
