// jpeg_coding: walks the marker segments from SOI to the first SOF (ITU T.81, B.1.1.3 and B.2.2);
// encode_jpeg through TurboJPEG; transcode_to_baseline through libjpeg's coefficient API (as jpegtran).
#include "cvtrain/data/jpeg_coding.h"

#include <fmt/format.h>
#include <turbojpeg.h>

#include <cstring>
#include <memory>

#include "cvtrain/core/error.h"
#include "cvtrain/data/libjpeg_errors.h"

namespace cvtrain {
namespace {

// libjpeg's output into a growing vector (which lives in the caller's frame, outside the setjmp).
struct VectorDestination {
  jpeg_destination_mgr pub;
  std::vector<uint8_t>* out;
};

void start_vector(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<VectorDestination*>(cinfo->dest);
  d->out->resize(64 * 1024);
  d->pub.next_output_byte = d->out->data();
  d->pub.free_in_buffer = d->out->size();
}

boolean grow_vector(j_compress_ptr cinfo) {  // called with the whole buffer full
  auto* d = reinterpret_cast<VectorDestination*>(cinfo->dest);
  const size_t used = d->out->size();
  d->out->resize(2 * used);
  d->pub.next_output_byte = d->out->data() + used;
  d->pub.free_in_buffer = used;
  return TRUE;
}

void end_vector(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<VectorDestination*>(cinfo->dest);
  d->out->resize(d->out->size() - d->pub.free_in_buffer);
}

// The coefficients of `bytes` written anew into `out`; false (with err.message set) on an error.
bool run_transcode(const std::vector<uint8_t>& bytes, std::vector<uint8_t>& out, libjpeg::ErrorManager& err) {
  jpeg_decompress_struct src{};  // zeroed: destroying one never created is a no-op
  jpeg_compress_struct dst{};
  VectorDestination destination{{}, &out};
  destination.pub.init_destination = start_vector;
  destination.pub.empty_output_buffer = grow_vector;
  destination.pub.term_destination = end_vector;
  src.err = libjpeg::attach(err);
  dst.err = src.err;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&dst);
    jpeg_destroy_decompress(&src);
    return false;
  }
  jpeg_create_decompress(&src);
  jpeg_create_compress(&dst);
  jpeg_mem_src(&src, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&src, TRUE);
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&src);
  jpeg_copy_critical_parameters(&src, &dst);  // sets defaults first: sequential, Huffman
  dst.optimize_coding = TRUE;
  dst.dest = &destination.pub;
  jpeg_write_coefficients(&dst, coefficients);
  jpeg_finish_compress(&dst);
  jpeg_finish_decompress(&src);
  jpeg_destroy_compress(&dst);
  jpeg_destroy_decompress(&src);
  return true;
}

struct TjCompressorCloser {
  void operator()(void* handle) const { tjDestroy(handle); }
};

// EXIF's orientation tag (0x0112) in an APP1 segment's IFD0, `begin`..`end` its payload; 1 when
// the segment is no EXIF or holds none. Phones store photos sideways and set it to view them.
int exif_orientation(const std::vector<uint8_t>& bytes, size_t begin, size_t end) {
  if (end > bytes.size() || end < begin + 14 || std::memcmp(&bytes[begin], "Exif\0\0", 6) != 0) return 1;
  const size_t tiff = begin + 6;
  const bool big = bytes[tiff] == 'M';
  const auto u16 = [&](size_t at) { return big ? bytes[at] << 8 | bytes[at + 1] : bytes[at + 1] << 8 | bytes[at]; };
  const auto u32 = [&](size_t at) {
    return static_cast<size_t>(u16(big ? at : at + 2)) << 16 | static_cast<size_t>(u16(big ? at + 2 : at));
  };
  const size_t ifd = tiff + u32(tiff + 4);
  if (ifd + 2 > end) return 1;
  const size_t entries = static_cast<size_t>(u16(ifd));
  for (size_t e = 0; e < entries && ifd + 2 + 12 * (e + 1) <= end; ++e) {
    const size_t entry = ifd + 2 + 12 * e;
    if (u16(entry) == 0x0112) {
      const int value = u16(entry + 8);  // a SHORT, left-justified in the value field
      return value >= 1 && value <= 8 ? value : 1;
    }
  }
  return 1;
}

}  // namespace

std::vector<uint8_t> encode_jpeg(const Image& image, int quality) {
  thread_local std::unique_ptr<void, TjCompressorCloser> handle(tjInitCompress());
  unsigned char* out = nullptr;
  unsigned long size = 0;
  if (tjCompress2(handle.get(), image.pixels.data(), image.width, 0, image.height, image.channels == 1 ? TJPF_GRAY : TJPF_RGB,
                  &out, &size, image.channels == 1 ? TJSAMP_GRAY : TJSAMP_420, quality, TJFLAG_ACCURATEDCT) != 0)
    throw Error(fmt::format("JPEG encoding failed ({})", tjGetErrorStr2(handle.get())));
  std::vector<uint8_t> bytes(out, out + size);
  tjFree(out);
  return bytes;
}

std::optional<JpegCoding> jpeg_coding(const std::vector<uint8_t>& bytes) {
  const size_t size = bytes.size();
  int orientation = 1;
  if (size < 4 || bytes[0] != 0xFF || bytes[1] != 0xD8) return std::nullopt;
  size_t at = 2;
  while (at + 4 <= size) {
    if (bytes[at] != 0xFF) return std::nullopt;  // segments follow each other until the first scan
    const uint8_t marker = bytes[at + 1];
    if (marker == 0xFF) {  // fill bytes before a marker
      ++at;
      continue;
    }
    const size_t length = static_cast<size_t>(bytes[at + 2]) << 8 | bytes[at + 3];
    // SOF0-15 except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      if (at + 10 > size || length < 8) return std::nullopt;
      JpegCoding coding;
      coding.orientation = orientation;
      const int kind = marker - 0xC0;
      coding.progressive = kind == 2 || kind == 6 || kind == 10 || kind == 14;
      coding.lossless = kind == 3 || kind == 7 || kind == 11 || kind == 15;
      coding.arithmetic = kind >= 9;
      coding.precision = bytes[at + 4];
      coding.height = bytes[at + 5] << 8 | bytes[at + 6];
      coding.width = bytes[at + 7] << 8 | bytes[at + 8];
      coding.components = bytes[at + 9];
      // Each component: id, then H (high nibble) and V sampling factors, then its quantisation table.
      for (int c = 0; c < coding.components && at + 12 + 3 * static_cast<size_t>(c) <= size; ++c) {
        const uint8_t factors = bytes[at + 11 + 3 * static_cast<size_t>(c)];
        if (c == 0) {
          coding.luma_h = factors >> 4;
          coding.luma_v = factors & 0x0F;
        } else if (factors != 0x11) {
          coding.chroma_once = false;
        }
      }
      return coding;
    }
    if (marker == 0xDA || marker == 0xD9) return std::nullopt;  // a scan or the end before any frame header
    if (marker == 0xE1) orientation = exif_orientation(bytes, at + 4, at + 2 + length);
    at += 2 + length;
  }
  return std::nullopt;
}

bool gpu_decodable(const JpegCoding& c) {
  return !c.progressive && !c.arithmetic && !c.lossless && c.precision == 8 && (c.components == 1 || c.components == 3) && c.width > 0 &&
         c.height > 0;
}

bool progressive_to_transcode(const JpegCoding& c) {
  return c.progressive && !c.arithmetic && !c.lossless && c.precision == 8 && (c.components == 1 || c.components == 3);
}

std::vector<uint8_t> transcode_to_baseline(const std::vector<uint8_t>& bytes, const std::string& name) {
  std::vector<uint8_t> out;
  libjpeg::ErrorManager err;
  if (!run_transcode(bytes, out, err)) throw Error(fmt::format("{}: corrupt JPEG ({})", name, err.message));
  if (err.truncated) throw Error(fmt::format("{}: truncated JPEG (the data ends before the image does)", name));
  return out;
}

bool hardware_decodable_subsampling(const JpegCoding& c) {
  if (c.components == 1) return true;
  const bool named = (c.luma_h == 1 || c.luma_h == 2) && (c.luma_v == 1 || c.luma_v == 2);  // 4:4:4, 4:2:2, 4:2:0, 4:4:0
  return c.components == 3 && c.chroma_once && named;
}

}  // namespace cvtrain
