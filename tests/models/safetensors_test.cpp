// safetensors: round trips, a file laid out by hand from the format's description, and malformed
// files that must be errors naming the file and tensor, never crashes.
#include "torch_catch.h"

#include <ATen/ATen.h>

#include <fstream>

#include "cvtrain/core/error.h"
#include "cvtrain/models/safetensors.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

// 8-byte little-endian header length, the JSON header, then the data bytes.
std::vector<uint8_t> file_bytes(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + data.size());  // one allocation (and no false -Wstringop-overread from GCC 12)
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string write_bytes(const TempDir& dir, const std::vector<uint8_t>& bytes) {
  const std::string path = dir.file("w.safetensors");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace

TEST_CASE("safetensors round trip keeps names, dtypes, shapes, values and metadata", "[models]") {
  TempDir dir;
  const NamedTensors tensors = {{"conv1.weight", at::randn({4, 3, 3, 3})},
                                {"fc.bias", at::arange(5, at::kDouble)},
                                {"bn1.num_batches_tracked", at::tensor(int64_t{7})},
                                {"half", at::randn({2, 2}).to(at::kBFloat16)},
                                {"empty", at::empty({0, 3})},
                                {"strided", at::randn({3, 4}).t()}};
  write_safetensors(dir.file("m.safetensors"), tensors, {{"format", "pt"}, {"note", "quote \" and \\ kept"}});
  const NamedTensors back = read_safetensors(dir.file("m.safetensors"));
  REQUIRE(back.size() == tensors.size());
  for (size_t i = 0; i < back.size(); ++i) {
    CHECK(back[i].first == tensors[i].first);
    CHECK(back[i].second.scalar_type() == tensors[i].second.scalar_type());
    CHECK(at::equal(back[i].second, tensors[i].second.contiguous()));
  }
  std::ifstream in(dir.file("m.safetensors"), std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const SafetensorsHeader header = parse_safetensors(bytes, "m");
  CHECK(header.metadata.at("note") == "quote \" and \\ kept");
  CHECK(header.data_start % 8 == 0);
  // The metadata alone, as written; a file without any reads as none.
  CHECK(read_safetensors_metadata(dir.file("m.safetensors")) == header.metadata);
  write_safetensors(dir.file("bare.safetensors"), tensors);
  CHECK(read_safetensors_metadata(dir.file("bare.safetensors")).empty());
}

TEST_CASE("a file laid out by hand from the format's description reads back", "[models]") {
  TempDir dir;
  // Two F32 values 1.0 and -2.0, then one U8 value 9, little-endian.
  const std::vector<uint8_t> data = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 9};
  const std::string header =
      R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[8,9]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("__metadata__":{"format":"pt"}})";
  const NamedTensors t = read_safetensors(write_bytes(dir, file_bytes(header, data)));
  REQUIRE(t.size() == 2);
  CHECK(t[0].first == "a");  // in data order
  CHECK(t[0].second[0].item<float>() == 1.0f);
  CHECK(t[0].second[1].item<float>() == -2.0f);
  CHECK(t[1].second[0].item<uint8_t>() == 9);
}

TEST_CASE("malformed safetensors files are errors naming what is wrong", "[models]") {
  TempDir dir;
  const std::vector<uint8_t> data(8, 0);
  struct Case {
    std::vector<uint8_t> bytes;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{1, 2, 3}, "too short"},
      {{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{', '}'}, "does not fit"},  // a 4 GiB header in a 10-byte file
      {file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", data), "ends early"},
      {file_bytes(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", data), "tensor 'a': missing or unknown dtype"},
      {file_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data), "need 12"},
      {file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8000]}})", data), "tensor 'a'"},
      {file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})", data),
       "overlap or gap"},
      {file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data), "cover 4 bytes but the data section has 8"},
      {file_bytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data), "non-negative"},
      {file_bytes(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", data), "fraction"},
      {file_bytes(R"([1,2])", data), "not an object"},
  };
  for (const auto& c : cases) {
    const std::string path = write_bytes(dir, c.bytes);
    INFO(c.expected);
    CHECK_THROWS_WITH(read_safetensors(path), Catch::Contains(path) && Catch::Contains(c.expected));
  }
}

TEST_CASE("a file of another weight format says which, not that its header is malformed", "[models]") {
  TempDir dir;
  const std::vector<uint8_t> zip = {'P', 'K', 3, 4, 0, 0, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0};  // torch.save / torch::save
  const std::vector<uint8_t> pickle = {0x80, 2, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8};  // legacy torch.save
  const std::string zip_path = write_bytes(dir, zip);
  CHECK_THROWS_AS(read_safetensors(zip_path), NotSafetensors);
  CHECK_THROWS_WITH(read_safetensors(zip_path), Catch::Contains(zip_path) && Catch::Contains("not a safetensors file") &&
                                                    Catch::Contains("zip archive") && Catch::Contains("torch.save"));
  CHECK_THROWS_WITH(read_safetensors(write_bytes(dir, pickle)), Catch::Contains("Python pickle"));
  CHECK_THROWS_AS(read_safetensors_metadata(zip_path), NotSafetensors);
  CHECK_THROWS_WITH(read_safetensors_metadata(write_bytes(dir, pickle)), Catch::Contains("Python pickle"));
  CHECK_THROWS_AS(read_safetensors_metadata(write_bytes(dir, {1, 2, 3})), NotSafetensors);  // shorter than its length field
}
