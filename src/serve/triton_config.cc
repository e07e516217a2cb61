#include "serve/triton_config.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace onnxkit::serve {
namespace {

namespace pb = google::protobuf;

// The part of Triton's model_config.proto read here, by field name (the text format's key).
const pb::Descriptor& triton_model_config() {
  static pb::DescriptorPool pool;
  static const pb::Descriptor* descriptor = [] {
    pb::FileDescriptorProto file;
    file.set_name("onnxkit_triton_model_config.proto");
    file.set_package("onnxkit.triton");
    file.set_syntax("proto3");
    auto add_field = [](pb::DescriptorProto* message, const char* name, int number,
                        pb::FieldDescriptorProto::Type type, bool repeated,
                        const char* type_name = nullptr) {
      pb::FieldDescriptorProto* field = message->add_field();
      field->set_name(name);
      field->set_number(number);
      field->set_type(type);
      field->set_label(repeated ? pb::FieldDescriptorProto::LABEL_REPEATED
                                : pb::FieldDescriptorProto::LABEL_OPTIONAL);
      if (type_name) field->set_type_name(type_name);
    };
    using Field = pb::FieldDescriptorProto;
    pb::DescriptorProto* policy = file.add_message_type();
    policy->set_name("QueuePolicy");
    add_field(policy, "max_queue_size", 1, Field::TYPE_INT32, false);
    pb::DescriptorProto* batching = file.add_message_type();
    batching->set_name("DynamicBatching");
    add_field(batching, "preferred_batch_size", 1, Field::TYPE_INT32, true);
    add_field(batching, "max_queue_delay_microseconds", 2, Field::TYPE_UINT64, false);
    add_field(batching, "default_queue_policy", 3, Field::TYPE_MESSAGE, false,
              ".onnxkit.triton.QueuePolicy");
    pb::DescriptorProto* group = file.add_message_type();
    group->set_name("InstanceGroup");
    add_field(group, "count", 1, Field::TYPE_INT32, false);
    // Read for their presence only (refused), their insides skipped.
    pb::DescriptorProto* opaque = file.add_message_type();
    opaque->set_name("Opaque");
    pb::DescriptorProto* config = file.add_message_type();
    config->set_name("ModelConfig");
    add_field(config, "sequence_batching", 20, Field::TYPE_MESSAGE, false,
              ".onnxkit.triton.Opaque");
    add_field(config, "ensemble_scheduling", 21, Field::TYPE_MESSAGE, false,
              ".onnxkit.triton.Opaque");
    pb::DescriptorProto* output = file.add_message_type();
    output->set_name("ModelOutput");
    add_field(output, "name", 1, Field::TYPE_STRING, false);
    add_field(output, "label_filename", 2, Field::TYPE_STRING, false);
    add_field(config, "output", 19, Field::TYPE_MESSAGE, true, ".onnxkit.triton.ModelOutput");
    add_field(config, "max_batch_size", 1, Field::TYPE_INT32, false);
    add_field(config, "dynamic_batching", 2, Field::TYPE_MESSAGE, false,
              ".onnxkit.triton.DynamicBatching");
    add_field(config, "instance_group", 3, Field::TYPE_MESSAGE, true,
              ".onnxkit.triton.InstanceGroup");
    pool.BuildFile(file);
    return pool.FindMessageTypeByName("onnxkit.triton.ModelConfig");
  }();
  if (!descriptor) throw Error("the Triton model configuration schema did not build");
  return *descriptor;
}

// `text` with a colon between a field name and a list ("input [ {...} ]" -> "input: [ {...} ]"),
// outside strings and comments. Both forms are valid text format, but protobuf 3.21's parser
// skips an unknown field's list of messages only in the second (Triton's docs write the first,
// at any depth: input, output, instance_group, control, step, ...). Columns after an inserted
// colon move by one in error messages.
std::string colon_before_lists(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 64);
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (comment) {
      comment = c != '\n';
    } else if (quote) {
      if (c == '\\' && i + 1 < text.size()) {
        out += c;
        out += text[++i];
        continue;
      }
      if (c == quote || c == '\n') quote = 0;
    } else if (c == '#') {
      comment = true;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[') {
      // A field name (an identifier not itself a value after ':') ends before the blanks here.
      size_t end = out.size();
      while (end > 0 && std::isspace(static_cast<unsigned char>(out[end - 1]))) --end;
      size_t start = end;
      while (start > 0 &&
             (std::isalnum(static_cast<unsigned char>(out[start - 1])) || out[start - 1] == '_')) {
        --start;
      }
      size_t before = start;
      while (before > 0 && std::isspace(static_cast<unsigned char>(out[before - 1]))) --before;
      const bool field_name = start < end &&
                              !std::isdigit(static_cast<unsigned char>(out[start])) &&
                              (before == 0 || out[before - 1] != ':');
      if (field_name) out.insert(end, ":");
    }
    out += c;
  }
  return out;
}

class FirstError : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (text.empty()) {
      text = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " +
             message;
    }
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
  std::string text;
};

}  // namespace

ModelConfig read_triton_config(const std::filesystem::path& file, ModelConfig config) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file.string() + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();

  static pb::DynamicMessageFactory factory;
  const pb::Descriptor& descriptor = triton_model_config();
  std::unique_ptr<pb::Message> message(factory.GetPrototype(&descriptor)->New());
  pb::TextFormat::Parser parser;
  parser.AllowUnknownField(true);  // name, platform, input, output, ... mean nothing here
  FirstError error;
  parser.RecordErrorsTo(&error);
  if (!parser.ParseFromString(colon_before_lists(text.str()), message.get())) {
    throw Error(file.string() + ": not a Triton model configuration (" + error.text + ")");
  }
  const pb::Reflection& reflection = *message->GetReflection();
  auto field = [](const pb::Descriptor& owner, const char* name) {
    return owner.FindFieldByName(name);
  };
  if (reflection.HasField(*message, field(descriptor, "sequence_batching"))) {
    throw Error(file.string() + ": sequence_batching (a stateful model) is not served here");
  }
  if (reflection.HasField(*message, field(descriptor, "ensemble_scheduling"))) {
    throw Error(file.string() + ": ensemble_scheduling (an ensemble) is not served here");
  }
  if (reflection.HasField(*message, field(descriptor, "max_batch_size"))) {
    config.max_batch_size = reflection.GetInt32(*message, field(descriptor, "max_batch_size"));
  }
  if (reflection.HasField(*message, field(descriptor, "dynamic_batching"))) {
    const pb::Message& batching =
        reflection.GetMessage(*message, field(descriptor, "dynamic_batching"));
    const pb::Descriptor& batching_type = *batching.GetDescriptor();
    const pb::Reflection& batching_reflection = *batching.GetReflection();
    const pb::FieldDescriptor* preferred = field(batching_type, "preferred_batch_size");
    config.preferred_batch_sizes.clear();
    for (int i = 0; i < batching_reflection.FieldSize(batching, preferred); ++i) {
      config.preferred_batch_sizes.push_back(
          batching_reflection.GetRepeatedInt32(batching, preferred, i));
    }
    config.max_queue_delay_us = static_cast<int64_t>(batching_reflection.GetUInt64(
        batching, field(batching_type, "max_queue_delay_microseconds")));
    const pb::FieldDescriptor* policy = field(batching_type, "default_queue_policy");
    if (batching_reflection.HasField(batching, policy)) {
      const pb::Message& queue = batching_reflection.GetMessage(batching, policy);
      const int32_t size =
          queue.GetReflection()->GetInt32(queue, field(*queue.GetDescriptor(), "max_queue_size"));
      if (size > 0) config.max_queue_size = static_cast<size_t>(size);  // 0: Triton's unbounded
    }
  }
  const pb::FieldDescriptor* outputs = field(descriptor, "output");
  for (int i = 0; i < reflection.FieldSize(*message, outputs); ++i) {
    const pb::Message& output = reflection.GetRepeatedMessage(*message, outputs, i);
    const pb::Reflection& output_reflection = *output.GetReflection();
    const std::string labels =
        output_reflection.GetString(output, field(*output.GetDescriptor(), "label_filename"));
    if (labels.empty()) continue;
    if (!is_plain_relative_path(labels)) {
      throw Error(file.string() + ": label_filename '" + labels +
                  "' must be a file of the model's folder, without '..'");
    }
    config
        .label_files[output_reflection.GetString(output, field(*output.GetDescriptor(), "name"))] =
        file.parent_path() / labels;
  }
  const pb::FieldDescriptor* groups = field(descriptor, "instance_group");
  if (reflection.FieldSize(*message, groups) > 0) {
    int64_t instances = 0;
    for (int i = 0; i < reflection.FieldSize(*message, groups); ++i) {
      const pb::Message& group = reflection.GetRepeatedMessage(*message, groups, i);
      const pb::FieldDescriptor* count = field(*group.GetDescriptor(), "count");
      // Triton's count defaults to 1 per group.
      instances += group.GetReflection()->HasField(group, count)
                       ? group.GetReflection()->GetInt32(group, count)
                       : 1;
    }
    config.instances = static_cast<int>(std::clamp<int64_t>(instances, 1, 1024));
  }
  if (config.max_batch_size < 0 || config.max_queue_delay_us < 0) {
    throw Error(file.string() + ": max_batch_size and max_queue_delay_microseconds must be >= 0");
  }
  return config;
}

}  // namespace onnxkit::serve
