// .npy header parsing: a small parser for the Python dict literal numpy writes (key order not assumed).
#include "loader/format/npy.h"

#include <cctype>
#include <cstring>
#include <limits>

namespace feedrate {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// Cursor over the header dict literal.
struct LiteralParser {
  std::string_view s;
  size_t i = 0;

  void SkipSpace() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool Eat(char c) {
    SkipSpace();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool String(std::string* out) {
    SkipSpace();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) return false;
    char q = s[i++];
    out->clear();
    while (i < s.size() && s[i] != q) {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out->push_back(s[i++]);
    }
    if (i >= s.size()) return false;
    ++i;
    return true;
  }
  bool Word(std::string* out) {
    SkipSpace();
    out->clear();
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) out->push_back(s[i++]);
    return !out->empty();
  }
  // Skips any value (used for structured dtype lists), tracking bracket depth and strings.
  bool SkipValue() {
    SkipSpace();
    int depth = 0;
    std::string tmp;
    while (i < s.size()) {
      char c = s[i];
      if (c == '\'' || c == '"') {
        if (!String(&tmp)) return false;
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) return true;
        --depth;
      }
      if (c == ',' && depth == 0) return true;
      ++i;
    }
    return depth == 0;
  }
};

Status Bad(const std::string& name, const std::string& why) {
  return Status::Corruption(name + ": not a valid .npy header: " + why);
}

// Item size of a simple descr such as "<f4", "|u1", "<U7", "|S3", "<M8[ns]".
Result<uint64_t> ItemSize(const std::string& descr, const std::string& name) {
  if (descr.size() < 2) return Bad(name, "dtype descr '" + descr + "' too short");
  size_t k = 0;
  if (std::strchr("<>|=", descr[0]) != nullptr) k = 1;
  char kind = descr[k];
  if (kind == 'O') return Status::Unsupported(name + ": unsupported dtype '" + descr + "' (object arrays need pickle)");
  if (std::strchr("biufcUSVMm", kind) == nullptr) {
    return Status::Unsupported(name + ": unsupported dtype '" + descr + "'");
  }
  uint64_t n = 0;
  size_t j = k + 1;
  if (j >= descr.size() || !std::isdigit(static_cast<unsigned char>(descr[j]))) {
    return Bad(name, "dtype descr '" + descr + "' has no size");
  }
  for (; j < descr.size() && std::isdigit(static_cast<unsigned char>(descr[j])); ++j) {
    n = n * 10 + static_cast<uint64_t>(descr[j] - '0');
    if (n > (1ull << 32)) return Bad(name, "dtype size too large in '" + descr + "'");
  }
  if (j != descr.size() && descr[j] != '[') return Bad(name, "malformed dtype descr '" + descr + "'");
  if (kind == 'U') n *= 4;  // UTF-32 code units
  return n;
}

}  // namespace

Result<uint64_t> NpyDataOffset(std::string_view prefix, std::string_view name) {
  if (prefix.size() < 10 || std::memcmp(prefix.data(), kMagic, 6) != 0) {
    return Status::Corruption(std::string(name) + ": not a .npy file (bad magic)");
  }
  int major = static_cast<unsigned char>(prefix[6]);
  if (major == 1) {
    uint32_t hl = static_cast<unsigned char>(prefix[8]) | (static_cast<unsigned char>(prefix[9]) << 8);
    return 10ull + hl;
  }
  if (major == 2 || major == 3) {
    if (prefix.size() < 12) return Status::Corruption(std::string(name) + ": truncated .npy header");
    uint32_t hl = 0;
    for (int b = 3; b >= 0; --b) hl = (hl << 8) | static_cast<unsigned char>(prefix[8 + b]);
    return 12ull + hl;
  }
  return Status::Unsupported(std::string(name) + ": unsupported .npy format version " + std::to_string(major));
}

Result<NpyHeader> ParseNpyHeader(std::string_view prefix, const std::string& name) {
  FEEDRATE_ASSIGN_OR_RETURN(auto off, NpyDataOffset(prefix, name));
  NpyHeader h;
  h.major = static_cast<unsigned char>(prefix[6]);
  h.minor = static_cast<unsigned char>(prefix[7]);
  h.data_offset = off;
  size_t start = h.major == 1 ? 10 : 12;
  h.header_len = static_cast<uint32_t>(h.data_offset - start);
  if (prefix.size() < h.data_offset) {
    return Status::Corruption(name + ": truncated .npy header (" + std::to_string(prefix.size()) + " of " +
                              std::to_string(h.data_offset) + " bytes)");
  }
  h.header_text.assign(prefix.substr(start, h.header_len));

  LiteralParser p{h.header_text};
  if (!p.Eat('{')) return Bad(name, "header is not a dict");
  bool have_descr = false, have_order = false, have_shape = false, structured = false;
  while (!p.Eat('}')) {
    std::string key;
    if (!p.String(&key) || !p.Eat(':')) return Bad(name, "malformed dict");
    if (key == "descr") {
      p.SkipSpace();
      if (p.i < p.s.size() && p.s[p.i] == '[') {
        structured = true;
        if (!p.SkipValue()) return Bad(name, "malformed structured descr");
      } else if (!p.String(&h.descr)) {
        return Bad(name, "descr is not a string");
      }
      have_descr = true;
    } else if (key == "fortran_order") {
      std::string w;
      if (!p.Word(&w) || (w != "True" && w != "False")) return Bad(name, "fortran_order is not True/False");
      h.fortran_order = w == "True";
      have_order = true;
    } else if (key == "shape") {
      if (!p.Eat('(')) return Bad(name, "shape is not a tuple");
      while (!p.Eat(')')) {
        std::string w;
        if (!p.Word(&w)) return Bad(name, "shape entry is not an integer");
        uint64_t v = 0;
        for (char c : w) {
          if (!std::isdigit(static_cast<unsigned char>(c))) return Bad(name, "shape entry '" + w + "' is not an integer");
          if (v > std::numeric_limits<uint64_t>::max() / 10) return Bad(name, "shape entry too large");
          v = v * 10 + static_cast<uint64_t>(c - '0');
        }
        h.shape.push_back(v);
        p.Eat(',');
      }
      have_shape = true;
    } else {
      if (!p.SkipValue()) return Bad(name, "malformed value for key '" + key + "'");
    }
    if (!p.Eat(',')) {
      if (!p.Eat('}')) return Bad(name, "malformed dict");
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape) return Bad(name, "missing descr, fortran_order or shape");
  if (structured) return Status::Unsupported(name + ": unsupported dtype (structured array)");
  FEEDRATE_ASSIGN_OR_RETURN(auto isz, ItemSize(h.descr, name));
  h.itemsize = isz;
  h.count = 1;
  for (uint64_t d : h.shape) {
    if (d != 0 && h.count > std::numeric_limits<uint64_t>::max() / d) return Bad(name, "shape overflows");
    h.count *= d;
  }
  if (h.itemsize != 0 && h.count > std::numeric_limits<uint64_t>::max() / h.itemsize) return Bad(name, "size overflows");
  h.nbytes = h.count * h.itemsize;
  return h;
}

std::string MakeNpyHeader(const std::string& descr, const std::vector<uint64_t>& shape, bool fortran_order) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran_order ? "True" : "False") + ", 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  // numpy (>= 1.21) leaves room to grow the first (C order) or last (Fortran order) axis in place.
  if (!shape.empty()) {
    size_t digits = std::to_string(fortran_order ? shape.back() : shape.front()).size();
    if (digits < 21) dict.append(21 - digits, ' ');
  }
  // Then pads with spaces and a final '\n' so that the data starts on a 64-byte boundary; like
  // numpy's _wrap_header, the pad is 1..64 spaces, never 0.
  size_t used = 10 + dict.size() + 1;
  dict.append(64 - used % 64, ' ');
  dict.push_back('\n');
  std::string out(kMagic, 6);
  out.push_back('\x01');
  out.push_back('\x00');
  uint16_t hl = static_cast<uint16_t>(dict.size());
  out.push_back(static_cast<char>(hl & 0xff));
  out.push_back(static_cast<char>(hl >> 8));
  out += dict;
  return out;
}

}  // namespace feedrate
