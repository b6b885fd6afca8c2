#!/bin/sh
# One core's measured FP32 FMA and bf16 VDPBF16PS peaks and its clock, the figures the
# GEMM's GFLOPS (go test -run x -bench BF16 ./gemm) are compared with. CPU only; about
# 2 s. Needs gcc (the asm is AT&T syntax, assembled whatever the CPU; each part runs
# only where the CPU has it).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/cpu_peak" cpu_peak.c
printf "%s, family %s model %s\n" "$(awk -F: '/^model name/{print $2; exit}' /proc/cpuinfo)" "$(awk -F: '/^cpu family/{print $2; exit}' /proc/cpuinfo | tr -d ' ')" "$(awk -F: '/^model[[:space:]]*:/{print $2; exit}' /proc/cpuinfo | tr -d ' ')"
"$tmp/cpu_peak"
