package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"stoke/gemm"
	"stoke/internal/cpustat"
)

// Machine is what a measurement ran on, recorded beside its result:
// machines of one kind still differ (one measured like a Zen 4 with
// 256-bit AVX-512 units, the next was a Zen 5 with full-width ones), so a
// figure without its CPU cannot be compared with another.
type Machine struct {
	CPU    string   `json:"cpu"`        // /proc/cpuinfo's model name
	Family int      `json:"cpu_family"` // and its family and model numbers
	Model  int      `json:"cpu_model"`
	CPUs   int      `json:"cpus"`
	SIMD   []string `json:"simd"`       // the vector extensions of interest the CPU has
	Stoke  string   `json:"stoke_simd"` // what stoke's kernels use of them
}

// simdFlags are the /proc/cpuinfo flags worth naming beside a result: what
// stoke's kernels use (avx2, fma) and what a BLAS or a later kernel could.
var simdFlags = []string{"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile"}

// ThisMachine reads /proc/cpuinfo (Linux); elsewhere only the CPU count
// and stoke's kernel are known.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Stoke: stokeSIMD()}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		m.CPU = runtime.GOARCH
		return m
	}
	return parseCPUInfo(b, m)
}

// parseCPUInfo fills m from the first processor's block of /proc/cpuinfo.
func parseCPUInfo(b []byte, m Machine) Machine {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // the flags line is long
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			if m.CPU != "" { // a blank line ends the first processor's block
				break
			}
			continue
		}
		val = strings.TrimSpace(val)
		switch strings.TrimSpace(key) {
		case "model name":
			m.CPU = val
		case "cpu family":
			m.Family, _ = strconv.Atoi(val)
		case "model":
			m.Model, _ = strconv.Atoi(val)
		case "flags":
			have := strings.Fields(val)
			for _, f := range simdFlags {
				if slices.Contains(have, f) {
					m.SIMD = append(m.SIMD, f)
				}
			}
		}
	}
	return m
}

func stokeSIMD() string {
	if gemm.HasAVX512() {
		return "AVX-512F (GEMM, im2col gathers, the conv block's max-pool) + AVX2+FMA"
	}
	if gemm.HasAVX2() {
		return "AVX2+FMA"
	}
	return "none (pure Go kernels)"
}

// String is the machine as one line of a report.
func (m Machine) String() string {
	return fmt.Sprintf("%s (family %d, model %d), %d CPUs, SIMD %s; stoke uses %s",
		m.CPU, m.Family, m.Model, m.CPUs, strings.Join(m.SIMD, " "), m.Stoke)
}

// Load is how busy the machine was while a measurement ran: the 1-minute
// load average before and after, and from /proc/stat the CPU time every
// process used less our own (this process and the children it has waited
// for), so that a slow figure can be told from a loaded machine.
type Load struct {
	Load1Before float64 `json:"load1_before"`
	Load1After  float64 `json:"load1_after"`
	WallSeconds float64 `json:"wall_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`  // ours, user + system
	OthersCores float64 `json:"others_cores"` // cores other processes kept busy, on average; -1 where unknown
}

// loadMeter is a Load being measured: start it, run, then stop.
type loadMeter struct {
	load1 float64
	t     time.Time
	ours  time.Duration
	busy  float64 // seconds of CPU the whole machine had used; -1 where unknown
}

func startLoad() loadMeter {
	return loadMeter{load1: load1(), t: time.Now(), ours: cpustat.SelfAndChildren(), busy: cpustat.MachineBusy()}
}

func (s loadMeter) stop() Load {
	l := Load{Load1Before: s.load1, Load1After: load1(), WallSeconds: time.Since(s.t).Seconds(),
		CPUSeconds: (cpustat.SelfAndChildren() - s.ours).Seconds(), OthersCores: -1}
	if b := cpustat.MachineBusy(); s.busy >= 0 && b >= 0 && l.WallSeconds > 0 {
		l.OthersCores = max(0, (b-s.busy-l.CPUSeconds)/l.WallSeconds)
	}
	return l
}

// Thresholds of a busy machine: a 1-minute load above half a core before
// a bench starts, or other processes keeping a quarter of a core busy
// during a measurement (measured over at least a second: /proc/stat counts
// in hundredths of a second per CPU).
const (
	busyLoad1  = 0.5
	busyOthers = 0.25
)

// Busy says why the machine was too busy for the figure to be trusted, or
// "" when it was quiet. threads > 0 is the cores the measurement asked
// for: CPU time well below wall time x threads means it did not get them.
// The load average before is not judged here: within a bench it counts the
// bench's own previous runs (BusyBefore judges it once, at the start).
func (l Load) Busy(threads int) string {
	var why []string
	if l.OthersCores > busyOthers && l.WallSeconds >= 1 {
		why = append(why, fmt.Sprintf("other processes kept %.2f cores busy during it", l.OthersCores))
	}
	if threads > 0 && l.WallSeconds >= 1 && l.CPUSeconds > 0 && l.CPUSeconds < 0.75*l.WallSeconds*float64(threads) {
		why = append(why, fmt.Sprintf("it used %.2f cores of the %d it asked for (CPU %.1f s in %.1f s)",
			l.CPUSeconds/l.WallSeconds, threads, l.CPUSeconds, l.WallSeconds))
	}
	return strings.Join(why, "; ")
}

// BusyBefore says that the machine is already busy before a bench starts
// (the 1-minute load above busyLoad1), or "".
func BusyBefore() string {
	if l := load1(); l > busyLoad1 {
		return fmt.Sprintf("1-minute load %.2f before the start (above %.1f)", l, busyLoad1)
	}
	return ""
}

// String is the load as one line of a report.
func (l Load) String() string {
	others := "unknown"
	if l.OthersCores >= 0 {
		others = fmt.Sprintf("%.2f cores", l.OthersCores)
	}
	return fmt.Sprintf("load: 1-min %.2f before, %.2f after; wall %.1f s, CPU %.1f s; other processes %s",
		l.Load1Before, l.Load1After, l.WallSeconds, l.CPUSeconds, others)
}

// load1 is the 1-minute load average, or -1 where /proc/loadavg is missing.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
