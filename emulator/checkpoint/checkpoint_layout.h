// DLIO v2.0's checkpoint layout for transformer models (dlio_benchmark checkpointing/base_checkpointing.py): the
// parameter count, which files each rank writes for its tensor/pipeline/data-parallel position and ZeRO stage,
// and their sizes (the tensors' bytes; DLIO's torch.save adds a few KiB of pickle framing per file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/config/workload_config.h"
#include "loader/status.h"

namespace feedrate {

struct LlmModel {
  std::string name;
  uint64_t layers = 0, hidden = 0, ffn = 0, heads = 1, kv_heads = 1, vocab = 0;
  uint64_t tp = 1, pp = 1;
  uint64_t dp = 0;          // model.parallelism.data: the data-parallel width of the full (CLOSED) job; 0 = from the ranks
  int zero_stage = 0;
  uint64_t model_dtype_bytes = 2;      // model.model_datatype (fp16)
  uint64_t optimizer_dtype_bytes = 4;  // model.optimizer_datatype (fp32)
  std::string mode = "default";        // checkpoint.mode: default | subset
};
// model.* and checkpoint.mode from a workload; ConfigError-style InvalidArgument naming the key when a value is
// missing or impossible (no layers, TP x PP not dividing the world, ZeRO 0/3 with pipeline parallelism, ...).
Result<LlmModel> LlmModelFromConfig(const WorkloadConfig& cfg);

// get_num_parameters: embedding and lm_head (vocab x hidden each), per layer input norm, QKV with grouped KV heads,
// attention dense, post norm, gated MLP (2 x ffn x hidden) and down projection, plus the final norm.
uint64_t NumParameters(const LlmModel& m);

struct CheckpointFile {
  std::string name;    // inside global_epoch1_step<k>/, e.g. "zero_pp_rank_0_mp_rank_0_optim_states.pt"
  uint64_t bytes = 0;
  bool model = false;  // model state (else optimizer state)
};

struct RankLayout {
  uint64_t rank = 0, tp_rank = 0, pp_rank = 0, dp_rank = 0, mp_rank = 0;
  uint64_t first_layer = 0, last_layer = 0;  // layers [first, last] of [0, layers + 2] this rank's stage holds
  std::vector<CheckpointFile> files;
  uint64_t model_bytes = 0, optimizer_bytes = 0;
  uint64_t bytes() const { return model_bytes + optimizer_bytes; }
};

// The layout of `world` ranks (the ranks running, or the full job's TP x PP x DP in subset mode): DLIO's ranks
// with ZeRO 0 write only when rank < TP x PP; ZeRO 1/2 model state only on data-parallel rank 0 (a file per layer
// with pipeline parallelism, one model_<mp>_model_states.pt without); ZeRO 0/3 one zero_pp_rank_<dp>_mp_rank_<mp>
// model file; every writing rank an optimizer file of 3 x (params / world) + 3 x 5 x hidden fp32 values
// (params / (TP x PP) with ZeRO 0).
RankLayout CheckpointLayoutForRank(const LlmModel& m, uint64_t world, uint64_t rank);

// Over all `world` ranks: what DLIO reports as the checkpoint size (model counted once, optimizer summed).
struct CheckpointTotals {
  uint64_t model_bytes = 0, optimizer_bytes = 0, largest_rank_bytes = 0, smallest_writing_rank_bytes = 0;
  uint64_t bytes() const { return model_bytes + optimizer_bytes; }
};
CheckpointTotals CheckpointTotalsFor(const LlmModel& m, uint64_t world);
// The workload's checkpoint section (DLIO names and defaults).
struct CheckpointSettings {
  std::string folder = "checkpoints";  // checkpoint.checkpoint_folder
  uint64_t num_write = 1, num_read = 0;  // checkpoint.num_checkpoints_write / _read
  double time_between = 0;               // checkpoint.time_between_checkpoints (seconds)
  bool fsync = false;                    // checkpoint.fsync (DLIO v2.0 reads it under another name: never applied)
};
CheckpointSettings CheckpointSettingsFromConfig(const WorkloadConfig& cfg);

// The world the layout is computed for: TP x PP x DP in subset mode, else the ranks running.
Result<uint64_t> LayoutWorld(const LlmModel& m, uint64_t ranks);

}  // namespace feedrate
