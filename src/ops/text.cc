// Op family: text (StringNormalizer, TfIdfVectorizer, StringConcat, StringSplit,
// RegexFullMatch).
//
// RegexFullMatch compiles its pattern with RE2, the syntax ONNX specifies for it.
//
// Case mapping is locale-independent: strings are decoded from UTF-8 to code points, mapped
// with a built-in table of simple (one-to-one) case pairs and encoded back. The table covers
// ASCII, Latin-1, Latin Extended-A, Latin Extended Additional, Greek and Cyrillic; other
// code points, and bytes that are not valid UTF-8, pass through unchanged. (std::towupper in
// the "C" locale maps ASCII only, and switching the process locale is not ours to do.)
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <re2/re2.h>

#include "core/resource_limits.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// ---- UTF-8 and case mapping ----

// Decodes the code point at s[pos] into `cp` and advances `pos`; returns false (advancing
// nothing) for a malformed, overlong or surrogate sequence.
bool decode_utf8(std::string_view s, size_t& pos, char32_t& cp) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(pos);
  size_t length = 0;
  char32_t value = 0;
  char32_t min_value = 0;
  if (lead < 0x80) {
    cp = lead;
    ++pos;
    return true;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, value = lead & 0x1F, min_value = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, value = lead & 0x0F, min_value = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, value = lead & 0x07, min_value = 0x10000;
  } else {
    return false;
  }
  if (pos + length > s.size()) return false;
  for (size_t i = 1; i < length; ++i) {
    const unsigned char next = byte(pos + i);
    if ((next & 0xC0) != 0x80) return false;
    value = (value << 6) | (next & 0x3F);
  }
  if (value < min_value || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return false;
  cp = value;
  pos += length;
  return true;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Case pairs in the Latin blocks sit on adjacent code points; these runs say where.
bool in_pair_block(char32_t c, char32_t first, char32_t last) {
  return c >= first && c <= last;
}

char32_t to_upper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 0x20 : c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;  // Latin-1 (not ÷)
  if (c == 0xFF) return 0x178;                               // ÿ -> Ÿ
  if (c == 0xB5) return 0x39C;                               // micro sign -> Greek Mu
  if (c == 0x131) return 'I';                                // dotless i
  if (c == 0x17F) return 'S';                                // long s
  // Latin Extended-A: (even upper, odd lower) and (odd upper, even lower) runs.
  if ((in_pair_block(c, 0x100, 0x12F) || in_pair_block(c, 0x132, 0x137) ||
       in_pair_block(c, 0x14A, 0x177)) &&
      (c & 1))
    return c - 1;
  if ((in_pair_block(c, 0x139, 0x148) || in_pair_block(c, 0x179, 0x17E)) && !(c & 1)) return c - 1;
  // Latin Extended Additional (ẖ..ẝ and ß-like letters at 1E96-1E9F have no simple pair).
  if ((in_pair_block(c, 0x1E00, 0x1E95) || in_pair_block(c, 0x1EA0, 0x1EFF)) && (c & 1))
    return c - 1;
  // Greek: final sigma maps to capital sigma; 0x3C2 sits in the middle of the run.
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x3B1 && c <= 0x3C9) return c - 0x20;
  if (c >= 0x3AC && c <= 0x3AF) {  // tonos vowels
    static constexpr char32_t kUpper[] = {0x386, 0x388, 0x389, 0x38A};
    return kUpper[c - 0x3AC];
  }
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 0x3F;  // ύ ώ -> Ύ Ώ
  // Cyrillic.
  if (c >= 0x430 && c <= 0x44F) return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  return c;
}

char32_t to_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 0x20 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;  // Latin-1 (not ×)
  if (c == 0x178) return 0xFF;
  if (c == 0x130) return 'i';  // capital I with dot
  if ((in_pair_block(c, 0x100, 0x12F) || in_pair_block(c, 0x132, 0x137) ||
       in_pair_block(c, 0x14A, 0x177)) &&
      !(c & 1))
    return c + 1;
  if ((in_pair_block(c, 0x139, 0x148) || in_pair_block(c, 0x179, 0x17E)) && (c & 1)) return c + 1;
  if (c == 0x1E9E) return 0xDF;  // capital sharp s
  if ((in_pair_block(c, 0x1E00, 0x1E95) || in_pair_block(c, 0x1EA0, 0x1EFF)) && !(c & 1))
    return c + 1;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 0x25;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 0x3F;
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  return c;
}

// `s` with every letter mapped to upper (or lower) case; invalid UTF-8 bytes are kept as is.
std::string change_case(std::string_view s, bool upper) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp = 0;
    if (!decode_utf8(s, pos, cp)) {
      out += s[pos++];
      continue;
    }
    append_utf8(out, upper ? to_upper(cp) : to_lower(cp));
  }
  return out;
}

// ---- StringNormalizer ----

enum class CaseChange { kNone, kLower, kUpper };

class StringNormalizerKernel : public OpKernel {
 public:
  explicit StringNormalizerKernel(const KernelCreateContext& context) {
    const std::string action = context.attr_string("case_change_action", "NONE");
    if (action == "NONE") {
      case_change_ = CaseChange::kNone;
    } else if (action == "LOWER") {
      case_change_ = CaseChange::kLower;
    } else if (action == "UPPER") {
      case_change_ = CaseChange::kUpper;
    } else {
      context.fail("case_change_action '{}' is not one of LOWER, UPPER, NONE", action);
    }
    case_sensitive_ = context.attr_int("is_case_sensitive", 0) != 0;
    // `locale` is accepted but not consulted: the case table is locale-independent.
    for (const std::string& word : context.attr_strings("stopwords"))
      stopwords_.insert(case_sensitive_ ? word : change_case(word, false));
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != DType::kString)
      context.fail("input X has type {}, expected string", dtype_name(x.dtype()));
    const Shape& shape = x.shape();
    if (shape.size() != 1 && !(shape.size() == 2 && shape[0] == 1))
      context.fail("input X has shape {}, expected [C] or [1, C]", shape_to_string(shape));
    std::vector<std::string> kept;
    for (const std::string& word : x.strings()) {
      if (!stopwords_.empty() &&
          stopwords_.count(case_sensitive_ ? word : change_case(word, false)))
        continue;
      switch (case_change_) {
        case CaseChange::kNone:
          kept.push_back(word);
          break;
        case CaseChange::kLower:
          kept.push_back(change_case(word, false));
          break;
        case CaseChange::kUpper:
          kept.push_back(change_case(word, true));
          break;
      }
    }
    // With every word removed the output is one empty string: [1], or [1, 1] for [1, C].
    if (kept.empty()) kept.emplace_back();
    Shape out_shape = shape;
    out_shape.back() = static_cast<int64_t>(kept.size());
    context.set_output(0, Tensor::from_strings(std::move(out_shape), std::move(kept)));
  }

 private:
  CaseChange case_change_ = CaseChange::kNone;
  bool case_sensitive_ = false;
  std::unordered_set<std::string> stopwords_;
};

// ---- TfIdfVectorizer ----

enum class Weighting { kTF, kIDF, kTFIDF };

// Appends one n-gram item to a lookup key. Integers are keyed by their int64 bytes (so int32
// inputs match int64 pools); strings by their length then bytes (so keys never collide).
void append_key(std::string& key, int64_t value) {
  char bytes[sizeof(value)];
  std::memcpy(bytes, &value, sizeof(value));
  key.append(bytes, sizeof(value));
}
void append_key(std::string& key, const std::string& value) {
  append_key(key, static_cast<int64_t>(value.size()));
  key += value;
}

class TfIdfVectorizerKernel : public OpKernel {
 public:
  explicit TfIdfVectorizerKernel(const KernelCreateContext& context) {
    const std::string mode = context.attr_string("mode");
    if (mode == "TF") {
      weighting_ = Weighting::kTF;
    } else if (mode == "IDF") {
      weighting_ = Weighting::kIDF;
    } else if (mode == "TFIDF") {
      weighting_ = Weighting::kTFIDF;
    } else {
      context.fail("mode '{}' is not one of TF, IDF, TFIDF", mode);
    }
    min_gram_ = context.attr_int("min_gram_length");
    max_gram_ = context.attr_int("max_gram_length");
    max_skip_ = context.attr_int("max_skip_count");
    if (min_gram_ < 1) context.fail("min_gram_length {} must be at least 1", min_gram_);
    if (max_gram_ < min_gram_)
      context.fail("max_gram_length {} is smaller than min_gram_length {}", max_gram_, min_gram_);
    if (max_skip_ < 0) context.fail("max_skip_count {} must not be negative", max_skip_);

    const std::vector<int64_t> counts = context.attr_ints("ngram_counts");
    const std::vector<int64_t> indexes = context.attr_ints("ngram_indexes");
    const std::vector<int64_t> pool_ints = context.attr_ints("pool_int64s");
    const std::vector<std::string> pool_strings = context.attr_strings("pool_strings");
    weights_ = context.attr_floats("weights");
    const bool has_ints = context.has_attribute("pool_int64s");
    const bool has_strings = context.has_attribute("pool_strings");
    if (has_ints == has_strings)
      context.fail("exactly one of pool_int64s and pool_strings must be set");
    string_pool_ = has_strings;
    const int64_t pool_size =
        static_cast<int64_t>(string_pool_ ? pool_strings.size() : pool_ints.size());
    if (indexes.empty()) context.fail("ngram_indexes is empty");
    for (int64_t index : indexes) {
      if (index < 0) context.fail("ngram_indexes value {} is negative", index);
      output_size_ = std::max(output_size_, checked_add(index, 1, "ngram_indexes"));
    }
    if (!weights_.empty()) {
      if (weights_.size() != indexes.size())
        context.fail("weights has {} values but ngram_indexes has {}", weights_.size(),
                     indexes.size());
      // Weights scale output coordinates (as ONNX Runtime reads them).
      if (output_size_ > static_cast<int64_t>(weights_.size()))
        context.fail("ngram_indexes value {} is out of range for {} weights", output_size_ - 1,
                     weights_.size());
    }

    // ngram_counts[n - 1] is where the n-grams start in the pool; they run to the next start.
    // The pool has no n-gram longer than its levels: a max_gram_length of 2^40 sizes nothing.
    max_gram_ = std::min(max_gram_, static_cast<int64_t>(counts.size()));
    grams_.resize(static_cast<size_t>(max_gram_) + 1);
    size_t ngram_number = 0;
    for (size_t level = 0; level < counts.size(); ++level) {
      const int64_t n = static_cast<int64_t>(level) + 1;
      const int64_t start = counts[level];
      const int64_t end = level + 1 < counts.size() ? counts[level + 1] : pool_size;
      if (start < 0 || start > end || end > pool_size)
        context.fail("ngram_counts {} for {}-grams gives pool range [{}, {}) outside [0, {}]",
                     start, n, start, end, pool_size);
      if ((end - start) % n != 0)
        context.fail("the pool holds {} items for {}-grams, not a multiple of {}", end - start, n,
                     n);
      for (int64_t item = start; item < end; item += n, ++ngram_number) {
        if (ngram_number >= indexes.size())
          context.fail("the pool holds more n-grams than the {} ngram_indexes", indexes.size());
        if (n < min_gram_ || n > max_gram_) continue;  // never extracted
        std::string key;
        for (int64_t k = item; k < item + n; ++k) {
          if (string_pool_) {
            append_key(key, pool_strings[static_cast<size_t>(k)]);
          } else {
            append_key(key, pool_ints[static_cast<size_t>(k)]);
          }
        }
        grams_[static_cast<size_t>(n)].emplace(std::move(key), indexes[ngram_number]);
      }
    }
    if (ngram_number != indexes.size())
      context.fail("the pool holds {} n-grams but ngram_indexes has {} values", ngram_number,
                   indexes.size());
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Shape& shape = x.shape();
    if (shape.size() != 1 && shape.size() != 2)
      context.fail("input X has rank {}, expected 1 or 2", shape.size());
    const int64_t rows = shape.size() == 2 ? shape[0] : 1;
    const int64_t length = shape.back();
    Shape out_shape = shape.size() == 2 ? Shape{rows, output_size_} : Shape{output_size_};
    Tensor& y = context.allocate_output(0, DType::kFloat, std::move(out_shape));
    float* out = y.mutable_data<float>();

    std::vector<int64_t> counts(static_cast<size_t>(output_size_));
    const auto run = [&](const auto* data) {
      for (int64_t row = 0; row < rows; ++row) {
        std::fill(counts.begin(), counts.end(), 0);
        count_row(data + row * length, length, counts);
        write_row(counts, out + row * output_size_);
      }
    };
    switch (x.dtype()) {
      case DType::kString:
        if (!string_pool_)
          context.fail("string input needs pool_strings, the node has pool_int64s");
        run(x.strings().data());
        break;
      case DType::kInt32:
      case DType::kInt64:
        if (string_pool_)
          context.fail("{} input needs pool_int64s, the node has pool_strings",
                       dtype_name(x.dtype()));
        if (x.dtype() == DType::kInt32) {
          run(x.data<int32_t>());
        } else {
          run(x.data<int64_t>());
        }
        break;
      default:
        context.fail("input X has type {}, expected string, int32 or int64", dtype_name(x.dtype()));
    }
  }

 private:
  template <typename T>
  static void append_item(std::string& key, const T& value) {
    if constexpr (std::is_same_v<T, std::string>) {
      append_key(key, value);
    } else {
      append_key(key, static_cast<int64_t>(value));
    }
  }

  // Counts the pool's n-grams in one row. Unigrams are counted once per position; longer
  // n-grams once per (start, skip distance), items `skip + 1` apart.
  template <typename T>
  void count_row(const T* items, int64_t length, std::vector<int64_t>& counts) const {
    std::string key;
    const auto record = [&](int64_t n) {
      const auto& grams = grams_[static_cast<size_t>(n)];
      if (grams.empty()) return;
      auto it = grams.find(key);
      if (it != grams.end()) ++counts[static_cast<size_t>(it->second)];
    };
    if (min_gram_ == 1) {
      for (int64_t i = 0; i < length; ++i) {
        key.clear();
        append_item(key, items[i]);
        record(1);
      }
    }
    if (max_gram_ < 2) return;
    const int64_t first_n = std::max<int64_t>(min_gram_, 2);
    if (first_n > length) return;
    // A skip past the row's end finds nothing: a max_skip_count of 2^62 must not loop that long.
    const int64_t max_distance = std::min(max_skip_, length) + 1;
    for (int64_t distance = 1; distance <= max_distance; ++distance) {
      for (int64_t start = 0; start + distance * (first_n - 1) < length; ++start) {
        key.clear();
        append_item(key, items[start]);
        for (int64_t n = 2, pos = start + distance; n <= max_gram_ && pos < length;
             ++n, pos += distance) {
          append_item(key, items[pos]);
          if (n >= first_n) record(n);
        }
      }
    }
  }

  void write_row(const std::vector<int64_t>& counts, float* out) const {
    for (int64_t j = 0; j < output_size_; ++j) {
      const int64_t count = counts[static_cast<size_t>(j)];
      const float weight = weights_.empty() ? 1.0f : weights_[static_cast<size_t>(j)];
      switch (weighting_) {
        case Weighting::kTF:
          out[j] = static_cast<float>(count);
          break;
        case Weighting::kIDF:
          out[j] = count > 0 ? weight : 0.0f;
          break;
        case Weighting::kTFIDF:
          out[j] = static_cast<float>(count) * weight;
          break;
      }
    }
  }

  Weighting weighting_ = Weighting::kTF;
  int64_t min_gram_ = 1;
  int64_t max_gram_ = 1;
  int64_t max_skip_ = 0;
  bool string_pool_ = false;
  int64_t output_size_ = 0;
  std::vector<float> weights_;
  // grams_[n]: key of an n-gram of the pool -> its output coordinate.
  std::vector<std::unordered_map<std::string, int64_t>> grams_;
};

// ---- StringConcat, StringSplit, RegexFullMatch (opset 20) ----

void require_strings(const KernelContext& context, const Tensor& tensor, std::string_view name) {
  if (tensor.dtype() != DType::kString) {
    context.fail("{} has type {} (needs string)", name, dtype_name(tensor.dtype()));
  }
}

class StringConcatKernel : public OpKernel {
 public:
  explicit StringConcatKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& y = context.input(1);
    require_strings(context, x, "X");
    require_strings(context, y, "Y");
    Tensor& z = context.allocate_output(0, DType::kString, broadcast_shapes(x.shape(), y.shape()));
    broadcast_binary<std::string, std::string, std::string>(
        x, y, z, [](const std::string& a, const std::string& b) { return a + b; });
  }
};

// As Python's str.split, which the reference runs: without a delimiter (or with an empty one)
// runs of whitespace separate the pieces and whitespace at either end gives none; with one,
// every occurrence separates. At most `maxsplit` splits when it is given; the rest stays one
// piece.
class StringSplitKernel : public OpKernel {
 public:
  explicit StringSplitKernel(const KernelCreateContext& context)
      : delimiter_(context.attr_string("delimiter", "")),
        maxsplit_(context.has_attribute("maxsplit") ? context.attr_int("maxsplit") : -1) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    require_strings(context, x, "X");
    const std::vector<std::string>& strings = x.strings();
    std::vector<std::vector<std::string>> pieces(strings.size());
    size_t widest = 0;
    for (size_t i = 0; i < strings.size(); ++i) {
      pieces[i] = delimiter_.empty() ? split_whitespace(strings[i]) : split_on(strings[i]);
      widest = std::max(widest, pieces[i].size());
    }
    Shape y_shape = x.shape();
    y_shape.push_back(static_cast<int64_t>(widest));
    std::vector<std::string> y;
    y.reserve(strings.size() * widest);
    std::vector<int64_t> counts;
    counts.reserve(strings.size());
    for (std::vector<std::string>& row : pieces) {
      counts.push_back(static_cast<int64_t>(row.size()));
      row.resize(widest);  // padded with empty strings
      std::move(row.begin(), row.end(), std::back_inserter(y));
    }
    context.set_output(0, Tensor::from_strings(std::move(y_shape), std::move(y)));
    if (context.wants_output(1)) {
      context.set_output(1, Tensor::from_vector<int64_t>(DType::kInt64, x.shape(), counts));
    }
  }

 private:
  static bool is_space(char c) {
    // Python's ASCII whitespace, the information separators 0x1c-0x1f included.
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
  }

  bool may_split(size_t done) const {
    return maxsplit_ < 0 || static_cast<int64_t>(done) < maxsplit_;
  }

  std::vector<std::string> split_whitespace(const std::string& s) const {
    std::vector<std::string> out;
    size_t i = 0;
    const size_t n = s.size();
    while (may_split(out.size())) {
      while (i < n && is_space(s[i])) ++i;
      if (i == n) return out;
      const size_t start = i;
      while (i < n && !is_space(s[i])) ++i;
      out.emplace_back(s, start, i - start);
    }
    while (i < n && is_space(s[i])) ++i;
    if (i < n) out.emplace_back(s, i);
    return out;
  }

  std::vector<std::string> split_on(const std::string& s) const {
    std::vector<std::string> out;
    size_t start = 0;
    while (may_split(out.size())) {
      const size_t found = s.find(delimiter_, start);
      if (found == std::string::npos) break;
      out.emplace_back(s, start, found - start);
      start = found + delimiter_.size();
    }
    out.emplace_back(s, start);
    return out;
  }

  std::string delimiter_;
  int64_t maxsplit_;
};

class RegexFullMatchKernel : public OpKernel {
 public:
  explicit RegexFullMatchKernel(const KernelCreateContext& context)
      : regex_(std::make_unique<re2::RE2>(context.attr_string("pattern", ""), re2::RE2::Quiet)) {
    if (!regex_->ok()) {
      context.fail("pattern '{}' is not a valid RE2 expression: {}", regex_->pattern(),
                   regex_->error());
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    require_strings(context, x, "X");
    Tensor& y = context.allocate_output(0, DType::kBool, x.shape());
    bool* out = y.mutable_data<bool>();
    const std::vector<std::string>& strings = x.strings();
    for (size_t i = 0; i < strings.size(); ++i) out[i] = re2::RE2::FullMatch(strings[i], *regex_);
  }

 private:
  std::unique_ptr<re2::RE2> regex_;  // RE2 is neither copyable nor movable
};

void infer_regex_full_match(TypeInferenceContext& context) {
  const ValueType* x = context.input_type(0);
  if (x && x->is_tensor()) context.set_output(0, tensor_type(DType::kBool, x->shape));
}

// Y: X's shape plus the number of pieces, which depends on the values; Z: X's shape.
void infer_string_split(TypeInferenceContext& context) {
  const ValueType* x = context.input_type(0);
  if (!x || !x->is_tensor()) return;
  SymbolicShape pieces;
  if (x->shape) {
    pieces = *x->shape;
    pieces->push_back(Dim{});
  }
  context.set_output(0, tensor_type(DType::kString, std::move(pieces)));
  context.set_output(1, tensor_type(DType::kInt64, x->shape));
}

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// StringNormalizer: [C] or [1, C] strings; stopwords may drop some, so C is kept only when
// there are none.
void infer_string_normalizer(TypeInferenceContext& context) {
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) {
    context.set_output(0, tensor_type(DType::kString));
    return;
  }
  std::vector<Dim> out = *dims;
  if (!out.empty() && !attribute_reader(context).attr_strings("stopwords").empty()) {
    out.back() = Dim{};
  }
  context.set_output(0, tensor_type(DType::kString, std::move(out)));
}

// TfIdfVectorizer: float [max(ngram_indexes) + 1], after the batch dim of a 2-D input.
void infer_tf_idf_vectorizer(TypeInferenceContext& context) {
  const std::vector<int64_t> indexes = attribute_reader(context).attr_ints("ngram_indexes");
  const Dim width = indexes.empty()
                        ? Dim{}
                        : Dim::known(checked_add(*std::max_element(indexes.begin(), indexes.end()),
                                                 1, "max(ngram_indexes) + 1"));
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) {
    context.set_output(0, tensor_type(DType::kFloat));
  } else if (dims->size() == 2) {
    context.set_output(0, tensor_type(DType::kFloat, std::vector<Dim>{(*dims)[0], width}));
  } else {
    context.set_output(0, tensor_type(DType::kFloat, std::vector<Dim>{width}));
  }
}

}  // namespace

void register_text_ops(OpRegistry& registry) {
  registry.add("StringNormalizer", {10}, kernel_factory<StringNormalizerKernel>());
  registry.add("TfIdfVectorizer", {9}, kernel_factory<TfIdfVectorizerKernel>());
  registry.add("StringConcat", {20},
               OpDefinition(kernel_factory<StringConcatKernel>(), kBroadcastingOp)
                   .with_types(infer_broadcast));
  registry.add("StringSplit", {20},
               OpDefinition(kernel_factory<StringSplitKernel>()).with_types(infer_string_split));
  registry.add("RegexFullMatch", {20},
               OpDefinition(kernel_factory<RegexFullMatchKernel>(), kElementwiseOp)
                   .with_types(infer_regex_full_match));

  // Type inference, every version.
  registry.set_type_rule("", "StringNormalizer", infer_string_normalizer);
  registry.set_type_rule("", "TfIdfVectorizer", infer_tf_idf_vectorizer);
}

}  // namespace onnxkit
