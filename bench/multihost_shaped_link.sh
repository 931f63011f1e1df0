#!/usr/bin/env bash
# Demo with a known answer: two emulated client hosts read a dataset from an sshfs server (a third namespace)
# through links shaped to RATE_MBIT each (tc tbf on the server-to-client direction); `feedrate sweep` across both
# hosts must find what the link arithmetic predicts (per-host link rate / per-accelerator demand, summed over the
# hosts) and blame the network. Same setup as the MultiHost.ShapedLinkSweep test, written up as a result.
# Root only. Usage: bench/multihost_shaped_link.sh [OUT.md]   env: RATE_MBIT=57 STEPS=120
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/$(date -u +%Y-%m-%d)/multihost_shaped_link.md}
mkdir -p "$(dirname "$out")"
rate=${RATE_MBIT:-57}
steps=${STEPS:-120}
feedrate=$PWD/build/release/cli/feedrate
mh=tests/multihost/mh.sh
[ -x "$feedrate" ] || scripts/build.sh release
work=$(mktemp -d /var/tmp/feedrate-mhl-XXXXXX)
trap '$mh down; rm -rf "$work"' EXIT
record=131072; compute=0.064
shape=(--param dataset.num_files_train=1200 --param dataset.record_length_bytes=$record
       --param dataset.record_length_bytes_stdev=0 --param reader.batch_size=1 --param train.epochs=1
       --param train.computation_time=$compute --param train.total_training_steps=$steps)
"$feedrate" datagen -w unet3d_h100 --data-dir "$work/export" "${shape[@]}" >/dev/null
$mh up 2 --storage "$work/export" --rate-mbit "$rate"
cmd=("$feedrate" sweep -w unet3d_h100 --data-dir /run/feedrate-mh/mnt "${shape[@]}" --hosts frh1,frh2 --max 8
     --results-dir "$work/sweep" --mpirun "$($mh mpirun)")
log=$($mh exec frh1 "${cmd[@]}" 2>&1)
python3 - "$work/sweep/sweep.json" "$rate" "$record" "$compute" "$log" > "$out.tmp" <<'PY'
import json, sys, subprocess, datetime, os
j = json.load(open(sys.argv[1])); rate, record, compute, log = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
link = rate * 1e6 / 8; demand = record / compute; per_host = link / demand
b = j["bottleneck"]
print("# Shaped-link sweep across 2 emulated hosts: predicted vs measured\n")
print("- Command: `bench/multihost_shaped_link.sh` (RATE_MBIT=%g)" % rate)
print("- Machine: %d CPUs, kernel %s; date %s" % (os.cpu_count(), os.uname().release, datetime.date.today()))
print("- Storage: a directory served by sshd (internal-sftp) in namespace frstore; each client host mounts it with sshfs "
      "(aes128-gcm) through its own veth, shaped with `tc tbf rate %gmbit` on the server-to-client side" % rate)
print("- Workload: unet3d_h100 shape with %d-byte samples, batch 1, %.3f s compute per step: %.3f MB/s per accelerator at 100%% AU\n"
      % (record, compute, demand / 1e6))
print("| | per host | total (2 hosts) |\n|---|---|---|")
print("| link rate | %.3f MB/s | %.3f MB/s |" % (link / 1e6, 2 * link / 1e6))
print("| predicted accelerators (link / demand) | %.2f | %.2f |" % (per_host, 2 * per_host))
print("| measured (sweep answer) | %d | %d |" % (j["accelerators_supported"] // 2, j["accelerators_supported"]))
print("\n| accelerators | AU % | read MiB/s | network rx MiB/s (all hosts) | client CPU | verdict |\n|---|---|---|---|---|---|")
for p in j["points"]:
    for r in p["runs"]:
        rx = sum(h.get("net_rx_mib_per_s", 0) for h in r.get("hosts", []))
        print("| %d | %.2f | %.2f | %.2f | %.0f%% | %s |" % (p["accelerators"], r["au_pct"], r["read_mib_per_s"], rx,
              100 * r["client_cpu_utilisation"], "pass" if r["exit_code"] == 0 else "miss"))
print("\nBottleneck verdict: **%s**: %s\n" % (b["limit"], b["explanation"]))
print("Sweep output:\n\n```\n%s\n```" % "\n".join(l for l in log.splitlines() if l.startswith(("sweep:", "accelerators", "limit"))))
PY
mv "$out.tmp" "$out"
cat "$out"
