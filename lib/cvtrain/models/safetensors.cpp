// safetensors I/O. The header is JSON; a small strict parser reads what the format uses (objects,
// arrays, strings, integers) and rejects anything else, so no JSON library is needed.
#include "cvtrain/models/safetensors.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cvtrain/core/error.h"
#include "cvtrain/core/text.h"
#include "cvtrain/core/weights_format.h"

namespace cvtrain {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct DtypeInfo {
  const char* name;
  at::ScalarType type;
  int64_t bytes;
};
constexpr DtypeInfo kDtypes[] = {{"F64", at::kDouble, 8}, {"F32", at::kFloat, 4}, {"F16", at::kHalf, 2}, {"BF16", at::kBFloat16, 2},
                                 {"I64", at::kLong, 8},   {"I32", at::kInt, 4},   {"I16", at::kShort, 2}, {"I8", at::kChar, 1},
                                 {"U8", at::kByte, 1},    {"BOOL", at::kBool, 1}};

const DtypeInfo* dtype_named(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const DtypeInfo& dtype_of(at::ScalarType type) {
  for (const auto& d : kDtypes)
    if (d.type == type) return d;
  throw Error(fmt::format("safetensors: cannot store dtype {}", c10::toString(type)));
}

// A JSON value restricted to what safetensors headers hold.
struct Json {
  enum Kind { kObject, kArray, kString, kInteger } kind = kObject;
  std::vector<std::pair<std::string, Json>> members;
  std::vector<Json> items;
  std::string text;
  int64_t integer = 0;
};

class JsonParser {
 public:
  JsonParser(const char* begin, const char* end, const std::string& source) : p_(begin), end_(end), source_(source) {}

  Json parse_document() {
    Json value = parse_value(0);
    skip_space();
    if (p_ != end_) fail("unexpected text after the header object");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(fmt::format("{}: malformed safetensors header: {}", source_, what)); }
  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  char peek() {
    skip_space();
    if (p_ == end_) fail("ends early");
    return *p_;
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++p_;
  }

  Json parse_value(int depth) {
    if (depth > 8) fail("nested too deeply");
    const char c = peek();
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Json{Json::kString, {}, {}, parse_string(), 0};
    if (c == '-' || (c >= '0' && c <= '9')) return Json{Json::kInteger, {}, {}, {}, parse_integer()};
    fail("expected an object, array, string or integer");
  }

  Json parse_object(int depth) {
    Json object{Json::kObject, {}, {}, {}, 0};
    expect('{');
    if (peek() == '}') return ++p_, object;
    for (;;) {
      if (peek() != '"') fail("expected a key");
      std::string key = parse_string();
      expect(':');
      object.members.emplace_back(std::move(key), parse_value(depth + 1));
      if (peek() == '}') return ++p_, object;
      expect(',');
    }
  }

  Json parse_array(int depth) {
    Json array{Json::kArray, {}, {}, {}, 0};
    expect('[');
    if (peek() == ']') return ++p_, array;
    for (;;) {
      array.items.push_back(parse_value(depth + 1));
      if (peek() == ']') return ++p_, array;
      expect(',');
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (p_ != end_ && *p_ != '"') {
      if (*p_ != '\\') {
        out += *p_++;
        continue;
      }
      if (++p_ == end_) break;
      const char e = *p_++;
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': out += parse_unicode_escape(); break;
        default: fail("bad escape in a string");
      }
    }
    if (p_ == end_) fail("unterminated string");
    ++p_;
    return out;
  }

  // \uXXXX as UTF-8 (code points of the basic plane; names are almost always ASCII).
  std::string parse_unicode_escape() {
    if (end_ - p_ < 4) fail("short \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      const char h = *p_;
      code = code * 16 + static_cast<unsigned>(h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                                : h >= 'A' && h <= 'F' ? h - 'A' + 10 : (fail("bad \\u escape"), 0));
    }
    std::string out;
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
    return out;
  }

  int64_t parse_integer() {
    skip_space();
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_ || *p_ < '0' || *p_ > '9') fail("expected digits");
    uint64_t value = 0;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') {
      if (value > (uint64_t{1} << 62)) fail("integer too large");
      value = value * 10 + static_cast<uint64_t>(*p_++ - '0');
    }
    if (p_ != end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) fail("expected an integer, found a fraction");
    return negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
  }

  const char* p_;
  const char* end_;
  const std::string& source_;
};

const Json* member(const Json& object, const std::string& key) {
  for (const auto& [k, v] : object.members)
    if (k == key) return &v;
  return nullptr;
}

SafetensorEntry read_entry(const std::string& name, const Json& spec, const std::string& source) {
  auto fail = [&](const std::string& what) { return Error(fmt::format("{}: tensor '{}': {}", source, name, what)); };
  if (spec.kind != Json::kObject) throw fail("expected {dtype, shape, data_offsets}");
  const Json* dtype = member(spec, "dtype");
  const Json* shape = member(spec, "shape");
  const Json* offsets = member(spec, "data_offsets");
  if (!dtype || dtype->kind != Json::kString || !dtype_named(dtype->text)) throw fail("missing or unknown dtype");
  if (!shape || shape->kind != Json::kArray) throw fail("missing shape");
  if (!offsets || offsets->kind != Json::kArray || offsets->items.size() != 2) throw fail("data_offsets must be [begin, end]");
  SafetensorEntry entry{name, dtype->text, {}, 0, 0};
  int64_t numel = 1;
  for (const auto& d : shape->items) {
    if (d.kind != Json::kInteger || d.integer < 0 || d.integer > (int64_t{1} << 40)) throw fail("shape entries must be non-negative integers");
    entry.shape.push_back(d.integer);
    if (numel > 0 && d.integer > (int64_t{1} << 50) / numel) throw fail("shape is absurdly large");
    numel *= d.integer;
  }
  for (const auto& o : offsets->items)
    if (o.kind != Json::kInteger || o.integer < 0) throw fail("data_offsets must be non-negative integers");
  entry.begin = static_cast<uint64_t>(offsets->items[0].integer);
  entry.end = static_cast<uint64_t>(offsets->items[1].integer);
  const auto expected = static_cast<uint64_t>(numel * dtype_named(entry.dtype)->bytes);
  if (entry.end < entry.begin || entry.end - entry.begin != expected)
    throw fail(fmt::format("data_offsets [{}, {}] hold {} bytes, but {} of shape [{}] need {}", entry.begin, entry.end,
                           entry.end - entry.begin, entry.dtype, fmt::join(entry.shape, ", "), expected));
  return entry;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open", path));
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

NotSafetensors not_safetensors(const std::vector<uint8_t>& file, const std::string& source, const std::string& detail) {
  const std::string kind = other_weight_format(file.data(), file.size());
  return NotSafetensors(not_safetensors_message(source, kind.empty() ? detail : "it is " + kind));
}

// The header's __metadata__ object: strings to strings, as the format requires.
std::map<std::string, std::string> metadata_of(const Json& value, const std::string& source) {
  if (value.kind != Json::kObject) throw Error(fmt::format("{}: __metadata__ must map strings to strings", source));
  std::map<std::string, std::string> metadata;
  for (const auto& [key, v] : value.members) {
    if (v.kind != Json::kString) throw Error(fmt::format("{}: __metadata__ value of '{}' is not a string", source, key));
    metadata[key] = v.text;
  }
  return metadata;
}

}  // namespace

SafetensorsHeader parse_safetensors(const std::vector<uint8_t>& file, const std::string& source) {
  if (file.size() < 8) throw not_safetensors(file, source, fmt::format("{} bytes, too short", file.size()));
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | file[static_cast<size_t>(i)];
  if (header_bytes > kMaxHeaderBytes || header_bytes > file.size() - 8)
    throw not_safetensors(file, source, fmt::format("header length {} does not fit the {}-byte file", header_bytes, file.size()));
  const auto* text = reinterpret_cast<const char*>(file.data() + 8);
  const Json root = JsonParser(text, text + header_bytes, source).parse_document();
  if (root.kind != Json::kObject) throw Error(fmt::format("{}: malformed safetensors header: not an object", source));
  SafetensorsHeader header;
  header.data_start = 8 + header_bytes;
  for (const auto& [name, value] : root.members) {
    if (name != "__metadata__") {
      header.entries.push_back(read_entry(name, value, source));
      continue;
    }
    header.metadata = metadata_of(value, source);
  }
  std::sort(header.entries.begin(), header.entries.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  // The entries must tile the data section: no gaps, no overlaps, nothing past the end.
  uint64_t expected_begin = 0;
  for (const auto& e : header.entries) {
    if (e.begin != expected_begin)
      throw Error(fmt::format("{}: tensor '{}' starts at byte {} of the data, expected {} (overlap or gap)", source, e.name, e.begin,
                              expected_begin));
    expected_begin = e.end;
  }
  if (expected_begin != file.size() - header.data_start)
    throw Error(fmt::format("{}: tensors cover {} bytes but the data section has {}", source, expected_begin,
                            file.size() - header.data_start));
  return header;
}

NamedTensors read_safetensors(const std::string& path) {
  const std::vector<uint8_t> file = read_file(path);
  const SafetensorsHeader header = parse_safetensors(file, path);
  NamedTensors tensors;
  for (const auto& e : header.entries) {
    const auto* dtype = dtype_named(e.dtype);
    at::Tensor t = at::empty(e.shape, at::TensorOptions().dtype(dtype->type));
    if (e.end > e.begin) std::memcpy(t.data_ptr(), file.data() + header.data_start + e.begin, e.end - e.begin);
    tensors.emplace_back(e.name, t);
  }
  return tensors;
}

std::map<std::string, std::string> read_safetensors_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open", path));
  std::vector<uint8_t> start(8);
  in.read(reinterpret_cast<char*>(start.data()), 8);
  start.resize(static_cast<size_t>(in.gcount()));
  uint64_t header_bytes = 0;
  for (size_t i = start.size(); i-- > 0;) header_bytes = (header_bytes << 8) | start[i];
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (start.size() < 8 || ec || header_bytes > kMaxHeaderBytes || header_bytes > size - 8)
    throw not_safetensors(start, path, fmt::format("header length {} does not fit the {}-byte file", header_bytes, ec ? 0 : size));
  std::string text(header_bytes, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(header_bytes))) throw Error(fmt::format("{}: cannot read its header", path));
  const Json root = JsonParser(text.data(), text.data() + text.size(), path).parse_document();
  if (root.kind != Json::kObject) throw Error(fmt::format("{}: malformed safetensors header: not an object", path));
  for (const auto& [name, value] : root.members)
    if (name == "__metadata__") return metadata_of(value, path);
  return {};
}

void write_safetensors(const std::string& path, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> contiguous;
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) json += (first ? "" : ",") + json_string(k) + ":" + json_string(v), first = false;
    json += "}";
  }
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    contiguous.push_back(tensor.detach().cpu().contiguous());
    const uint64_t bytes = static_cast<uint64_t>(contiguous.back().numel() * contiguous.back().element_size());
    json += fmt::format("{}{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", json.size() > 1 ? "," : "", json_string(name),
                        dtype_of(tensor.scalar_type()).name, fmt::join(tensor.sizes(), ","), offset, offset + bytes);
    offset += bytes;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(json.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(json.data(), static_cast<std::streamsize>(json.size()));
    for (const auto& t : contiguous) out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.numel() * t.element_size()));
    if (!out.flush()) throw Error(fmt::format("{}: cannot write ({})", temporary, std::strerror(errno)));
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw Error(fmt::format("{}: cannot rename into place ({})", path, ec.message()));
}

}  // namespace cvtrain
