// Fault injection at the I/O boundary (`--inject`): short reads, EAGAIN, EIO, ENOSPC on writes and added
// latency, by rule (every Nth matching request, after the first N, at most N times, by file glob, by offset).
// Engines apply it to each read's real result (pread's return, the CQE's res), so their retry and error paths run
// exactly as they would for a kernel that returned it; datagen applies it to each write.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loader/status.h"

namespace feedrate {

class FileTable;

enum class FaultKind { kShort, kEagain, kEio, kEnospc, kDelay };
enum class FaultOp { kRead, kWrite };

struct FaultRule {
  FaultKind kind = FaultKind::kEio;
  FaultOp op = FaultOp::kRead;         // enospc defaults to write, the others to read (op=read|write)
  bool op_explicit = false;            // op= was given (a caller may choose another default)
  uint64_t every = 1;                  // every Nth matching request
  uint64_t after = 0;                  // the first N matching requests pass untouched
  uint64_t count = 0;                  // at most N injections (0: no limit)
  std::string file;                    // fnmatch glob on the path or its last component ("" = any file)
  uint64_t offset_begin = 0;           // requests overlapping [offset_begin, offset_end)
  uint64_t offset_end = UINT64_MAX;
  uint64_t delay_us = 0;               // delay: added service time per matching request
  std::string text;                    // the rule as given
};

struct FaultPlan {
  std::vector<FaultRule> rules;
  bool any() const { return !rules.empty(); }
  std::string ToString() const;  // the rules as given, ';'-separated
};

// Parses rules separated by ';': KIND[:key=value,...] with KIND short|eagain|eio|enospc|delay and keys every, after,
// count, file, offset (A-B, or A for [A, end)), op (read|write), us / ms (delay). Examples:
// "eio:file=img_3*,every=5", "delay:us=2000", "short:every=3;eagain:every=7", "enospc:file=*_2_of_*,after=1".
// Errors name the rule and the key.
Result<FaultPlan> ParseFaultPlan(const std::string& text);

// Applies a plan; thread-safe (counters are relaxed atomics, touched only while a plan is active).
class FaultInjector {
 public:
  explicit FaultInjector(FaultPlan plan, uint64_t align = 1);
  ~FaultInjector();
  bool any() const { return !rules_.empty(); }
  // Resolves file globs against a table's paths once, so reads name files by index without matching strings.
  void BindFiles(const FileTable& files);
  // A read of `length` bytes of table file `file` at `offset` whose real result was `result` (bytes or -errno):
  // the result to act on. Delay rules sleep here, on the I/O thread.
  int64_t OnRead(uint32_t file, uint64_t offset, uint64_t length, int64_t result);
  // As OnRead, for reads that name their file by path (checkpoint reads): rules match `path` with their glob.
  int64_t OnReadPath(const std::string& path, uint64_t offset, uint64_t length, int64_t result);
  // A write of `path` at `offset`, before it is issued: 0 to go ahead, a byte count to write only that much (short),
  // or -errno to fail it with.
  int64_t OnWrite(const std::string& path, uint64_t offset, uint64_t length);
  // Per rule: the rule, the requests it matched and the faults it injected.
  struct RuleCount {
    std::string rule;
    uint64_t matched = 0, injected = 0;
  };
  std::vector<RuleCount> Counts() const;
  uint64_t injected() const;

 private:
  struct Active;
  int64_t Fire(Active& a, int64_t result);
  // OnRead / OnReadPath: rules match table file `file`, or `path` when given.
  int64_t ReadResult(uint64_t offset, uint64_t length, int64_t result, uint32_t file, const std::string* path);
  static void Pace(Active& a, uint64_t delay_us);
  std::vector<std::unique_ptr<Active>> rules_;
  uint64_t align_;
};

}  // namespace feedrate
