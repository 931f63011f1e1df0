// What the DLIO of each MLPerf Storage rules edition does, as data: the one place a run asks how the emulated DLIO
// reads, orders, restarts, flushes, counts and generates. Sources with file:line in docs/dlio-compatibility.md.
#pragma once

#include "loader/util/choices.h"

namespace feedrate {

struct DlioEditionTraits {
  DlioEdition edition;
  const char* rules;        // "MLPerf Storage v3.0"
  const char* dlio;         // the DLIO that edition's mlpstorage runs: "mlcommons/DLIO_local_changes f16fe43"
  // Local npz, npy, HDF5, JPEG and PNG samples: one buffered whole-file read each (Python's open(f,'rb').read():
  // the read of size+1 bytes and the one that meets EOF), never parsed or decoded (reader/_local_fs_iterable_mixin.py
  // _read_local_bytes); false: the formats' own readers (np.load, h5py, PIL).
  bool whole_file_reads;
  // Rank 0 lists the files and deals them round-robin (file i to rank i mod W, each rank keeping floor(N/W)); with
  // file_shuffle they are re-dealt before every epoch (main.py files_pre_sharded, utils/config.py _reshard_files);
  // false: contiguous sample ranges per rank (dlio_sampler).
  bool presharded_round_robin;
  // DataLoader workers started afresh each epoch (persistent_workers off) after a pre-warm iterator that reads
  // the epoch's first batches outside the AU window (main.py run).
  bool restart_workers;
  // Throughput counts the steps of the AU window: (n - excluded) x batch / T' (utils/statscounter.py); false:
  // (n - 2) x batch / T'.
  bool throughput_counts_window;
  // Rank 0 drops its node's page cache before every epoch (sudo -n ... drop_caches; as root, always).
  bool flush_rank0_each_epoch;
  // JPEG and PNG datagen writes dim x dim raw bytes, not encoded images (data_generator/jpeg_generator.py fast path).
  bool raw_image_datagen;
  // reader.read_threads 1 (the dataclass default) becomes the node's CPUs per rank, at most DLIO_MAX_AUTO_THREADS
  // (8 unset) (utils/config.py, "PR-5"; SizeReadThreadsForHost).
  bool auto_read_threads;
};

const DlioEditionTraits& Traits(DlioEdition e);

}  // namespace feedrate
