// S3Engine: samples split into ranged GETs, served by curl multi loops.
#include "loader/s3/s3_engine.h"

#include <algorithm>
#include <cerrno>
#include <functional>
#include <optional>

#include "loader/io/request_ring.h"

namespace feedrate {

namespace {

struct Op;  // a sample being read

// One GET: a request slot with the sample it belongs to and where its bytes go.
struct Part : S3Request {
  Op* op = nullptr;
  uint64_t at = 0;      // offset of this part within the sample's extent
  char* buffer = nullptr;  // the recycled transfer buffer this slot owns
};

constexpr uint32_t kNoLane = UINT32_MAX;
constexpr size_t kLaneParts = 16;  // part GETs of one lane's object in flight at once (the CRT's connections allow more)

struct Op {
  ReadRequest req;
  uint64_t issued = 0;   // bytes of the extent (with lanes: of the object) handed to parts so far
  uint64_t end = 0;      // what `issued` reaches when every part is out: the extent's length, or the object's size
  uint32_t pending = 0;  // parts in flight
  uint32_t lane = kNoLane;  // with lanes: the loop's lane reading it
  int64_t t0 = 0;
  Status status;
};

// One DataLoader worker (DLIO's pattern): its queued samples (a ring), how many it is reading (at most its window),
// and whether it is in the loop's ready ring.
struct S3Lane {
  RequestRing queue;
  uint32_t active = 0;
  bool ready = false;
};

}  // namespace

struct S3Engine::Loop {
  std::unique_ptr<S3Client> client;
  std::thread thread;
  std::vector<Part> parts;
  std::vector<Part*> free_parts;
  std::vector<Part*> redo;  // parts whose remainder is fetched again (injected short read or EAGAIN)
  std::vector<Op> ops;
  std::vector<Op*> free_ops;
  Op* current = nullptr;  // the sample whose extent is still being split into parts
  std::vector<AlignedBuffer> buffers;
  // Lanes (S3LaneOptions): this loop's lanes (global lane = local x loops + this loop's number), the requests sent
  // to them, the lanes with a sample to start (a ring; each lane at most once), and the one buffer every whole-object
  // GET's bytes land in (DLIO's reader keeps none of them past the sample).
  std::unique_ptr<MpmcQueue<ReadRequest>> inbox;
  std::vector<S3Lane> lanes;
  uint32_t window = 1;  // S3LaneOptions::window
  std::vector<uint32_t> ready;
  uint64_t ready_head = 0, ready_count = 0;
  AlignedBuffer scratch;
  std::vector<Op*> parting;  // lane samples whose first part answered, with parts still to send
  // reader.preprocess_time (S3LaneOptions::preprocess): its draws, and the lane samples whose object is in, waiting
  // out theirs before they complete (at most one per lane; reserved at set-up).
  struct Waiting {
    int64_t until_ns;
    Op* op;
  };
  std::optional<TimeDraw> preprocess;
  std::vector<Waiting> waiting;
  std::function<int64_t()> due_ms;  // Serve's: ms until the first wait ends (-1: none)

  // Serve's two callbacks and their parts, on this loop's thread (`e` is the engine, `index` this loop's number).
  S3Request* Next(S3Engine& e, size_t index);    // the next GET to start, or nullptr
  void Done(S3Engine& e, size_t index, S3Request& r);  // a GET ended
  S3Request* Issue(S3Engine& e, Part* p, Op* op, uint64_t at, uint64_t len);
  S3Request* TakeRedo(S3Engine& e);
  // Lanes: a request to its lane's ring (failed at once past lane_capacity); the next idle lane's sample as one GET
  // of its whole object; a lane whose sample ended takes its next.
  void Enqueue(const ReadRequest& r, size_t loops);
  S3Request* NextLane(S3Engine& e, size_t index);
  S3Request* NextPart(S3Engine& e);
  S3Request* LaneGet(S3Engine& e, Op* op, uint64_t at, uint64_t len);
  void Ready(uint32_t lane);
  void LaneIdle(uint32_t lane);  // one of the lane's samples ended
  Status Truncated(S3Engine& e, const Op* op, uint64_t size) const;  // the listing's object ends before the extent
  void Finish(S3Engine& e, size_t index, Op* op, const char* data);
  // A lane sample whose GETs all ended: its preprocess wait starts, or it completes and its lane takes its next.
  void LaneDone(S3Engine& e, size_t index, Op* op);
  void EndWaits(S3Engine& e, size_t index);  // the waits that are over: their samples complete
  // An injected short read or EAGAIN: the part's rest is fetched again (true), as a file engine reads the remainder.
  bool Refetch(S3Engine& e, Part* p, int64_t n);
  // What a GET that arrived says of its sample: the bytes counted, faults applied, a read error or a truncation.
  void Account(S3Engine& e, Part* p, S3Request& r, Op* op, bool* refetched);
};

Result<std::unique_ptr<S3Engine>> S3Engine::Create(const FileTable& keys, const EngineOptions& options, const S3Store& store,
                                                   const S3LaneOptions& lanes) {
  std::unique_ptr<S3Engine> e(new S3Engine(keys, options, store, lanes));
  const size_t loops = std::max<size_t>(1, e->options_.threads);
  for (size_t i = 0; i < loops; ++i) {
    auto loop = std::make_unique<Loop>();
    // With lanes every lane of the loop may have its GETs in flight (each on its own connection: its parts, or its
    // window's whole objects), and no part needs a buffer.
    const size_t local_lanes = lanes.lanes > i ? (lanes.lanes - i + loops - 1) / loops : 0;
    const size_t per_lane = lanes.window > 1 ? lanes.window : lanes.object_sizes.empty() ? 1 : kLaneParts;
    const size_t depth = lanes.lanes > 0 ? std::max<size_t>(1, local_lanes) * per_lane
                                         : std::max<size_t>(1, e->options_.queue_depth);
    FEEDRATE_ASSIGN_OR_RETURN(auto client, store.Connect(static_cast<unsigned>(depth)));
    loop->client = std::move(client);
    loop->parts.resize(depth);
    loop->buffers.reserve(depth);
    for (auto& p : loop->parts) {
      if (lanes.lanes == 0) {
        loop->buffers.emplace_back(e->options_.transfer_size);
        p.buffer = loop->buffers.back().data();
      }
      p.key.reserve(256);
      loop->free_parts.push_back(&p);
    }
    loop->redo.reserve(depth);
    loop->ops.resize(depth + 1);
    loop->parting.reserve(depth + 1);
    for (auto& o : loop->ops) loop->free_ops.push_back(&o);
    if (lanes.lanes > 0) {
      loop->inbox = std::make_unique<MpmcQueue<ReadRequest>>(e->options_.queue_capacity);
      loop->lanes.resize(local_lanes);
      loop->window = std::max<uint32_t>(1, lanes.window);
      for (auto& l : loop->lanes) l.queue = RequestRing(lanes.lane_capacity);
      loop->ready.resize(std::max<size_t>(1, local_lanes));
      loop->scratch = AlignedBuffer(e->options_.transfer_size);
      if (TimeDraw draw(lanes.preprocess, 0x5eed5ULL + i); !draw.zero()) {
        loop->preprocess.emplace(draw);
        loop->waiting.reserve(local_lanes);
        Loop* raw = loop.get();
        loop->due_ms = [raw] {
          if (raw->waiting.empty()) return int64_t{-1};
          int64_t first = raw->waiting.front().until_ns;
          for (const Loop::Waiting& w : raw->waiting) first = std::min(first, w.until_ns);
          return std::max<int64_t>(0, (first - NowNs() + 999999) / 1000000);
        };
      }
    }
    e->loops_.push_back(std::move(loop));
  }
  for (size_t i = 0; i < e->loops_.size(); ++i) {
    Loop* l = e->loops_[i].get();
    l->thread = std::thread([raw = e.get(), l, i] {
      ApplyIoThreadPolicy(raw->options_.thread_policy);  // as the file engines' threads (--io-thread-policy)
      raw->Serve(*l, i);
    });
  }
  return e;
}

S3Engine::S3Engine(const FileTable& keys, const EngineOptions& options, const S3Store& store, const S3LaneOptions& lanes)
    : keys_(keys), options_(options), store_(store), lanes_(lanes), queue_(lanes.lanes > 0 ? 1 : options.queue_capacity) {
  options_.transfer_size = std::max<uint64_t>(options_.transfer_size, 4096);
}

S3Engine::~S3Engine() {
  stopping_.store(true, std::memory_order_seq_cst);
  for (auto& l : loops_) {
    if (l->client) l->client->Wakeup(true);
  }
  for (auto& l : loops_) {
    if (l->thread.joinable()) l->thread.join();
  }
}

uint64_t S3Engine::buffer_bytes() const {
  if (lanes_.lanes > 0) return static_cast<uint64_t>(loops_.size()) * options_.transfer_size;
  return static_cast<uint64_t>(loops_.size()) * std::max<size_t>(1, options_.queue_depth) * options_.transfer_size;
}

std::string S3Engine::description() const {
  if (lanes_.lanes > 0) {
    return "s3 (" + std::to_string(loops_.size()) + " curl multi loop" + (loops_.size() == 1 ? "" : "s") + ", " +
           std::to_string(lanes_.lanes) + " lanes: each DataLoader worker " +
           (lanes_.window > 1 ? "up to " + std::to_string(lanes_.window) + " whole-object GETs at once, as newer DLIO's iterable S3 readers)"
                              : std::string("one GET of a whole object at a time, as DLIO's S3 readers)"));
  }
  return "s3 (" + std::to_string(loops_.size()) + " curl multi loop" + (loops_.size() == 1 ? "" : "s") + " x " +
         std::to_string(std::max<size_t>(1, options_.queue_depth)) + " ranged GETs in flight, " +
         std::to_string(options_.transfer_size) + "-byte ranges)";
}

void S3Engine::Submit(std::span<const ReadRequest> requests) {
  for (const ReadRequest& r : requests) {
    if (lanes_.lanes > 0) {  // to the loop that owns the lane, so that one thread orders each lane's samples
      MpmcQueue<ReadRequest>& inbox = *loops_[r.lane % loops_.size()]->inbox;
      while (!inbox.TryPush(r)) std::this_thread::yield();
      continue;
    }
    while (!queue_.TryPush(r)) std::this_thread::yield();  // only if a caller overfills the queue
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (auto& l : loops_) l->client->Wakeup();  // (each a flag load unless that loop sleeps)
}

void S3Engine::Sent() {
  requests_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t now = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
  uint64_t seen = max_in_flight_.load(std::memory_order_relaxed);
  while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

void S3Engine::Serve(Loop& loop, size_t index) {
  loop.client->Serve([&] { return lanes_.lanes > 0 ? loop.NextLane(*this, index) : loop.Next(*this, index); },
                     [&](S3Request& r) { loop.Done(*this, index, r); }, stopping_, loop.due_ms ? &loop.due_ms : nullptr);
}

S3Request* S3Engine::Loop::Issue(S3Engine& e, Part* p, Op* op, uint64_t at, uint64_t len) {
  p->op = op;
  p->at = at;
  p->method = S3Request::Method::kGet;
  p->key = e.keys_.path(op->req.extent.file);  // (reuses the slot's capacity)
  p->range_begin = op->req.extent.offset + at;
  p->range_length = len;
  p->dest = op->req.dest != nullptr ? op->req.dest + at : p->buffer;
  p->dest_capacity = len;
  p->dest_wraps = false;
  ++op->pending;
  e.Sent();
  return static_cast<S3Request*>(p);
}

void S3Engine::Loop::Finish(S3Engine& e, size_t index, Op* op, const char* data) {
  const bool ok = op->status.ok();
  if (ok && e.options_.stats != nullptr) e.options_.stats->Record(index, op->req.extent.length, NowNs() - op->t0);
  op->req.target->OnComplete(op->req.tag, ok ? op->req.extent.length : 0, op->status, ok ? data : nullptr);
  op->status = Status::Ok();
  free_ops.push_back(op);
}

S3Request* S3Engine::Loop::TakeRedo(S3Engine& e) {
  if (redo.empty()) return nullptr;
  Part* p = redo.back();  // the rest of a part cut short by an injected fault
  redo.pop_back();
  ++p->op->pending;
  e.Sent();
  return p;  // (its range and destination were already moved past what arrived)
}

void S3Engine::Loop::Ready(uint32_t lane) {
  if (lanes[lane].ready) return;  // (the ring holds each lane once: its size is the lanes')
  lanes[lane].ready = true;
  ready[(ready_head + ready_count) % ready.size()] = lane;
  ++ready_count;
}

void S3Engine::Loop::Enqueue(const ReadRequest& r, size_t loops) {
  S3Lane& l = lanes[r.lane / loops];
  if (!l.queue.Push(r)) {  // more than the prefetchers keep in flight (S3LaneOptions::lane_capacity)
    r.target->OnComplete(r.tag, 0, LaneFull("S3Engine", r.lane), nullptr);
    return;
  }
  if (l.active < window) Ready(static_cast<uint32_t>(r.lane / loops));
}

void S3Engine::Loop::LaneIdle(uint32_t lane) {
  S3Lane& l = lanes[lane];
  --l.active;
  if (!l.queue.empty() && l.active < window) Ready(lane);
}

Status S3Engine::Loop::Truncated(S3Engine& e, const Op* op, uint64_t size) const {
  return Status::Corruption(e.store_.Url(e.keys_.path(op->req.extent.file)) + ": object is truncated: sample extent ends at offset " +
                            std::to_string(op->req.extent.offset + op->req.extent.length) + " but the listing gave " +
                            std::to_string(size) + " bytes");
}

// One GET of a lane's sample: [at, at + len) of its object, or with len 0 the whole object (no Range header); the
// bytes land in the loop's wrapping scratch buffer.
S3Request* S3Engine::Loop::LaneGet(S3Engine& e, Op* op, uint64_t at, uint64_t len) {
  Part* p = free_parts.back();
  free_parts.pop_back();
  p->op = op;
  p->at = at;
  p->method = S3Request::Method::kGet;
  p->key = e.keys_.path(op->req.extent.file);
  p->range_begin = at;
  p->range_length = len;
  p->dest = scratch.data();
  p->dest_capacity = scratch.size();
  p->dest_wraps = true;
  ++op->pending;
  e.Sent();
  return p;
}

// The next part of an object whose first part answered: the CRT sends the rest at once, here at most kLaneParts of
// one object in flight, so one large object cannot hold every slot other workers' samples need.
S3Request* S3Engine::Loop::NextPart(S3Engine& e) {
  std::erase_if(parting, [](const Op* op) { return op->issued >= op->end; });  // every part sent, or failed
  if (free_parts.empty()) return nullptr;
  for (Op* op : parting) {
    if (op->pending >= kLaneParts) continue;
    const uint64_t len = std::min(e.lanes_.part_size, op->end - op->issued);
    S3Request* r = LaneGet(e, op, op->issued, len);
    op->issued += len;
    return r;
  }
  return nullptr;
}

void S3Engine::Loop::LaneDone(S3Engine& e, size_t index, Op* op) {
  const uint32_t lane = op->lane;
  op->lane = kNoLane;
  if (preprocess && op->status.ok()) {
    if (const int64_t ns = static_cast<int64_t>(preprocess->Next() * 1e9); ns > 0) {
      if (e.options_.stats != nullptr) op->t0 += ns;  // the wait is not the GETs' latency (Finish records it)
      op->lane = lane;
      waiting.push_back({NowNs() + ns, op});
      return;
    }
  }
  Finish(e, index, op, nullptr);
  LaneIdle(lane);
}

void S3Engine::Loop::EndWaits(S3Engine& e, size_t index) {
  const int64_t now = NowNs();
  for (size_t i = 0; i < waiting.size();) {
    if (waiting[i].until_ns > now) {
      ++i;
      continue;
    }
    Op* op = waiting[i].op;
    waiting[i] = waiting.back();
    waiting.pop_back();
    const uint32_t lane = op->lane;
    op->lane = kNoLane;
    Finish(e, index, op, nullptr);
    LaneIdle(lane);
  }
}

S3Request* S3Engine::Loop::NextLane(S3Engine& e, size_t index) {
  if (!waiting.empty()) EndWaits(e, index);
  if (S3Request* r = TakeRedo(e)) return r;
  if (S3Request* r = NextPart(e)) return r;
  ReadRequest in;
  while (inbox->TryPop(&in)) Enqueue(in, e.loops_.size());
  while (ready_count > 0 && !free_parts.empty() && !free_ops.empty()) {
    const uint32_t li = ready[ready_head];
    ready_head = (ready_head + 1) % ready.size();
    --ready_count;
    S3Lane& l = lanes[li];
    l.ready = false;
    Op* op = free_ops.back();
    free_ops.pop_back();
    op->req = l.queue.Pop();
    ++l.active;
    if (!l.queue.empty() && l.active < window) Ready(li);  // its window has room for another sample
    op->lane = li;
    op->pending = 0;
    op->t0 = e.options_.stats != nullptr ? NowNs() : 0;
    const std::vector<uint64_t>& sizes = e.lanes_.object_sizes;
    const uint64_t size = op->req.extent.file < sizes.size() ? sizes[op->req.extent.file] : 0;
    if (op->req.extent.length == 0) {  // nothing to read: done, and the lane takes its next
      op->issued = op->end = 0;
      Finish(e, index, op, nullptr);
      LaneIdle(li);
      continue;
    }
    if (size == 0 || window > 1) {  // storage.get_data(key), or a window's GET: the whole object, no Range header
      if (size != 0 && size < op->req.extent.offset + op->req.extent.length) {
        op->status = Truncated(e, op, size);
        op->issued = op->end = 0;
        Finish(e, index, op, nullptr);
        LaneIdle(li);
        continue;
      }
      op->issued = op->end = op->req.extent.length;
      return LaneGet(e, op, 0, 0);
    }
    if (size < op->req.extent.offset + op->req.extent.length) {
      op->status = Truncated(e, op, size);
      op->issued = op->end = 0;
      Finish(e, index, op, nullptr);
      LaneIdle(li);
      continue;
    }
    op->end = size;  // the CRT's first part: its answer says how many more there are
    op->issued = std::min(size, e.lanes_.part_size);
    return LaneGet(e, op, 0, op->issued);
  }
  return nullptr;
}

S3Request* S3Engine::Loop::Next(S3Engine& e, size_t index) {
  if (S3Request* r = TakeRedo(e)) return r;
  if (free_parts.empty()) return nullptr;
  while (current == nullptr) {
    ReadRequest r;
    if (free_ops.empty() || !e.queue_.TryPop(&r)) return nullptr;
    Op* op = free_ops.back();
    free_ops.pop_back();
    op->req = r;
    op->issued = 0;
    op->end = r.extent.length;
    op->pending = 0;
    op->t0 = e.options_.stats != nullptr ? NowNs() : 0;
    if (r.extent.length == 0) {
      Finish(e, index, op, r.dest);
      continue;
    }
    current = op;
  }
  Op* op = current;
  const uint64_t len = std::min<uint64_t>(e.options_.transfer_size, op->req.extent.length - op->issued);
  Part* p = free_parts.back();
  free_parts.pop_back();
  S3Request* r = Issue(e, p, op, op->issued, len);
  op->issued += len;
  if (op->issued == op->req.extent.length) current = nullptr;
  return r;
}

bool S3Engine::Loop::Refetch(S3Engine& e, Part* p, int64_t n) {
  if (n == -EAGAIN) {
    e.requeued_.fetch_add(1, std::memory_order_relaxed);
    redo.push_back(p);
    return true;
  }
  if (n > 0 && static_cast<uint64_t>(n) < p->range_length && p->bytes == p->range_length) {  // injected short read
    e.requeued_.fetch_add(1, std::memory_order_relaxed);
    p->range_begin += static_cast<uint64_t>(n);
    p->range_length -= static_cast<uint64_t>(n);
    p->dest += n;
    p->dest_capacity = p->range_length;
    redo.push_back(p);
    return true;
  }
  return false;
}

void S3Engine::Loop::Account(S3Engine& e, Part* p, S3Request& r, Op* op, bool* refetched) {
  if (!r.status.ok()) {
    if (op->status.ok()) op->status = r.status;
    return;
  }
  e.device_bytes_.fetch_add(r.bytes, std::memory_order_relaxed);
  int64_t n = static_cast<int64_t>(r.bytes);
  const uint64_t asked = r.range_length != 0 ? r.range_length : r.bytes;  // (a whole-object GET asks for what came)
  if (e.options_.faults != nullptr) n = e.options_.faults->OnRead(op->req.extent.file, r.range_begin, asked, n);
  if (Refetch(e, p, n)) {
    *refetched = true;
    return;
  }
  if (n < 0 && op->status.ok()) {
    op->status = Status::Errno(e.store_.Url(r.key) + ": read failed at offset " + std::to_string(r.range_begin),
                               static_cast<int>(-n));
  } else if (r.range_length == 0 && r.bytes < op->req.extent.offset + op->req.extent.length && op->status.ok()) {
    op->status = Status::Corruption(e.store_.Url(r.key) + ": object is truncated: sample extent ends at offset " +
                                    std::to_string(op->req.extent.offset + op->req.extent.length) + " but the object has " +
                                    std::to_string(r.bytes) + " bytes");
  } else if (r.bytes < r.range_length && op->status.ok()) {
    op->status = Status::Corruption(e.store_.Url(r.key) + ": object is truncated: sample extent ends at offset " +
                                    std::to_string(op->req.extent.offset + op->req.extent.length) +
                                    " but data ends at offset " + std::to_string(r.range_begin + r.bytes));
  }
}

void S3Engine::Loop::Done(S3Engine& e, size_t index, S3Request& r) {
  Part* p = static_cast<Part*>(&r);
  Op* op = p->op;
  --op->pending;
  e.in_flight_.fetch_sub(1, std::memory_order_relaxed);
  if (p->attempts > 1) {
    e.retries_.fetch_add(static_cast<uint64_t>(p->attempts - 1), std::memory_order_relaxed);
    e.requests_.fetch_add(static_cast<uint64_t>(p->attempts - 1), std::memory_order_relaxed);
  }
  bool refetched = false;
  Account(e, p, r, op, &refetched);
  if (refetched) return;
  if (!op->status.ok() && current == op) {  // stop splitting a sample that already failed
    op->issued = op->end;
    current = nullptr;
  }
  if (op->lane != kNoLane) {
    if (!op->status.ok()) {  // no more parts of a failed sample (nor, once it is freed, of whatever reuses its slot)
      op->issued = op->end;
      std::erase(parting, op);
    }
    if (p->at == 0 && op->issued < op->end) parting.push_back(op);  // the first part answered: the rest go now
  }
  // The sample is whole in one buffer when it had a destination, or when this single part covered it.
  const bool single = p->at == 0 && r.range_length == op->req.extent.length;
  const char* data = op->lane != kNoLane ? nullptr : op->req.dest != nullptr ? op->req.dest : (single ? p->buffer : nullptr);
  if (op->pending == 0 && op->issued == op->end) {
    if (op->lane != kNoLane) {
      LaneDone(e, index, op);
    } else {
      Finish(e, index, op, data);
    }
  }
  free_parts.push_back(p);
}

}  // namespace feedrate
