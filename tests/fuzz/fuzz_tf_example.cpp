// Fuzzes the tf.train.Example / SequenceExample payload summary (libprotobuf parsing plus our walk over it).
#include <cstdint>
#include <cstddef>

#include "loader/format/tf_example.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)feedrate::SummarizeTfRecordPayload(reinterpret_cast<const char*>(data), size);
  return 0;
}
