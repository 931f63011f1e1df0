// `feedrate datagen`: write a DLIO-compatible dataset, files spread over MPI ranks and writer threads.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/launch.h"
#include "datagen/generator.h"
#include "datagen/temp_file.h"
#include "emulator/host/comm.h"
#include "emulator/results/mlperf_record.h"
#include "emulator/results/validity.h"
#include "loader/io/fault_injection.h"
#include "loader/util/exit_codes.h"

namespace feedrate::cli {

namespace {

// `feedrate datagen`'s options, as parsed.
struct DatagenCommandArgs {
  WorkloadArgs w;
  MlperfArgs mlperf;
  DatagenOptions opt;
  LaunchArgs launch;
  std::string part_size = "16m", content = "random", inject;
};

void RegisterDatagenOptions(CLI::App* sub, DatagenCommandArgs& a) {
  sub->add_option("--threads", a.opt.threads, "writer threads per rank")->check(PositiveNumber());
  sub->add_flag("--skip-existing", a.opt.skip_existing, "keep files that already exist with the expected size");
  sub->add_flag("--fsync", a.opt.fsync, "fsync every file before renaming it into place (durable; device speed)");
  sub->add_option("--write-size", a.opt.write_size, "bytes per write() (default 256 KiB; 4 KiB to 64 MiB)")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{64} << 20));
  sub->add_option("--staging-dir", a.opt.staging_dir, "S3 (--storage): local directory each file is written to before its "
                                                    "upload (default $TMPDIR or /tmp; one file per writer thread at a time)");
  sub->add_option("--s3-part-size", a.part_size, "S3: objects above this size go up as multipart uploads of parts this "
                                                "large (default 16m; 5m to 5g)")
      ->check([](const std::string& v) {
        if (std::string why = CheckBytes(v); !why.empty()) return why;
        const uint64_t n = ParseBytes(v);
        return std::string(n >= (uint64_t{5} << 20) && n <= (uint64_t{5} << 30) ? "" : "must be between 5m and 5g");
      });
  sub->add_option("--content", a.content, "random (default) or verifiable: payload bytes a pure function of (seed, file, "
                                         "offset), which `run --verify` checks (npz, npy, tfrecord, indexed_binary)")
      ->check(CLI::IsMember({"random", "verifiable"}));
  sub->add_option("--content-seed", a.opt.content_seed, "seed of the verifiable content (default 0; kept in the dataset's "
                                                       ".feedrate-content marker)");
  sub->add_option("--inject", a.inject, "inject write faults, for tests and demos: enospc|eio|short|delay[:op=write,every=N,"
                                       "after=N,count=N,file=GLOB,offset=A-B] (docs/faults.md)")
      ->check(CheckInjectRules);
}

// --inject for datagen: every rule applies to writes (enospc does already; eio, short and delay are moved over);
// eagain, a read fault, is refused. Empty `rules`: none.
Result<std::unique_ptr<FaultInjector>> WriteFaults(const std::string& rules) {
  if (rules.empty()) return std::unique_ptr<FaultInjector>();
  FaultPlan plan = *ParseFaultPlan(rules);  // checked by CheckInjectRules
  for (auto& r : plan.rules) {
    if (r.kind == FaultKind::kEagain) return Status::InvalidArgument("--inject '" + r.text + "': eagain is a read fault");
    r.op = FaultOp::kWrite;
  }
  return std::make_unique<FaultInjector>(std::move(plan));
}

// Summed over the ranks (every rank calls it); rank 0 prints one line (and the S3 requests).
void ReportDatagen(const Comm& comm, const WorkloadConfig& cfg, const DatagenStats& stats, double seconds, size_t threads) {
  const double files = comm.SumDouble(static_cast<double>(stats.files_written));
  const double skipped = comm.SumDouble(static_cast<double>(stats.files_skipped));
  const double bytes = comm.SumDouble(static_cast<double>(stats.bytes_written));
  const double requests = comm.SumDouble(static_cast<double>(stats.s3_requests));
  const double secs = comm.MaxDouble(seconds);
  if (!comm.root()) return;
  std::printf("datagen %s: wrote %.0f files (%.2f GiB), kept %.0f existing, in %.2f s (%.2f GiB/s) with %d rank(s) x %zu thread(s) into %s/train\n",
              cfg.name.c_str(), files, bytes / (1 << 30), skipped, secs, secs > 0 ? bytes / (1 << 30) / secs : 0.0,
              comm.size(), threads, cfg.DataLocation().c_str());
  if (cfg.on_s3()) std::printf("S3: %.0f upload requests (PUT, multipart initiate/part) to %s\n", requests,
                               cfg.s3_endpoint.empty() ? "AWS" : cfg.s3_endpoint.c_str());
}

// With --mlperf-root: the generation recorded as mlpstorage's training/<model>/datagen/<stamp> folder (DLIO's
// datagen log and Hydra folder, the metadata, the output copies). Collective.
int GenerateIntoTree(const WorkloadConfig& cfg, const DatagenOptions& o, const DatagenCommandArgs& a, Comm& comm) {
  const auto overrides = a.w.Overrides();
  const nlohmann::json args = {{"program", "training"}, {"command", "datagen"}, {"model", MlpstorageTrainingModel(cfg)},
                               {"num_processes", comm.size()}, {"data_dir", cfg.data_folder}, {"params", overrides},
                               {"results_dir", a.mlperf.tree.root}};
  MlperfRecord::Spec spec{"training", "datagen", MlpstorageTrainingModel(cfg), WorkloadAccelerator(cfg), true, overrides,
                          "feedrate datagen", args};
  return RunRecorded(a.mlperf.tree, spec, cfg, comm, comm.size(), [&](const MlperfRecord& record) {
    const double start = UnixNow();
    const int code = GenerateOnRanks(cfg, o, comm);
    if (!comm.root()) return code;
    const Status st = WriteDlioLog(record.dir(), DlioDatagenLogLines(comm.size(), start, start, UnixNow()));
    if (st.ok()) return code;
    std::fprintf(stderr, "feedrate: error: %s\n", st.ToString().c_str());
    return kExitError;
  });
}

int ExecuteDatagen(DatagenCommandArgs a, int* argc, char*** argv) {
  if (a.launch.requested()) return RelaunchUnderMpirun(a.launch, *argc, *argv);
  a.mlperf.Check();
  Comm comm(argc, argv);
  const std::optional<WorkloadConfig> cfg = LoadJobWorkload(a.w.workload, a.w.Overrides(), comm);
  if (!cfg) return kExitError;
  DatagenOptions o = a.opt;
  o.s3_part_size = ParseBytes(a.part_size);
  o.verifiable_content = a.content == "verifiable";
  if (o.fsync && cfg->on_s3()) {
    // The staging files are deleted once uploaded: syncing them would only slow the upload down.
    if (comm.root()) {
      std::fprintf(stderr, "feedrate: note: --fsync applies to files; an S3 object is durable once its PUT (or "
                           "multipart completion) is acknowledged, so the staging files are not synced\n");
    }
    o.fsync = false;
  }
  TempFile::SetDurableCommits(o.fsync);
  auto faults = WriteFaults(a.inject);
  if (!faults.ok()) {
    if (comm.root()) std::fprintf(stderr, "feedrate: error: %s\n", faults.status().ToString().c_str());
    return kExitError;
  }
  TempFile::SetFaultInjector(faults->get());
  const int code = a.mlperf.tree.enabled() ? GenerateIntoTree(*cfg, o, a, comm) : GenerateOnRanks(*cfg, o, comm);
  TempFile::SetFaultInjector(nullptr);
  return code;
}

}  // namespace

int GenerateOnRanks(const WorkloadConfig& cfg, DatagenOptions o, Comm& comm) {
  o.rank = comm.rank();
  o.ranks = comm.size();
  const auto t0 = std::chrono::steady_clock::now();
  DatagenStats stats;
  Status st;
  if (auto generated = GenerateDataset(cfg, o); generated.ok()) {
    stats = *generated;
  } else {
    st = generated.status();
  }
  if (const std::string msg = comm.AgreeFirstError(st); !msg.empty()) {
    if (comm.root()) std::fprintf(stderr, "feedrate: error: %s\n", msg.c_str());
    return kExitError;
  }
  ReportDatagen(comm, cfg, stats, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), o.threads);
  return kExitPass;
}

Runner AddDatagen(CLI::App& app, int* argc, char*** argv) {
  auto* sub = app.add_subcommand("datagen", "generate a DLIO-compatible dataset (MPI-parallel)");
  auto a = std::make_shared<DatagenCommandArgs>();
  a->opt.threads = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  a->w.Register(sub, true, true);
  a->launch.Register(sub);
  RegisterDatagenOptions(sub, *a);
  a->mlperf.Register(sub);
  return [=] { return ExecuteDatagen(*a, argc, argv); };
}

}  // namespace feedrate::cli
