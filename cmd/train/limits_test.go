package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestImpossibleSettingsAreRefusedAtOnce runs the command in a child
// process with a deadline: settings that cannot work stop it within a
// second, with exit 2 and a message naming the setting and the limit (they
// used to run for minutes: --threads 1000000 reached 21.9 GB, kernel 10001
// on 16 px ran out of memory after 198 s).
func TestImpossibleSettingsAreRefusedAtOnce(t *testing.T) {
	many := filepath.Join(t.TempDir(), "many.yaml")
	var b strings.Builder
	b.WriteString("model:\n  conv:\n")
	for i := 0; i < 1000; i++ {
		b.WriteString("    - {channels: 4, kernel: 3}\n")
	}
	os.WriteFile(many, []byte(b.String()), 0o644)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--threads", "1000000"}, []string{"train.threads", "1024", "1000000"}},
		{[]string{"--image-size", "16", "--model.conv", "[{channels: 16, kernel: 10001}]"}, []string{"model.conv[0].kernel", "10001 is larger than the block's 16x16 px input", "at most 15"}},
		{[]string{"--image-size", "16", "--model.conv", "[{channels: 8, kernel: 3, pool: true}, {channels: 8, kernel: 9}]"}, []string{"model.conv[1].kernel", "8x8 px input", "after 1 pools"}},
		{[]string{"--config", many}, []string{"model.conv", "1000 conv blocks", "at most 256"}},
		{[]string{"--batch-size", "1000000000"}, []string{"needs about", "more than this machine's", "batch buffers", "data.batch_size"}},
		{[]string{"--image-size", "100000"}, []string{"needs about", "TiB", "3x100000x100000"}},
		{[]string{"--epochs", "2.5"}, []string{"train.epochs: 2.5 is not a whole number"}},
		{[]string{"--batch-size", "3.7"}, []string{"data.batch_size: 3.7 is not a whole number"}},
	} {
		cmd := command(append(tc.args, "--out", filepath.Join(t.TempDir(), "run"), "--data.cache_dir", t.TempDir())...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := waitWithin(t, cmd, 20*time.Second)
		took := time.Since(start)
		if code := exitCode(err); code != 2 {
			t.Errorf("train %v: exit %d, want 2; stderr:\n%s", tc.args, code, stderr.String())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("train %v: stderr lacks %q:\n%s", tc.args, w, stderr.String())
			}
		}
		// A second is the bar; the child's own start (a -race test binary on a
		// loaded machine) is part of what is timed.
		if took > time.Second {
			t.Errorf("train %v: refused after %v, want under a second", tc.args, took)
		}
	}
}

func TestMachineMemoryIsRead(t *testing.T) {
	n, source := machineMemory()
	if n < 64<<20 || source == "" {
		t.Fatalf("machineMemory() = %d (%s)", n, source)
	}
	if _, err := os.Stat("/proc/meminfo"); err == nil && source == fallbackSource {
		t.Errorf("/proc/meminfo exists, yet the memory is %s", source)
	}
	t.Logf("%s (%s)", fmt.Sprint(n>>20), source)
	// The quickstart fits in a fraction of it.
	cfg, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkMemory(cfg); err != nil {
		t.Errorf("the quickstart is refused: %v", err)
	}
	need, _ := estimateRun(cfg)
	if need > 1<<30 {
		t.Errorf("the quickstart is estimated at %.0f MiB; it runs in about 42", need/(1<<20))
	}
}
