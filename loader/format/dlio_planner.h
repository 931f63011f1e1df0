// The DlioEngine's planner over a run's sample table: DLIO's reader calls for the dataset's format (access_pattern.h),
// each file's layout from the table, its size and block size from the engine's statx.
#pragma once

#include <algorithm>

#include "loader/format/access_pattern.h"
#include "loader/format/image_decode.h"
#include "loader/format/sample_table.h"
#include "loader/io/dlio_engine.h"

namespace feedrate {

class TableReadPlanner final : public ReadPlanner {
 public:
  // REQUIRES: `table` outlives the planner; `max_file` bounds the files' sizes (for MaxReads; a larger file costs
  // its lane one reallocation of its plan).
  TableReadPlanner(AccessKind kind, const SampleTable& table, uint64_t max_file)
      : kind_(kind), table_(table), check_(table.check),
        max_reads_(MaxDlioReads(kind, table.MaxLength(), max_file, 4096)) {}
  // Image datasets not opened at setup: each file's signature, from the first read DLIO's reader makes.
  Status CheckHead(const char* data, uint64_t n, const char* path) const override {
    if (check_ == SampleCheck::kJpegSignature) return CheckImageSignature(DataFormat::kJpeg, data, n, path);
    if (check_ == SampleCheck::kPngSignature) return CheckImageSignature(DataFormat::kPng, data, n, path);
    return Status::Ok();
  }
  void Plan(const ReadRequest& r, uint64_t file_size, uint64_t block, std::vector<AccessRead>* out) const override {
    FileLayout l = table_.LayoutOf(r.extent.file);
    l.size = file_size;
    PlanDlioReads(kind_, l, r.extent, block, out);
  }
  uint64_t MaxReads() const override { return max_reads_; }
  AccessKind kind() const { return kind_; }

 private:
  AccessKind kind_;
  const SampleTable& table_;
  SampleCheck check_;  // the table's check when the planner was made (the signature checks run in CheckHead)
  uint64_t max_reads_;
};

}  // namespace feedrate
