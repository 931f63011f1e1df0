#!/usr/bin/env bash
# Interoperability benchmark: the real mlpstorage (v2.0 CLI) runs its whole procedure twice on one small workload,
# once with DLIO and once with Feedrate as its DLIO (`--dlio-bin-path` at the `dlio_benchmark` launcher beside the
# feedrate binary): training datasize, datagen, run --loops 6 (1 warm-up + 5), checkpointing run, reports reportgen.
# Each tree is then laid out as a submission (open/<org>/results/<system>/...); Feedrate's own commands write a third
# tree (--mlperf-root), read by mlpstorage's reportgen; mlpstorage v3.0's submission checker judges all three.
# Writes OUT.md (errors per rule on each tree, what only a Feedrate tree gets, reportgen's rows against Feedrate's
# own summaries) and OUT-checker-{dlio,feedrate,alone}.txt (the checker's output).
# Usage: bench/mlpstorage_interop.sh [OUT_PREFIX]   (default results/<date>/mlpstorage_interop)
#   env: MLPSTORAGE_PEER=/opt/mlpstorage-peer (../shared/peers/mlpstorage/install.sh, or your own: bin/mlps2,
#        bin/mlps3-check); DLIO_ENV=/opt/dlio-peer/env.sh (../shared/peers/dlio/install.sh; sets $DLIO, PYTHONPATH)
#        WORK=(a fresh temporary folder; removed at exit unless KEEP=1)
#        FILES=64 RECORD=262144 BATCH=2 COMPUTE=0.075 ACCELERATORS=2 CHECKPOINT_RANKS=8
set -euo pipefail
cd "$(dirname "$0")/.."
peer=${MLPSTORAGE_PEER:-/opt/mlpstorage-peer}
dlio_env=${DLIO_ENV:-/opt/dlio-peer/env.sh}
files=${FILES:-64}; record=${RECORD:-262144}; batch=${BATCH:-2}; compute=${COMPUTE:-0.075}
accelerators=${ACCELERATORS:-2}; ck_ranks=${CHECKPOINT_RANKS:-8}
out=${1:-results/$(date -u +%Y-%m-%d)/mlpstorage_interop}
case "$out" in -*) echo "OUT_PREFIX '$out' looks like an option" >&2; exit 2;; esac
mkdir -p "$(dirname "$out")"
out=$(realpath -m "$out")  # the checker runs from the work folder
bindir=$PWD/build/release/cli
[ -x "$bindir/feedrate" ] && [ -x "$bindir/dlio_benchmark" ] || scripts/build.sh release
[ -x "$peer/bin/mlps2" ] && [ -x "$peer/bin/mlps3-check" ] || {
  echo "no mlpstorage at $peer (set MLPSTORAGE_PEER; ../shared/peers/mlpstorage/install.sh installs it)" >&2; exit 2; }
[ -f "$dlio_env" ] || { echo "no DLIO at $dlio_env (set DLIO_ENV; ../shared/peers/dlio/install.sh installs it)" >&2; exit 2; }
work=${WORK:-$(mktemp -d)}
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MLPS_HOME=$work/home
mkdir -p "$work/dlio-bin"
cat > "$work/dlio-bin/dlio_benchmark" <<EOF
#!/bin/sh
. "$dlio_env"
exec \$DLIO "\$@"
EOF
chmod +x "$work/dlio-bin/dlio_benchmark"

shape=(dataset.num_files_train="$files" dataset.record_length_bytes="$record" dataset.record_length_bytes_stdev=0
       dataset.num_subfolders_train=0)
train=("${shape[@]}" reader.batch_size="$batch" reader.read_threads=2 train.computation_time="$compute")
model=(model.num_layers=2 model.transformer.hidden_size=256 model.transformer.ffn_hidden_size=512
       model.transformer.vocab_size=1024 checkpoint.time_between_checkpoints=0)
# procedure TOOL BIN_DIR: mlpstorage's steps with that DLIO, into $work/TOOL; each step's seconds in TOOL/steps.txt.
procedure() {
  local tool=$1 bin=$2 root=$work/$1 t0 rc
  mkdir -p "$root"
  cd "$work"  # DLIO writes unet3d's epoch-5 checkpoint to a relative checkpoints/ folder
  step() {
    local name=$1; shift
    t0=$(date +%s.%N); rc=0
    "$peer/bin/mlps2" "$@" --results-dir "$root/results" > "$root/$name.log" 2>&1 || rc=$?
    echo "$name $(echo "$(date +%s.%N) - $t0" | bc) $rc" >> "$root/steps.txt"
    [ "$rc" -eq 0 ] || { echo "$tool: mlpstorage $name exited $rc:" >&2; tail -20 "$root/$name.log" >&2; exit 1; }
  }
  step datasize training datasize --model unet3d --client-host-memory-in-gb 1 --max-accelerators "$accelerators" \
    --accelerator-type h100 --num-client-hosts 1 --data-dir "$root/data" --open
  step datagen training datagen --model unet3d --num-processes "$accelerators" --data-dir "$root/data" \
    --params "${shape[@]}" --dlio-bin-path "$bin" --allow-run-as-root --open
  step run training run --model unet3d --accelerator-type h100 --num-accelerators "$accelerators" \
    --client-host-memory-in-gb 1 --data-dir "$root/data" --checkpoint-folder "$root/ckpt-train" --loops 6 \
    --params "${train[@]}" --dlio-bin-path "$bin" --allow-run-as-root --open
  step checkpointing checkpointing run --model llama3-8b --num-processes "$ck_ranks" --client-host-memory-in-gb 1 \
    --checkpoint-folder "$root/ckpt" --num-checkpoints-write 2 --num-checkpoints-read 2 --params "${model[@]}" \
    --dlio-bin-path "$bin" --allow-run-as-root --oversubscribe --open
  step reportgen reports reportgen
  cd - > /dev/null
}
procedure dlio "$work/dlio-bin"
procedure feedrate "$bindir"

# Feedrate alone: its own commands write mlpstorage's tree (--mlperf-root), the same steps; mlpstorage's reportgen
# then reads the system's results folder.
alone() {
  local root=$work/alone t0 rc name
  local tree=(--mlperf-root "$root/tree" --division open --org bench --system vm)
  local mpi=(mpirun --bind-to none --oversubscribe)
  mkdir -p "$root"
  cd "$work"
  run_step() {
    name=$1; shift
    t0=$(date +%s.%N); rc=0
    "$@" > "$root/$name.log" 2>&1 || rc=$?
    echo "$name $(echo "$(date +%s.%N) - $t0" | bc) $rc" >> "$root/steps.txt"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { echo "alone: $name exited $rc:" >&2; tail -20 "$root/$name.log" >&2; exit 1; }
  }
  run_step datasize "$bindir/feedrate" datasize --model unet3d --accelerator-type h100 --client-host-memory-in-gb 1 \
    --max-accelerators "$accelerators" "${tree[@]}"
  run_step datagen "${mpi[@]}" -np "$accelerators" "$bindir/feedrate" datagen --model unet3d --accelerator-type h100 \
    --data-dir "$root/data" --params "${shape[@]}" "${tree[@]}"
  run_step run "${mpi[@]}" -np "$accelerators" "$bindir/feedrate" run --model unet3d --accelerator-type h100 \
    --data-dir "$root/data" --loops 6 --params "${train[@]}" "${tree[@]}"
  run_step checkpointing "${mpi[@]}" -np "$ck_ranks" "$bindir/feedrate" checkpoint --model llama3-8b \
    --checkpoint-folder "$root/ckpt" --num-checkpoints-write 2 --num-checkpoints-read 2 --time-between 0 \
    --params "${model[@]}" "${tree[@]}"
  run_step reportgen "$peer/bin/mlps2" reports reportgen --results-dir "$root/tree/open/bench/results/vm"
  cd - > /dev/null
}
alone

# submission TOOL: mlpstorage's tree as a v3.0 submission (open/bench/results/vm/...), systems/vm.yaml a stub
# (only the schema validator, stubbed by the peer, would read it), then the checker (from the work folder: it writes
# summary.csv into its current folder).
submission() {
  local tool=$1 sub=$work/sub-$1
  mkdir -p "$sub/open/bench/results/vm" "$sub/open/bench/systems"
  cp -r "$work/$tool/results/training" "$work/$tool/results/checkpointing" "$sub/open/bench/results/vm/"
  printf 'system_under_test:\n  name: vm\n' > "$sub/open/bench/systems/vm.yaml"
  (cd "$work" && "$peer/bin/mlps3-check" --input "$sub" > "$out-checker-$tool.txt" 2>&1) || true
  sed -i "s#$work#WORK#g" "$out-checker-$tool.txt"
}
submission dlio
submission feedrate
(cd "$work" && "$peer/bin/mlps3-check" --input "$work/alone/tree" > "$out-checker-alone.txt" 2>&1) || true
sed -i "s#$work#WORK#g" "$out-checker-alone.txt"

/usr/bin/python3 - "$work" "$out" "$accelerators" <<'PY'
import collections, datetime, glob, json, os, re, subprocess, sys
work, out, accelerators = sys.argv[1], sys.argv[2], int(sys.argv[3])

def errors(tool):
    rows = []
    for line in open(f"{out}-checker-{tool}.txt"):
        m = re.match(r"\[ERROR\] \[(\S+) (\S+)\] (\S+): (.*)", line.strip())
        if m:
            rule, name, path, msg = m.groups()
            where = re.sub(r"WORK/(sub-\w+|alone/tree)/", "", re.sub(r".*/results/vm/", "", path))
            where = re.sub(r"\d{8}_\d{6}", "<ts>", where)
            msg = re.sub(r"WORK/(sub-\w+|alone/tree)", "SUB", msg)
            rows.append((rule, name, where, re.sub(r"[\d.]+", "#", msg)))
    return rows

e = {t: errors(t) for t in ("dlio", "feedrate", "alone")}
count = {t: collections.Counter((r[0], r[1]) for r in e[t]) for t in e}
def only(a, b):  # errors of tree a that tree b does not get at the same rule and place (messages may differ)
    keys = {r[:3] for r in e[b]}
    return sorted({r for r in e[a] if r[:3] not in keys})
only_fr, only_dlio, only_alone, not_alone = only("feedrate", "dlio"), only("dlio", "feedrate"), only("alone", "dlio"), only("dlio", "alone")

def steps(tool):
    return {l.split()[0]: float(l.split()[1]) for l in open(f"{work}/{tool}/steps.txt")}

def runs(tool):
    base = f"{work}/alone/tree/open/bench/results/vm" if tool == "alone" else f"{work}/{tool}/results"
    return json.load(open(f"{base}/results.json"))

host = subprocess.run(["uname", "-srm"], capture_output=True, text=True).stdout.strip()
cpus = os.cpu_count()
lines = [f"# mlpstorage with DLIO and with Feedrate as its DLIO, judged by the v3.0 checker",
         "",
         f"Command: `bench/mlpstorage_interop.sh {os.path.relpath(out)}` on {datetime.date.today()} ({host}, {cpus} CPUs).",
         "mlpstorage v2.0 CLI runs datasize, datagen, `training run --loops 6`, `checkpointing run` and `reports "
         "reportgen` once with DLIO upstream and once with `--dlio-bin-path` at Feedrate's `dlio_benchmark`; each tree "
         "is laid out as an OPEN submission; Feedrate's own commands then write a third tree (`--mlperf-root`); all "
         "three are checked by mlpstorage v3.0's `validate` (the peer's mlps3-check).",
         "",
         "## Checker errors per rule", "",
         "Trees: mlpstorage + DLIO; mlpstorage + Feedrate as its DLIO; Feedrate alone (its own commands with "
         "`--mlperf-root`: datasize, datagen, `run --loops 6`, checkpoint, then mlpstorage's reportgen on it).", "",
         "| rule | DLIO's tree | Feedrate under mlpstorage | Feedrate alone |", "|---|---|---|---|"]
for k in sorted(set(count["dlio"]) | set(count["feedrate"]) | set(count["alone"])):
    lines.append(f"| {k[0]} {k[1]} | {count['dlio'].get(k, 0)} | {count['feedrate'].get(k, 0)} | {count['alone'].get(k, 0)} |")
lines += ["", "An error counts as the same on two trees when its rule and place are (the message may differ: where "
          "Feedrate's metadata gives the dataset's parameters, the size rule computes its verdict instead of saying "
          "it cannot)."]
lines += ["", f"Errors on Feedrate's tree that DLIO's does not get: **{len(only_fr)}**"]
lines += [f"- {r[0]} {r[1]} {r[2]}: {r[3]}" for r in only_fr]
lines += ["", f"Errors on DLIO's tree that Feedrate's does not get: {len(only_dlio)}"]
lines += [f"- {r[0]} {r[1]} {r[2]}: {r[3]}" for r in only_dlio]
lines += ["", f"Errors on Feedrate's own tree that DLIO's does not get: **{len(only_alone)}**"]
lines += [f"- {r[0]} {r[1]} {r[2]}: {r[3]}" for r in only_alone]
lines += ["", f"Errors on DLIO's tree that Feedrate's own does not get: {len(not_alone)}"]
lines += [f"- {r[0]} {r[1]} {r[2]}: {r[3]}" for r in not_alone]
lines += ["", "## reportgen's rows", "", "| tool | rows | training runs | checkpoint runs | AU % per run (reportgen) | "
          "equal to the run's summary.json |", "|---|---|---|---|---|---|"]
for tool in ("dlio", "feedrate", "alone"):
    rows = runs(tool)
    train = [r for r in rows if r.get("benchmark_type") == "training" and r.get("command") == "run_benchmark"]
    ck = [r for r in rows if r.get("benchmark_type") == "checkpointing"]
    aus, same = [], 0
    for r in sorted(train, key=lambda r: r["run_id"]):
        au = r["metrics"]["train_au_mean_percentage"]
        s = json.load(open(os.path.join(r["run_id"], "summary.json")))
        aus.append(f"{au:.2f}")
        same += abs(s["metric"]["train_au_mean_percentage"] - au) < 1e-9
    lines.append(f"| {tool} | {len(rows)} | {len(train)} | {len(ck)} | {', '.join(aus)} | {same} of {len(train)} |")
ours = json.load(open(f"{work}/alone/tree/open/bench/results/vm/training/unet3d/run/results.json"))
lines += ["", f"Feedrate's own run/results.json: {len(ours)} rows, AU "
          + ", ".join(f"{r['metrics']['train_au_mean_percentage']:.2f}" for r in ours)
          + "; mlpstorage's reportgen on the same tree reads the same runs (the alone row above)."]
lines += ["", "## Seconds per step (wall, whole command)", "", "| step | DLIO | Feedrate under mlpstorage | Feedrate alone |",
          "|---|---|---|---|"]
sd, sf, sa = steps("dlio"), steps("feedrate"), steps("alone")
for k in sd:
    lines.append(f"| {k} | {sd[k]:.1f} | {sf.get(k, 0):.1f} | {sa.get(k, 0):.1f} |")
lines += ["", "AU is not this benchmark's question (bench/au_vs_dlio*.sh measure it): here the dataset is small and "
          "cached, and DLIO's ranks and DataLoader workers share the client's CPUs with mlpstorage.",
          "", "The small workload makes some v3.0 rules fail on both trees alike (no code/ folder, no systems PDF, a "
          "one-host two-accelerator OPEN run, the dataset-size rule): those are the toy size's, not the tool's.",
          f"Checker output: `{os.path.relpath(out)}-checker-{{dlio,feedrate,alone}}.txt`."]
open(out + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
