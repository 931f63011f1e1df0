// Checkpoint layout per DLIO v2.0.
#include "emulator/checkpoint/checkpoint_layout.h"

#include <algorithm>

#include <yaml-cpp/yaml.h>

namespace feedrate {
namespace {

uint64_t DtypeBytes(const std::string& t) {
  if (t == "fp16" || t == "bf16" || t == "float16" || t == "bfloat16") return 2;
  if (t == "fp32" || t == "float32") return 4;
  if (t == "fp64" || t == "float64") return 8;
  if (t == "int8" || t == "uint8") return 1;
  return 0;
}

// The node at a dotted path, through const lookups only (a non-const operator[] would add the key to the tree);
// an undefined node when any part is missing or null.
YAML::Node At(const YAML::Node& node, const std::string& dotted) {
  const auto dot = dotted.find('.');
  const std::string key = dotted.substr(0, dot);
  if (!node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node child = node[key];
  if (!child || child.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return dot == std::string::npos ? child : At(child, dotted.substr(dot + 1));
}

// The tensors of one layer, in elements (DLIO's get_layer_parameters).
std::vector<uint64_t> LayerTensors(const LlmModel& m, uint64_t layer, uint64_t shard) {
  const uint64_t h = m.hidden, dim_kv = h / m.heads * m.kv_heads;
  if (layer == 0 || layer == m.layers + 1) return {h * m.vocab / m.tp / shard};  // embedding, lm_head
  if (layer == m.layers + 2) return {h / shard};                                // final norm
  return {h / shard, h * (h + 2 * dim_kv) / m.tp / shard, h * h / m.tp / shard, h / shard,
          h * 2 * m.ffn / m.tp / shard, h * m.ffn / m.tp / shard};
}

}  // namespace

Result<LlmModel> LlmModelFromConfig(const WorkloadConfig& cfg) {
  LlmModel m;
  m.name = cfg.model_name.empty() ? cfg.name : cfg.model_name;
  auto num = [&](const char* key, uint64_t* out, bool required) -> Status {
    YAML::Node n = At(cfg.tree, key);
    if (!n) return required ? Status::InvalidArgument(cfg.source + ": key " + key + " is needed for checkpointing") : Status::Ok();
    try {
      const long long v = n.as<long long>();
      if (v < 0) return Status::InvalidArgument(cfg.source + ": key " + key + " must not be negative");
      *out = static_cast<uint64_t>(v);
    } catch (const YAML::Exception&) {
      return Status::InvalidArgument(cfg.source + ": key " + key + ": '" + n.as<std::string>() + "' is not a number");
    }
    return Status::Ok();
  };
  FEEDRATE_RETURN_IF_ERROR(num("model.num_layers", &m.layers, true));
  FEEDRATE_RETURN_IF_ERROR(num("model.transformer.hidden_size", &m.hidden, true));
  FEEDRATE_RETURN_IF_ERROR(num("model.transformer.ffn_hidden_size", &m.ffn, true));
  FEEDRATE_RETURN_IF_ERROR(num("model.transformer.vocab_size", &m.vocab, true));
  FEEDRATE_RETURN_IF_ERROR(num("model.transformer.num_attention_heads", &m.heads, false));
  FEEDRATE_RETURN_IF_ERROR(num("model.transformer.num_kv_heads", &m.kv_heads, false));
  FEEDRATE_RETURN_IF_ERROR(num("model.parallelism.tensor", &m.tp, false));
  FEEDRATE_RETURN_IF_ERROR(num("model.parallelism.pipeline", &m.pp, false));
  FEEDRATE_RETURN_IF_ERROR(num("model.parallelism.data", &m.dp, false));
  uint64_t zero = 0;
  FEEDRATE_RETURN_IF_ERROR(num("model.parallelism.zero_stage", &zero, false));
  m.zero_stage = static_cast<int>(zero);
  for (const auto& [key, out] : {std::pair{"model.model_datatype", &m.model_dtype_bytes},
                                 std::pair{"model.optimizer_datatype", &m.optimizer_dtype_bytes}}) {
    if (YAML::Node n = At(cfg.tree, key)) {
      *out = DtypeBytes(n.as<std::string>());
      if (*out == 0) return Status::InvalidArgument(cfg.source + ": key " + key + ": '" + n.as<std::string>() + "' is not fp16, bf16, fp32, fp64 or int8");
    }
  }
  if (YAML::Node n = At(cfg.tree, "checkpoint.mode")) m.mode = n.as<std::string>();
  if (m.mode != "default" && m.mode != "subset") {
    return Status::InvalidArgument(cfg.source + ": key checkpoint.mode: '" + m.mode + "' is not default or subset");
  }
  if (m.layers == 0 || m.hidden == 0 || m.vocab == 0) {
    return Status::InvalidArgument(cfg.source + ": model.num_layers, hidden_size and vocab_size must be positive");
  }
  if (m.heads == 0 || m.kv_heads == 0 || m.tp == 0 || m.pp == 0 || m.zero_stage > 3) {
    return Status::InvalidArgument(cfg.source + ": attention heads, KV heads, tensor and pipeline parallelism must be "
                                   "positive and model.parallelism.zero_stage 0-3");
  }
  if ((m.zero_stage == 0 || m.zero_stage == 3) && m.pp > 1) {
    return Status::InvalidArgument(cfg.source + ": ZeRO stage " + std::to_string(m.zero_stage) +
                                   " shards the model over data-parallel ranks and needs model.parallelism.pipeline=1 "
                                   "(DLIO asserts the same)");
  }
  return m;
}

CheckpointSettings CheckpointSettingsFromConfig(const WorkloadConfig& cfg) {
  CheckpointSettings c;
  if (YAML::Node n = At(cfg.tree, "checkpoint.checkpoint_folder")) c.folder = n.as<std::string>();
  if (YAML::Node n = At(cfg.tree, "checkpoint.num_checkpoints_write")) c.num_write = n.as<uint64_t>();
  if (YAML::Node n = At(cfg.tree, "checkpoint.num_checkpoints_read")) c.num_read = n.as<uint64_t>();
  if (YAML::Node n = At(cfg.tree, "checkpoint.time_between_checkpoints")) c.time_between = n.as<double>();
  if (YAML::Node n = At(cfg.tree, "checkpoint.fsync")) c.fsync = n.as<bool>();
  return c;
}

uint64_t NumParameters(const LlmModel& m) {
  const uint64_t h = m.hidden, dim_kv = h / m.heads * m.kv_heads;
  const uint64_t embedding = m.vocab * h;
  const uint64_t per_layer = h + h * (h + 2 * dim_kv) + h * h + h + m.ffn * 2 * h + m.ffn * h;
  return embedding + per_layer * m.layers + h + embedding;
}

Result<uint64_t> LayoutWorld(const LlmModel& m, uint64_t ranks) {
  const uint64_t mp = m.tp * m.pp;
  if (m.mode == "subset") {
    if (m.dp == 0) return Status::InvalidArgument("checkpoint.mode=subset needs model.parallelism.data (the full job's data-parallel width)");
    if (ranks > mp * m.dp) {
      return Status::InvalidArgument("checkpoint.mode=subset: " + std::to_string(ranks) + " ranks are more than the full job's " +
                                     std::to_string(mp * m.dp) + " (TP x PP x DP)");
    }
    return mp * m.dp;
  }
  if (ranks % mp != 0) {
    return Status::InvalidArgument(std::to_string(ranks) + " ranks do not divide into tensor x pipeline parallel groups of " +
                                   std::to_string(mp) + " (model.parallelism.tensor x pipeline); run a multiple of it, "
                                   "or checkpoint.mode=subset with model.parallelism.data");
  }
  return ranks;
}

RankLayout CheckpointLayoutForRank(const LlmModel& m, uint64_t world, uint64_t rank) {
  RankLayout r;
  const uint64_t mp = m.tp * m.pp, dp = std::max<uint64_t>(1, world / mp);
  r.rank = rank;
  r.tp_rank = rank % m.tp;
  r.pp_rank = rank / m.tp % m.pp;
  r.dp_rank = rank / mp;
  r.mp_rank = rank % mp;
  // get_layer_index: transformer layers 1..L split over pipeline stages (the first `remainder` stages take one
  // more); stage 0 also holds the embedding (0), the last stage lm_head and the final norm (L+1, L+2).
  const uint64_t per = m.layers / m.pp, rem = m.layers % m.pp;
  if (r.pp_rank < rem) {
    r.first_layer = r.pp_rank * (per + 1) + 1;
    r.last_layer = r.first_layer + per;
  } else {
    r.first_layer = rem * (per + 1) + (r.pp_rank - rem) * per + 1;
    r.last_layer = r.first_layer + per - 1;
  }
  if (r.pp_rank == m.pp - 1) r.last_layer = m.layers + 2;
  if (r.pp_rank == 0) r.first_layer = 0;
  if (m.zero_stage == 0 && rank >= mp) return r;  // only the first data-parallel instance saves

  const uint64_t shard = m.zero_stage == 3 ? dp : 1;
  const std::string step_tag = "zero_pp_rank_" + std::to_string(r.dp_rank) + "_mp_rank_" + std::to_string(r.mp_rank);
  std::vector<uint64_t> layer_bytes;
  for (uint64_t l = r.first_layer; l <= r.last_layer; ++l) {
    uint64_t b = 0;
    for (uint64_t t : LayerTensors(m, l, shard)) b += t * m.model_dtype_bytes;
    layer_bytes.push_back(b);
  }
  uint64_t model = 0;
  for (uint64_t b : layer_bytes) model += b;
  if (m.zero_stage == 1 || m.zero_stage == 2) {
    if (r.dp_rank == 0) {
      if (m.pp > 1) {
        for (uint64_t l = r.first_layer; l <= r.last_layer; ++l) {
          r.files.push_back({"layer_" + std::to_string(l) + "-model_" + std::to_string(r.mp_rank) + "_model_states.pt",
                             layer_bytes[l - r.first_layer], true});
        }
      } else {
        r.files.push_back({"model_" + std::to_string(r.mp_rank) + "_model_states.pt", model, true});
      }
      r.model_bytes = model;
    }
  } else {
    r.files.push_back({step_tag + "_model_states.pt", model, true});
    r.model_bytes = model;
  }
  const uint64_t params = NumParameters(m) / (m.zero_stage > 0 ? world : mp);
  if (params > 0) {
    r.optimizer_bytes = (3 * params + 3 * 5 * m.hidden) * m.optimizer_dtype_bytes;
    r.files.push_back({step_tag + "_optim_states.pt", r.optimizer_bytes, false});
  }
  return r;
}

CheckpointTotals CheckpointTotalsFor(const LlmModel& m, uint64_t world) {
  CheckpointTotals t;
  t.smallest_writing_rank_bytes = UINT64_MAX;
  for (uint64_t r = 0; r < world; ++r) {
    const RankLayout l = CheckpointLayoutForRank(m, world, r);
    t.model_bytes += l.model_bytes;
    t.optimizer_bytes += l.optimizer_bytes;
    t.largest_rank_bytes = std::max(t.largest_rank_bytes, l.bytes());
    if (l.bytes() > 0) t.smallest_writing_rank_bytes = std::min(t.smallest_writing_rank_bytes, l.bytes());
  }
  if (t.smallest_writing_rank_bytes == UINT64_MAX) t.smallest_writing_rank_bytes = 0;
  return t;
}

}  // namespace feedrate
