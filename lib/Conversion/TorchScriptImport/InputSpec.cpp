//===- InputSpec.cpp - `x:8x3x224x224[:f32]` specs and signatures ---------===//
#include "memopt/Conversion/TorchScriptImport.h"
#include "memopt/Support/QuotedText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::memopt;

/// Upper bound on one dimension and on the element count: anything larger is
/// a typo, and running a model on it would exhaust memory.
static constexpr int64_t kMaxElements = int64_t(1) << 40;

llvm::FailureOr<InputSpec> mlir::memopt::parseInputSpec(llvm::StringRef text,
                                                        std::string &error) {
  auto fail = [&](const llvm::Twine &why) {
    error = ("invalid input spec " + quoted(text) + ": " + why +
             " (expected name:D0xD1x...[:dtype], e.g. x:8x3x224x224:f32)")
                .str();
    return llvm::failure();
  };
  llvm::SmallVector<llvm::StringRef, 3> parts;
  text.split(parts, ':');
  if (parts.size() < 2 || parts.size() > 3)
    return fail("expected 2 or 3 ':'-separated fields");

  InputSpec spec;
  spec.name = parts[0].trim().str();
  if (spec.name.empty())
    return fail("the input name is empty");
  if (!llvm::all_of(spec.name, [](char c) {
        return llvm::isAlnum(c) || c == '_' || c == '.';
      }))
    return fail("the input name must be an identifier");

  llvm::StringRef dims = parts[1].trim();
  int64_t elements = 1;
  if (!dims.empty()) {
    llvm::SmallVector<llvm::StringRef> sizes;
    dims.split(sizes, 'x');
    for (llvm::StringRef size : sizes) {
      int64_t dim;
      if (size.empty() || !llvm::all_of(size, llvm::isDigit) ||
          size.getAsInteger(10, dim))
        return fail("dimension " + quoted(size) +
                    " is not a non-negative integer");
      if (dim > kMaxElements || (dim > 0 && elements > kMaxElements / dim))
        return fail("the shape has more than 2^40 elements");
      elements *= dim;
      spec.shape.push_back(dim);
    }
  }

  if (parts.size() == 3) {
    llvm::StringRef dtype = parts[2].trim();
    if (!llvm::is_contained(kInputDTypes, dtype))
      return fail("unknown dtype " + quoted(dtype) + " (one of " +
                  llvm::join(llvm::ArrayRef(kInputDTypes), ", ") + ")");
    spec.dtype = dtype.str();
  }
  return spec;
}

llvm::FailureOr<InputSignature>
mlir::memopt::parseSignatureSpec(llvm::StringRef text, std::string &error) {
  auto fail = [&](const llvm::Twine &why) {
    error = ("invalid signature " + quoted(text) + ": " + why +
             " (expected spec,spec,...[;count=N][;budget=S][;passthrough], "
             "e.g. x:8x3x224x224;count=37)")
                .str();
    return llvm::failure();
  };
  llvm::SmallVector<llvm::StringRef> fields;
  text.split(fields, ';');
  InputSignature signature;
  llvm::StringRef specs = fields.front().trim();
  if (specs.empty())
    return fail("no input spec");
  llvm::SmallVector<llvm::StringRef> parts;
  specs.split(parts, ',');
  for (llvm::StringRef part : parts) {
    std::string specError;
    llvm::FailureOr<InputSpec> spec = parseInputSpec(part.trim(), specError);
    if (failed(spec)) {
      error = "in signature " + quoted(text.str()) + ": " + specError;
      return llvm::failure();
    }
    signature.inputs.push_back(std::move(*spec));
  }
  bool seenCount = false, seenBudget = false;
  for (llvm::StringRef field : llvm::ArrayRef(fields).drop_front()) {
    auto [key, value] = field.split('=');
    key = key.trim();
    value = value.trim();
    if (key == "count") {
      if (seenCount)
        return fail("'count' is given twice");
      seenCount = true;
      if (value.empty() || !llvm::all_of(value, llvm::isDigit) ||
          value.getAsInteger(10, signature.count))
        return fail("count " + quoted(value) +
                    " is not a non-negative integer");
    } else if (key == "budget") {
      if (seenBudget)
        return fail("'budget' is given twice");
      seenBudget = true;
      if (value.empty())
        return fail("the budget is empty");
      signature.budget = value.str();
    } else if (key == "passthrough" && !field.contains('=')) {
      signature.passthrough = true;
    } else {
      return fail("unknown setting " + quoted(field.trim()));
    }
  }
  return signature;
}

std::string mlir::memopt::formatSignature(llvm::ArrayRef<InputSpec> inputs) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      inputs, os,
      [&](const InputSpec &spec) {
        os << spec.name << ":";
        llvm::interleave(spec.shape, os, "x");
        if (spec.dtype != "f32")
          os << ":" << spec.dtype;
      },
      ",");
  return text;
}

std::string mlir::memopt::describeSignature(llvm::ArrayRef<InputSpec> inputs) {
  std::string text;
  for (const InputSpec &spec : inputs) {
    if (!text.empty())
      text += ", ";
    text += spec.name + ": ";
    if (spec.shape.empty())
      text += "scalar";
    for (auto [index, size] : llvm::enumerate(spec.shape))
      text += (index ? "x" : "") + std::to_string(size);
    text += " " + spec.dtype;
  }
  return text;
}
