#!/usr/bin/env bash
# The default thread count against fixed ones, on a quiet machine and with 1 and 2 busy
# processes competing for the cores: bench/ef_busy_fit's small fit (MLP 2-64-64-1) and MNIST MLP
# fit, REPS times each, settings interleaved so that drift in the machine hits all alike.
# Prints one row per load, model and setting: median seconds, and the ratio to the best fixed
# setting at that load. Run it on an otherwise quiet machine (no compiler running).
#
#   bench/busy_machine.sh [BUILD_DIR] [REPS]        (defaults: build/release, 5; EF_BUSY_FIT=path: that binary)
set -euo pipefail
build=${1:-build/release}
reps=${2:-5}
exe=${EF_BUSY_FIT:-$build/bench/ef_busy_fit}  # or another build's, to compare
[[ -x $exe ]] || { echo "no $exe: build the ef_busy_fit target first" >&2; exit 1; }

settings=(default 1 2)
models=(small mnist)
hogs=()
stop_hogs() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done; hogs=(); }
trap stop_hogs EXIT

declare -A times losses
echo "date: $(date -u '+%F %H:%M') UTC; CPU: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores); $reps runs each; $exe"
for load in 0 1 2; do
  stop_hogs
  for ((i = 0; i < load; ++i)); do
    yes > /dev/null &
    hogs+=($!)
  done
  sleep 0.5
  for ((r = 0; r < reps; ++r)); do
    for model in "${models[@]}"; do
      for s in "${settings[@]}"; do
        if [[ $s == default ]]; then out=$(env -u OMP_NUM_THREADS "$exe" "$model")
        else out=$(OMP_NUM_THREADS=$s "$exe" "$model"); fi
        times[$load,$model,$s]+="$(awk '{print $2}' <<< "$out") "
        losses[$load,$model,$s]=$(awk '{print $3}' <<< "$out")
      done
    done
  done
done
stop_hogs

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
printf '%-6s %-6s %-8s %-10s %-8s %-9s %s\n' busy model threads median_s ratio loss runs
for load in 0 1 2; do
  for model in "${models[@]}"; do
    best=
    for s in 1 2; do
      m=$(median <<< "${times[$load,$model,$s]}")
      if [[ -z $best ]] || awk -v a="$m" -v b="$best" 'BEGIN {exit !(a < b)}'; then best=$m; fi
    done
    for s in "${settings[@]}"; do
      m=$(median <<< "${times[$load,$model,$s]}")
      printf '%-6s %-6s %-8s %-10s %-8s %-9s %s\n' "$load" "$model" "$s" "$m" \
        "$(awk -v a="$m" -v b="$best" 'BEGIN {printf "%.2f", a / b}')" "${losses[$load,$model,$s]}" "${times[$load,$model,$s]}"
    done
  done
done
