// The accelerators' set-up (GPUs, spin kernels, the cuFile probe; the stagings and cuFile registrations the read
// plan's staging names) and the rank's accelerator-memory facts.
#include "emulator/run/run_gpu.h"

#include <fcntl.h>

#include <algorithm>

#include "loader/io/unique_fd.h"
#include "loader/pipeline/prefetcher.h"

namespace feedrate {
namespace {

Status RetainGpus(const RunOptions& opt, AcceleratorStaging* out) {
  std::vector<int> ordinals = opt.gpus;
  if (ordinals.empty()) {
    for (int g = 0; g < out->cuda->device_count(); ++g) ordinals.push_back(g);
  }
  for (size_t i = 0; i < ordinals.size(); ++i) {
    if (std::count(ordinals.begin(), ordinals.begin() + static_cast<long>(i), ordinals[i]) > 0) {
      return Status::InvalidArgument("--gpus: GPU " + std::to_string(ordinals[i]) + " is listed twice");
    }
    auto ctx = gpu::DeviceContext::Retain(*out->cuda, ordinals[i]);
    if (!ctx.ok()) return Status::InvalidArgument("--gpus: " + ctx.status().message());
    out->contexts.push_back(std::move(*ctx));
  }
  return Status::Ok();
}

// One prefetcher's staging: `depth` slots of `slot_reads` of the largest sample (O_DIRECT windows included).
Result<std::unique_ptr<GpuStaging>> MakeStaging(const AcceleratorStaging& a, size_t gpu_index, const SampleTable& table,
                                               uint64_t slot_reads, uint64_t depth, uint64_t direct_align) {
  const uint64_t bytes = Prefetcher::SlotBytes(table, slot_reads, direct_align);
  auto s = GpuStaging::Create(*a.cuda, a.contexts[gpu_index], a.mode, std::max<uint64_t>(1, depth), bytes, a.gds);
  if (!s.ok()) {
    return Status::IoError(std::string("--accelerator-memory ") + Name(a.mode) + " on GPU " +
                           std::to_string(a.contexts[gpu_index].ordinal()) + ": " + s.status().message());
  }
  return s;
}

Status MakeStagings(const WorkloadConfig& cfg, const SampleTable& table, uint64_t direct_align, SlotReads reads,
                    const std::vector<size_t>& gpu_index, AcceleratorStaging* out) {
  for (size_t g : gpu_index) {
    FEEDRATE_ASSIGN_OR_RETURN(auto train, MakeStaging(*out, g, table, reads.train, cfg.batches_in_flight, direct_align));
    out->train_slots.push_back(train.get());
    out->train.push_back(std::move(train));
    if (reads.eval == 0) continue;
    FEEDRATE_ASSIGN_OR_RETURN(auto eval, MakeStaging(*out, g, table, reads.eval, cfg.batches_in_flight, direct_align));
    out->eval_slots.push_back(eval.get());
    out->eval.push_back(std::move(eval));
  }
  return Status::Ok();
}

// feedrate.compute: gpu: one spin kernel per local accelerator, on its GPU.
Status MakeKernels(const WorkloadConfig& cfg, const std::vector<size_t>& gpu_index, AcceleratorStaging* out) {
  for (size_t g : gpu_index) {
    auto k = gpu::SpinKernel::Create(*out->cuda, out->contexts[g], cfg.compute_memory_bytes);
    if (!k.ok()) {
      return Status::IoError("feedrate.compute gpu on GPU " + std::to_string(out->contexts[g].ordinal()) + ": " +
                             k.status().message());
    }
    out->compute.push_back(std::make_unique<GpuStepCompute>(std::move(*k)));
    out->compute_steps.push_back(out->compute.back().get());
  }
  return Status::Ok();
}

// Global accelerator g (rank x accelerators + local index) uses contexts[g % n].
void MapAccelerators(const RunOptions& opt, const Comm& comm, AcceleratorStaging* out) {
  for (uint64_t a = 0; a < opt.accelerators; ++a) {
    const uint64_t global = static_cast<uint64_t>(comm.rank()) * opt.accelerators + a;
    out->gpu_index.push_back(global % out->contexts.size());
    out->gpu_of.push_back(out->contexts[out->gpu_index.back()].ordinal());
  }
}

// The driver and the GPUs; errors name what asked for them.
Status LoadDriver(const WorkloadConfig& cfg, const RunOptions& opt, AcceleratorStaging* out) {
  const std::string who = out->mode != AcceleratorMemory::kHost ? std::string("--accelerator-memory ") + Name(out->mode)
                                                                 : std::string("feedrate.compute ") + Name(cfg.compute);
  auto cuda = gpu::Cuda::Load();
  if (!cuda.ok()) return Status::NotFound(who + ": " + cuda.status().message());
  out->cuda = std::move(*cuda);
  return RetainGpus(opt, out);
}

// GDS: every device slot registered with cuFile (pinned in the GPU's BAR for DMA), with its GPU's context current.
Status RegisterSlots(AcceleratorStaging* out) {
  for (const auto* list : {&out->train, &out->eval}) {
    for (const auto& s : *list) {
      FEEDRATE_RETURN_IF_ERROR(s->context().MakeCurrent());
      for (uint64_t i = 0; i < s->slots(); ++i) {
        FEEDRATE_ASSIGN_OR_RETURN(auto buf, gpu::CuFileBuffer::Register(*out->cufile, s->slot(i), s->slot_bytes()));
        out->registered.push_back(std::move(buf));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void ClearAcceleratorSlots(AcceleratorStaging* out) {
  out->registered.clear();
  out->train.clear();
  out->eval.clear();
  out->train_slots.clear();
  out->eval_slots.clear();
  out->gds = false;
}

Status SetUpAccelerators(const WorkloadConfig& cfg, const RunOptions& opt, const Comm& comm, const SampleTable& table,
                         AcceleratorStaging* out) {
  out->mode = opt.accelerator_memory;
  const bool host = out->mode == AcceleratorMemory::kHost;
  if (host && opt.gds == GdsMode::kOn) return Status::InvalidArgument("--gds on needs --accelerator-memory device");
  if (host && cfg.compute == ComputeKind::kSleep) return Status::Ok();
  if (!host && table.WholeFilesUnsized()) {
    return Status::InvalidArgument(std::string("--accelerator-memory ") + Name(out->mode) +
                                   ": the samples' sizes are not known before they are read (whole image files)");
  }
  FEEDRATE_RETURN_IF_ERROR(LoadDriver(cfg, opt, out));
  MapAccelerators(opt, comm, out);
  if (cfg.compute == ComputeKind::kGpu) return MakeKernels(cfg, out->gpu_index, out);
  return Status::Ok();
}

Status ProbeCuFile(const std::string& probe_path, AcceleratorStaging* out) {
  auto cufile = gpu::CuFile::Open(*out->cuda);
  if (!cufile.ok()) return cufile.status();
  FEEDRATE_ASSIGN_OR_RETURN(auto fd, OpenForRead(probe_path, O_DIRECT));
  auto handle = gpu::CuFileHandle::Register(**cufile, fd.get(), probe_path);
  if (!handle.ok()) return handle.status();
  out->cufile = std::move(*cufile);
  return Status::Ok();
}

Status MakeAcceleratorSlots(const WorkloadConfig& cfg, const SampleTable& table, uint64_t direct_align, SlotReads reads,
                            const StagingPlan& plan, AcceleratorStaging* out) {
  out->gds_requested = plan.requested;
  out->gds_reason = plan.gds_reason;
  if (plan.mode == AcceleratorMemory::kHost) return Status::Ok();
  out->gds = plan.gds;
  if (!plan.gds) out->cufile.reset();  // (a probe whose slots could not be registered: the bounce path now)
  FEEDRATE_RETURN_IF_ERROR(MakeStagings(cfg, table, direct_align, reads, out->gpu_index, out));
  return plan.gds ? RegisterSlots(out) : Status::Ok();
}

namespace {

// GPUDirect only where the driver says nvidia-fs serves cuFile: compat mode is never reported as GDS.
const char* GdsPathLabel(const gpu::CuFileDriverInfo& info) {
  return info.gpudirect() ? "gds" : info.known ? "cufile_compat" : "cufile_unknown";
}

nlohmann::json ComputeJson(const std::vector<std::unique_ptr<GpuStepCompute>>& kernels) {
  gpu::SpinStats t;
  for (const auto& k : kernels) {
    const gpu::SpinStats x = k->kernel().stats();
    t.launches += x.launches;
    t.requested_ns += x.requested_ns;
    t.kernel_ns += x.kernel_ns;
  }
  const gpu::SpinKernel& k0 = kernels.front()->kernel();
  return {{"kernel", "feedrate_spin"}, {"grid", k0.grid()}, {"block", k0.block()}, {"memory_bytes", k0.memory_bytes()},
          {"launches", t.launches}, {"requested_seconds", static_cast<double>(t.requested_ns) / 1e9},
          {"kernel_seconds", static_cast<double>(t.kernel_ns) / 1e9}};
}

}  // namespace

std::vector<gpu::DeviceRegion> AcceleratorStaging::Regions() const {
  std::vector<gpu::DeviceRegion> r;
  for (const auto* list : {&train, &eval}) {
    for (const auto& s : *list) {
      for (uint64_t i = 0; i < s->slots(); ++i) r.push_back({s->slot(i), s->slot_bytes(), &s->context()});
    }
  }
  return r;
}

nlohmann::json AcceleratorStaging::ToJson(uint64_t engine_bytes) const {
  nlohmann::json j = {{"mode", Name(mode)}};
  if (cuda == nullptr) return j;  // host memory and sleep compute, or set-up failed before the driver
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
  if (!compute.empty()) j["compute"] = ComputeJson(compute);
  if (mode == AcceleratorMemory::kHost) return j;
  j["path"] = mode == AcceleratorMemory::kPinned ? "pinned" : gds ? GdsPathLabel(cufile->driver_info()) : "bounce";
  if (mode == AcceleratorMemory::kDevice) {
    j["gds"] = {{"requested", gds_requested}, {"used", gds}};
    if (!gds_reason.empty()) j["gds"]["reason"] = gds_reason;
    if (cufile != nullptr) {
      j["gds"]["library"] = cufile->library();
      j["gds"]["driver"] = cufile->driver_info().Describe();
      j["gds"]["gpudirect"] = cufile->driver_info().gpudirect();
    }
  }
  if (gds) j["gds_bytes"] = engine_bytes;
  j["batches_copied"] = t.copies;
  j["h2d_bytes"] = t.bytes;
  j["copy_seconds"] = static_cast<double>(t.copy_ns) / 1e9;
  j["copy_stall_seconds"] = static_cast<double>(t.stall_ns) / 1e9;
  j["device_buffer_bytes"] = device_bytes;
  return j;
}

}  // namespace feedrate
