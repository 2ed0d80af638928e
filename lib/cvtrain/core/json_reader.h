// A small JSON reader for the files cvtrain itself writes (metrics.jsonl, perf_summary.json,
// provenance.json) and reads back for reports: objects keep their key order; errors name where.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cvtrain {

class JsonValue {
 public:
  using Array = std::vector<JsonValue>;
  using Object = std::vector<std::pair<std::string, JsonValue>>;

  JsonValue() = default;  // null
  explicit JsonValue(bool b) : value_(b) {}
  explicit JsonValue(double d) : value_(d) {}
  explicit JsonValue(std::string s) : value_(std::move(s)) {}
  explicit JsonValue(Array a) : value_(std::move(a)) {}
  explicit JsonValue(Object o) : value_(std::move(o)) {}

  bool is_null() const { return std::holds_alternative<std::monostate>(value_); }
  bool is_number() const { return std::holds_alternative<double>(value_); }
  bool is_string() const { return std::holds_alternative<std::string>(value_); }
  bool is_array() const { return std::holds_alternative<Array>(value_); }
  bool is_object() const { return std::holds_alternative<Object>(value_); }

  // The value of each kind, or nullopt / empty when it is of another kind.
  std::optional<double> number() const;
  std::optional<std::string> string() const;
  const Array& array() const;
  const Object& object() const;
  // An object's member, or a null value when this is no object or has no such key.
  const JsonValue& operator[](const std::string& key) const;
  // A member's number, or nullopt when it is missing, null or not a number.
  std::optional<double> number(const std::string& key) const { return (*this)[key].number(); }
  std::string text(const std::string& key) const { return (*this)[key].string().value_or(""); }

 private:
  std::variant<std::monostate, bool, double, std::string, Array, Object> value_;
};

// Parses one JSON document; throws Error "WHERE: column C: what was expected" on bad input.
JsonValue parse_json(const std::string& text, const std::string& where);

}  // namespace cvtrain
