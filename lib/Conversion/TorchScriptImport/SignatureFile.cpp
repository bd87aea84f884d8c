//===- SignatureFile.cpp - Read recorded input signatures (JSON) ----------===//
//
// The file python/memopt/recorder.py writes:
//   {"version": 1, "signatures": [
//      {"inputs": [{"name": "x", "shape": [8, 3, 224, 224], "dtype": "f32"}],
//       "count": 37}, ...]}
// Every problem is one line: the file, the JSON path, and what is wrong.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/TorchScriptImport.h"
#include "memopt/Support/QuotedText.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <set>

using namespace mlir::memopt;
namespace json = llvm::json;

namespace {
/// Collects the first error with its JSON path.
class Reader {
public:
  explicit Reader(llvm::StringRef displayName) : displayName(displayName) {}

  bool fail(const std::string &path, const llvm::Twine &why) {
    if (error.empty())
      error = (quoted(displayName) + ": " + path + " " + why).str();
    return false;
  }

  /// "a string", "an array", ... for messages.
  static std::string kindOf(const json::Value &value) {
    switch (value.kind()) {
    case json::Value::Null:
      return "null";
    case json::Value::Boolean:
      return "a boolean";
    case json::Value::Number:
      return "a number";
    case json::Value::String:
      return "a string";
    case json::Value::Array:
      return "an array";
    case json::Value::Object:
      return "an object";
    }
    return "a value";
  }

  bool checkKeys(const json::Object &object, const std::string &path,
                 std::initializer_list<llvm::StringRef> allowed) {
    std::vector<std::string> keys;
    for (const auto &entry : object)
      keys.push_back(entry.first.str());
    llvm::sort(keys); // json::Object is unordered: report deterministically
    for (const std::string &key : keys)
      if (!llvm::is_contained(allowed, key))
        return fail(path.empty() ? "the top level" : path,
                    "has unknown key " + quoted(key) + " (expected " +
                        llvm::join(allowed, ", ") + ")");
    return true;
  }

  std::optional<int64_t> nonNegative(const json::Value &value,
                                     const std::string &path) {
    std::optional<int64_t> number = value.getAsInteger();
    if (!number || *number < 0) {
      std::string shown;
      llvm::raw_string_ostream os(shown);
      os << value;
      fail(path,
           "is " +
               (value.kind() == json::Value::Number ? shown : kindOf(value)) +
               ", expected a non-negative integer");
      return std::nullopt;
    }
    return number;
  }

  bool readInput(const json::Value &value, const std::string &path,
                 InputSpec &spec) {
    const json::Object *object = value.getAsObject();
    if (!object)
      return fail(path, "is " + kindOf(value) + ", expected an object");
    if (!checkKeys(*object, path, {"name", "shape", "dtype"}))
      return false;
    const json::Value *name = object->get("name");
    if (!name)
      return fail(path, "has no \"name\"");
    std::optional<llvm::StringRef> text = name->getAsString();
    if (!text || text->empty() || !llvm::all_of(*text, [](char c) {
          return llvm::isAlnum(c) || c == '_' || c == '.';
        }))
      return fail(path + ".name", "is not an identifier string");
    spec.name = text->str();
    const json::Value *shape = object->get("shape");
    if (!shape)
      return fail(path, "has no \"shape\"");
    const json::Array *dims = shape->getAsArray();
    if (!dims)
      return fail(path + ".shape",
                  "is " + kindOf(*shape) + ", expected an array of sizes");
    int64_t elements = 1;
    for (auto [index, dim] : llvm::enumerate(*dims)) {
      std::string dimPath = path + ".shape[" + std::to_string(index) + "]";
      std::optional<int64_t> size = nonNegative(dim, dimPath);
      if (!size)
        return false;
      constexpr int64_t kMax = int64_t(1) << 40;
      if (*size > kMax || (*size > 0 && elements > kMax / *size))
        return fail(path + ".shape", "has more than 2^40 elements");
      elements *= *size;
      spec.shape.push_back(*size);
    }
    if (const json::Value *dtype = object->get("dtype")) {
      std::optional<llvm::StringRef> name = dtype->getAsString();
      if (!name || !llvm::is_contained(kInputDTypes, *name))
        return fail(
            path + ".dtype",
            (name ? "is " + quoted(name->str()) : "is " + kindOf(*dtype)) +
                ", expected one of " +
                llvm::join(llvm::ArrayRef(kInputDTypes), ", "));
      spec.dtype = name->str();
    }
    return true;
  }

  bool readSignature(const json::Value &value, const std::string &path,
                     InputSignature &signature) {
    const json::Object *object = value.getAsObject();
    if (!object)
      return fail(path, "is " + kindOf(value) + ", expected an object");
    if (!checkKeys(*object, path, {"inputs", "count", "budget", "passthrough"}))
      return false;
    const json::Value *inputs = object->get("inputs");
    if (!inputs)
      return fail(path, "has no \"inputs\"");
    const json::Array *list = inputs->getAsArray();
    if (!list)
      return fail(path + ".inputs",
                  "is " + kindOf(*inputs) + ", expected an array of inputs");
    // As --spec: a signature names at least one input (no inputs would
    // mean "no shapes", an unplanned import; found by the parser fuzzer).
    if (list->empty())
      return fail(path + ".inputs", "is empty, expected at least one input");
    std::set<std::string> names;
    for (auto [index, input] : llvm::enumerate(*list)) {
      std::string inputPath = path + ".inputs[" + std::to_string(index) + "]";
      InputSpec spec;
      if (!readInput(input, inputPath, spec))
        return false;
      if (!names.insert(spec.name).second)
        return fail(inputPath + ".name", "repeats input " + quoted(spec.name));
      signature.inputs.push_back(std::move(spec));
    }
    if (const json::Value *count = object->get("count")) {
      std::optional<int64_t> number = nonNegative(*count, path + ".count");
      if (!number)
        return false;
      signature.count = *number;
    }
    if (const json::Value *budget = object->get("budget")) {
      std::optional<llvm::StringRef> text = budget->getAsString();
      if (!text || text->trim().empty())
        return fail(path + ".budget",
                    "is " + (text ? std::string("empty") : kindOf(*budget)) +
                        ", expected a budget string");
      signature.budget = text->trim().str();
    }
    if (const json::Value *passthrough = object->get("passthrough")) {
      std::optional<bool> flag = passthrough->getAsBoolean();
      if (!flag)
        return fail(path + ".passthrough",
                    "is " + kindOf(*passthrough) + ", expected true or false");
      signature.passthrough = *flag;
    }
    return true;
  }

  bool read(const json::Value &root, std::vector<InputSignature> &result) {
    const json::Object *object = root.getAsObject();
    if (!object)
      return fail("the top level", "is " + kindOf(root) +
                                       ", expected an object with \"version\" "
                                       "and \"signatures\"");
    if (!checkKeys(*object, "", {"version", "signatures"}))
      return false;
    const json::Value *version = object->get("version");
    if (!version)
      return fail("the top level", "has no \"version\" (expected 1)");
    if (version->getAsInteger() != std::optional<int64_t>(1)) {
      std::string shown;
      llvm::raw_string_ostream os(shown);
      os << *version;
      return fail("version", "is " + shown + ", this memopt reads version 1");
    }
    const json::Value *signatures = object->get("signatures");
    if (!signatures)
      return fail("the top level", "has no \"signatures\"");
    const json::Array *list = signatures->getAsArray();
    if (!list)
      return fail("signatures",
                  "is " + kindOf(*signatures) + ", expected an array");
    if (list->empty())
      return fail("signatures", "is empty");
    for (auto [index, value] : llvm::enumerate(*list)) {
      std::string path = "signatures[" + std::to_string(index) + "]";
      InputSignature signature;
      if (!readSignature(value, path, signature))
        return false;
      for (auto [earlier, other] : llvm::enumerate(result)) {
        if (other.inputs == signature.inputs)
          return fail(path, "repeats signatures[" + std::to_string(earlier) +
                                "] (" + describeSignature(signature.inputs) +
                                ")");
      }
      result.push_back(std::move(signature));
    }
    return true;
  }

  llvm::StringRef displayName;
  std::string error;
};
} // namespace

llvm::FailureOr<std::vector<InputSignature>> mlir::memopt::parseSignatureJSON(
    llvm::StringRef text, llvm::StringRef displayName, std::string &error) {
  llvm::Expected<json::Value> root = json::parse(text);
  if (!root) {
    error = quoted(displayName.str()) +
            " is not valid JSON: " + llvm::toString(root.takeError());
    return llvm::failure();
  }
  Reader reader(displayName);
  std::vector<InputSignature> signatures;
  if (!reader.read(*root, signatures)) {
    error = reader.error;
    return llvm::failure();
  }
  return signatures;
}

llvm::FailureOr<std::vector<InputSignature>>
mlir::memopt::readSignatureFile(llvm::StringRef path, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = "cannot open signature file " + quoted(path.str()) + ": " +
            buffer.getError().message();
    return llvm::failure();
  }
  return parseSignatureJSON((*buffer)->getBuffer(), path, error);
}
