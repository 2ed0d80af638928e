// How a JPEG's frame is coded, read from its SOF marker without decoding: what decides whether a
// GPU decoder (nvJPEG) can take the file or the CPU decoder must. And the one JPEG encoder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cvtrain/data/dataset.h"

namespace cvtrain {

struct JpegCoding {
  bool progressive = false;  // SOF2/6/10/14: several scans
  bool arithmetic = false;   // SOF9-15: arithmetic entropy coding
  bool lossless = false;     // SOF3/7/11/15
  int precision = 8;         // bits per sample
  int components = 0;        // 1 gray, 3 YCbCr, 4 CMYK/YCCK
  int width = 0, height = 0;
  int luma_h = 1, luma_v = 1;  // the first component's sampling factors: 4:4:4 1 x 1, 4:2:0 2 x 2, 4:1:1 4 x 1
  bool chroma_once = true;     // every other component sampled 1 x 1 (what every named subsampling has)
  int orientation = 1;         // EXIF's (APP1 before the frame): 1 as stored, 2-8 mirrored and/or turned to view
};

// The frame header's facts; nullopt when `bytes` is not a JPEG or ends before its frame header.
std::optional<JpegCoding> jpeg_coding(const std::vector<uint8_t>& bytes);

// A baseline or extended sequential Huffman JPEG of 8-bit gray or YCbCr: what nvJPEG's batched
// decode takes on every backend. Progressive, arithmetic, lossless, 12-bit and CMYK files are not.
bool gpu_decodable(const JpegCoding& coding);

// Gray, or colour in one of 4:4:4, 4:2:2, 4:2:0 and 4:4:0: the subsamplings nvJPEG's hardware engine
// decodes (NVIDIA's nvImageCodec asks the same of it). 4:1:1, 4:1:0 and unusual factors are not.
bool hardware_decodable_subsampling(const JpegCoding& coding);

// A JPEG transcode_to_baseline would change: progressive, Huffman-coded, 8-bit gray or YCbCr (CMYK,
// arithmetic, lossless and 12-bit files are left as they are).
bool progressive_to_transcode(const JpegCoding& coding);

// The same JPEG rewritten as baseline (one scan per component set, as jpegtran without -progressive):
// the same DCT coefficients and quantisation tables, so every decoder gives the same pixels, with
// Huffman tables optimised for the file; metadata markers (EXIF, ICC) left out, as training reads
// none. What makes a progressive file one nvJPEG decodes, and one the crop-window decoder reads
// only the rows and columns of (scripts/bench_progressive_pack.sh). Throws Error naming `name`
// when the file is corrupt or ends early.
std::vector<uint8_t> transcode_to_baseline(const std::vector<uint8_t>& bytes, const std::string& name);

// A gray or RGB image as a baseline JPEG (libjpeg-turbo, 4:2:0 chroma, accurate DCT): for `cvtrain
// data pack` and for checking a GPU decoder against known pixels. Throws Error when encoding fails.
std::vector<uint8_t> encode_jpeg(const Image& image, int quality);

}  // namespace cvtrain
