// Turns a dataset file into the byte extent that reading one of its samples covers, per format,
// from the file's headers only (built once per file before the run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/io/io_engine.h"
#include "loader/status.h"

namespace feedrate {

// The extent (offset, length) of a sample read for file `path`. For npz this is the whole `x.npy`
// member, as DLIO's reader loads the full array (np.load(f)['x']) and slices sample k from its last axis;
// for npy, the whole array. Checks the array holds at least `samples_per_file` samples.
Result<SampleExtent> IndexTrainingFile(const std::string& path, const std::string& format, uint64_t samples_per_file);

// Indexes every file (file i gets extent.file = i), using `threads` threads. Returns the first error.
Result<std::vector<SampleExtent>> IndexTrainingFiles(const std::vector<std::string>& paths, const std::string& format,
                                                     uint64_t samples_per_file, size_t threads);

// Formats whose training reads Feedrate implements so far.
bool TrainingFormatSupported(const std::string& format);

}  // namespace feedrate
