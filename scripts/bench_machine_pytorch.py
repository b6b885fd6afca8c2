#!/usr/bin/python3
"""What a PyTorch measurement ran on, for the bench scripts' PyTorch sides.

A comparison with PyTorch is only worth quoting when PyTorch runs at its best on the machine:
Debian's python3-torch uses whatever libblas.so.3 is installed (the reference BLAS, about 6x
slower, unless libopenblas0-pthread is), these machines set OPENBLAS_CORETYPE=Haswell (OpenBLAS
then leaves AVX-512 unused), and glibc gives PyTorch's freed large tensors back to the system, so
that every step pays first-touch page faults again. scripts/bench-env.sh sets up the environment;
this module checks, from inside the PyTorch process, what it got:

    blas()        the libblas.so.3 actually loaded (from /proc/self/maps) and OpenBLAS's core
    capability()  ATen's CPU capability (DEFAULT, AVX2, AVX512), PyTorch's own choice, the most allowed
    machine()     the CPU: model name, family and model numbers, SIMD flags
    Load          the 1-minute load before, wall and CPU time, other processes' cores (/proc/stat)
    warnings()    why this process is not PyTorch at its best ([] when it is)

Run as a script it prints one line of each and exits 3 when PyTorch is not at its best; with
--openblas-core, run with OPENBLAS_CORETYPE unset, the core type PyTorch should get (core_choice;
empty where OpenBLAS's own detection is as wide as the CPU allows).
"""
import ctypes
import json
import os
import re
import resource
import sys
import time

import torch

# The malloc settings that keep freed memory in the process (glibc's tunables, read at start-up):
# scripts/bench-env.sh sets them, warnings() checks them.
MALLOC_KEEP = {"MALLOC_MMAP_THRESHOLD_": "4294967296", "MALLOC_TRIM_THRESHOLD_": "68719476736"}
SIMD_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile")
BUSY_OTHERS = 0.25  # as stoke's bench/machine.go


def blas():
    """The BLAS library this process has mapped, its kind, and OpenBLAS's core type when it is OpenBLAS."""
    torch.ones(2, 2) @ torch.ones(2, 2)  # libtorch_cpu loads libblas.so.3 at import; make sure
    path = ""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1] if len(line.split()) >= 6 else ""
                name = os.path.basename(p)
                if re.match(r"lib(open)?blas|libblis|libmkl_rt|libflexiblas", name):
                    path = p
                    if "openblas" in p or "blis" in p or "mkl" in p:
                        break
    except OSError:
        pass
    low = path.lower()
    kind = ("OpenBLAS" if "openblas" in low else "BLIS" if "blis" in low else "MKL" if "mkl" in low
            else "reference BLAS (netlib)" if "/blas/" in low else "unknown" if path else "none mapped")
    core = ""
    if kind == "OpenBLAS":
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            core = lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            core = "?"
    return {"blas": path or "none", "blas_kind": kind, "openblas_core": core}


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


RANK = {"DEFAULT": 0, "NO": 0, "AVX2": 1, "AVX512": 2}

# OpenBLAS 0.3.21's core types by the widest vector kernels they run: 2 AVX-512, 1 AVX2+FMA, 0 older.
CORE_RANK = {"Cooperlake": 2, "SapphireRapids": 2, "SkylakeX": 2, "Haswell": 1, "Zen": 1}


def best_core(flags):
    """The OpenBLAS core type whose kernels this CPU's flags allow, the widest: what OpenBLAS's own
    detection picks on a CPU it knows (Cooperlake on an AMD EPYC of family 26). On one it does not
    know it falls back to a generic core: 0.3.21 took an Intel Xeon of family 6 model 207 for a
    Prescott (SSE3 kernels, 24 GFLOPS on a 2048² SGEMM against 167-170 as SkylakeX or Cooperlake)."""
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= flags:
        return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return ""


def core_choice(detected, flags):
    """The OPENBLAS_CORETYPE PyTorch should run with: "" where OpenBLAS's own detection (detected)
    is as wide as this CPU allows, else best_core."""
    best = best_core(flags)
    return best if CORE_RANK.get(detected, 0) < CORE_RANK.get(best, 0) else ""


def capability():
    """ATen's CPU capability in use (DEFAULT, AVX2, AVX512), PyTorch's own choice on this CPU, and
    the most this build and CPU allow. PyTorch 1.13 keeps AVX512 opt-in (ATEN_CPU_CAPABILITY=avx512)
    because its AVX512 kernels can be slower than AVX2 (pytorch/pytorch#80252), so its own choice
    on an AVX-512 CPU is AVX2: below the most, and not wrong until measured here."""
    cfg = torch.__config__.show()
    get = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)  # 2.0 and later
    if get is not None:
        cap = get()
    else:  # 1.13: torch.__config__.show() has a "CPU capability usage: AVX2" line
        m = re.search(r"CPU capability usage:\s*(\S+)", cfg)
        cap = m.group(1) if m else "unknown"
    flags = cpu_flags()
    most = "DEFAULT"
    if "PERF_WITH_AVX2=1" in cfg and {"avx2", "fma"} <= flags:
        most = "AVX2"
    if "PERF_WITH_AVX512=1" in cfg and {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        most = "AVX512"
    own = cap if "ATEN_CPU_CAPABILITY" not in os.environ else ("AVX2" if most != "DEFAULT" else "DEFAULT")
    return {"cpu_capability": cap, "cpu_capability_own": own, "cpu_capability_max": most}


def machine():
    m = {"cpu": "", "cpu_family": 0, "cpu_model": 0, "cpus": os.cpu_count(), "simd": []}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                key, val = key.strip(), val.strip()
                if not key and m["cpu"]:
                    break  # the first processor's block is enough
                if key == "model name":
                    m["cpu"] = val
                elif key == "cpu family":
                    m["cpu_family"] = int(val)
                elif key == "model":
                    m["cpu_model"] = int(val)
                elif key == "flags":
                    m["simd"] = [f for f in SIMD_FLAGS if f in val.split()]
    except (OSError, ValueError):
        pass
    return m


def _load1():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0


def _machine_busy():
    """Seconds of CPU all CPUs spent not idling since boot (user nice system irq softirq steal)."""
    try:
        with open("/proc/stat") as f:
            v = f.readline().split()
        return sum(float(v[i]) for i in (1, 2, 3, 6, 7, 8)) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return -1.0


def _live_children_cpu(pid):
    """CPU seconds of pid's live descendants (DataLoader workers are not waited for until they end)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    try:
        kids = []
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        return 0.0
    for k in kids:
        try:
            with open(f"/proc/{k}/stat") as f:
                v = f.read().rsplit(")", 1)[1].split()
            total += (float(v[11]) + float(v[12])) / tick  # utime, stime
        except (OSError, IndexError, ValueError):
            continue
        total += _live_children_cpu(k)
    return total


def _our_cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime + _live_children_cpu(os.getpid())


class Load:
    """How busy the machine was during a measurement: start(), run, stop() -> dict."""

    def __init__(self):
        self.load1, self.t, self.ours, self.busy = _load1(), time.perf_counter(), _our_cpu(), _machine_busy()

    def stop(self):
        wall = time.perf_counter() - self.t
        ours = _our_cpu() - self.ours
        b = _machine_busy()
        others = max(0.0, (b - self.busy - ours) / wall) if b >= 0 and self.busy >= 0 and wall > 0 else -1.0
        return {"load1_before": self.load1, "load1_after": _load1(), "wall_seconds": wall, "cpu_seconds": ours,
                "others_cores": others}


def busy(load, threads=0):
    """Why the machine was too busy to trust a figure, or "" (the rules of stoke's bench.Load.Busy)."""
    why = []  # the load average is judged once, before a bench starts: later it counts our own runs
    if load["others_cores"] > BUSY_OTHERS and load["wall_seconds"] >= 1:
        why.append(f"other processes kept {load['others_cores']:.2f} cores busy during it")
    w, c = load["wall_seconds"], load["cpu_seconds"]
    if threads > 0 and w >= 1 and 0 < c < 0.75 * w * threads:
        why.append(f"it used {c / w:.2f} cores of the {threads} it asked for (CPU {c:.1f} s in {w:.1f} s)")
    return "; ".join(why)


def warnings(b=None, cap=None):
    """Why this PyTorch process is not PyTorch at its best on this machine."""
    b, cap = b or blas(), cap or capability()
    w = []
    if b["blas_kind"] not in ("OpenBLAS", "BLIS", "MKL"):
        w.append(f"torch's BLAS is {b['blas_kind']} ({b['blas']}): apt-get install libopenblas0-pthread")
    best = best_core(cpu_flags())
    wider = core_choice(b["openblas_core"], cpu_flags()) if b["blas_kind"] == "OpenBLAS" else ""
    if wider:
        if os.environ.get("OPENBLAS_CORETYPE"):
            w.append(f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} holds OpenBLAS to that core "
                     f"({b['openblas_core']}): unset it for PyTorch")
        else:
            w.append(f"OpenBLAS does not know this CPU and fell back to core {b['openblas_core']}: "
                     f"OPENBLAS_CORETYPE={wider} (scripts/bench-env.sh sets it)")
    elif b["blas_kind"] == "OpenBLAS" and os.environ.get("OPENBLAS_CORETYPE", best) != best:
        w.append(f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} overrides OpenBLAS's own detection: unset it")
    if os.environ.get("OPENBLAS_L2_SIZE"):
        w.append(f"OPENBLAS_L2_SIZE={os.environ['OPENBLAS_L2_SIZE']} overrides OpenBLAS's cache detection: unset it")
    missing = [k for k, v in MALLOC_KEEP.items() if os.environ.get(k) != v]
    if missing and "jemalloc" not in os.environ.get("LD_PRELOAD", ""):
        w.append("glibc malloc returns freed tensors to the system (every step pays page faults again): set "
                 + " ".join(f"{k}={MALLOC_KEEP[k]}" for k in missing))
    if RANK.get(cap["cpu_capability"], 0) < RANK.get(cap["cpu_capability_own"], 0):
        w.append(f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY')} holds ATen to {cap['cpu_capability']} "
                 f"kernels, below PyTorch's own choice here ({cap['cpu_capability_own']}): unset it")
    return w


def describe():
    """Everything above as one dict, to put beside a result."""
    b, cap = blas(), capability()
    d = {"torch": torch.__version__, "torch_threads": torch.get_num_threads(), **b, **cap, **machine()}
    d["not_at_best"] = warnings(b, cap)
    return d


def summary(d):
    """The lines a bench prints about its PyTorch process."""
    core = f", core {d['openblas_core']}" if d["openblas_core"] else ""
    cap = d["cpu_capability"]
    if os.environ.get("ATEN_CPU_CAPABILITY"):
        cap += f" (set by ATEN_CPU_CAPABILITY={os.environ['ATEN_CPU_CAPABILITY']})"
    elif RANK.get(d["cpu_capability_max"], 0) > RANK.get(cap, 0):
        cap += f" (its own choice; {d['cpu_capability_max']} kernels are there too, opt-in: ATEN_CPU_CAPABILITY=avx512)"
    lines = [f"PyTorch {d['torch']}: BLAS {d['blas_kind']} ({d['blas']}{core}), CPU capability {cap}, "
             f"{d['torch_threads']} threads",
             f"machine: {d['cpu']} (family {d['cpu_family']}, model {d['cpu_model']}), {d['cpus']} CPUs, "
             f"SIMD {' '.join(d['simd'])}"]
    lines += [f"WARNING: PyTorch is not at its best: {w}" for w in d["not_at_best"]]
    return lines


if __name__ == "__main__":
    if "--openblas-core" in sys.argv:  # scripts/bench-env.sh, run with OPENBLAS_CORETYPE unset
        b = blas()
        print(core_choice(b["openblas_core"], cpu_flags()) if b["blas_kind"] == "OpenBLAS" else "")
        sys.exit(0)
    d = describe()
    if "--json" in sys.argv:
        print(json.dumps(d))
    else:
        print("\n".join(summary(d)))
    sys.exit(3 if d["not_at_best"] else 0)
