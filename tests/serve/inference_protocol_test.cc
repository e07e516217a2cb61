// The Open Inference Protocol bodies: JSON and binary tensors in, every datatype, and each
// malformed request answered with a 400 that names the field.
#include <gtest/gtest.h>

#include <cstring>

#include "core/half.h"
#include "serve/inference_protocol.h"
#include "tensor_info.h"

namespace onnxkit::serve {
namespace {

using nlohmann::json;

const std::vector<ValueInfo> kInputs{
    tensor_info("x", DType::kFloat, {Dim::symbol("batch"), Dim::known(3)}),
};
const std::vector<ValueInfo> kOutputs{
    tensor_info("y", DType::kFloat, {Dim::symbol("batch"), Dim::known(3)}),
    tensor_info("z", DType::kInt64, {Dim::symbol("batch")}),
};

int status_of(std::string_view body, std::optional<size_t> header_length = std::nullopt,
              const std::vector<ValueInfo>& inputs = kInputs) {
  try {
    parse_infer_request(body, header_length, inputs, kOutputs);
  } catch (const RequestError& e) {
    return e.http_status();
  }
  return 200;
}

std::string message_of(std::string_view body, std::optional<size_t> header_length = std::nullopt) {
  try {
    parse_infer_request(body, header_length, kInputs, kOutputs);
  } catch (const RequestError& e) {
    return e.what();
  }
  return "";
}

TEST(InferenceProtocolTest, NestedAndFlatJsonDataGiveTheSameTensor) {
  const auto nested = parse_infer_request(
      R"({"id":"r1","inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[[1,2,3],[4,5,6.5]]}]})",
      std::nullopt, kInputs, kOutputs);
  const auto flat = parse_infer_request(
      R"({"inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[1,2,3,4,5,6.5]}]})",
      std::nullopt, kInputs, kOutputs);
  EXPECT_EQ(nested.id, "r1");
  EXPECT_TRUE(nested.has_id);
  EXPECT_FALSE(flat.has_id);
  ASSERT_EQ(nested.inputs.size(), 1u);
  EXPECT_TRUE(nested.inputs[0].second.tensor().same_contents(flat.inputs[0].second.tensor()));
  EXPECT_EQ(flat.inputs[0].second.tensor().data<float>()[5], 6.5f);
}

TEST(InferenceProtocolTest, EveryDatatypeInJsonAndBinary) {
  struct Case {
    const char* datatype;
    DType dtype;
    const char* data;
  };
  const Case cases[] = {
      {"BOOL", DType::kBool, "[true,false]"},
      {"UINT8", DType::kUInt8, "[0,255]"},
      {"UINT16", DType::kUInt16, "[0,65535]"},
      {"UINT32", DType::kUInt32, "[0,4294967295]"},
      {"UINT64", DType::kUInt64, "[0,18446744073709551615]"},
      {"INT8", DType::kInt8, "[-128,127]"},
      {"INT16", DType::kInt16, "[-32768,32767]"},
      {"INT32", DType::kInt32, "[-5,7]"},
      {"INT64", DType::kInt64, "[-9007199254740993,3]"},
      {"FP16", DType::kFloat16, "[1.5,-2]"},
      {"FP32", DType::kFloat, "[0.25,-1]"},
      {"FP64", DType::kDouble, "[0.1,1e300]"},
      {"BF16", DType::kBFloat16, "[1,-0.5]"},
      {"BYTES", DType::kString, R"(["ab",""])"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.datatype);
    const std::vector<ValueInfo> inputs{tensor_info("t", c.dtype, {Dim::known(2)})};
    const std::vector<ValueInfo> outputs{tensor_info("t", c.dtype, {Dim::known(2)})};
    const std::string body = std::string(R"({"inputs":[{"name":"t","shape":[2],"datatype":")") +
                             c.datatype + R"(","data":)" + c.data + "}]}";
    InferRequest request = parse_infer_request(body, std::nullopt, inputs, outputs);
    const Tensor& tensor = request.inputs[0].second.tensor();
    EXPECT_EQ(tensor.dtype(), c.dtype);
    // JSON out and back in gives the same tensor.
    EncodedResponse json_out = encode_infer_response("m", "1", request, request.inputs);
    ASSERT_FALSE(json_out.header_length);
    json response = json::parse(json_out.body);
    json again = {{"inputs", response["outputs"]}};
    InferRequest reparsed = parse_infer_request(again.dump(), std::nullopt, inputs, outputs);
    EXPECT_TRUE(reparsed.inputs[0].second.tensor().same_contents(tensor));
    // Binary out and back in too.
    request.binary_output_default = true;
    EncodedResponse binary_out = encode_infer_response("m", "1", request, request.inputs);
    ASSERT_TRUE(binary_out.header_length);
    json header = json::parse(binary_out.body.substr(0, *binary_out.header_length));
    json binary_request = {{"inputs", header["outputs"]}};
    const std::string binary_header = binary_request.dump();
    const std::string binary_body =
        binary_header + binary_out.body.substr(*binary_out.header_length);
    InferRequest binary = parse_infer_request(binary_body, binary_header.size(), inputs, outputs);
    EXPECT_TRUE(binary.inputs[0].second.tensor().same_contents(tensor));
  }
}

TEST(InferenceProtocolTest, Fp16ValuesRoundToHalf) {
  const std::vector<ValueInfo> inputs{tensor_info("h", DType::kFloat16, {Dim::known(1)})};
  auto request =
      parse_infer_request(R"({"inputs":[{"name":"h","shape":[1],"datatype":"FP16","data":[0.1]}]})",
                          std::nullopt, inputs, inputs);
  EXPECT_EQ(request.inputs[0].second.tensor().data<Float16>()[0].bits, Float16(0.1f).bits);
}

TEST(InferenceProtocolTest, BinaryInputsFollowTheJsonHeaderInOrder) {
  const std::string header =
      R"({"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","parameters":{"binary_data_size":12}}],)"
      R"("outputs":[{"name":"z","parameters":{"binary_data":true}},{"name":"y"}]})";
  const float values[3] = {1.f, -2.f, 3.5f};
  std::string body = header;
  body.append(reinterpret_cast<const char*>(values), sizeof values);
  InferRequest request = parse_infer_request(body, header.size(), kInputs, kOutputs);
  ASSERT_EQ(request.inputs.size(), 1u);
  EXPECT_EQ(request.inputs[0].second.tensor().data<float>()[1], -2.f);
  ASSERT_EQ(request.outputs.size(), 2u);
  EXPECT_TRUE(request.outputs[0].binary);
  EXPECT_FALSE(request.outputs[1].binary);

  // Only the outputs asked for, in the order asked, one of them binary.
  const NamedValues outputs{
      {"y", Tensor::from_vector(DType::kFloat, {1, 3}, std::vector<float>{1, 2, 3})},
      {"z", Tensor::from_vector(DType::kInt64, {1}, std::vector<int64_t>{42})},
  };
  EncodedResponse response = encode_infer_response("m", "2", request, outputs);
  ASSERT_TRUE(response.header_length);
  json parsed = json::parse(response.body.substr(0, *response.header_length));
  ASSERT_EQ(parsed["outputs"].size(), 2u);
  EXPECT_EQ(parsed["outputs"][0]["name"], "z");
  EXPECT_EQ(parsed["outputs"][0]["parameters"]["binary_data_size"], 8);
  EXPECT_EQ(parsed["outputs"][1]["data"], json::parse("[1.0,2.0,3.0]"));
  EXPECT_EQ(parsed["model_version"], "2");
  EXPECT_FALSE(parsed.contains("id"));
  int64_t z = 0;
  ASSERT_EQ(response.body.size(), *response.header_length + 8);
  std::memcpy(&z, response.body.data() + *response.header_length, 8);
  EXPECT_EQ(z, 42);
}

TEST(InferenceProtocolTest, MalformedRequestsAre400NamingTheField) {
  const std::string x = R"("name":"x","shape":[1,3],"datatype":"FP32")";
  struct Case {
    std::string body;
    std::string mentions;
  };
  const std::vector<Case> cases{
      {"{not json", "malformed JSON"},
      {"[1,2]", "JSON object"},
      {R"({"inputs":{}})", "'inputs'"},
      {R"({"inputs":[{"shape":[1,3],"datatype":"FP32","data":[1,2,3]}]})", "'name'"},
      {"{\"inputs\":[{" + x + R"(,"data":[1,2]}]})", "needs 3"},
      {"{\"inputs\":[{" + x + R"(,"data":[1,2,3,4]}]})", "needs 3"},
      {"{\"inputs\":[{" + x + R"(,"data":[1,"a",3]}]})", "not a number"},
      {R"({"inputs":[{"name":"x","shape":[1,3],"datatype":"INT64","data":[1,2,3]}]})", "FP32"},
      {R"({"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]})",
       "shape [1,4]"},
      {R"({"inputs":[{"name":"x","shape":[1,-3],"datatype":"FP32","data":[]}]})", "non-negative"},
      {R"({"inputs":[{"name":"x","shape":[1,3],"datatype":"FP33","data":[1,2,3]}]})", "FP33"},
      {R"({"inputs":[{"name":"w","shape":[1,3],"datatype":"FP32","data":[1,2,3]}]})",
       "unknown input 'w'"},
      {R"({"inputs":[]})", "missing input 'x'"},
      {"{\"inputs\":[{" + x + R"(,"data":[1,2,3]},{)" + x + R"(,"data":[1,2,3]}]})", "twice"},
      {"{\"inputs\":[{" + x + R"(}]})", "neither"},
      {"{\"inputs\":[{" + x + R"(,"data":[1,2,3]}],"outputs":[{"name":"q"}]})",
       "unknown output 'q'"},
      {"{\"id\":7,\"inputs\":[{" + x + R"(,"data":[1,2,3]}]})", "'id'"},
      {"{\"inputs\":[{" + x + R"(,"parameters":{"binary_data_size":12}}]})",
       "Inference-Header-Content-Length"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    EXPECT_EQ(status_of(c.body), 400);
    EXPECT_NE(message_of(c.body).find(c.mentions), std::string::npos) << message_of(c.body);
  }
}

TEST(InferenceProtocolTest, WrongBinarySizesAre400) {
  const std::string header =
      R"({"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","parameters":{"binary_data_size":8}}]})";
  std::string body = header + std::string(8, '\0');
  EXPECT_NE(message_of(body, header.size()).find("needs 12 bytes"), std::string::npos);
  const std::string runs_past =
      R"({"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","parameters":{"binary_data_size":12}}]})";
  EXPECT_NE(message_of(runs_past + std::string(4, '\0'), runs_past.size()).find("past the end"),
            std::string::npos);
  EXPECT_NE(message_of(runs_past + std::string(16, '\0'), runs_past.size()).find("beyond"),
            std::string::npos);
  EXPECT_NE(message_of(runs_past, 1000).find("larger than the body"), std::string::npos);
  EXPECT_EQ(status_of(runs_past + std::string(12, '\0'), runs_past.size() - 1), 400);
}

TEST(InferenceProtocolTest, TensorsOverTheElementLimitAreRefused) {
  ProtocolLimits limits;
  limits.max_tensor_elements = 100;
  const std::vector<ValueInfo> inputs{tensor_info("x", DType::kFloat, {Dim::symbol("n")})};
  try {
    parse_infer_request(
        R"({"inputs":[{"name":"x","shape":[4611686018427387904],"datatype":"FP32","data":[]}]})",
        std::nullopt, inputs, inputs, limits);
    FAIL() << "accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.http_status(), 400);
    EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos);
  }
}

TEST(InferenceProtocolTest, BinaryBytesElementsAreLengthPrefixed) {
  const std::vector<ValueInfo> inputs{tensor_info("s", DType::kString, {Dim::known(2)})};
  std::string data;
  for (std::string item : {"hi", "there"}) {
    const uint32_t length = static_cast<uint32_t>(item.size());
    data.append(reinterpret_cast<const char*>(&length), 4);
    data += item;
  }
  const std::string header = R"({"inputs":[{"name":"s","shape":[2],"datatype":"BYTES",)"
                             R"("parameters":{"binary_data_size":)" +
                             std::to_string(data.size()) + "}}]}";
  auto request = parse_infer_request(header + data, header.size(), inputs, inputs);
  EXPECT_EQ(request.inputs[0].second.tensor().strings()[1], "there");
  std::string truncated = data.substr(0, data.size() - 1);
  const std::string short_header = R"({"inputs":[{"name":"s","shape":[2],"datatype":"BYTES",)"
                                   R"("parameters":{"binary_data_size":)" +
                                   std::to_string(truncated.size()) + "}}]}";
  EXPECT_THROW(parse_infer_request(short_header + truncated, short_header.size(), inputs, inputs),
               RequestError);
}

TEST(InferenceProtocolTest, PathSegmentsArePercentDecoded) {
  EXPECT_EQ(path_segments("/v2/models/my%20model/versions/v%2D1/infer?x=%zz"),
            (std::vector<std::string>{"v2", "models", "my model", "versions", "v-1", "infer"}));
  EXPECT_EQ(path_segments("//v2//health/"), (std::vector<std::string>{"v2", "health"}));
  // An escaped '/' stays inside its segment.
  EXPECT_EQ(path_segments("/v2/models/a%2fb"), (std::vector<std::string>{"v2", "models", "a/b"}));
  for (const char* bad : {"/v2/models/a%2", "/v2/models/a%/infer", "/v2/models/%g1", "/v2/%00x"}) {
    SCOPED_TRACE(bad);
    try {
      path_segments(bad);
      FAIL() << "accepted";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.http_status(), 400);
      const std::string message = e.what();
      EXPECT_NE(message.find(std::string("malformed path '") + bad + "'"), std::string::npos)
          << message;
    }
  }
}

TEST(InferenceProtocolTest, HeaderLengthIsADecimalNumber) {
  EXPECT_EQ(parse_header_length("0"), 0u);
  EXPECT_EQ(parse_header_length("1234"), 1234u);
  for (const char* bad : {"", "12x", "-1", " 12", "0x10", "99999999999999999999"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_header_length(bad), RequestError);
  }
}

TEST(InferenceProtocolTest, JsonNumbersOutOfRangeOrOfTheWrongKindAre400) {
  struct Case {
    const char* datatype;
    const char* data;
    const char* mentions;
  };
  const Case cases[] = {
      {"UINT8", "[256]", "out of the datatype's range"},
      {"INT8", "[-129]", "out of the datatype's range"},
      {"UINT64", "[-1]", "out of the datatype's range"},
      {"INT64", "[18446744073709551615]", "out of the datatype's range"},
      {"INT32", "[1.5]", "not an integer (1.5)"},
      {"BOOL", "[\"yes\"]", "not a bool"},
      {"FP32", "[null]", "not a number (null)"},
      {"BYTES", "[1]", "BYTES element 0 is not a string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.datatype);
    const std::vector<ValueInfo> inputs{tensor_info("t", DType::kUndefined, {Dim::known(1)})};
    const std::string body = std::string(R"({"inputs":[{"name":"t","shape":[1],"datatype":")") +
                             c.datatype + R"(","data":)" + c.data + "}]}";
    try {
      parse_infer_request(body, std::nullopt, inputs, inputs);
      FAIL() << "accepted";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.http_status(), 400);
      EXPECT_NE(std::string(e.what()).find(c.mentions), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("input 't'"), std::string::npos) << e.what();
    }
  }
}

// Triton's classification extension: an output's "classification" parameter answers its
// highest elements as "<value>:<index>[:<label>]" strings, row by row.
TEST(InferenceProtocolTest, ClassificationAnswersTheHighestElementsOfEachRow) {
  const auto request = parse_infer_request(
      R"({"inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[0,0,0,0,0,0]}],
          "outputs":[{"name":"y","parameters":{"classification":2}}]})",
      std::nullopt, kInputs, kOutputs);
  ASSERT_EQ(request.outputs.size(), 1u);
  EXPECT_EQ(request.outputs[0].classification, 2);

  // Row 0 ties 0.5 at indices 0 and 2: the lower index comes first.
  NamedValues outputs;
  outputs.emplace_back(
      "y", Tensor::from_vector<float>(DType::kFloat, {2, 3}, {0.5f, 0.25f, 0.5f, -1, 3, 2}));
  const OutputLabels labels{{"y", {"cat", "dog"}}};  // index 2 has no label
  const json answer = json::parse(encode_infer_response("m", "1", request, outputs, &labels).body);
  const json& y = answer["outputs"][0];
  EXPECT_EQ(y["datatype"], "BYTES");
  EXPECT_EQ(y["shape"], json::array({2, 2}));
  EXPECT_EQ(y["data"],
            json::array({"0.500000:0:cat", "0.500000:2", "3.000000:1:dog", "2.000000:2"}));

  // Binary: length-prefixed strings; without labels, no third field.
  InferRequest binary = request;
  binary.outputs[0].binary = true;
  const EncodedResponse encoded = encode_infer_response("m", "1", binary, outputs);
  ASSERT_TRUE(encoded.header_length);
  const std::string data = encoded.body.substr(*encoded.header_length);
  EXPECT_EQ(data.substr(0, 4), std::string("\x0a\0\0\0", 4));
  EXPECT_EQ(data.substr(4, 10), "0.500000:0");
}

TEST(InferenceProtocolTest, ClassificationOfSmallTensorsIntegersHalvesAndNaN) {
  // Rank 1: one ranking of the whole tensor; a count past its size gives every element.
  Tensor ranks =
      classify(Tensor::from_vector<int64_t>(DType::kInt64, {3}, {7, -2, 9}), 5, nullptr, "z");
  EXPECT_EQ(ranks.shape(), Shape({3}));
  EXPECT_EQ(ranks.strings(), (std::vector<std::string>{"9:2", "7:0", "-2:1"}));

  Tensor bytes =
      classify(Tensor::from_vector<uint8_t>(DType::kUInt8, {1, 2}, {3, 200}), 1, nullptr, "u");
  EXPECT_EQ(bytes.shape(), Shape({1, 1}));
  EXPECT_EQ(bytes.strings(), (std::vector<std::string>{"200:1"}));

  Tensor halves =
      classify(Tensor::from_vector<Float16>(DType::kFloat16, {2}, {Float16(1.5f), Float16(-0.25f)}),
               2, nullptr, "h");
  EXPECT_EQ(halves.strings(), (std::vector<std::string>{"1.500000:0", "-0.250000:1"}));

  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor with_nan =
      classify(Tensor::from_vector<float>(DType::kFloat, {3}, {nan, 1, 2}), 3, nullptr, "n");
  EXPECT_EQ(with_nan.strings()[0], "2.000000:2");
  EXPECT_EQ(with_nan.strings()[1], "1.000000:1");
  EXPECT_EQ(with_nan.strings()[2].substr(with_nan.strings()[2].find(':')), ":0");

  Tensor empty_rows =
      classify(Tensor::from_vector<float>(DType::kFloat, {0, 4}, {}), 2, nullptr, "e");
  EXPECT_EQ(empty_rows.shape(), Shape({0, 2}));
}

TEST(InferenceProtocolTest, ClassificationParameterErrorsAre400NamingTheOutput) {
  const std::string head =
      R"({"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","data":[0,0,0]}],"outputs":[)";
  for (const char* parameter : {"0", "-3", "1.5", "\"3\"", "true"}) {
    SCOPED_TRACE(parameter);
    const std::string body =
        head + R"({"name":"y","parameters":{"classification":)" + parameter + "}}]}";
    EXPECT_EQ(status_of(body), 400);
    EXPECT_NE(message_of(body).find("output 'y': parameter 'classification' must be a positive"),
              std::string::npos)
        << message_of(body);
  }
  const std::vector<ValueInfo> outputs{tensor_info("s", DType::kString, {Dim::known(1)})};
  try {
    parse_infer_request(head + R"({"name":"s","parameters":{"classification":1}}]})", std::nullopt,
                        kInputs, outputs);
    FAIL() << "accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.http_status(), 400);
    EXPECT_NE(std::string(e.what()).find("classification needs a numeric output"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      classify(Tensor::from_vector<bool>(DType::kBool, {2}, {true, false}), 1, nullptr, "b"),
      RequestError);
}

TEST(InferenceProtocolTest, Base64DecodesWithOrWithoutPaddingAndRefusesOtherText) {
  EXPECT_EQ(decode_base64("", "f"), "");
  EXPECT_EQ(decode_base64("QQ==", "f"), "A");
  EXPECT_EQ(decode_base64("QUI=", "f"), "AB");
  EXPECT_EQ(decode_base64("QUJD", "f"), "ABC");
  EXPECT_EQ(decode_base64("QUJDRA", "f"), "ABCD");
  EXPECT_EQ(decode_base64("AP/+", "f"), std::string("\x00\xff\xfe", 3));
  for (const char* bad : {"Q", "QUJDR", "QU JD", "QQ==QQ==", "====", "QU\nJD", "QUJ-"}) {
    SCOPED_TRACE(bad);
    try {
      decode_base64(bad, "load request: 'file:1/model.onnx'");
      FAIL() << "accepted";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.http_status(), 400);
      EXPECT_NE(std::string(e.what()).find("load request: 'file:1/model.onnx'"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace onnxkit::serve
