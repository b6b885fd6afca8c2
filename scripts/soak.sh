#!/usr/bin/env bash
# The interrupt + resume soak (issue 20). Two parts:
#
#  1. real processes: a resnet20 run on 16 px is stopped CYCLES times by
#     SIGINT, SIGTERM or SIGKILL at a random moment (in set-up, a step, an
#     evaluation, a checkpoint write or the resume's own checkpoint read)
#     and resumed each time; it must end with the weights of an
#     uninterrupted run, byte for byte (model.safetensors compared with cmp);
#  2. in process: TestSoakInterruptAndResume at SOAK_CYCLES (50) cycles,
#     which also places interrupts and crashes at each stage of a
#     checkpoint write and counts where each landed.
#
#   scripts/soak.sh [CYCLES]    CYCLES real-process cycles, default 20
#                               (SOAK_CYCLES=N: N in-process cycles; 0 skips them)
#
# About 3 minutes on a loaded 2-core machine at the defaults.
set -euo pipefail
# Job control: without it bash starts background jobs with SIGINT ignored,
# and a trainer still reading its config would never see the SIGINT.
set -m
cd "$(dirname "$0")/.."
cycles=${1:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/train" ./cmd/train
"$work/train" gen-data --out "$work/ds" --classes 4 --train 12 --val 4 --size 20 --seed 3 >/dev/null
args=(--data.root "$work/ds" --data.image_size 16 --data.batch_size 16 --model.arch resnet20
	--optim.lr 0.05 --train.epochs 80 --train.progress none)
"$work/train" "${args[@]}" --train.out "$work/ref" >/dev/null

weights() { # the model.safetensors latest.json names
	echo "$1/$(sed 's/.*"checkpoint": *"\([^"]*\)".*/\1/' "$1/latest.json")/model.safetensors"
}

run=$work/soak
declare -A by=([INT]=0 [TERM]=0 [KILL]=0)
fresh=0 done=0 resumes=0 saved=0 early=0
for ((i = 1; i <= cycles; i++)); do
	if [[ -f $run/latest.json ]]; then
		cmd=("$work/train" --resume "$run")
		resumes=$((resumes + 1))
	else # killed before its first checkpoint: nothing to resume, start again
		rm -rf "$run"
		fresh=$((fresh + 1))
		cmd=("$work/train" "${args[@]}" --train.out "$run")
	fi
	"${cmd[@]}" >"$work/log" 2>&1 &
	pid=$!
	sleep "0.$((2 + RANDOM % 8))$((RANDOM % 10))" # 0.2-1 s: set-up takes about 0.3 s, a step a few ms
	sig=$(shuf -n1 -e INT TERM KILL)
	kill -s "$sig" "$pid" 2>/dev/null || true
	rc=0
	{ wait "$pid"; } 2>/dev/null || rc=$?
	if grep -q 'interrupted; the run is saved' "$work/log"; then
		saved=$((saved + 1))
	elif grep -q 'interrupted before the first step' "$work/log"; then
		early=$((early + 1))
	fi
	case $rc in
	0) done=1; [[ -n ${SOAK_DEBUG:-} ]] && tail -5 "$work/log"; break ;; # it finished before the signal
	130 | 137 | 143) by[$sig]=$((by[$sig] + 1)) ;; # interrupted, killed, or terminated before its handler
	*) echo "soak: cycle $i: ${cmd[*]}: exit $rc" >&2; cat "$work/log" >&2; exit 1 ;;
	esac
done
if [[ $done == 0 ]]; then
	"$work/train" --resume "$run" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
fi
echo "real processes: $((i > cycles ? cycles : i)) cycles (SIGINT ${by[INT]}, SIGTERM ${by[TERM]}, SIGKILL ${by[KILL]}; $resumes resumes, $fresh fresh starts; $saved stopped at a clean point, $early in set-up or the checkpoint read, the rest killed)"
if cmp -s "$(weights "$work/ref")" "$(weights "$run")"; then
	echo "real processes: final weights equal the uninterrupted run's, byte for byte"
else
	echo "soak: final weights differ from the uninterrupted run's" >&2
	exit 1
fi
[[ ${SOAK_CYCLES:-50} == 0 ]] && exit 0 # SOAK_CYCLES=0: the real processes only
STOKE_SOAK_CYCLES=${SOAK_CYCLES:-50} go test -count=1 -v -run 'TestSoakInterruptAndResume$' ./trainer | grep -E 'cycles over|^(--- |ok|FAIL)'
