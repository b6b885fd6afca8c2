package gemm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBF16EncodingsMatchGNUAs: every VDPBF16PS and VCVTNE2PS2BF16 that
// gen_bf16.go wrote into bf16_amd64.s as bytes, and round_amd64.s's and
// cpuops/filter_amd64.s's (gen_filter.go, the bf16 filter kernels), is
// the encoding GNU as gives the instruction its comment names (skipped
// where binutils is not installed).
func TestBF16EncodingsMatchGNUAs(t *testing.T) {
	as, err := exec.LookPath("as")
	if err != nil {
		t.Skip("no GNU as:", err)
	}
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		t.Skip("no objcopy:", err)
	}
	line := regexp.MustCompile(`^\s*((?:BYTE \$0x[0-9a-f]{2}; ){5}BYTE \$0x[0-9a-f]{2}) // (VDPBF16PS|VCVTNE2PS2BF16) Z(\d+), Z(\d+), Z(\d+) \(Intel order\)$`)
	var gas strings.Builder
	var want []byte
	var where []string // the file of each instruction
	for _, file := range []string{"bf16_amd64.s", "round_amd64.s", "../cpuops/filter_amd64.s"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(string(src), "\n") {
			if !strings.Contains(l, "BYTE $0x62") {
				continue
			}
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%s: unexpected line %q", file, l)
			}
			for _, b := range strings.Split(m[1], "; ") {
				v, err := strconv.ParseUint(strings.TrimPrefix(b, "BYTE $0x"), 16, 8)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, byte(v))
			}
			// AT&T order: the sources reversed, the destination last.
			fmt.Fprintf(&gas, "%s %%zmm%s, %%zmm%s, %%zmm%s\n", strings.ToLower(m[2]), m[5], m[4], m[3])
			where = append(where, file)
			n++
		}
		if n == 0 {
			t.Fatalf("%s has no encoded instructions", file)
		}
	}
	n := len(where)
	dir := t.TempDir()
	s, o, bin := filepath.Join(dir, "t.s"), filepath.Join(dir, "t.o"), filepath.Join(dir, "t.bin")
	if err := os.WriteFile(s, []byte(gas.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-o", o, s).CombinedOutput(); err != nil {
		t.Skipf("GNU as does not take AVX512_BF16 (%v): %s", err, out)
	}
	if out, err := exec.Command(objcopy, "-O", "binary", "-j", ".text", o, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v: %s", err, out)
	}
	got, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		lines := strings.Split(gas.String(), "\n")
		for i := 0; i < n; i++ {
			if i*6+6 > len(got) || !bytes.Equal(got[i*6:i*6+6], want[i*6:i*6+6]) {
				t.Fatalf("%s: %s has % x, GNU as gives % x", lines[i], where[i], want[i*6:i*6+6], got[min(i*6, len(got)):min(i*6+6, len(got))])
			}
		}
		t.Fatalf("GNU as gave %d bytes for %d instructions", len(got), n)
	}
	t.Logf("%d encodings match GNU as", n)
}
