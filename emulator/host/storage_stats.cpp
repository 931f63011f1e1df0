// Mount lookup, block-device and NFS read counters.
#include "emulator/host/storage_stats.h"

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace feedrate {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n')) line.pop_back();
  return line;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct = s.substr(i + 1, 3);
      if (oct.find_first_not_of("01234567") == std::string::npos) {
        out.push_back(static_cast<char>(std::strtol(oct.c_str(), nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

bool Contains(const std::string& mount_point, const std::string& path) {
  if (mount_point == "/") return !path.empty() && path[0] == '/';
  return path == mount_point || (path.size() > mount_point.size() && path.compare(0, mount_point.size(), mount_point) == 0 &&
                                 path[mount_point.size()] == '/');
}

}  // namespace

std::optional<MountFacts> FindMount(const std::string& path, const std::string& mountinfo) {
  std::optional<MountFacts> best;
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> t;
    for (std::string w; f >> w;) t.push_back(w);
    // id parent major:minor root mount_point options [optional...] - fstype source super_options
    size_t dash = 6;
    while (dash < t.size() && t[dash] != "-") ++dash;
    if (dash + 2 >= t.size()) continue;  // malformed line
    MountFacts m;
    m.mount_point = Unescape(t[4]);
    if (!Contains(m.mount_point, path)) continue;
    if (best && m.mount_point.size() < best->mount_point.size()) continue;
    const auto colon = t[2].find(':');
    if (colon == std::string::npos) continue;
    m.major = static_cast<unsigned>(std::strtoul(t[2].substr(0, colon).c_str(), nullptr, 10));
    m.minor = static_cast<unsigned>(std::strtoul(t[2].substr(colon + 1).c_str(), nullptr, 10));
    m.fs_type = t[dash + 1];
    m.source = Unescape(t[dash + 2]);
    m.options = t[5];
    m.super_options = dash + 3 < t.size() ? t[dash + 3] : "";
    best = m;
  }
  return best;
}

std::optional<MountFacts> MountOf(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return std::nullopt;
  return FindMount(resolved, Slurp("/proc/self/mountinfo"));
}

std::optional<ReadCounters> ParseDiskStats(const std::string& diskstats, unsigned major, unsigned minor) {
  std::istringstream in(diskstats);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    unsigned ma = 0, mi = 0;
    std::string name;
    uint64_t reads = 0, merged = 0, sectors = 0;
    if (!(f >> ma >> mi >> name >> reads >> merged >> sectors)) continue;
    if (ma == major && mi == minor) return ReadCounters{sectors * 512, reads};
  }
  return std::nullopt;
}

uint64_t ParseNetDevRxBytes(const std::string& net_dev) {
  // "Inter-|   Receive ..." / " face |bytes packets ..." then "  eth0: 1234 5 0 ..." per interface.
  std::istringstream in(net_dev);
  std::string line;
  uint64_t total = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || line.find('|') != std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    std::istringstream f(line.substr(colon + 1));
    uint64_t rx = 0;
    if (f >> rx) total += rx;
  }
  return total;
}

uint64_t NetworkRxBytes() { return ParseNetDevRxBytes(Slurp("/proc/net/dev")); }

std::optional<ReadCounters> ParseNfsMountStats(const std::string& mountstats, const std::string& mount_point) {
  std::istringstream in(mountstats);
  std::string line;
  bool inside = false;
  std::optional<ReadCounters> out;
  while (std::getline(in, line)) {
    if (line.rfind("device ", 0) == 0) {
      // "device SERVER:/EXPORT mounted on MOUNT_POINT with fstype nfs4 statvers=1.1"
      const auto on = line.find(" mounted on ");
      const auto with = line.rfind(" with fstype ");
      inside = false;
      if (on == std::string::npos || with == std::string::npos || with < on) continue;
      const std::string mp = Unescape(line.substr(on + 12, with - on - 12));
      const std::string type = line.substr(with + 13);
      inside = mp == mount_point && type.rfind("nfs", 0) == 0;
      if (inside) out = ReadCounters{};
      continue;
    }
    if (!inside) continue;
    std::istringstream f(line);
    std::string key;
    f >> key;
    if (key == "bytes:") {
      // normalreadbytes normalwritebytes directreadbytes directwritebytes serverreadbytes ...
      uint64_t v[5] = {};
      for (auto& x : v) f >> x;
      if (f) out->bytes = v[4];
    } else if (key == "READ:") {
      uint64_t ops = 0;
      if (f >> ops) out->requests = ops;
    }
  }
  return out;
}

StorageCounter StorageCounter::For(const std::string& data_dir) {
  StorageCounter c;
  c.mount_ = MountOf(data_dir);
  if (!c.mount_) {
    c.device_ = "the mount of " + data_dir + " was not found in /proc/self/mountinfo";
    return c;
  }
  const MountFacts& m = *c.mount_;
  if (m.fs_type.rfind("nfs", 0) == 0) {
    if (ParseNfsMountStats(Slurp("/proc/self/mountstats"), m.mount_point)) {
      c.kind_ = "nfs";
      c.device_ = m.source;
    } else {
      c.device_ = "no NFS statistics for " + m.mount_point + " in /proc/self/mountstats";
    }
    return c;
  }
  const std::string dev = std::to_string(m.major) + ":" + std::to_string(m.minor);
  if (m.major != 0 && ParseDiskStats(Slurp("/proc/diskstats"), m.major, m.minor)) {
    c.kind_ = "block";
    char link[PATH_MAX];
    const std::string sys = "/sys/dev/block/" + dev;
    c.device_ = ::realpath(sys.c_str(), link) != nullptr ? std::string(link).substr(std::string(link).rfind('/') + 1) : dev;
    // A partition's model is its disk's: the partition's sysfs directory sits inside the disk's.
    c.model_ = FirstLine(sys + "/device/model");
    if (c.model_.empty()) c.model_ = FirstLine(sys + "/../device/model");
    if (c.model_.empty()) c.model_ = FirstLine(sys + "/dm/name");
    return c;
  }
  c.device_ = m.fs_type == "tmpfs" || m.fs_type == "ramfs"
                  ? m.fs_type + " keeps its files in memory: there is no device behind it"
                  : m.fs_type + " (" + m.source + ", device " + dev + ") has no block-device or NFS counters";
  return c;
}

std::optional<ReadCounters> StorageCounter::Read() const {
  if (!mount_) return std::nullopt;
  if (kind_ == "block") return ParseDiskStats(Slurp("/proc/diskstats"), mount_->major, mount_->minor);
  if (kind_ == "nfs") return ParseNfsMountStats(Slurp("/proc/self/mountstats"), mount_->mount_point);
  return std::nullopt;
}

}  // namespace feedrate
