// DlioEngine's lanes: one DataLoader worker's sample as its reader's calls (openat, statx, the planned reads, a
// preprocess wait, close), each prepared when the one before completes; TensorFlow's streams ride the same chain.
#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "loader/io/dlio_worker.h"

namespace feedrate {

using namespace dlio_detail;  // NOLINT: the engine's own constants and lane

// A queued request becomes the lane's sample: its open (or, for a table descriptor, its statx).
void DlioEngine::Worker::Start(size_t li) {
  Lane& l = lanes[li];
  l.req = l.queue.Pop();
  l.active = true;
  ++active;
  l.bytes = 0;
  l.preprocess_ns = 0;
  l.error = ring_error;  // Ok unless the ring failed for good: then the sample fails at once
  l.plan.clear();
  l.op = 0;
  l.learn_op = SIZE_MAX;
  if (!ring_error.ok()) {
    l.fd = -1;
    l.own_fd = false;
    return Finish(li);
  }
  if (engine->options_.stats != nullptr) l.start_ns = NowNs();
  if (engine->planner_.StreamsFiles()) return StartStream(li);
  Open(li);
}

// The request's file: the table's descriptor (then statx), or openat.
void DlioEngine::Worker::Open(size_t li) {
  Lane& l = lanes[li];
  const FileTable& files = engine->files_;
  if (int fd = files.open_fd(l.req.extent.file); fd >= 0) {
    l.fd = fd;
    l.own_fd = false;
    return Stat(li);
  }
  l.phase = kOpen;
  l.own_fd = true;
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_openat(sqe, AT_FDCWD, files.path(l.req.extent.file), O_RDONLY | O_CLOEXEC | files.open_flags(), 0);
  io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);  // see kMetadataAsync
  io_uring_sqe_set_data64(sqe, Tag(li));
}

// A streaming reader's request (ReadPlanner::StreamsFiles). The lane's stream goes on where the request is its
// file's in this pass. Else, within a pass, the stream's file is first read through to its end, as TensorFlow's
// interleave reads a file through before its slot takes the next, whatever order tf.data's shuffle buffer hands
// the records on in; a record of the file the lane read through needs no read. Then the new file's stream opens.
void DlioEngine::Worker::StartStream(size_t li) {
  Lane& l = lanes[li];
  const bool same_pass = l.streaming && l.stream_pass == l.req.pass;
  if (same_pass && l.stream_file == l.req.extent.file) return Resume(li);
  if (l.done_pass == l.req.pass && l.done_file == l.req.extent.file) return Finish(li);
  if (same_pass && l.stream_next != kStreamEnded && l.stream_fd >= 0) return ReadThrough(li);
  OpenStream(li);
}

// The stream's file to its end: its remaining fills (the record asked for waits until they are in).
void DlioEngine::Worker::ReadThrough(size_t li) {
  Lane& l = lanes[li];
  TakeStreamFd(l);
  l.switching = true;
  ReadRequest rest = l.req;
  rest.extent = {l.stream_file, l.stx.stx_size, 0};
  engine->planner_.PlanStream(rest, l.stx.stx_size, &l.stream_next, &l.plan);
  StartPlan(li);
}

// The stream's descriptor becomes the lane's call's (owned as the stream owned it).
void DlioEngine::Worker::TakeStreamFd(Lane& l) {
  l.fd = l.stream_fd;
  l.own_fd = l.stream_owned;
  l.stream_fd = -1;
}

// The lane's planned reads, from the first.
void DlioEngine::Worker::StartPlan(size_t li) {
  Lane& l = lanes[li];
  l.op = 0;
  l.pieces_inflight = 0;
  l.piece_used = 0;
  BeginRead(l);
  NextRead(li);
}

// A new stream at offset 0 of the request's file; the lane's last one, if still open, is left (its close goes
// now, no sample waiting on it).
void DlioEngine::Worker::OpenStream(size_t li) {
  Lane& l = lanes[li];
  if (l.stream_fd >= 0 && l.stream_owned) {
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_close(sqe, l.stream_fd);
    io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    io_uring_sqe_set_data64(sqe, Tag(li, kDetachedClose));
  }
  l.stream_fd = -1;
  l.streaming = true;
  l.stream_file = l.req.extent.file;
  l.stream_pass = l.req.pass;
  l.stream_next = 0;
  if (l.stream_state) engine->planner_.StreamReset(l.stream_state.get());
  Open(li);
}

// The lane's stream goes on: no open or statx (the size is the one read at the open); once the stream met the
// end there is no descriptor and nothing more to read.
void DlioEngine::Worker::Resume(size_t li) {
  Lane& l = lanes[li];
  TakeStreamFd(l);
  if (l.req.probe_residency && l.fd >= 0) l.req.target->BeforeRead(l.req, l.fd);
  l.phase = kStat;
  OnStat(li, 0);
}

// fstat after the open, as Python's open() does: the size and block size the reader's calls follow.
void DlioEngine::Worker::Stat(size_t li) {
  Lane& l = lanes[li];
  if (l.req.probe_residency) l.req.target->BeforeRead(l.req, l.fd);
  l.phase = kStat;
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_statx(sqe, l.fd, "", AT_EMPTY_PATH, STATX_SIZE | STATX_BLOCKS, &l.stx);
  io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
  io_uring_sqe_set_data64(sqe, Tag(li));
}

// The planned read `op` begins: its first piece at its offset.
void DlioEngine::Worker::BeginRead(Lane& l) {
  l.piece_next = l.op < l.plan.size() ? l.plan[l.op].offset : 0;
  l.op_got = 0;
  l.op_short = false;
}

// The planned reads, one after another; a read larger than the scratch buffer goes as pieces (kMaxPieces at once).
void DlioEngine::Worker::NextRead(size_t li) {
  Lane& l = lanes[li];
  l.phase = kRead;
  if (l.op >= l.plan.size()) return Work(li);
  const AccessRead& a = l.plan[l.op];
  const uint64_t end = a.offset + a.length;
  while (l.piece_next < end && !l.op_short && l.pieces_inflight < kMaxPieces) {
    const uint64_t len = std::min<uint64_t>(end - l.piece_next, scratch.size());
    uint32_t slot = 0;
    while (l.piece_used & (1u << slot)) ++slot;
    l.piece_used = static_cast<uint8_t>(l.piece_used | (1u << slot));
    l.piece_off[slot] = l.piece_next;
    l.piece_len[slot] = len;
    PrepPiece(li, slot);
    l.pieces_inflight++;
    l.piece_next += len;
  }
}

// The sample's first read, when it starts the file and fits the head buffer, lands there for CheckHead.
bool DlioEngine::Worker::IsHead(const Lane& l) {
  return !l.streaming && l.op == 0 && l.plan[0].offset == 0 && l.plan[0].length <= kHead;
}

// A read that starts at or past the end of the file (numpy's read(1) at the end, PIL's last read) is the reader
// meeting EOF: a synchronous read(2) there still makes the round trip to a FUSE daemon, but FUSE answers an
// asynchronous one (io_uring's) from i_size without asking. It goes as a read of the file's last byte instead,
// which makes the same round trip wherever DLIO's does (and is served from the cache wherever DLIO's is).
void DlioEngine::Worker::PrepPiece(size_t li, uint32_t slot) {
  Lane& l = lanes[li];
  io_uring_sqe* sqe = Sqe();
  char* dst = ReadDst(l, l.piece_off[slot]);
  const uint64_t size = l.stx.stx_size;
  if (l.piece_off[slot] >= size && size > 0) {
    io_uring_prep_read(sqe, l.fd, scratch.data(), 1, size - 1);
    if (engine->dlio_.async_reads) io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    io_uring_sqe_set_data64(sqe, Tag(li, slot | kEofProbe));
    return;
  }
  if (!PrepLearnPiece(l, slot, sqe)) {
    io_uring_prep_read(sqe, l.fd, dst, static_cast<unsigned>(l.piece_len[slot]), l.piece_off[slot]);
  }
  if (engine->dlio_.async_reads) io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
  io_uring_sqe_set_data64(sqe, Tag(li, slot));
}

// The read that brings what the reader must learn (the planner's want) is one read, as the reader's: its bytes in
// the want's window land in the lane's learn buffer, the rest in scratch (a readv of both). False: not that read.
bool DlioEngine::Worker::PrepLearnPiece(Lane& l, uint32_t slot, io_uring_sqe* sqe) {
  const uint64_t off = l.piece_off[slot], len = l.piece_len[slot], end = l.want.offset + l.want.length;
  if (l.op != l.learn_op || off < l.want.offset || off >= end) return false;
  const uint64_t first = std::min(len, end - off);
  l.learn_iov[0] = {l.learn_buf.get() + (off - l.want.offset), first};
  l.learn_iov[1] = {scratch.data(), len - first};
  io_uring_prep_readv(sqe, l.fd, l.learn_iov, len > first ? 2 : 1, off);
  return true;
}

// The planned read, at or after `from`, that starts where the learner's want does (DLIO's reader seeks there and
// reads: np.load's end record, zip directory and member header each come so). None: the reader's bytes would come
// from a buffer filled before, which the lane did not keep; the sample fails saying so.
Status DlioEngine::Worker::FindLearnOp(Lane& l, size_t from, const char* path) {
  l.learn_op = SIZE_MAX;
  if (l.want.length == 0) return Status::Ok();
  for (size_t i = from; i < l.plan.size(); ++i) {
    if (l.plan[i].offset == l.want.offset && l.plan[i].length > 0) {
      l.learn_op = i;
      return Status::Ok();
    }
  }
  return Status::Unsupported(std::string(path) + ": the reader's bytes at offset " + std::to_string(l.want.offset) +
                             " come from no read of its own (its layout is learnt from its reads; --verify indexes "
                             "it at set-up instead)");
}

// The learn read is in: the reader learns from its bytes and plans the rest (the reads made so far unchanged).
Status DlioEngine::Worker::Learn(Lane& l) {
  const uint64_t n = std::min(l.op_got, l.want.length);
  FEEDRATE_RETURN_IF_ERROR(engine->planner_.LearnFeed(l.learn_state.get(), l.req, l.learn_buf.get(), n,
                                                      l.stx.stx_blksize, PathOf(l), &l.plan, &l.want));
  return FindLearnOp(l, l.op + 1, PathOf(l));
}

// Where the bytes of the lane's current read land from file offset `off` on: a read that starts within the sample
// in the lane's sample buffer (with a SampleWork), the sample's first read when it starts the file in the head
// buffer (CheckHead), a checked stream's in its fill buffer, the rest in the I/O thread's scratch buffer.
char* DlioEngine::Worker::ReadDst(const Lane& l, uint64_t off) {
  const AccessRead& a = l.plan[l.op];
  const uint64_t begin = l.req.extent.offset;
  if (l.sample_buf && !l.streaming && a.offset >= begin && a.offset < begin + SampleBytes(l)) {
    return l.sample_buf.get() + (off - begin);
  }
  if (IsHead(l)) return l.head_buf.get() + off;
  if (l.stream_buf) return l.stream_buf.get() + (off - a.offset);
  return scratch.data();
}

// The sample's bytes: its extent's length, a whole file's size.
uint64_t DlioEngine::Worker::SampleBytes(const Lane& l) {
  return l.req.extent.length == kWholeFile ? l.stx.stx_size : l.req.extent.length;
}

// With a SampleWork, the lane's buffer holds the sample and every planned read that starts in it (the last may ask
// past the sample's end, as PIL's 64 KiB reads do): grown when a sample needs more (rounded up to 64 KiB, so a
// dataset's samples cost a few allocations per lane, not one each), never shrunk.
Status DlioEngine::Worker::SizeSampleBuffer(Lane& l) {
  const uint64_t begin = l.req.extent.offset, bytes = SampleBytes(l);
  uint64_t need = bytes;
  for (const AccessRead& a : l.plan) {
    if (a.offset >= begin && a.offset < begin + bytes) need = std::max(need, a.offset + a.length - begin);
  }
  if (need <= l.sample_cap) return Status::Ok();
  if (need > ReadPlanner::kMaxSampleWorkBytes) {
    return Status::InvalidArgument(std::string(PathOf(l)) + ": a sample of " + std::to_string(bytes) +
                                   " bytes is larger than the " + std::to_string(ReadPlanner::kMaxSampleWorkBytes >> 20) +
                                   " MiB a lane holds for its reader's work on it (feedrate.decode)");
  }
  l.sample_cap = (need + 0xffff) & ~uint64_t{0xffff};
  l.sample_buf.reset(new char[l.sample_cap]);
  return Status::Ok();
}

// The sample's reads are in: the reader's work on its bytes (PIL's decode in DLIO's worker), on this thread, before
// the preprocess wait. Its time is the lane's, not I/O (IoStats leaves it out).
void DlioEngine::Worker::Work(size_t li) {
  Lane& l = lanes[li];
  if (work && !l.streaming && l.error.ok()) {
    const int64_t t0 = NowNs();
    l.error = work->Run(l.sample_buf.get(), SampleBytes(l), PathOf(l));
    const int64_t t = NowNs() - t0;
    l.preprocess_ns += t;
    work_ns.fetch_add(static_cast<uint64_t>(t), std::memory_order_relaxed);
  }
  Preprocess(li);
}

// The sample's reads are in: DLIO's worker sleeps reader.preprocess_time (FormatReader.preprocess) before the
// on-demand close, a timeout here. Streams (TensorFlow) and failed samples go on at once.
void DlioEngine::Worker::Preprocess(size_t li) {
  Lane& l = lanes[li];
  if (!preprocess || l.streaming || !l.error.ok()) return Close(li);
  const int64_t wait = static_cast<int64_t>(preprocess->Next() * 1e9);
  if (wait <= 0) return Close(li);
  l.preprocess_ns += wait;
  l.phase = kPreprocess;
  l.preprocess_ts.tv_sec = wait / 1000000000;
  l.preprocess_ts.tv_nsec = wait % 1000000000;
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_timeout(sqe, &l.preprocess_ts, 0, 0);
  io_uring_sqe_set_data64(sqe, Tag(li));
}

void DlioEngine::Worker::Close(size_t li) {
  Lane& l = lanes[li];
  if (l.streaming) {  // a stream keeps its file until its reads meet the end; one that failed ends here
    l.streaming = l.error.ok();
    if (l.streaming && l.stream_next != kStreamEnded) {
      l.stream_fd = l.fd;
      l.stream_owned = l.own_fd;
      return Finish(li);
    }
    if (l.streaming) {
      l.done_file = l.stream_file;
      l.done_pass = l.stream_pass;
    }
  }
  if (!l.own_fd || l.fd < 0) return AfterClose(li);
  l.phase = kClose;
  io_uring_sqe* sqe = Sqe();
  io_uring_prep_close(sqe, l.fd);
  io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
  io_uring_sqe_set_data64(sqe, Tag(li));
}

// A stream read through for the request's file (ReadThrough): that file's stream opens now, unless it failed.
void DlioEngine::Worker::AfterClose(size_t li) {
  Lane& l = lanes[li];
  if (!l.switching) return Finish(li);
  l.switching = false;
  l.fd = -1;
  if (!l.error.ok()) return Finish(li);
  OpenStream(li);
}

// DLIO's worker collates the batch it read (DlioEngineOptions::collate_sample_bytes): the batch's resized images
// copied into one tensor. The same bytes are copied here into the I/O thread's collate buffer (grown to the largest
// batch, at most kMaxCollateSource, then copied into in rounds), on the I/O thread, in series with the lane's next
// sample as in DLIO's worker. (Its shared-memory segment's mapping and page faults are left out: mapping and
// unmapping per batch here would stall every lane of the thread, where DLIO's workers are processes of their own.)
void DlioEngine::Worker::Collate(Lane& l) {
  const uint64_t each = engine->dlio_.collate_sample_bytes, bytes = each * l.batch_samples;
  l.batch_samples = 0;
  if (bytes == 0 || !collate_src) return;
  const int64_t t0 = NowNs();
  const uint64_t src = std::min<uint64_t>(each, kMaxCollateSource);
  const uint64_t cap = std::min<uint64_t>(bytes, kMaxCollateSource);
  if (collate_dst.size() < cap) collate_dst = AlignedBuffer(cap);  // (grows to the largest batch: a few times a run)
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t at = done % collate_dst.size(), n = std::min({src, bytes - done, collate_dst.size() - at});
    std::memcpy(collate_dst.data() + at, collate_src.get(), n);
    done += n;
  }
  collate_ns.fetch_add(static_cast<uint64_t>(NowNs() - t0), std::memory_order_relaxed);
  collates.fetch_add(1, std::memory_order_relaxed);
}

void DlioEngine::Worker::Finish(size_t li) {
  Lane& l = lanes[li];
  l.fd = -1;
  l.active = false;
  --active;
  if (!l.streaming) ++l.batch_samples;
  if (l.req.ends_batch) Collate(l);
  if (IoStats* stats = engine->options_.stats; stats != nullptr && l.error.ok()) stats->Record(index, l.bytes, NowNs() - l.start_ns - l.preprocess_ns);
  const ReadRequest req = l.req;
  // The sample's bytes, every one of which the planned reads covered (a whole file: its size; an npz whose layout
  // was learnt: its x member); the reads' headers and re-reads count in device_bytes, not as sample bytes.
  const uint64_t sample = !l.error.ok()                     ? 0
                          : req.extent.length != kWholeFile ? req.extent.length
                          : l.learn_state                   ? engine->planner_.LearntSampleBytes(l.learn_state.get())
                                                            : l.stx.stx_size;
  req.target->OnComplete(req.tag, sample, l.error, nullptr);
  if (!l.queue.empty()) Start(li);
}

void DlioEngine::Worker::OnOpen(size_t li, int res) {
  Lane& l = lanes[li];
  if (res < 0) {
    l.error = Status::Errno("cannot open " + std::string(PathOf(l)), -res);
    l.fd = -1;
    return Finish(li);
  }
  l.fd = res;
  Stat(li);
}

void DlioEngine::Worker::OnStat(size_t li, int res) {
  Lane& l = lanes[li];
  if (res < 0) {
    l.error = Status::Errno(std::string(PathOf(l)) + ": fstat failed", -res);
    return Close(li);
  }
  const uint64_t size = l.stx.stx_size;
  const SampleExtent& e = l.req.extent;
  if (e.length != kWholeFile && e.offset + e.length > size) {
    l.error = Status::Corruption(std::string(PathOf(l)) + ": file is truncated: sample extent ends at offset " +
                                 std::to_string(e.offset + e.length) + " but data ends at offset " + std::to_string(size));
    return Close(li);
  }
  if (l.streaming) {
    engine->planner_.PlanStream(l.req, size, &l.stream_next, &l.plan);
  } else if (l.learn_state) {  // (the layout learnt from the sample's own reads)
    engine->planner_.LearnStart(l.learn_state.get(), l.req, size, l.stx.stx_blksize, &l.plan, &l.want);
    if (Status st = FindLearnOp(l, 0, PathOf(l)); !st.ok()) {
      l.error = std::move(st);
      return Close(li);
    }
  } else {
    engine->planner_.Plan(l.req, size, l.stx.stx_blksize, &l.plan);
    if (work) {
      if (Status st = SizeSampleBuffer(l); !st.ok()) {
        l.error = std::move(st);
        return Close(li);
      }
    }
  }
  StartPlan(li);
}

void DlioEngine::Worker::OnRead(size_t li, uint32_t slot, int cqe_res) {
  Lane& l = lanes[li];
  if (slot & kEofProbe) {  // the reader's read at EOF: it returns nothing, whatever the probe read
    slot &= ~static_cast<uint32_t>(kEofProbe);
    if (cqe_res > 0) device_bytes.fetch_add(static_cast<uint64_t>(cqe_res), std::memory_order_relaxed);
    if (cqe_res >= 0) cqe_res = 0;
  }
  const AccessRead& a = l.plan[l.op];
  FaultInjector* faults = engine->options_.faults;
  const uint64_t off = l.piece_off[slot], len = l.piece_len[slot];
  const int64_t res = faults == nullptr ? cqe_res : faults->OnRead(FileOf(l), off, len, cqe_res);
  const uint64_t size = l.stx.stx_size;
  if (res == -EAGAIN || res == -EINTR || (res > 0 && static_cast<uint64_t>(res) < len && off + res < size)) {
    // Retried from where it stopped, as the Python reader's loop would: EAGAIN, EINTR or a short read before EOF.
    requeued.fetch_add(1, std::memory_order_relaxed);
    if (res > 0) {
      l.op_got += static_cast<uint64_t>(res);
      l.bytes += static_cast<uint64_t>(res);
      device_bytes.fetch_add(static_cast<uint64_t>(res), std::memory_order_relaxed);
      l.piece_off[slot] += static_cast<uint64_t>(res);
      l.piece_len[slot] -= static_cast<uint64_t>(res);
    }
    return PrepPiece(li, slot);
  }
  --l.pieces_inflight;
  l.piece_used = static_cast<uint8_t>(l.piece_used & ~(1u << slot));
  if (res < 0) {
    if (l.error.ok()) {
      l.error = Status::Errno(std::string(PathOf(l)) + ": read failed at offset " + std::to_string(off), static_cast<int>(-res));
    }
  } else {
    l.op_got += static_cast<uint64_t>(res);
    l.bytes += static_cast<uint64_t>(res);
    device_bytes.fetch_add(static_cast<uint64_t>(res), std::memory_order_relaxed);
    if (static_cast<uint64_t>(res) < len) l.op_short = true;  // end of file, as the reader meets it
  }
  if (l.pieces_inflight > 0) return;
  if (l.error.ok() && l.piece_next < a.offset + a.length && !l.op_short) return NextRead(li);  // more pieces
  // A read that ends short of what the file held at its statx: the file shrank under the run.
  const uint64_t expect = a.offset >= size ? 0 : std::min(a.length, size - a.offset);
  if (l.error.ok() && l.op_got < expect) {
    l.error = Status::Corruption(std::string(PathOf(l)) + ": file is truncated: a read at offset " +
                                 std::to_string(a.offset) + " of " + std::to_string(expect) + " bytes returned " +
                                 std::to_string(l.op_got));
  }
  if (l.error.ok() && IsHead(l)) l.error = engine->planner_.CheckHead(ReadDst(l, 0), l.op_got, PathOf(l));
  if (l.error.ok() && l.streaming && l.stream_state) {  // the stream's bytes, checked in order as they come
    const ReadPlanner& p = engine->planner_;
    l.error = a.offset >= size ? p.StreamEnd(l.stream_state.get(), PathOf(l))
                               : p.StreamFeed(l.stream_state.get(), l.stream_buf.get(), l.op_got, PathOf(l));
  }
  if (l.error.ok() && l.op == l.learn_op) l.error = Learn(l);
  if (!l.error.ok()) return Close(li);
  ++l.op;
  BeginRead(l);
  NextRead(li);
}

}  // namespace feedrate
