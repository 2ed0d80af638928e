// Decoding: DCT-scaled JPEG, grayscale/CMYK JPEG, PNG with alpha, 16 bits or an EXIF orientation, broken files; the
// per-sample pipeline's scaled decode matches the full-size one.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cvtrain/core/error.h"
#include "cvtrain/data/image_decode.h"
#include "cvtrain/data/image_views.h"
#include "cvtrain/data/image_folder.h"
#include "cvtrain/data/sample_pipeline.h"
#include "cvtrain/recipe/recipe.h"
#include "image_files.h"

using namespace cvtrain;
using cvtrain::testing::encode_jpeg;
using cvtrain::testing::encode_jpeg_pixels;
using cvtrain::testing::encode_png;
using cvtrain::testing::TempDir;
using cvtrain::testing::write_bytes;

namespace {

// A smooth RGB picture (so JPEG keeps it well and scaled decodes can be compared).
std::vector<uint8_t> smooth_rgb(int w, int h) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * w + x) * 3];
      p[0] = static_cast<uint8_t>(255.0 * x / w);
      p[1] = static_cast<uint8_t>(255.0 * y / h);
      p[2] = static_cast<uint8_t>(128 + 100 * std::sin(x / 40.0) * std::cos(y / 30.0));
    }
  return rgb;
}

double mean_abs_difference(const Image& a, const Image& b) {
  REQUIRE(a.pixels.size() == b.pixels.size());
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) sum += std::abs(int{a.pixels[i]} - int{b.pixels[i]});
  return sum / static_cast<double>(a.pixels.size());
}

}  // namespace

TEST_CASE("JPEG decodes at DCT scales, and the scale chosen still covers the crop", "[data]") {
  const auto jpeg = encode_jpeg_pixels(smooth_rgb(800, 600), 800, 600, TJPF_RGB);
  REQUIRE(jpeg_size(jpeg, "x.jpg").has_value());
  CHECK(jpeg_size(jpeg, "x.jpg")->width == 800);
  const Image half = decode_image(jpeg, "x.jpg", JpegScale{1, 2}, JpegChroma::replicated);
  CHECK(half.width == 400);
  CHECK(half.height == 300);
  const Image eighth = decode_image(jpeg, "x.jpg", JpegScale{1, 8}, JpegChroma::replicated);
  CHECK(eighth.width == 100);
  // A 600x600 crop to 224: 3/8 gives 225 >= 224 (1/4 would give 150).
  const JpegScale s = jpeg_scale_covering({800, 600}, {600, 600}, {224, 224});
  CHECK(s.num * 8 == 3 * s.den);
  // A crop already smaller than the output is decoded at full size.
  const JpegScale full = jpeg_scale_covering({800, 600}, {200, 150}, {224, 224});
  CHECK(full.num == full.den);
  CHECK_FALSE(jpeg_size({0x89, 'P', 'N', 'G'}, "x.png").has_value());
}

TEST_CASE("a window decode has exactly the pixels of a full decode at the same scale", "[data]") {
  const auto jpeg = encode_jpeg_pixels(smooth_rgb(640, 480), 640, 480, TJPF_RGB);
  for (const JpegScale scale : {JpegScale{1, 1}, JpegScale{1, 2}, JpegScale{3, 8}}) {
    const Image full = decode_image(jpeg, "x.jpg", scale, JpegChroma::replicated);
    const ImageWindow window = decode_jpeg_window(jpeg, "x.jpg", scale, PixelRect{170, 95, 300, 210}, JpegChroma::replicated);
    CHECK(window.full.width == full.width);
    CHECK(window.full.height == full.height);
    // The window covers the region (scaled) and is no taller than it needs to be.
    const double f = static_cast<double>(full.width) / 640;
    CHECK(window.x <= 170 * f);
    CHECK(window.y <= 95 * f);
    CHECK(window.x + window.image.width >= (170 + 300) * f);
    CHECK(window.y + window.image.height >= (95 + 210) * f);
    CHECK(window.image.height <= 210 * f + 3);
    bool same = true;
    for (int y = 0; y < window.image.height; ++y)
      for (int x = 0; x < window.image.width * 3; ++x)
        same = same && window.image.pixels[static_cast<size_t>(y) * window.image.width * 3 + x] ==
                           full.pixels[static_cast<size_t>(y + window.y) * full.width * 3 + window.x * 3 + x];
    CHECK(same);
  }
}

TEST_CASE("a truncated JPEG fails when the crop needs the missing rows, and only then", "[data]") {
  const auto jpeg = encode_jpeg_pixels(smooth_rgb(256, 256), 256, 256, TJPF_RGB);
  const std::vector<uint8_t> half(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(jpeg.size() * 6 / 10));
  CHECK_THROWS_WITH(decode_view(half, "half.jpg", ImageView::exact), Catch::Contains("half.jpg") && Catch::Contains("truncated"));
  CHECK_THROWS_WITH(decode_jpeg_window(half, "half.jpg", {}, PixelRect{0, 200, 64, 50}, JpegChroma::replicated), Catch::Contains("truncated"));
  CHECK_NOTHROW(decode_jpeg_window(half, "half.jpg", {}, PixelRect{0, 0, 64, 40}, JpegChroma::replicated));
}

TEST_CASE("the scaled decode path gives what full-size decoding gives", "[data]") {
  TempDir dir;
  write_bytes(dir, "root/a/big.jpg", encode_jpeg_pixels(smooth_rgb(1000, 750), 1000, 750, TJPF_RGB, 98));
  const ImageFolderDataset set(dir.file("root"), 0);
  AugmentSpec augment;
  augment.random_resized_crop = {0.5, 1.0};
  augment.hflip = FlipChance{0.5};
  for (size_t key : {0, 1, 2, 3}) {
    const SampleTransform t{&augment, 112, 9, static_cast<int64_t>(key)};
    const Image fast = prepare_sample(set, 0, t);  // decoded at 1/4 to 1/2 scale
    const Image reference = transform_sample(set.load(0), t, 0);
    CHECK(fast.width == 112);
    CHECK(mean_abs_difference(fast, reference) < 3.0);
  }
}

TEST_CASE("grayscale and CMYK JPEGs decode to RGB", "[data]") {
  const std::vector<uint8_t> gray(16 * 16, 90);
  const Image g = decode_view(encode_jpeg_pixels(gray, 16, 16, TJPF_GRAY), "gray.jpg", ImageView::exact);
  CHECK(g.channels == 3);
  CHECK(std::abs(int{g.pixels[0]} - 90) <= 2);
  CHECK(g.pixels[0] == g.pixels[1]);
  CHECK(g.pixels[1] == g.pixels[2]);
  // Inverted CMYK as Photoshop writes it: stored (C, M, Y, K) = (255, 128, 0, 255) is red 255,
  // green 128, blue 0.
  std::vector<uint8_t> cmyk;
  for (int i = 0; i < 16 * 16; ++i) cmyk.insert(cmyk.end(), {255, 128, 0, 255});
  const Image c = decode_view(encode_jpeg_pixels(cmyk, 16, 16, TJPF_CMYK), "cmyk.jpg", ImageView::exact);
  CHECK(c.channels == 3);
  CHECK(std::abs(int{c.pixels[0]} - 255) <= 4);
  CHECK(std::abs(int{c.pixels[1]} - 128) <= 4);
  CHECK(std::abs(int{c.pixels[2]} - 0) <= 4);
}

TEST_CASE("PNGs with alpha, 16 bits or one channel decode to 8-bit RGB", "[data]") {
  std::vector<uint8_t> rgba;
  for (int i = 0; i < 4 * 3; ++i) rgba.insert(rgba.end(), {200, 100, 50, 7});
  const Image a = decode_view(encode_png(rgba, 4, 3, 6, 8), "alpha.png", ImageView::exact);
  CHECK(a.channels == 3);
  CHECK(a.width == 4);
  CHECK(a.pixels == std::vector<uint8_t>{200, 100, 50, 200, 100, 50, 200, 100, 50, 200, 100, 50,
                                         200, 100, 50, 200, 100, 50, 200, 100, 50, 200, 100, 50,
                                         200, 100, 50, 200, 100, 50, 200, 100, 50, 200, 100, 50});
  std::vector<uint8_t> deep;  // 16-bit big-endian: 0xC800 -> 200
  for (int i = 0; i < 2 * 2 * 3; ++i) deep.insert(deep.end(), {0xC8, 0x00});
  const Image d = decode_view(encode_png(deep, 2, 2, 2, 16), "deep.png", ImageView::exact);
  CHECK(d.channels == 3);
  CHECK(d.pixels[0] == 200);
  const Image gray = decode_view(encode_png(std::vector<uint8_t>(9, 33), 3, 3, 0, 8), "gray.png", ImageView::exact);
  CHECK(gray.channels == 3);
  CHECK(gray.pixels[4] == 33);
}

TEST_CASE("an EXIF orientation is not applied, as Pillow and torchvision's loader do not, so every format reads as stored", "[data]") {
  std::vector<uint8_t> rgb(4 * 2 * 3, 0);  // 4 wide, 2 high; the top-left pixel red
  rgb[0] = 255;
  const Image image = decode_view(encode_png(rgb, 4, 2, 2, 8, 6), "phone.png", ImageView::exact);
  CHECK(image.width == 4);
  CHECK(image.height == 2);
  CHECK(image.pixels[0] == 255);
}

// libpng's own handlers printed "libpng error: ..." into the middle of data inspect's progress
// line; its words now come in cvtrain's error, and nothing reaches the terminal by itself.
TEST_CASE("a PNG libpng refuses is an error with libpng's words, and libpng prints nothing itself", "[data]") {
  std::vector<uint8_t> png = encode_png(std::vector<uint8_t>(8 * 8 * 3, 90), 8, 8, 2, 8);
  // IDAT's zlib header spoiled, its CRC made right again, so that only the decoder can tell.
  const auto idat = std::search(png.begin(), png.end(), std::begin("IDAT"), std::end("IDAT") - 1);
  REQUIRE(idat != png.end());
  const size_t type_at = static_cast<size_t>(idat - png.begin());
  const uint32_t length = uint32_t{png[type_at - 4]} << 24 | uint32_t{png[type_at - 3]} << 16 | uint32_t{png[type_at - 2]} << 8 | png[type_at - 1];
  png[type_at + 4] = 0x00;
  png[type_at + 5] = 0x00;
  const auto crc = static_cast<uint32_t>(crc32(0, &png[type_at], 4 + length));
  for (int i = 0; i < 4; ++i) png[type_at + 4 + length + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  TempDir dir;
  const std::string captured = dir.file("stderr.txt");
  std::fflush(stderr);
  const int saved = dup(2);
  const int file = open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(file, 2);
  std::string message;
  try {
    decode_view(png, "spoiled.png", ImageView::exact);
  } catch (const Error& e) {
    message = e.what();
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(file);
  close(saved);
  CHECK_THAT(message, Catch::StartsWith("spoiled.png: damaged PNG (libpng: ") && Catch::Contains("IDAT"));
  CHECK(cvtrain::testing::read_text(captured).empty());
}

TEST_CASE("empty, truncated and non-image bytes are errors naming the file", "[data]") {
  const auto jpeg = encode_jpeg(64, 64, 100);
  CHECK_THROWS_WITH(decode_view({}, "zero.jpg", ImageView::exact), Catch::Contains("zero.jpg") && Catch::Contains("empty"));
  const std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(jpeg.size() / 2));
  CHECK_THROWS_WITH(decode_view(cut, "cut.jpg", ImageView::exact), Catch::Contains("cut.jpg"));
  const std::vector<uint8_t> header_only(jpeg.begin(), jpeg.begin() + 12);
  CHECK_THROWS_WITH(decode_view(header_only, "stub.jpg", ImageView::exact),
                    Catch::StartsWith("stub.jpg: truncated JPEG (the file ends after 12 bytes, before its image data"));
  CHECK_THROWS_WITH(decode_view({'h', 'e', 'l', 'l', 'o'}, "notes.png", ImageView::exact), Catch::Equals("notes.png: text, not an image: 'hello'"));
  CHECK_THROWS_WITH(decode_view({'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0}, "anim.jpg", ImageView::exact), Catch::StartsWith("anim.jpg: a GIF"));
}

TEST_CASE("every view but classification's decodes as Pillow, full size with chroma smoothed, as one table decides", "[data]") {
  CHECK(view_decode(ImageView::exact).chroma == JpegChroma::smooth);
  CHECK(view_decode(ImageView::exact).scaling == DctScaling::none);
  CHECK(view_decode(ImageView::classification_center).chroma == JpegChroma::smooth);
  CHECK(view_decode(ImageView::classification_center).scaling == DctScaling::halving);
  CHECK(view_decode(ImageView::classification_crop).chroma == JpegChroma::replicated);
  CHECK(view_decode(ImageView::classification_crop).scaling == DctScaling::covering_crop);
  // Red and blue halves in 4:2:0: the two upsamplings differ along the colour edge, and the exact
  // view has the smoothed pixels.
  std::vector<uint8_t> halves(32 * 16 * 3, 0);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 32; ++x) halves[static_cast<size_t>(y * 32 + x) * 3 + (x < 15 ? 0 : 2)] = 255;
  const auto jpeg = encode_jpeg_pixels(halves, 32, 16, TJPF_RGB);
  const Image exact = decode_view(jpeg, "halves.jpg", ImageView::exact);
  CHECK(exact.pixels == decode_image(jpeg, "halves.jpg", {}, JpegChroma::smooth).pixels);
  CHECK(exact.pixels != decode_image(jpeg, "halves.jpg", {}, JpegChroma::replicated).pixels);
  CHECK(view_jpeg_scale(DctScaling::none, {800, 600}, {800, 600}, {100, 75}).den == 1);
  CHECK(view_jpeg_scale(DctScaling::halving, {800, 600}, {800, 600}, {100, 75}).den == 8);
}
