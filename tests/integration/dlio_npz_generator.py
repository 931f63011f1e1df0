# Writes an npz dataset the way DLIO's generator does (dlio_benchmark data_generator/npz_generator.py,
# data_generator.py get_dimension): used by the integration tests to check Feedrate reads DLIO datasets and
# draws the same shapes. Usage: dlio_npz_generator.py DATA_DIR NUM_FILES SAMPLES_PER_FILE RECORD_LENGTH STDEV
import math
import os
import sys

import numpy as np

data_dir, num_files, nspf, record_length, stdev = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(
    sys.argv[4]), float(sys.argv[5])
dim = int(math.sqrt(record_length))
dim_stdev = stdev / 2.0 / math.sqrt(record_length)
np.random.seed(10)
if dim_stdev > 0:
    dims = [max(int(d), 1) for d in np.random.normal(dim, dim_stdev, 2 * num_files)]
else:
    dims = [dim] * (2 * num_files)
os.makedirs(os.path.join(data_dir, "train"), exist_ok=True)
width = len(str(num_files))
for i in range(num_files):
    d1, d2 = dims[2 * i], dims[2 * i + 1]
    records = np.random.randint(255, size=(d1, d2, nspf), dtype=np.uint8)
    path = os.path.join(data_dir, "train", f"img_{str(i).zfill(width)}_of_{num_files}.npz")
    np.savez(path, x=records, y=[0] * nspf)
