#!/usr/bin/env bash
# Benchmark (issue 20 goal 2, retinanet_b200): where a short-step workload's AU goes when the storage keeps up.
# 1. The host's timer wake-up: how late clock_nanosleep(TIMER_ABSTIME) returns from a 47.5 ms sleep (RetinaNet
#    B200's step), with 1 and N sleeping threads (a small C++ probe compiled here).
# 2. retinanet_b200 from tmpfs (REAL real JPEGs, hard links for the rest) at each count in COUNTS: AU, and the
#    per-step stall (waiting for the batch) and step-barrier wait (waiting for the slowest accelerator) that
#    feedrate reports. With a storage that keeps up, the barrier wait is the spread of the accelerators' wake-ups.
#    With BASE=<another feedrate binary>, each count runs BASE, then this build, alternately (an A/B in one run).
# Usage: bench/step_wake.sh [OUT]   env: COUNTS="4 8 16" STEPS=105 REAL=2000 BASE= FEEDRATE=<binary>
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/$(date -u +%Y-%m-%d)/step_wake}
mkdir -p "$(dirname "$out")"
feedrate=${FEEDRATE:-$PWD/build/release/cli/feedrate}
base=${BASE:-}
[ -x "$feedrate" ] || scripts/build.sh release
counts=${COUNTS:-4 8 16}; steps=${STEPS:-105}; real=${REAL:-2000}
shm=/dev/shm/feedrate-step-wake
work=$(mktemp -d)
trap 'rm -rf "$work" "$shm"' EXIT
cat > "$work/probe.cpp" <<'CPP'
#include <time.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
static long long Now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
int main(int argc, char** argv) {
  const int n = std::atoi(argv[1]);
  std::vector<std::vector<long long>> late(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back([&late, i] {
    for (int k = 0; k < 100; ++k) {
      const long long d = Now() + 47500000;
      timespec ts{static_cast<time_t>(d / 1000000000), static_cast<long>(d % 1000000000)};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
      late[i].push_back(Now() - d);
    }
  });
  for (auto& t : threads) t.join();
  std::vector<long long> all;
  for (auto& v : late) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  auto q = [&](double p) { return all[static_cast<size_t>(p * (all.size() - 1))] / 1e3; };
  std::printf("| %d | %.0f | %.0f | %.0f | %.0f |\n", n, q(0.5), q(0.9), q(0.99), all.back() / 1e3);
}
CPP
g++ -O2 -pthread -o "$work/probe" "$work/probe.cpp"
"$feedrate" datagen -w retinanet_b200 --data-dir "$shm/real" --param "dataset.num_files_train=$real" --threads 2 > /dev/null
max=0; for n in $counts; do [ "$n" -gt "$max" ] && max=$n; done
names=$(( (max * steps + max) * 24 ))
python3 - "$shm" "$names" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(f"{d}/links/train")
real = sorted(os.listdir(f"{d}/real/train"))
for k in range(n):
    os.link(f"{d}/real/train/{real[k % len(real)]}", f"{d}/links/train/img_{k:07d}_of_{n}.jpeg")
PY
{
  echo "# Step time on this host: timer wake-ups and the step barrier (retinanet_b200, tmpfs)"
  echo
  echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'). Machine: $(uname -n), $(nproc) CPUs, $(uname -r)."
  echo "Command: \`COUNTS=\"$counts\" STEPS=$steps REAL=$real${base:+ BASE=$base} bench/step_wake.sh\`"
  [ -z "$base" ] || echo "Builds: base = $base, this = $feedrate ($(git rev-parse --short HEAD))."
  echo
  echo "clock_nanosleep(TIMER_ABSTIME) of 47.5 ms, 100 sleeps per thread: microseconds late"
  echo
  echo "| threads | p50 | p90 | p99 | max |"
  echo "|---|---|---|---|---|"
  for n in 1 $counts; do "$work/probe" "$n"; done
  echo
  echo "retinanet_b200, $steps steps, from tmpfs: per-step stall and step-barrier wait (ms)"
  echo
  echo "| build | accelerators | AU % | stall mean / p99 | barrier mean / p50 / p99 | client CPU % |"
  echo "|---|---|---|---|---|---|"
  for n in $counts; do
    for build in ${base:+base} this; do
      bin=$feedrate; [ "$build" = base ] && bin=$base
      "$bin" run -w retinanet_b200 --data-dir "$shm/links" --param "dataset.num_files_train=$names" \
        --param "train.total_training_steps=$steps" -n "$n" -q --results-dir "$work/run_${build}_$n" > /dev/null 2>&1 || true
      python3 - "$work/run_${build}_$n/summary.json" "$n" "$build" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); f = j["feedrate"]; s = f["stall_seconds"]; b = f["barrier_seconds"]
cpu = round(100 * f["hosts"][0]["cpu_utilisation"], 1)  # the training loop's share of the host's CPUs
print(f"| {sys.argv[3]} | {sys.argv[2]} | {j['metric']['train_au_mean_percentage']:.2f} | {s['mean']*1e3:.2f} / {s['p99']*1e3:.2f} | "
      f"{b['mean']*1e3:.2f} / {b['p50']*1e3:.2f} / {b['p99']*1e3:.2f} | {cpu} |")
PY
    done
  done
} | tee "$out.md"
