// JSON parsing and printing for the autotuner's decision files.
#include "json.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tilejit::detail {

std::optional<double> Json::as_number() const {
  if (type_ == Type::integer) return static_cast<double>(int_);
  if (type_ == Type::number) return number_;
  return std::nullopt;
}

const Json* Json::find(std::string_view name) const {
  for (const auto& [k, v] : members_)
    if (k == name) return &v;
  return nullptr;
}

Json& Json::push(Json v) {
  items_.push_back(std::move(v));
  return items_.back();
}

Json& Json::set(std::string name, Json v) {
  for (auto& [k, existing] : members_)
    if (k == name) return existing = std::move(v);
  members_.emplace_back(std::move(name), std::move(v));
  return members_.back().second;
}

namespace {

void dump_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

}  // namespace

void Json::dump_to(std::string& out, int indent) const {
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  switch (type_) {
    case Type::null:
      out += "null";
      break;
    case Type::boolean:
      out += bool_ ? "true" : "false";
      break;
    case Type::integer:
      out += std::to_string(int_);
      break;
    case Type::number: {
      if (!std::isfinite(number_)) {
        out += "null";  // JSON has no infinities
        break;
      }
      char buf[32];
      const auto end = std::to_chars(buf, buf + sizeof buf, number_).ptr;  // the shortest text that reads back exactly
      const std::string_view text(buf, static_cast<size_t>(end - buf));
      out += text;
      if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
      break;
    }
    case Type::string:
      dump_string(out, string_);
      break;
    case Type::array:
      if (items_.empty()) {
        out += "[]";
        break;
      }
      out += "[\n";
      for (size_t i = 0; i < items_.size(); ++i) {
        out += pad;
        items_[i].dump_to(out, indent + 2);
        out += i + 1 < items_.size() ? ",\n" : "\n";
      }
      out.append(static_cast<size_t>(indent), ' ').push_back(']');
      break;
    case Type::object:
      if (members_.empty()) {
        out += "{}";
        break;
      }
      out += "{\n";
      for (size_t i = 0; i < members_.size(); ++i) {
        out += pad;
        dump_string(out, members_[i].first);
        out += ": ";
        members_[i].second.dump_to(out, indent + 2);
        out += i + 1 < members_.size() ? ",\n" : "\n";
      }
      out.append(static_cast<size_t>(indent), ' ').push_back('}');
      break;
  }
}

std::string Json::dump() const {
  std::string out;
  dump_to(out, 0);
  out.push_back('\n');
  return out;
}

// A recursive-descent parser; every failure records the first problem and its offset.
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  std::optional<Json> document(std::string& error) {
    Json v;
    skip_space();
    if (value(v, 0)) {
      skip_space();
      if (pos_ == text_.size()) return v;
      fail("unexpected text after the value");
    }
    error = error_ + " at byte " + std::to_string(error_pos_);
    return std::nullopt;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool fail(const char* what) {
    if (error_.empty()) {
      error_ = what;
      error_pos_ = pos_;
    }
    return false;
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return fail("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool value(Json& out, int depth) {
    if (depth > kMaxDepth) return fail("nesting too deep");
    if (pos_ >= text_.size()) return fail("unexpected end of text");
    switch (text_[pos_]) {
      case '{':
        return object(out, depth);
      case '[':
        return array(out, depth);
      case '"':
        out.type_ = Json::Type::string;
        return string(out.string_);
      case 't':
        out = Json(true);
        return literal("true");
      case 'f':
        out = Json(false);
        return literal("false");
      case 'n':
        out = Json();
        return literal("null");
      default:
        return number(out);
    }
  }

  bool object(Json& out, int depth) {
    out = Json::object();
    ++pos_;
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a member name");
      std::string name;
      if (!string(name)) return false;
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':'");
      ++pos_;
      skip_space();
      Json v;
      if (!value(v, depth + 1)) return false;
      out.set(std::move(name), std::move(v));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool array(Json& out, int depth) {
    out = Json::array();
    ++pos_;
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_space();
      Json v;
      if (!value(v, depth + 1)) return false;
      out.push(std::move(v));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  bool hex4(unsigned& out) {
    if (text_.size() - pos_ < 4) return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const int d = hex_digit(text_[pos_++]);
      if (d < 0) return fail("invalid \\u escape");
      out = out * 16 + static_cast<unsigned>(d);
    }
    return true;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  bool string(std::string& out) {
    ++pos_;  // the opening quote
    for (;;) {
      if (pos_ >= text_.size()) return fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) return fail("unterminated string");
      switch (text_[pos_++]) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          unsigned cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
            unsigned low = 0;
            if (text_.substr(pos_, 2) != "\\u") return fail("unpaired surrogate");
            pos_ += 2;
            if (!hex4(low) || low < 0xdc00 || low >= 0xe000) return fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          return fail("invalid escape");
      }
    }
  }

  bool number(Json& out) {
    const size_t start = pos_;
    bool integral = true;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    const size_t digits = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    if (pos_ == digits) return fail("invalid value");
    if (text_[digits] == '0' && pos_ - digits > 1) return fail("leading zero in a number");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      const size_t frac = ++pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == frac) return fail("digits expected after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      const size_t exp = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == exp) return fail("digits expected in the exponent");
    }
    const std::string token(text_.substr(start, pos_ - start));
    if (integral) {
      errno = 0;
      const long long v = std::strtoll(token.c_str(), nullptr, 10);
      if (errno == 0) {
        out = Json(static_cast<int64_t>(v));
        return true;
      }
    }
    out = Json(std::strtod(token.c_str(), nullptr));
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
  size_t error_pos_ = 0;
};

std::optional<Json> Json::parse(std::string_view text, std::string& error) {
  return JsonParser(text).document(error);
}

}  // namespace tilejit::detail
