// Where the data dir lives and what its storage really delivered: the mount (mountinfo), the block device and
// its model (sysfs), and the kernel's read counters for it (/proc/diskstats for a block device,
// /proc/self/mountstats for NFS), so loader bytes can be set against device bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace feedrate {

struct MountFacts {
  std::string mount_point;
  std::string fs_type;   // as mountinfo names it: ext4, xfs, tmpfs, nfs4, fuse.sshfs, ...
  std::string source;    // /dev/vda1, server:/export, tmpfs, ...
  std::string options;        // per-mount options (rw, noatime, ...)
  std::string super_options;  // the file system's own (super-block) options
  unsigned major = 0, minor = 0;  // the st_dev the mount reports (0:N for devices without a block device)
};
// The mount holding `path` (already resolved, absolute) in `mountinfo` text (/proc/self/mountinfo's format):
// the longest mount point that contains the path, the last one listed when mounts are stacked.
std::optional<MountFacts> FindMount(const std::string& path, const std::string& mountinfo);
// Reads /proc/self/mountinfo for `path` (resolved with realpath).
std::optional<MountFacts> MountOf(const std::string& path);

struct ReadCounters {
  uint64_t bytes = 0;
  uint64_t requests = 0;
};
// The line for major:minor in /proc/diskstats text: reads completed and sectors read x 512.
std::optional<ReadCounters> ParseDiskStats(const std::string& diskstats, unsigned major, unsigned minor);
// The NFS mount at `mount_point` in /proc/self/mountstats text: serverreadbytes (bytes that came from the server)
// and the READ operations sent.
std::optional<ReadCounters> ParseNfsMountStats(const std::string& mountstats, const std::string& mount_point);

// Bytes received by every interface but loopback in /proc/net/dev text (this network namespace's view): what
// came over the network, to tell network storage's link from its server.
uint64_t ParseNetDevRxBytes(const std::string& net_dev);
// /proc/net/dev now (0 when unreadable).
uint64_t NetworkRxBytes();

// The counter behind one data dir, chosen once; Read() samples it (host-wide: one rank per host reads it).
class StorageCounter {
 public:
  static StorageCounter For(const std::string& data_dir);
  std::string kind() const { return kind_; }      // "block", "nfs" or "none"
  std::string device() const { return device_; }  // "vda", "server:/export"; for "none", why there is no counter
  std::string model() const { return model_; }    // the block device's model where sysfs shows one, else ""
  const std::optional<MountFacts>& mount() const { return mount_; }
  std::optional<ReadCounters> Read() const;

 private:
  std::string kind_ = "none";
  std::string device_;
  std::string model_;
  std::optional<MountFacts> mount_;
};

}  // namespace feedrate
