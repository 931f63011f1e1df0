// The start-of-job agreement: build and workload identity per rank, rank 0's verdict, the collective that carries it.
#include "emulator/host/job_start.h"

#include <elf.h>
#include <link.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "emulator/host/comm.h"

namespace feedrate {
namespace {

// The main program's NT_GNU_BUILD_ID note as hex, from its loaded PT_NOTE segments ("" when it has none).
std::string ProgramBuildId() {
  std::string hex;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) -> int {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) n;
            std::memcpy(&n, p, sizeof n);
            const char* name = p + sizeof n;
            const char* desc = name + ((n.n_namesz + 3) & ~3u);
            if (desc + n.n_descsz > end) break;
            if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
              auto* s = static_cast<std::string*>(out);
              for (uint32_t k = 0; k < n.n_descsz; ++k) {
                char b[3];
                std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(desc[k]));
                s->append(b, 2);
              }
              return 1;
            }
            p = desc + ((n.n_descsz + 3) & ~3u);
          }
        }
        return 1;  // the first object is the program itself: stop either way
      },
      &hex);
  return hex;
}

// "rank 1 (a), rank 2 (b)" for at most 4 ranks, then "and N more".
std::string Named(const std::vector<int>& ranks, const std::function<std::string(int)>& who) {
  std::string out;
  for (size_t k = 0; k < ranks.size() && k < 4; ++k) out += (k ? ", " : "") + who(ranks[k]);
  if (ranks.size() > 4) out += " and " + std::to_string(ranks.size() - 4) + " more";
  return out;
}

std::string Hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

}  // namespace

std::string BuildIdentity(const std::string& version) {
  const std::string id = ProgramBuildId();
  return version + " (" + (id.empty() ? std::string("no build ID") : "build " + id) + ")";
}

uint64_t WorkloadFingerprint(const std::string& resolved_yaml) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : resolved_yaml) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string EncodeRankStart(const RankStart& s) { return s.build + "\n" + Hex(s.workload) + "\n" + s.error; }

RankStart DecodeRankStart(const std::string& text) {
  RankStart s;
  const size_t a = text.find('\n');
  const size_t b = a == std::string::npos ? std::string::npos : text.find('\n', a + 1);
  if (b == std::string::npos) {  // not ours: say so rather than guess
    s.error = "sent an unreadable start record";
    return s;
  }
  s.build = text.substr(0, a);
  s.workload = std::strtoull(text.substr(a + 1, b - a - 1).c_str(), nullptr, 16);
  s.error = text.substr(b + 1);
  return s;
}

std::string StartVerdict(const std::vector<RankStart>& ranks, const std::function<std::string(int)>& who) {
  if (ranks.empty()) return "";
  const RankStart& first = ranks[0];
  if (!first.error.empty()) return first.error;
  std::vector<int> failed, other_build, other_workload;
  for (int r = 1; r < static_cast<int>(ranks.size()); ++r) {
    const RankStart& s = ranks[static_cast<size_t>(r)];
    if (!s.error.empty()) {
      failed.push_back(r);
    } else if (s.build != first.build) {
      other_build.push_back(r);
    } else if (s.workload != first.workload) {
      other_workload.push_back(r);
    }
  }
  if (!failed.empty()) {
    return Named(failed, who) + " could not load the workload that " + who(0) + " loaded: " +
           ranks[static_cast<size_t>(failed[0])].error;
  }
  if (!other_build.empty()) {
    return Named(other_build, who) + " run" + (other_build.size() == 1 ? "s" : "") + " feedrate " +
           ranks[static_cast<size_t>(other_build[0])].build + ", " + who(0) + " runs " + first.build +
           ": install one build on every host";
  }
  if (!other_workload.empty()) {
    return "the resolved workload on " + Named(other_workload, who) + " differs from " + who(0) + "'s (fingerprint " +
           Hex(ranks[static_cast<size_t>(other_workload[0])].workload) + ", not " + Hex(first.workload) +
           "): each host reads its own workload file and built-in workloads; make them the same there";
  }
  return "";
}

std::string AgreeOnStart(const Comm& comm, const RankStart& mine) {
  const std::vector<std::string> all = comm.GatherStrings(EncodeRankStart(mine));
  std::string verdict;
  if (comm.root()) {
    std::vector<RankStart> ranks;
    for (const auto& text : all) ranks.push_back(DecodeRankStart(text));
    verdict = StartVerdict(ranks, [&](int r) {
      return "rank " + std::to_string(r) + " (" + comm.hostname(r) + ")";
    });
  }
  return comm.size() > 1 ? comm.Broadcast(verdict, 0) : verdict;
}

}  // namespace feedrate
