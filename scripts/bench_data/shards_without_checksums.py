"""Copies a cvtrain shards folder as version 1 wrote it: index entries without their CRC-32C and the
magic CVTSHRD1, which cvtrain reads without checking. The same bytes, the same binary: the one
difference a checksum benchmark should time. Usage: shards_without_checksums.py SRC DST"""
import os
import shutil
import struct
import sys


def rewrite(src_path, dst_path):
    data = open(src_path, "rb").read()
    count, index_offset = struct.unpack_from("<QQ", data, len(data) - 24)
    if data[-8:] != b"CVTSHRD2":
        sys.exit(f"{src_path}: not a version-2 shard")
    index = b"".join(data[index_offset + 20 * i:index_offset + 20 * i + 16] for i in range(count))
    with open(dst_path, "wb") as out:
        out.write(data[:index_offset] + index + struct.pack("<QQ", count, index_offset) + b"CVTSHRD1")


def main():
    src, dst = sys.argv[1:3]
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(src, "classes.txt"), os.path.join(dst, "classes.txt"))
    for name in sorted(os.listdir(src)):
        if name.endswith(".cvts"):
            rewrite(os.path.join(src, name), os.path.join(dst, name))


if __name__ == "__main__":
    main()
