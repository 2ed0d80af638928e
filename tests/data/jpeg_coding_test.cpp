// jpeg_coding reads a JPEG's frame header as libjpeg-turbo wrote it: size, components and coding,
// so that the GPU decoder takes only what it can decode.
#include <catch2/catch.hpp>

#include <tuple>
#include <utility>

#include "cvtrain/core/error.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/jpeg_coding.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg_pixels;
using cvtrain::testing::with_exif;

namespace {

std::vector<uint8_t> pixels(int w, int h, int channels) {
  std::vector<uint8_t> p(static_cast<size_t>(w) * h * channels);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 13 % 251);
  return p;
}

}  // namespace

TEST_CASE("a JPEG's EXIF orientation is read in either byte order, among other tags, and 1 without one", "[data]") {
  const auto plain = encode_jpeg_pixels(pixels(16, 8, 3), 16, 8, TJPF_RGB);
  CHECK(jpeg_coding(plain)->orientation == 1);
  for (const bool big_endian : {false, true}) {
    const auto turned = jpeg_coding(with_exif(plain, {{0x010F, 7}, {0x0112, 6}}, big_endian));  // Make, then Orientation
    REQUIRE(turned);
    CHECK(turned->orientation == 6);
    CHECK(turned->width == 16);  // the frame as stored
    CHECK(jpeg_coding(with_exif(plain, {{0x010F, 7}}, big_endian))->orientation == 1);
    CHECK(jpeg_coding(with_exif(plain, {{0x0112, 42}}, big_endian))->orientation == 1);  // no orientation EXIF defines
  }
}

TEST_CASE("a baseline colour or gray JPEG is read as GPU-decodable with its size", "[data]") {
  const auto colour = jpeg_coding(encode_jpeg_pixels(pixels(37, 21, 3), 37, 21, TJPF_RGB));
  REQUIRE(colour);
  CHECK(colour->width == 37);
  CHECK(colour->height == 21);
  CHECK(colour->components == 3);
  CHECK(colour->precision == 8);
  CHECK_FALSE(colour->progressive);
  CHECK(gpu_decodable(*colour));
  const auto gray = jpeg_coding(encode_jpeg_pixels(pixels(16, 16, 1), 16, 16, TJPF_GRAY));
  REQUIRE(gray);
  CHECK(gray->components == 1);
  CHECK(gpu_decodable(*gray));
}

TEST_CASE("the sampling factors tell the chroma subsampling that nvJPEG's hardware engine refuses", "[data]") {
  const auto coding_of = [](int subsampling) {
    const auto coding = jpeg_coding(encode_jpeg_pixels(pixels(64, 32, 3), 64, 32, TJPF_RGB, 90, subsampling));
    REQUIRE(coding);
    return *coding;
  };
  const auto luma = [](const JpegCoding& c) { return std::pair{c.luma_h, c.luma_v}; };
  CHECK(luma(coding_of(TJSAMP_444)) == std::pair{1, 1});
  CHECK(luma(coding_of(TJSAMP_422)) == std::pair{2, 1});
  CHECK(luma(coding_of(TJSAMP_420)) == std::pair{2, 2});
  CHECK(luma(coding_of(TJSAMP_440)) == std::pair{1, 2});
  CHECK(luma(coding_of(TJSAMP_411)) == std::pair{4, 1});  // luma four times as wide: not for the hardware engine
  for (int named : {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440}) {
    CAPTURE(named);
    CHECK(coding_of(named).chroma_once);
    CHECK(hardware_decodable_subsampling(coding_of(named)));
  }
  CHECK_FALSE(hardware_decodable_subsampling(coding_of(TJSAMP_411)));
  CHECK(hardware_decodable_subsampling(*jpeg_coding(encode_jpeg_pixels(pixels(16, 16, 1), 16, 16, TJPF_GRAY))));

  // Chroma sampled 2 x 1 under luma 2 x 2 (a factor byte rewritten in the frame header): no named
  // subsampling, so not for the hardware engine, though still a file nvJPEG's other backends take.
  std::vector<uint8_t> odd = encode_jpeg_pixels(pixels(64, 32, 3), 64, 32, TJPF_RGB, 90, TJSAMP_420);
  size_t sof = 2;
  while (odd[sof + 1] != 0xC0) sof += 2 + (static_cast<size_t>(odd[sof + 2]) << 8 | odd[sof + 3]);
  REQUIRE(odd[sof + 14] == 0x11);  // component 2's factors
  odd[sof + 14] = 0x21;
  const auto unusual = jpeg_coding(odd);
  REQUIRE(unusual);
  CHECK_FALSE(unusual->chroma_once);
  CHECK(gpu_decodable(*unusual));
  CHECK_FALSE(hardware_decodable_subsampling(*unusual));
}

TEST_CASE("progressive and CMYK JPEGs go to the CPU decoder, and other bytes are no JPEG", "[data]") {
  const auto progressive = jpeg_coding(encode_jpeg_pixels(pixels(40, 30, 3), 40, 30, TJPF_RGB, 90, TJSAMP_420, TJFLAG_PROGRESSIVE));
  REQUIRE(progressive);
  CHECK(progressive->progressive);
  CHECK(progressive->width == 40);
  CHECK_FALSE(gpu_decodable(*progressive));
  const auto cmyk = jpeg_coding(encode_jpeg_pixels(pixels(8, 8, 4), 8, 8, TJPF_CMYK, 90, TJSAMP_444));
  REQUIRE(cmyk);
  CHECK(cmyk->components == 4);
  CHECK_FALSE(gpu_decodable(*cmyk));
  CHECK_FALSE(jpeg_coding({0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}));
  std::vector<uint8_t> cut = encode_jpeg_pixels(pixels(8, 8, 3), 8, 8, TJPF_RGB);
  cut.resize(20);  // ends inside the headers, before the frame header
  CHECK_FALSE(jpeg_coding(cut));
}

TEST_CASE("a progressive JPEG transcoded to baseline decodes to the same pixels, at every scale and window", "[data]") {
  for (const auto& [channels, format, subsampling] :
       {std::tuple{3, TJPF_RGB, TJSAMP_420}, std::tuple{3, TJPF_RGB, TJSAMP_444}, std::tuple{1, TJPF_GRAY, TJSAMP_GRAY}}) {
    const std::vector<uint8_t> progressive =
        encode_jpeg_pixels(pixels(123, 77, channels), 123, 77, format, 85, subsampling, TJFLAG_PROGRESSIVE);
    REQUIRE(progressive_to_transcode(*jpeg_coding(progressive)));
    const std::vector<uint8_t> baseline = transcode_to_baseline(progressive, "p.jpg");
    const auto coding = jpeg_coding(baseline);
    REQUIRE(coding);
    CHECK_FALSE(coding->progressive);
    CHECK(gpu_decodable(*coding));
    CHECK(coding->components == channels);
    CHECK_FALSE(progressive_to_transcode(*coding));
    for (const JpegScale scale : {JpegScale{1, 1}, JpegScale{1, 2}, JpegScale{3, 8}})
      CHECK(decode_image(baseline, "b.jpg", scale, JpegChroma::replicated).pixels ==
            decode_image(progressive, "p.jpg", scale, JpegChroma::replicated).pixels);
    const PixelRect region{30, 20, 50, 40};
    for (const JpegChroma chroma : {JpegChroma::replicated, JpegChroma::smooth})
      CHECK(decode_jpeg_window(baseline, "b.jpg", {1, 1}, region, chroma).image.pixels ==
            decode_jpeg_window(progressive, "p.jpg", {1, 1}, region, chroma).image.pixels);
  }
}

TEST_CASE("transcoding refuses what is not a whole JPEG, and leaves CMYK and baseline files alone", "[data]") {
  std::vector<uint8_t> cut = encode_jpeg_pixels(pixels(64, 64, 3), 64, 64, TJPF_RGB, 90, TJSAMP_420, TJFLAG_PROGRESSIVE);
  cut.resize(cut.size() * 2 / 3);
  CHECK_THROWS_WITH(transcode_to_baseline(cut, "cut.jpg"), Catch::Contains("cut.jpg: truncated JPEG"));
  CHECK_THROWS_WITH(transcode_to_baseline({0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}, "x.png"), Catch::Contains("x.png: corrupt JPEG"));
  CHECK_FALSE(
      progressive_to_transcode(*jpeg_coding(encode_jpeg_pixels(pixels(8, 8, 4), 8, 8, TJPF_CMYK, 90, TJSAMP_444, TJFLAG_PROGRESSIVE))));
  CHECK_FALSE(progressive_to_transcode(*jpeg_coding(encode_jpeg_pixels(pixels(8, 8, 3), 8, 8, TJPF_RGB))));
}
