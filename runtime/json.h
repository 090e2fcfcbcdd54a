// A small JSON value with a strict parser and a printer, for the autotuner's decision files (private to
// runtime/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tilejit::detail {

/// A JSON value. Objects keep their members in insertion order (files read the way they were
/// written); integers that fit an int64 are kept exact.
class Json {
 public:
  enum class Type { null, boolean, integer, number, string, array, object };

  Json() = default;
  Json(bool b) : type_(Type::boolean), bool_(b) {}                     // NOLINT
  Json(int v) : type_(Type::integer), int_(v) {}                       // NOLINT
  Json(int64_t v) : type_(Type::integer), int_(v) {}                   // NOLINT
  Json(double v) : type_(Type::number), number_(v) {}                  // NOLINT
  Json(std::string s) : type_(Type::string), string_(std::move(s)) {}  // NOLINT
  Json(const char* s) : Json(std::string(s)) {}                        // NOLINT
  static Json array() { return Json(Type::array); }
  static Json object() { return Json(Type::object); }

  Type type() const { return type_; }
  bool is_object() const { return type_ == Type::object; }
  bool is_array() const { return type_ == Type::array; }
  bool is_string() const { return type_ == Type::string; }
  bool is_integer() const { return type_ == Type::integer; }
  bool is_number() const { return type_ == Type::integer || type_ == Type::number; }

  // Accessors; each returns nullopt / nullptr when the value has another type.
  std::optional<int64_t> as_int() const { return is_integer() ? std::optional(int_) : std::nullopt; }
  std::optional<double> as_number() const;
  const std::string* as_string() const { return is_string() ? &string_ : nullptr; }
  const std::vector<Json>& items() const { return items_; }                              ///< array elements
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }  ///< object members
  /// The member `name` of an object, or nullptr.
  const Json* find(std::string_view name) const;

  /// Appends to an array / sets a member of an object (replacing one of the same name).
  Json& push(Json v);
  Json& set(std::string name, Json v);

  /// The text of the value: objects and arrays over several lines, indented by two spaces.
  std::string dump() const;

  /// Parses a whole document (RFC 8259, nesting at most 64 deep). nullopt with `error` set (a
  /// message with the byte offset) when the text is not JSON.
  static std::optional<Json> parse(std::string_view text, std::string& error);

 private:
  explicit Json(Type t) : type_(t) {}
  void dump_to(std::string& out, int indent) const;
  friend class JsonParser;

  Type type_ = Type::null;
  bool bool_ = false;
  int64_t int_ = 0;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace tilejit::detail
