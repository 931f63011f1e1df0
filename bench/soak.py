#!/usr/bin/python3
"""Soak: many epochs of `feedrate run` on a small dataset, recording the process's RSS and open file descriptors
after every epoch (read from /proc/<pid> when the run reports the epoch with --json-events). A leak per epoch or
per sample shows as a climb; the output is a CSV plus a one-line verdict comparing the last tenth of the epochs
with the first tenth (after epoch 1, which allocates the pools).

usage: bench/soak.py FEEDRATE DATA_DIR EPOCHS OUT_CSV [extra run args...]
"""
import csv, os, subprocess, sys, json

if len(sys.argv) < 5 or any(a.startswith('-') for a in sys.argv[1:5]):
    sys.exit(__doc__.strip().splitlines()[-1] + "\n(the first four arguments are paths and a count, never options)")
feedrate, data, epochs, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
extra = sys.argv[5:]
shape = ['--param', 'dataset.num_files_train=64', '--param', 'dataset.record_length_bytes=262144',
         '--param', 'dataset.record_length_bytes_stdev=65536']
if not os.path.isdir(os.path.join(data, 'train')):
    subprocess.run([feedrate, 'datagen', '-w', 'unet3d_h100', '--data-dir', data] + shape, check=True,
                   stdout=subprocess.DEVNULL)
cmd = [feedrate, 'run', '-w', 'unet3d_h100', '--data-dir', data] + shape + [
    '--param', 'reader.batch_size=2', '--param', f'train.epochs={epochs}', '--param', 'train.computation_time=0.0005',
    '-n', '2', '--json-events', '--results-dir', os.path.join(os.path.dirname(os.path.abspath(out)), 'soak_run')] + extra
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def sample(pid):
    rss = 0
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                rss = int(line.split()[1])
    return rss, len(os.listdir(f'/proc/{pid}/fd')), int(open(f'/proc/{pid}/stat').read().split()[19])


rows = []
for line in p.stdout:
    ev = json.loads(line)
    if ev.get('event') == 'epoch':
        rss, fds, threads = sample(p.pid)
        rows.append({'epoch': ev['epoch'], 'rss_kib': rss, 'open_fds': fds, 'threads': threads,
                     'au_pct': round(ev['au_pct'], 2), 'samples_per_s': round(ev['samples_per_s'], 1)})
code = p.wait()
with open(out, 'w', newline='') as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
k = max(1, len(rows) // 10)
early, late = rows[1:1 + k], rows[-k:]
mean = lambda rs, key: sum(r[key] for r in rs) / len(rs)
print(f'exit {code}; {len(rows)} epochs; RSS KiB: epoch 1 {rows[0]["rss_kib"]}, epochs 2-{1 + k} mean {mean(early, "rss_kib"):.0f}, '
      f'last {k} mean {mean(late, "rss_kib"):.0f}, max {max(r["rss_kib"] for r in rows)}; open fds min {min(r["open_fds"] for r in rows)} '
      f'max {max(r["open_fds"] for r in rows)}; threads min {min(r["threads"] for r in rows)} max {max(r["threads"] for r in rows)}')
