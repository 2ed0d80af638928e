// Recursive-descent JSON parsing (RFC 8259) for cvtrain's own files (see json_reader.h).
#include "cvtrain/core/json_reader.h"

#include <fmt/format.h>

#include <cstdlib>

#include "cvtrain/core/error.h"

namespace cvtrain {

std::optional<double> JsonValue::number() const {
  if (const double* d = std::get_if<double>(&value_)) return *d;
  return std::nullopt;
}

std::optional<std::string> JsonValue::string() const {
  if (const std::string* s = std::get_if<std::string>(&value_)) return *s;
  return std::nullopt;
}

const JsonValue::Array& JsonValue::array() const {
  static const Array kEmpty;
  const Array* a = std::get_if<Array>(&value_);
  return a ? *a : kEmpty;
}

const JsonValue::Object& JsonValue::object() const {
  static const Object kEmpty;
  const Object* o = std::get_if<Object>(&value_);
  return o ? *o : kEmpty;
}

const JsonValue& JsonValue::operator[](const std::string& key) const {
  static const JsonValue kNull;
  for (const auto& [name, value] : object())
    if (name == key) return value;
  return kNull;
}

namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& where) : text_(text), where_(where) {}

  JsonValue document() {
    JsonValue v = value();
    skip_space();
    if (pos_ != text_.size()) fail("end of the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const {
    const std::string found = pos_ < text_.size() ? fmt::format("'{}'", text_[pos_]) : "the end";
    throw Error(fmt::format("{}: column {}: expected {}, found {}", where_, pos_ + 1, expected, found));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) ++pos_;
  }

  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!take(c)) fail(fmt::format("'{}'", c));
  }

  bool take_word(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  JsonValue value() {
    skip_space();
    if (pos_ >= text_.size()) fail("a value");
    const char c = text_[pos_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return JsonValue(string());
    if (take_word("null")) return JsonValue();
    if (take_word("true")) return JsonValue(true);
    if (take_word("false")) return JsonValue(false);
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail("a value");
  }

  JsonValue object() {
    expect('{');
    JsonValue::Object members;
    if (take('}')) return JsonValue(std::move(members));
    do {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("a key in quotes");
      std::string key = string();
      expect(':');
      members.emplace_back(std::move(key), value());
    } while (take(','));
    expect('}');
    return JsonValue(std::move(members));
  }

  JsonValue array() {
    expect('[');
    JsonValue::Array items;
    if (take(']')) return JsonValue(std::move(items));
    do items.push_back(value());
    while (take(','));
    expect(']');
    return JsonValue(std::move(items));
  }

  JsonValue number() {
    const char* begin = text_.c_str() + pos_;
    char* end = nullptr;
    const double d = std::strtod(begin, &end);
    if (end == begin) fail("a number");
    pos_ += static_cast<size_t>(end - begin);
    return JsonValue(d);
  }

  void append_utf8(unsigned code, std::string& out) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size()) fail("four hex digits");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9') code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') code |= static_cast<unsigned>(h - 'A' + 10);
      else fail("a hex digit");
    }
    return code;
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      const char c = text_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("an escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xD800 && code < 0xDC00 && take_word("\\u")) code = 0x10000 + ((code - 0xD800) << 10) + (hex4() - 0xDC00);
          append_utf8(code, out);
          break;
        }
        default: --pos_; fail("an escape (\\\", \\\\, \\n, \\uXXXX ...)");
      }
    }
    if (pos_ >= text_.size()) fail("a closing quote");
    ++pos_;
    return out;
  }

  const std::string& text_;
  const std::string& where_;
  size_t pos_ = 0;
};

}  // namespace

JsonValue parse_json(const std::string& text, const std::string& where) { return Parser(text, where).document(); }

}  // namespace cvtrain
