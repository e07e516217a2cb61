// Unit tests of the text op family (StringNormalizer, TfIdfVectorizer, StringConcat,
// StringSplit, RegexFullMatch).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

Tensor normalize(Shape shape, std::vector<std::string> words, const SetAttributes& attrs) {
  return run_op("StringNormalizer", {Tensor::from_strings(std::move(shape), std::move(words))}, 10,
                attrs)[0];
}

// ---- StringNormalizer ----

TEST(StringNormalizer, UpperCasesUtf8LatinLetters) {
  Tensor y = normalize({4}, {"café", "Ñandú", "straße", "ÿœĳ"},
                       [](Node* n) { set_string(n, "case_change_action", "UPPER"); });
  EXPECT_EQ(y.shape(), (Shape{4}));
  // ß has no one-letter capital and stays as it is.
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"CAFÉ", "ÑANDÚ", "STRAßE", "ŸŒĲ"}));
}

TEST(StringNormalizer, LowerCasesUtf8LatinGreekCyrillic) {
  Tensor y = normalize({3}, {"ÀÉÎÕÜ", "ŁÓDŹ ŽĽ", "ΣΟΦΊΑ ПРИВЕТ"},
                       [](Node* n) { set_string(n, "case_change_action", "LOWER"); });
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"àéîõü", "łódź žľ", "σοφία привет"}));
}

TEST(StringNormalizer, InvalidUtf8BytesPassThrough) {
  Tensor y = normalize({1}, {std::string("a\xff") + "b\xc3"},
                       [](Node* n) { set_string(n, "case_change_action", "UPPER"); });
  EXPECT_EQ(y.strings()[0], std::string("A\xff") + "B\xc3");
}

TEST(StringNormalizer, CaseInsensitiveStopwordsFoldNonAscii) {
  Tensor y = normalize({4}, {"Été", "hiver", "ÉTÉ", "été"}, [](Node* n) {
    set_strings(n, "stopwords", {"éTÉ"});
    set_string(n, "locale", "fr_FR");
  });
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"hiver"}));
}

TEST(StringNormalizer, CaseSensitiveStopwordsMatchExactly) {
  Tensor y = normalize({3}, {"Monday", "monday", "MONDAY"}, [](Node* n) {
    set_strings(n, "stopwords", {"monday"});
    set_int(n, "is_case_sensitive", 1);
    set_string(n, "case_change_action", "LOWER");
  });
  // The case change comes after the stopword test.
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"monday", "monday"}));
}

TEST(StringNormalizer, AllRemovedGivesOneEmptyString) {
  Tensor y1 = normalize({2}, {"a", "A"}, [](Node* n) { set_strings(n, "stopwords", {"a"}); });
  EXPECT_EQ(y1.shape(), (Shape{1}));
  EXPECT_EQ(y1.strings(), (std::vector<std::string>{""}));
  Tensor y2 = normalize({1, 2}, {"a", "A"}, [](Node* n) { set_strings(n, "stopwords", {"a"}); });
  EXPECT_EQ(y2.shape(), (Shape{1, 1}));
  EXPECT_EQ(y2.strings(), (std::vector<std::string>{""}));
  Tensor y3 = normalize({0}, {}, {});
  EXPECT_EQ(y3.shape(), (Shape{1}));
}

TEST(StringNormalizer, RejectsBadShapeAndAction) {
  expect_error([] { normalize({2, 1}, {"a", "b"}, {}); }, "expected [C] or [1, C]");
  expect_error(
      [] { normalize({1}, {"a"}, [](Node* n) { set_string(n, "case_change_action", "TITLE"); }); },
      "case_change_action 'TITLE'");
}

// ---- TfIdfVectorizer ----

SetAttributes tfidf_attrs(const std::string& mode, int64_t min_gram, int64_t max_gram,
                          int64_t max_skip, std::vector<int64_t> counts,
                          std::vector<int64_t> indexes, const SetAttributes& pool) {
  return [=](Node* n) {
    set_string(n, "mode", mode);
    set_int(n, "min_gram_length", min_gram);
    set_int(n, "max_gram_length", max_gram);
    set_int(n, "max_skip_count", max_skip);
    set_ints(n, "ngram_counts", counts);
    set_ints(n, "ngram_indexes", indexes);
    pool(n);
  };
}

std::vector<float> floats_of(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

TEST(TfIdfVectorizer, StringPoolWithPermutedIndexes) {
  // Pool: unigrams "a", "b"; bigram ("a", "b"). ngram_indexes sends them to 2, 0, 1.
  auto attrs = tfidf_attrs("TF", 1, 2, 0, {0, 2}, {2, 0, 1}, [](Node* n) {
    set_strings(n, "pool_strings", {"a", "b", "a", "b"});
  });
  Tensor x = Tensor::from_strings({5}, {"a", "b", "a", "c", "a"});
  Tensor y = run_op("TfIdfVectorizer", {x}, 9, attrs)[0];
  EXPECT_EQ(y.shape(), (Shape{3}));
  EXPECT_EQ(floats_of(y), (std::vector<float>{1, 1, 3}));  // b: 1, ab: 1, a: 3
}

TEST(TfIdfVectorizer, SkipsAndTrigramsOnInt64) {
  // Pool: bigrams (1, 3), (2, 1); trigram (1, 3, 1). Up to one skip: item distance 1 or 2.
  auto attrs = tfidf_attrs("TF", 2, 3, 1, {0, 0, 4}, {0, 1, 2}, [](Node* n) {
    set_ints(n, "pool_int64s", {1, 3, 2, 1, 1, 3, 1});
  });
  Tensor x = Tensor::from_vector<int64_t>(DType::kInt64, {6}, {1, 2, 3, 1, 1, 3});
  Tensor y = run_op("TfIdfVectorizer", {x}, 9, attrs)[0];
  // (1, 3): [4, 5] at distance 1, [0, 2] and [3, 5] at distance 2. (2, 1): [1, 3] at
  // distance 2 ([1, 4] would need distance 3). (1, 3, 1): [0, 2, 4] at distance 2.
  EXPECT_EQ(floats_of(y), (std::vector<float>{3, 1, 1}));
}

TEST(TfIdfVectorizer, IdfAndTfIdfUseWeightsPerOutput) {
  const auto pool = [](Node* n) {
    set_ints(n, "pool_int64s", {7, 8, 9});
    set_floats(n, "weights", {0.5f, 2.0f, 4.0f});
  };
  Tensor x = Tensor::from_vector<int32_t>(DType::kInt32, {2, 4}, {7, 7, 8, 1, 9, 9, 9, 7});
  Tensor idf =
      run_op("TfIdfVectorizer", {x}, 9, tfidf_attrs("IDF", 1, 1, 0, {0}, {0, 1, 2}, pool))[0];
  EXPECT_EQ(idf.shape(), (Shape{2, 3}));
  EXPECT_EQ(floats_of(idf), (std::vector<float>{0.5f, 2.0f, 0.0f, 0.5f, 0.0f, 4.0f}));
  Tensor tfidf =
      run_op("TfIdfVectorizer", {x}, 9, tfidf_attrs("TFIDF", 1, 1, 0, {0}, {0, 1, 2}, pool))[0];
  EXPECT_EQ(floats_of(tfidf), (std::vector<float>{1.0f, 2.0f, 0.0f, 0.5f, 0.0f, 12.0f}));
}

TEST(TfIdfVectorizer, IdfWithoutWeightsIsPresence) {
  auto attrs = tfidf_attrs("IDF", 1, 1, 0, {0}, {0, 1}, [](Node* n) {
    set_ints(n, "pool_int64s", {4, 5});
  });
  Tensor x = Tensor::from_vector<int64_t>(DType::kInt64, {3}, {4, 4, 4});
  EXPECT_EQ(floats_of(run_op("TfIdfVectorizer", {x}, 9, attrs)[0]), (std::vector<float>{1, 0}));
}

TEST(TfIdfVectorizer, EmptyRowsGiveZeros) {
  auto attrs = tfidf_attrs("TF", 1, 2, 2, {0, 2}, {0, 1, 2}, [](Node* n) {
    set_ints(n, "pool_int64s", {1, 2, 1, 2});
  });
  Tensor x = Tensor::from_vector<int64_t>(DType::kInt64, {2, 0}, {});
  Tensor y = run_op("TfIdfVectorizer", {x}, 9, attrs)[0];
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(floats_of(y), (std::vector<float>(6, 0.0f)));
}

TEST(TfIdfVectorizer, RejectsMismatchedInputAndBadPool) {
  auto int_pool =
      tfidf_attrs("TF", 1, 1, 0, {0}, {0}, [](Node* n) { set_ints(n, "pool_int64s", {1}); });
  expect_error([&] { run_op("TfIdfVectorizer", {Tensor::from_strings({1}, {"a"})}, 9, int_pool); },
               "string input needs pool_strings");
  auto ragged = tfidf_attrs("TF", 2, 2, 0, {0, 1}, {0, 1}, [](Node* n) {
    set_ints(n, "pool_int64s", {1, 2, 3, 4});
  });
  expect_error(
      [&] {
        run_op("TfIdfVectorizer", {Tensor::from_vector<int64_t>(DType::kInt64, {1}, {1})}, 9,
               ragged);
      },
      "the pool holds 3 items for 2-grams, not a multiple of 2");
  auto short_indexes = tfidf_attrs("TF", 1, 1, 0, {0}, {0}, [](Node* n) {
    set_ints(n, "pool_int64s", {1, 2});
  });
  expect_error(
      [&] {
        run_op("TfIdfVectorizer", {Tensor::from_vector<int64_t>(DType::kInt64, {1}, {1})}, 9,
               short_indexes);
      },
      "more n-grams than the 1 ngram_indexes");
}

// ---- StringConcat, StringSplit, RegexFullMatch ----

TEST(StringConcat, Broadcasts) {
  Tensor x = Tensor::from_strings({2, 1}, {"a", "é"});
  Tensor y = Tensor::from_strings({2}, {"1", ""});
  Tensor z = run_one("StringConcat", {x, y}, 20);
  EXPECT_EQ(z.shape(), (Shape{2, 2}));
  EXPECT_EQ(z.strings(), (std::vector<std::string>{"a1", "a", "é1", "é"}));
  expect_error(
      [] {
        run_one("StringConcat", {floats({1}, {1}), floats({1}, {1})}, 20);
      },
      "needs string");
}

TEST(StringSplit, DelimiterWhitespaceAndMaxsplit) {
  Tensor x = Tensor::from_strings({3}, {"a,,b", "", "c"});
  auto out = run_op("StringSplit", {x}, 20, with_string("delimiter", ","), 2);
  EXPECT_EQ(out[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(out[0].strings(), (std::vector<std::string>{"a", "", "b", "", "", "", "c", "", ""}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{3, 1, 1}));
  // No delimiter: runs of whitespace, none at the ends; maxsplit keeps the rest whole.
  Tensor w = Tensor::from_strings({2}, {"  one two\tthree  ", "   "});
  auto ws = run_op("StringSplit", {w}, 20, with_int("maxsplit", 1), 2);
  EXPECT_EQ(ws[0].strings(), (std::vector<std::string>{"one", "two\tthree  ", "", ""}));
  EXPECT_EQ(values_of<int64_t>(ws[1]), (std::vector<int64_t>{2, 0}));
  auto empty = run_op("StringSplit", {Tensor::from_strings({0}, {})}, 20, {}, 2);
  EXPECT_EQ(empty[0].shape(), (Shape{0, 0}));
}

TEST(RegexFullMatch, MatchesWholeStrings) {
  Tensor x = Tensor::from_strings({3}, {"www.google.com", "www.example.org", "google.com.au"});
  Tensor y = run_one("RegexFullMatch", {x}, 20, with_string("pattern", R"(www\.[\w.-]+\.\bcom\b)"));
  EXPECT_EQ(values_of<bool>(y), (std::vector<bool>{true, false, false}));
  expect_error([&] { run_one("RegexFullMatch", {x}, 20, with_string("pattern", "(a")); },
               "not a valid RE2 expression");
}

}  // namespace
}  // namespace onnxkit
