#!/usr/bin/python3
"""Writes the fuzz seed corpus (tests/fuzz/corpus/<target>/) from tests/fixtures and numpy/zipfile/zlib:
small .npy files of every header version/order, .npz stored/deflated/zip64, TFRecord files and .idx text,
Example/SequenceExample payloads, HDF5 filtered chunks, and a workload YAML with overrides. Run from anywhere;
the output is committed (a few KiB)."""
import glob, io, os, shutil, struct, sys, zipfile, zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, '..', 'fixtures')
OUT = os.path.join(HERE, 'corpus')


def put(target, name, data):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    with open(os.path.join(OUT, target, name), 'wb') as f:
        f.write(data)


def npz(members, compress, zip64=False):
    b = io.BytesIO()
    with zipfile.ZipFile(b, 'w', zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as z:
        for name, arr in members:
            a = io.BytesIO()
            np.save(a, arr)
            with z.open(name + '.npy', 'w', force_zip64=zip64) as m:
                m.write(a.getvalue())
    return b.getvalue()


def crc32c(data):
    crc = 0xffffffff
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff


def masked(c):
    return (((c >> 15) | (c << 17)) + 0xa282ead8) & 0xffffffff


def record(payload):
    h = struct.pack('<Q', len(payload))
    return h + struct.pack('<I', masked(crc32c(h))) + payload + struct.pack('<I', masked(crc32c(payload)))


def fletcher32(b):  # HDF5's: big-endian 16-bit words (even-length input here)
    s1 = s2 = 0
    for i in range(0, len(b), 2):
        s1 = (s1 + ((b[i] << 8) | b[i + 1])) % 65535
        s2 = (s2 + s1) % 65535
    return struct.pack('>I', (s2 << 16) | s1)


def shuffle(b, k):
    return bytes(b[j * k + i] for i in range(k) for j in range(len(b) // k))


def main():
    if not os.path.isdir(FIX):
        sys.exit(f'fixtures not found at {FIX}')
    shutil.rmtree(OUT, ignore_errors=True)
    for f in sorted(glob.glob(os.path.join(FIX, 'npy', '*.npy'))):
        if os.path.getsize(f) <= 1024:
            put('npy', os.path.basename(f), open(f, 'rb').read())
    x = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    y = np.array([1, 2, 3], dtype='<i8')
    put('npz', 'stored.npz', npz([('x', x), ('y', y)], False))
    put('npz', 'deflated.npz', npz([('x', x)], True))
    put('npz', 'zip64.npz', npz([('x', x), ('y', y)], False, True))
    for f in ['magenta_tfrecord_iterator_test.tfrecord', 'pytorch_data_example.tfrecord']:
        put('tfrecord', f, open(os.path.join(FIX, 'tfrecord', f), 'rb').read())
    put('tfrecord', 'uniform3.tfrecord', record(b'a' * 10) * 3)
    put('tfrecord', 'index.idx', b'0 26\n26 26\n52 26\n')
    for f in ['pytorch_data_example.tfrecord', 'pytorch_data_sequence_example.tfrecord']:
        d = open(os.path.join(FIX, 'tfrecord', f), 'rb').read()
        off = i = 0
        while off + 12 <= len(d) and i < 4:
            n = struct.unpack('<Q', d[off:off + 8])[0]
            put('tf_example', f'{f}.{i}', d[off + 12:off + 12 + n])
            off += n + 16
            i += 1
    # HDF5 chunks: [pipeline, itemsize code, chunk bytes >> 4, chunk bytes & 15] + the stored chunk.
    raw = bytes(range(64)) * 4
    enc = zlib.compress(shuffle(raw, 4))
    put('hdf5_chunk', 'shuffle_deflate_fletcher32', bytes([0b100100, 2, 256 >> 4, 256 & 15]) + enc + fletcher32(enc + (b'\0' if len(enc) % 2 else b''))[:4])
    put('hdf5_chunk', 'deflate', bytes([0b111101, 0, 256 >> 4, 256 & 15]) + zlib.compress(raw))
    put('workload', 'unet3d_overrides.yaml', b'''model:
  name: unet3d
framework: pytorch
workflow:
  generate_data: False
  train: True
dataset:
  data_folder: data/unet3d/
  format: npz
  num_files_train: 168
  num_samples_per_file: 1
  record_length_bytes: 146600628
reader:
  data_loader: pytorch
  batch_size: 7
  read_threads: 4
train:
  epochs: 5
  computation_time: 0.323
--
++workload.reader.batch_size=4
dataset.num_files_train=16
''')


if __name__ == '__main__':
    main()
