// `feedrate datagen`: write a DLIO-compatible dataset, files spread over MPI ranks and writer threads.
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "loader/util/exit_codes.h"
#include "cli/launch.h"
#include "datagen/generator.h"
#include "datagen/temp_file.h"
#include "emulator/host/comm.h"
#include "loader/io/fault_injection.h"

namespace feedrate::cli {

Runner AddDatagen(CLI::App& app, int* argc, char*** argv) {
  auto* sub = app.add_subcommand("datagen", "generate a DLIO-compatible dataset (MPI-parallel)");
  auto w = std::make_shared<WorkloadArgs>();
  auto opt = std::make_shared<DatagenOptions>();
  opt->threads = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  w->Register(sub, true, true);
  auto launch = std::make_shared<LaunchArgs>();
  launch->Register(sub);
  sub->add_option("--threads", opt->threads, "writer threads per rank")->check(PositiveNumber());
  sub->add_flag("--skip-existing", opt->skip_existing, "keep files that already exist with the expected size");
  sub->add_flag("--fsync", opt->fsync, "fsync every file before renaming it into place (durable; device speed)");
  sub->add_option("--write-size", opt->write_size, "bytes per write() (default 256 KiB; 4 KiB to 64 MiB)")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{64} << 20));
  sub->add_option("--staging-dir", opt->staging_dir, "S3 (--storage): local directory each file is written to before its "
                                                    "upload (default $TMPDIR or /tmp; one file per writer thread at a time)");
  auto part_size = std::make_shared<std::string>("16m");
  sub->add_option("--s3-part-size", *part_size, "S3: objects above this size go up as multipart uploads of parts this "
                                                "large (default 16m; 5m to 5g)")
      ->check([](const std::string& v) {
        if (std::string why = CheckBytes(v); !why.empty()) return why;
        const uint64_t n = ParseBytes(v);
        return std::string(n >= (uint64_t{5} << 20) && n <= (uint64_t{5} << 30) ? "" : "must be between 5m and 5g");
      });
  auto content = std::make_shared<std::string>("random");
  sub->add_option("--content", *content, "random (default) or verifiable: payload bytes a pure function of (seed, file, "
                                         "offset), which `run --verify` checks (npz, npy, tfrecord, indexed_binary)")
      ->check(CLI::IsMember({"random", "verifiable"}));
  sub->add_option("--content-seed", opt->content_seed, "seed of the verifiable content (default 0; kept in the dataset's "
                                                       ".feedrate-content marker)");
  auto inject = std::make_shared<std::string>();
  sub->add_option("--inject", *inject, "inject write faults, for tests and demos: enospc|eio|short|delay[:op=write,every=N,"
                                       "after=N,count=N,file=GLOB,offset=A-B] (docs/faults.md)")
      ->check(CheckInjectRules);
  return [=] {
    if (launch->requested()) return RelaunchUnderMpirun(*launch, *argc, *argv);
    Comm comm(argc, argv);
    const std::optional<WorkloadConfig> loaded = LoadWorkloadOrPrint(w->workload, w->Overrides(), comm.root());
    if (!loaded) return kExitError;
    const WorkloadConfig& cfg = *loaded;
    DatagenOptions o = *opt;
    o.s3_part_size = ParseBytes(*part_size);
    o.verifiable_content = *content == "verifiable";
    if (o.fsync && cfg.on_s3()) {
      // The staging files are deleted once uploaded: syncing them would only slow the upload down.
      if (comm.root()) {
        std::fprintf(stderr, "feedrate: note: --fsync applies to files; an S3 object is durable once its PUT (or "
                             "multipart completion) is acknowledged, so the staging files are not synced\n");
      }
      o.fsync = false;
    }
    TempFile::SetDurableCommits(o.fsync);
    // Write faults: every rule applies to writes here (enospc does already; eio, short and delay are moved over).
    std::unique_ptr<FaultInjector> faults;
    if (!inject->empty()) {
      FaultPlan plan = *ParseFaultPlan(*inject);
      for (auto& r : plan.rules) {
        if (r.kind == FaultKind::kEagain) {
          if (comm.root()) std::fprintf(stderr, "feedrate: error: --inject '%s': eagain is a read fault\n", r.text.c_str());
          return kExitError;
        }
        r.op = FaultOp::kWrite;
      }
      faults = std::make_unique<FaultInjector>(std::move(plan));
      TempFile::SetFaultInjector(faults.get());
    }
    o.rank = comm.rank();
    o.ranks = comm.size();
    auto t0 = std::chrono::steady_clock::now();
    Status st;
    DatagenStats stats;
    try {
      auto r = GenerateDataset(cfg, o);
      if (r.ok()) stats = *r; else st = r.status();
    } catch (const ConfigError& e) {
      st = Status::InvalidArgument(e.what());
    }
    TempFile::SetFaultInjector(nullptr);
    if (const std::string msg = comm.AgreeFirstError(st); !msg.empty()) {
      if (comm.root()) std::fprintf(stderr, "feedrate: error: %s\n", msg.c_str());
      return kExitError;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double files = comm.SumDouble(static_cast<double>(stats.files_written));
    double skipped = comm.SumDouble(static_cast<double>(stats.files_skipped));
    double bytes = comm.SumDouble(static_cast<double>(stats.bytes_written));
    double requests = comm.SumDouble(static_cast<double>(stats.s3_requests));
    secs = comm.MaxDouble(secs);
    if (comm.root()) {
      std::printf("datagen %s: wrote %.0f files (%.2f GiB), kept %.0f existing, in %.2f s (%.2f GiB/s) with %d rank(s) x %zu thread(s) into %s/train\n",
                  cfg.name.c_str(), files, bytes / (1 << 30), skipped, secs, secs > 0 ? bytes / (1 << 30) / secs : 0.0,
                  comm.size(), o.threads, cfg.DataLocation().c_str());
      if (cfg.on_s3()) std::printf("S3: %.0f upload requests (PUT, multipart initiate/part) to %s\n", requests,
                                   cfg.s3_endpoint.empty() ? "AWS" : cfg.s3_endpoint.c_str());
    }
    return kExitPass;
  };
}

}  // namespace feedrate::cli
