// ShareListing: rank 0's listing in chunks, each rank keeping its own files' entries (run_listing.h).
#include "emulator/run/run_listing.h"

#include <cstring>
#include <vector>

namespace feedrate {
namespace {

// Paths go in broadcasts of about this many bytes ('\0'-ended), sizes in chunks of as many bytes (8 per entry):
// a rank holds a chunk at a time beside what it keeps.
constexpr size_t kListingChunk = 4 << 20;

// The kept entries of a listing seen in order, from rank 0's source or from its chunks.
class Keeper {
 public:
  Keeper(size_t count, std::span<const char> keep) : keep_(keep) { list_.Reserve(count, 0); }
  bool kept(size_t i) const { return i < keep_.size() && keep_[i]; }
  void Next(std::string_view path) {
    const size_t i = list_.size();
    if (!error_.ok()) return;
    error_ = kept(i) ? list_.Add(path) : (list_.AddAbsent(), Status::Ok());
  }
  void Fail(Status st) {
    if (error_.ok()) error_ = std::move(st);
  }
  Result<PathList> Finish(size_t count) {
    if (!error_.ok()) return error_;
    if (count != keep_.size()) {  // listings are trimmed to the workload's count, and fewer files refused
      return Status::IoError("the listing has " + std::to_string(count) + " files, the samplers " +
                             std::to_string(keep_.size()));
    }
    return std::move(list_);
  }

 private:
  std::span<const char> keep_;
  PathList list_;
  Status error_;
};

// Rank 0: the head (count and whether sizes follow, or the error), the paths chunk by chunk, then the sizes.
void Send(const Comm& comm, const Result<ListingSource>& src) {
  (void)comm.Broadcast(src.ok() ? (src->size ? "S" : "O") + std::to_string(src->count) : "E" + src.status().message(), 0);
  if (!src.ok()) return;
  std::string chunk;
  for (size_t sent = 0; sent < src->count;) {
    chunk.clear();
    for (; sent < src->count && chunk.size() < kListingChunk; ++sent) {
      src->append_path(sent, &chunk);
      chunk.push_back('\0');
    }
    (void)comm.Broadcast(chunk, 0);
  }
  for (size_t sent = 0; src->size && sent < src->count;) {
    chunk.clear();
    for (; sent < src->count && chunk.size() < kListingChunk; ++sent) {
      const uint64_t v = src->size(sent);
      chunk.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    (void)comm.Broadcast(chunk, 0);
  }
}

// The other ranks: the same broadcasts in the same order, every chunk received whatever goes wrong.
Result<PathList> Receive(const Comm& comm, std::span<const char> keep, const std::function<void(size_t, uint64_t)>& on_size) {
  const std::string head = comm.Broadcast("", 0);
  if (head.empty() || (head[0] != 'O' && head[0] != 'S')) {
    return Status::NotFound(head.empty() ? "rank 0 sent no listing" : head.substr(1));
  }
  const size_t count = std::stoull(head.substr(1));
  Keeper k(count, keep);
  for (size_t seen = 0; seen < count;) {
    const std::string chunk = comm.Broadcast("", 0);
    if (chunk.empty()) break;  // (rank 0 sends no empty chunk: a count it did not keep)
    for (size_t at = 0; at < chunk.size(); ++seen) {
      size_t end = chunk.find('\0', at);
      if (end == std::string::npos) {
        k.Fail(Status::IoError("rank 0's listing arrived cut (a path without its end)"));
        end = chunk.size();
      }
      k.Next(std::string_view(chunk).substr(at, end - at));
      at = end + 1;
    }
  }
  for (size_t seen = 0; head[0] == 'S' && seen < count;) {
    const std::string chunk = comm.Broadcast("", 0);
    if (chunk.empty()) break;
    for (size_t at = 0; at + sizeof(uint64_t) <= chunk.size(); at += sizeof(uint64_t), ++seen) {
      uint64_t v = 0;
      std::memcpy(&v, chunk.data() + at, sizeof v);
      if (k.kept(seen) && on_size) on_size(seen, v);
    }
  }
  return k.Finish(count);
}

}  // namespace

Result<PathList> ShareListing(const Comm& comm, const Result<ListingSource>* root, std::span<const char> keep,
                              const std::function<void(size_t, uint64_t)>& on_size) {
  if (root == nullptr) return Receive(comm, keep, on_size);
  if (comm.size() > 1) Send(comm, *root);
  if (!root->ok()) return root->status();
  const ListingSource& src = **root;
  Keeper k(src.count, keep);
  std::string path;
  for (size_t i = 0; i < src.count; ++i) {
    path.clear();
    if (k.kept(i)) src.append_path(i, &path);
    k.Next(path);  // ("" for the others: absent)
    if (k.kept(i) && src.size && on_size) on_size(i, src.size(i));
  }
  return k.Finish(src.count);
}

}  // namespace feedrate
