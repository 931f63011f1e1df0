// FaultPlan parsing and the thread-safe FaultInjector.
#include "loader/io/fault_injection.h"

#include <fnmatch.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "loader/io/io_engine.h"

namespace feedrate {

struct FaultInjector::Active {
  FaultRule rule;
  std::vector<char> file_match;  // per table file, once bound; empty: match by path at each request
  std::atomic<uint64_t> matched{0}, injected{0};
};

namespace {

Result<uint64_t> Number(const std::string& rule, const std::string& key, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || errno != 0) return Status::InvalidArgument("--inject '" + rule + "': " + key + "=" + v + " is not a number");
  uint64_t scale = 1;
  std::string suffix(end);
  if (suffix == "k" || suffix == "K" || suffix == "KiB") scale = 1ULL << 10;
  else if (suffix == "m" || suffix == "M" || suffix == "MiB") scale = 1ULL << 20;
  else if (suffix == "g" || suffix == "G" || suffix == "GiB") scale = 1ULL << 30;
  else if (!suffix.empty()) return Status::InvalidArgument("--inject '" + rule + "': " + key + "=" + v + " is not a number");
  return static_cast<uint64_t>(n) * scale;
}

bool PathMatches(const std::string& glob, const std::string& path) {
  if (glob.empty()) return true;
  const auto slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return ::fnmatch(glob.c_str(), path.c_str(), 0) == 0 || ::fnmatch(glob.c_str(), base.c_str(), 0) == 0;
}

}  // namespace

std::string FaultPlan::ToString() const {
  std::string s;
  for (const auto& r : rules) s += (s.empty() ? "" : ";") + r.text;
  return s;
}

Result<FaultPlan> ParseFaultPlan(const std::string& text) {
  FaultPlan plan;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t semi = text.find(';', pos);
    const std::string item = text.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos);
    pos = semi == std::string::npos ? text.size() + 1 : semi + 1;
    if (item.empty()) continue;
    FaultRule r;
    r.text = item;
    const size_t colon = item.find(':');
    const std::string kind = item.substr(0, colon);
    if (kind == "short") r.kind = FaultKind::kShort;
    else if (kind == "eagain") r.kind = FaultKind::kEagain;
    else if (kind == "eio") r.kind = FaultKind::kEio;
    else if (kind == "enospc") r.kind = FaultKind::kEnospc, r.op = FaultOp::kWrite;
    else if (kind == "delay") r.kind = FaultKind::kDelay;
    else return Status::InvalidArgument("--inject '" + item + "': unknown fault '" + kind + "' (short, eagain, eio, enospc, delay)");
    size_t kp = colon == std::string::npos ? item.size() : colon + 1;
    while (kp < item.size()) {
      const size_t comma = item.find(',', kp);
      const std::string kv = item.substr(kp, comma == std::string::npos ? std::string::npos : comma - kp);
      kp = comma == std::string::npos ? item.size() : comma + 1;
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) return Status::InvalidArgument("--inject '" + item + "': expected key=value in '" + kv + "'");
      const std::string key = kv.substr(0, eq), v = kv.substr(eq + 1);
      auto num = [&](uint64_t* out) -> Status {
        FEEDRATE_ASSIGN_OR_RETURN(auto n, Number(item, key, v));
        *out = n;
        return Status::Ok();
      };
      if (key == "every") {
        FEEDRATE_RETURN_IF_ERROR(num(&r.every));
        if (r.every == 0) return Status::InvalidArgument("--inject '" + item + "': every must be at least 1");
      } else if (key == "after") {
        FEEDRATE_RETURN_IF_ERROR(num(&r.after));
      } else if (key == "count") {
        FEEDRATE_RETURN_IF_ERROR(num(&r.count));
      } else if (key == "file") {
        r.file = v;
      } else if (key == "offset") {
        const size_t dash = v.find('-');
        FEEDRATE_ASSIGN_OR_RETURN(auto b, Number(item, key, v.substr(0, dash)));
        r.offset_begin = b;
        if (dash != std::string::npos) {
          FEEDRATE_ASSIGN_OR_RETURN(auto e, Number(item, key, v.substr(dash + 1)));
          r.offset_end = e;
          if (r.offset_end <= r.offset_begin) return Status::InvalidArgument("--inject '" + item + "': offset range " + v + " is empty");
        }
      } else if (key == "op") {
        r.op_explicit = true;
        if (v == "read") r.op = FaultOp::kRead;
        else if (v == "write") r.op = FaultOp::kWrite;
        else return Status::InvalidArgument("--inject '" + item + "': op=" + v + " (read or write)");
      } else if (key == "us" || key == "ms") {
        FEEDRATE_RETURN_IF_ERROR(num(&r.delay_us));
        if (key == "ms") r.delay_us *= 1000;
      } else {
        return Status::InvalidArgument("--inject '" + item + "': unknown key '" + key +
                                       "' (every, after, count, file, offset, op, us, ms)");
      }
    }
    if (r.kind == FaultKind::kDelay && r.delay_us == 0) return Status::InvalidArgument("--inject '" + item + "': delay needs us=N or ms=N");
    if (r.kind != FaultKind::kDelay && r.delay_us != 0) return Status::InvalidArgument("--inject '" + item + "': us/ms apply to delay only");
    if (r.kind == FaultKind::kEnospc && r.op == FaultOp::kRead) return Status::InvalidArgument("--inject '" + item + "': enospc is a write fault");
    if (r.kind == FaultKind::kEagain && r.op == FaultOp::kWrite) return Status::InvalidArgument("--inject '" + item + "': eagain is a read fault");
    plan.rules.push_back(std::move(r));
  }
  return plan;
}

FaultInjector::FaultInjector(FaultPlan plan, uint64_t align) : align_(align == 0 ? 1 : align) {
  for (auto& r : plan.rules) {
    rules_.push_back(std::make_unique<Active>());
    rules_.back()->rule = std::move(r);
  }
}

FaultInjector::~FaultInjector() = default;

void FaultInjector::BindFiles(const FileTable& files) {
  for (auto& a : rules_) {
    a->file_match.assign(files.size(), 0);
    for (size_t i = 0; i < files.size(); ++i) a->file_match[i] = PathMatches(a->rule.file, files.path(static_cast<uint32_t>(i))) ? 1 : 0;
  }
}

// A delay paces its I/O thread: while the thread streams requests, each one's deadline is the previous deadline
// plus the delay, so a late wake-up on a loaded machine is made up by the next request instead of adding up (the
// thread completes 1/delay requests per second, as a device of that service time would); after the thread was
// idle (its last deadline older than two delays), the delay counts from now.
void FaultInjector::Pace(Active& a, uint64_t delay_us) {
  thread_local std::vector<std::pair<const void*, std::chrono::steady_clock::time_point>> last;  // per rule
  const auto now = std::chrono::steady_clock::now();
  const auto delay = std::chrono::microseconds(delay_us);
  auto it = std::find_if(last.begin(), last.end(), [&](const auto& e) { return e.first == &a; });
  if (it == last.end()) {
    last.emplace_back(&a, now - 3 * delay);
    it = last.end() - 1;
  }
  const auto deadline = now - it->second <= 2 * delay ? it->second + delay : now + delay;
  it->second = deadline;
  std::this_thread::sleep_until(deadline);
}

int64_t FaultInjector::Fire(Active& a, int64_t result) {
  const FaultRule& r = a.rule;
  const uint64_t n = a.matched.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n <= r.after || (n - r.after) % r.every != 0) return result;
  if (r.count != 0) {
    // Claim one of the `count` injections; a lost race means the budget is spent.
    uint64_t done = a.injected.load(std::memory_order_relaxed);
    do {
      if (done >= r.count) return result;
    } while (!a.injected.compare_exchange_weak(done, done + 1, std::memory_order_relaxed));
  } else {
    a.injected.fetch_add(1, std::memory_order_relaxed);
  }
  switch (r.kind) {
    case FaultKind::kDelay:
      Pace(a, r.delay_us);
      return result;
    case FaultKind::kEio: return -EIO;
    case FaultKind::kEagain: return -EAGAIN;
    case FaultKind::kEnospc: return -ENOSPC;
    case FaultKind::kShort: {  // `result` is the bytes the request moves (real errors never get here)
      const int64_t half = result / 2 / static_cast<int64_t>(align_) * static_cast<int64_t>(align_);
      return half > 0 ? half : result;
    }
  }
  return result;
}

int64_t FaultInjector::OnRead(uint32_t file, uint64_t offset, uint64_t length, int64_t result) {
  return ReadResult(offset, length, result, file, nullptr);
}

int64_t FaultInjector::OnReadPath(const std::string& path, uint64_t offset, uint64_t length, int64_t result) {
  return ReadResult(offset, length, result, 0, &path);
}

int64_t FaultInjector::ReadResult(uint64_t offset, uint64_t length, int64_t result, uint32_t file, const std::string* path) {
  if (result < 0) return result;  // a real error stands
  int64_t out = result;
  for (auto& a : rules_) {
    const FaultRule& r = a->rule;
    if (r.op != FaultOp::kRead || offset >= r.offset_end || offset + length <= r.offset_begin) continue;
    const bool match = path != nullptr             ? PathMatches(r.file, *path)
                       : !a->file_match.empty() ? file < a->file_match.size() && a->file_match[file]
                                                : r.file.empty();
    if (!match) continue;
    const int64_t got = Fire(*a, result);
    if (got != result && out == result) out = got;  // the first fault wins
  }
  return out;
}

int64_t FaultInjector::OnWrite(const std::string& path, uint64_t offset, uint64_t length) {
  int64_t out = 0;
  for (auto& a : rules_) {
    const FaultRule& r = a->rule;
    if (r.op != FaultOp::kWrite || offset >= r.offset_end || offset + length <= r.offset_begin) continue;
    if (!PathMatches(r.file, path)) continue;
    const int64_t full = static_cast<int64_t>(length);
    const int64_t got = Fire(*a, full);
    if (got != full && out == 0) out = got;
  }
  return out;
}

std::vector<FaultInjector::RuleCount> FaultInjector::Counts() const {
  std::vector<RuleCount> c;
  for (const auto& a : rules_) {
    c.push_back({a->rule.text, a->matched.load(std::memory_order_relaxed), a->injected.load(std::memory_order_relaxed)});
  }
  return c;
}

uint64_t FaultInjector::injected() const {
  uint64_t n = 0;
  for (const auto& a : rules_) n += a->injected.load(std::memory_order_relaxed);
  return n;
}

}  // namespace feedrate
