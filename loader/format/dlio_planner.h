// The DlioEngine's planner over a run's sample table: DLIO's reader calls for the dataset's format (access_pattern.h),
// each file's layout from the table, its size and block size from the engine's statx.
#pragma once

#include <algorithm>
#include <memory>
#include <new>
#include <string>

#include "loader/format/access_pattern.h"
#include "loader/format/image_decode.h"
#include "loader/format/numpy_learn.h"
#include "loader/format/sample_table.h"
#include "loader/format/tfrecord.h"
#include "loader/io/dlio_engine.h"

namespace feedrate {

// One I/O thread's image decoder (its libjpeg state and pixel buffer kept across samples).
class ImageDecodeWork final : public SampleWork {
 public:
  Status Run(const char* data, uint64_t n, const char* path) override { return decoder_.DecodeSample(data, n, path); }

 private:
  ImageDecoder decoder_;
};

class TableReadPlanner final : public ReadPlanner {
 public:
  // REQUIRES: `table` outlives the planner; `max_file` bounds the files' sizes (for MaxReads; a larger file costs
  // its lane one reallocation of its plan). `stream_buffer`: TFRecord's TensorFlow buffer_size (0: unbuffered);
  // the table's TFRecord check (frame, or frame and CRC) runs on the streams' bytes (StreamFeed).
  TableReadPlanner(AccessKind kind, const SampleTable& table, uint64_t max_file, uint64_t stream_buffer = 0)
      : kind_(kind), table_(table), check_(table.check), stream_buffer_(stream_buffer),
        max_reads_(MaxDlioReads(kind, table.MaxLength(), max_file, Streams() ? stream_buffer : 4096)) {}
  // Image datasets not opened at setup: each file's signature, from the first read DLIO's reader makes.
  Status CheckHead(const char* data, uint64_t n, const char* path) const override {
    if (check_ == SampleCheck::kJpegSignature) return CheckImageSignature(DataFormat::kJpeg, data, n, path);
    if (check_ == SampleCheck::kPngSignature) return CheckImageSignature(DataFormat::kPng, data, n, path);
    return Status::Ok();
  }
  // feedrate.decode on images: each sample decoded in its lane's chain, as DLIO's PIL reader decodes in its worker.
  std::unique_ptr<SampleWork> NewSampleWork() const override {
    if (check_ != SampleCheck::kImageDecode) return nullptr;
    return std::make_unique<ImageDecodeWork>();
  }
  void Plan(const ReadRequest& r, uint64_t file_size, uint64_t block, std::vector<AccessRead>* out) const override {
    FileLayout l = table_.LayoutOf(r.extent.file);
    l.size = file_size;
    PlanDlioReads(kind_, l, r.extent, Streams() ? stream_buffer_ : block, out);
  }
  uint64_t MaxReads() const override { return max_reads_; }
  bool StreamsFiles() const override { return Streams(); }
  void PlanStream(const ReadRequest& r, uint64_t file_size, uint64_t* next, std::vector<AccessRead>* out) const override {
    PlanTfRecordStream(r.extent, file_size, stream_buffer_, next, out);
  }
  uint64_t StreamCheckBytes() const override { return Checks() ? sizeof(TfRecordStreamCheck) : 0; }
  // A fill, or unbuffered the largest record (its payload is one read).
  uint64_t StreamFillBytes() const override { return Checks() ? std::max<uint64_t>(stream_buffer_, table_.MaxLength()) : 0; }
  void StreamReset(void* state) const override {
    new (state) TfRecordStreamCheck();
    static_cast<TfRecordStreamCheck*>(state)->Reset(check_ == SampleCheck::kTfRecordCrc);
  }
  Status StreamFeed(void* state, const char* data, uint64_t n, const char* path) const override {
    return static_cast<TfRecordStreamCheck*>(state)->Feed(data, n, path);
  }
  Status StreamEnd(const void* state, const char* path) const override {
    return static_cast<const TfRecordStreamCheck*>(state)->End(path);
  }
  // np.load on an npz or npy set-up did not index (a whole-file extent): its layout learnt from its own reads.
  uint64_t LearnStateBytes() const override { return Learns() ? sizeof(LearnState) : 0; }
  uint64_t LearnBufferBytes() const override { return Learns() ? NumpyLayoutLearner::kMaxWant : 0; }
  void LearnStart(void* state, const ReadRequest& r, uint64_t file_size, uint64_t block, std::vector<AccessRead>* out,
                  LearnWant* want) const override {
    auto* s = new (state) LearnState();
    s->learner.Start(kind_, file_size, &s->layout);
    PlanDlioReads(kind_, s->layout, r.extent, block, out);
    *want = {s->learner.want(), s->learner.want_len()};
  }
  Status LearnFeed(void* state, const ReadRequest& r, const char* data, uint64_t n, uint64_t block, const char* path,
                   std::vector<AccessRead>* out, LearnWant* want) const override {
    auto* s = static_cast<LearnState*>(state);
    FEEDRATE_RETURN_IF_ERROR(s->learner.Learn(data, n, path, &s->layout));
    PlanDlioReads(kind_, s->layout, r.extent, block, out);
    *want = {s->learner.want(), s->learner.want_len()};
    return Status::Ok();
  }
  uint64_t LearntSampleBytes(const void* state) const override {
    return NumpyLayoutLearner::StreamBytes(kind_, static_cast<const LearnState*>(state)->layout);
  }
  AccessKind kind() const { return kind_; }

 private:
  struct LearnState {
    NumpyLayoutLearner learner;
    FileLayout layout;
  };
  bool Learns() const { return NumpyLayoutLearner::Learns(kind_) && table_.WholeFilesUnsized(); }
  AccessKind kind_;
  const SampleTable& table_;
  bool Streams() const { return kind_ == AccessKind::kTfRecord; }
  bool Checks() const { return check_ == SampleCheck::kTfRecordCrc || check_ == SampleCheck::kTfRecordFrame; }

  SampleCheck check_;  // the table's check when the planner was made (the signature checks run in CheckHead)
  uint64_t stream_buffer_;
  uint64_t max_reads_;
};

}  // namespace feedrate
