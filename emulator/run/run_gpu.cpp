// SetUpAcceleratorMemory and the rank's accelerator-memory facts.
#include "emulator/run/run_gpu.h"

#include <algorithm>

#include "loader/pipeline/prefetcher.h"

namespace feedrate {
namespace {

Status RetainGpus(const RunOptions& opt, AcceleratorStaging* out) {
  std::vector<int> ordinals = opt.gpus;
  if (ordinals.empty()) {
    for (int g = 0; g < out->cuda->device_count(); ++g) ordinals.push_back(g);
  }
  for (int g : ordinals) {
    auto ctx = gpu::DeviceContext::Retain(*out->cuda, g);
    if (!ctx.ok()) return Status::InvalidArgument("--gpus: " + ctx.status().message());
    out->contexts.push_back(std::move(*ctx));
  }
  return Status::Ok();
}

// One prefetcher's staging: `depth` slots of a whole batch of the largest sample (O_DIRECT windows included).
Result<std::unique_ptr<GpuStaging>> MakeStaging(const AcceleratorStaging& a, size_t gpu_index, const SampleTable& table,
                                               uint64_t batch, uint64_t depth, uint64_t direct_align) {
  const uint64_t bytes = Prefetcher::SlotBytes(table, batch, direct_align);
  auto s = GpuStaging::Create(*a.cuda, a.contexts[gpu_index], a.mode, std::max<uint64_t>(1, depth), bytes);
  if (!s.ok()) {
    return Status::IoError(std::string("--accelerator-memory ") + Name(a.mode) + " on GPU " +
                           std::to_string(a.contexts[gpu_index].ordinal()) + ": " + s.status().message());
  }
  return s;
}

}  // namespace

Status SetUpAcceleratorMemory(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm,
                              const SampleTable& table, uint64_t direct_align, bool evaluation, AcceleratorStaging* out) {
  out->mode = opt.accelerator_memory;
  if (out->mode == AcceleratorMemory::kHost) return Status::Ok();
  if (table.MaxLength() == kWholeFile) {
    return Status::InvalidArgument(std::string("--accelerator-memory ") + Name(out->mode) +
                                   ": the samples' sizes are not known before they are read (whole image files)");
  }
  auto cuda = gpu::Cuda::Load();
  if (!cuda.ok()) return Status::NotFound(std::string("--accelerator-memory ") + Name(out->mode) + ": " + cuda.status().message());
  out->cuda = std::move(*cuda);
  FEEDRATE_RETURN_IF_ERROR(RetainGpus(opt, out));
  for (uint64_t a = 0; a < opt.accelerators; ++a) {
    const uint64_t global = static_cast<uint64_t>(comm.rank()) * opt.accelerators + a;
    const size_t g = global % out->contexts.size();
    out->gpu_of.push_back(out->contexts[g].ordinal());
    FEEDRATE_ASSIGN_OR_RETURN(auto train, MakeStaging(*out, g, table, cfg.batch_size, cfg.prefetch_size, direct_align));
    out->train_slots.push_back(train.get());
    out->train.push_back(std::move(train));
    if (!evaluation) continue;
    FEEDRATE_ASSIGN_OR_RETURN(auto eval, MakeStaging(*out, g, table, cfg.batch_size_eval, cfg.prefetch_size, direct_align));
    out->eval_slots.push_back(eval.get());
    out->eval.push_back(std::move(eval));
  }
  return Status::Ok();
}

nlohmann::json AcceleratorStaging::ToJson() const {
  nlohmann::json j = {{"mode", Name(mode)}};
  if (mode == AcceleratorMemory::kHost || cuda == nullptr) return j;  // nullptr: set-up failed before the driver
  StagingStats t;
  uint64_t device_bytes = 0;
  for (const auto* list : {&train, &eval}) {
    for (const auto& s : *list) {
      const StagingStats x = s->stats();
      t.copies += x.copies;
      t.bytes += x.bytes;
      t.copy_ns += x.copy_ns;
      t.stall_ns += x.stall_ns;
      device_bytes += s->device_bytes();
    }
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& c : contexts) gpus.push_back({{"ordinal", c.ordinal()}, {"name", cuda->DeviceName(c.ordinal())}});
  j["gpus"] = gpus;
  j["accelerator_gpu"] = gpu_of;
  j["driver_version"] = cuda->driver_version();
  j["library"] = cuda->library();
  j["batches_copied"] = t.copies;
  j["h2d_bytes"] = t.bytes;
  j["copy_seconds"] = static_cast<double>(t.copy_ns) / 1e9;
  j["copy_stall_seconds"] = static_cast<double>(t.stall_ns) / 1e9;
  j["device_buffer_bytes"] = device_bytes;
  return j;
}

}  // namespace feedrate
