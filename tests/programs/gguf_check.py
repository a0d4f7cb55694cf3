#!/usr/bin/env python3
"""The gguf package's reader over a GGUF file, every tensor read (tests/cache_programs_test).

usage: gguf_check.py PATH

gguf.GGUFReader maps the file (np.memmap, mode 'r') and gives every tensor
as an array over the mapping; this reads every tensor's bytes in full and
prints one line: the tensor count, the data bytes, the vocabulary size and
a checksum, a CRC-32 (zlib) chained over every tensor's name, type, shape
and data in file order, so two runs print the same line exactly when they
read the same bytes.
"""
import sys
import zlib

import gguf


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    r = gguf.GGUFReader(sys.argv[1])
    crc = 0
    nbytes = 0
    for t in r.tensors:
        head = f"{t.name} {t.tensor_type.name} {list(map(int, t.shape))}"
        crc = zlib.crc32(head.encode(), crc)
        data = t.data
        if not data.flags.c_contiguous:
            sys.exit(f"gguf_check.py: {t.name}: the reader gave a non-contiguous array")
        crc = zlib.crc32(memoryview(data).cast("B"), crc)
        nbytes += data.nbytes
    vocab = len(r.fields["tokenizer.ggml.tokens"].data) if "tokenizer.ggml.tokens" in r.fields else 0
    print(f"gguf {len(r.tensors)} tensors, {nbytes} data bytes, vocabulary {vocab}, crc32 {crc:08x}")


if __name__ == "__main__":
    main()
