//===- ParserFuzzer.cpp - libFuzzer target over memopt-compile's readers --===//
//
// The first byte picks a reader, the rest is its text:
//   0  --budget (parseBudget)
//   1  --input-shape (parseInputSpec)
//   2  --spec / --signature (parseSignatureSpec)
//   3  the recorded-signatures JSON file (parseSignatureJSON)
//   4  a whole option set (validateCompileOptions), one field per line:
//      budget, prefer, device, grad-buffers, kernel-workspaces, fallback,
//      input-shape, spec, checkpoint, no-checkpoint, assume-binary
// Findings beyond FuzzSupport.h's: an error that is not one line, a value
// that does not survive formatting and parsing again, and options that pass
// validation but give a pass pipeline that does not parse.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "memopt/Compile/CompileOptions.h"
#include "memopt/Conversion/TorchScriptImport.h"
#include "memopt/Planning/Budget.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace mlir::memopt;

namespace {
bool sameSpecs(llvm::ArrayRef<InputSpec> a, llvm::ArrayRef<InputSpec> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (x.name != y.name || x.shape != y.shape || x.dtype != y.dtype)
      return false;
  return true;
}

void checkFailure(llvm::StringRef reader, const std::string &error) {
  if (!memopt_fuzz::isOneLine(error))
    memopt_fuzz::fail(reader.str() + ": the error is not one line: '" + error +
                      "'");
}

/// A parsed signature prints as `--spec` text that parses to the same specs.
void checkRoundTrip(llvm::StringRef reader, llvm::ArrayRef<InputSpec> inputs) {
  std::string text = formatSignature(inputs), error;
  FailureOr<InputSignature> again = parseSignatureSpec(text, error);
  if (failed(again))
    memopt_fuzz::fail(reader.str() + ": '" + text +
                      "' does not parse again: " + error);
  if (!sameSpecs(inputs, again->inputs))
    memopt_fuzz::fail(reader.str() + ": '" + text + "' parses to other specs");
}

void fuzzBudget(llvm::StringRef text) {
  std::string error;
  FailureOr<Budget> budget = parseBudget(text, error);
  if (failed(budget))
    return checkFailure("budget", error);
  if (budget->kind == Budget::Kind::Percent) {
    if (!(budget->percent > 0 && budget->percent <= 1000))
      memopt_fuzz::fail("budget: percentage out of (0, 1000]");
    int64_t resolved = budget->resolve(int64_t(1) << 50);
    if (resolved < 0)
      memopt_fuzz::fail("budget: a percentage resolved below zero");
    return;
  }
  if (budget->bytes < 1)
    memopt_fuzz::fail("budget: fewer than one byte accepted");
  // What the summary suggests as a --budget must parse to at least as many
  // bytes, and not many more.
  std::string suggested = formatBudgetValue(budget->bytes);
  FailureOr<Budget> again = parseBudget(suggested, error);
  if (failed(again) || again->kind != Budget::Kind::Bytes ||
      again->bytes < budget->bytes ||
      double(again->bytes) > double(budget->bytes) * 1.011 + 1)
    memopt_fuzz::fail("budget: suggested value '" + suggested +
                      "' does not stand for " + std::to_string(budget->bytes) +
                      " bytes");
  (void)formatBytes(budget->bytes);
}

void fuzzInputSpec(llvm::StringRef text) {
  std::string error;
  FailureOr<InputSpec> spec = parseInputSpec(text, error);
  if (failed(spec))
    return checkFailure("input spec", error);
  checkRoundTrip("input spec", {*spec});
  (void)describeSignature({*spec});
}

void fuzzSignatureSpec(llvm::StringRef text) {
  std::string error;
  FailureOr<InputSignature> signature = parseSignatureSpec(text, error);
  if (failed(signature))
    return checkFailure("signature spec", error);
  if (signature->count < 0)
    memopt_fuzz::fail("signature spec: a negative count accepted");
  checkRoundTrip("signature spec", signature->inputs);
}

void fuzzSignatureJSON(llvm::StringRef text) {
  std::string error;
  FailureOr<std::vector<InputSignature>> signatures =
      parseSignatureJSON(text, "fuzz.json", error);
  if (failed(signatures))
    return checkFailure("signature file", error);
  for (const InputSignature &signature : *signatures) {
    if (signature.count < 0)
      memopt_fuzz::fail("signature file: a negative count accepted");
    checkRoundTrip("signature file", signature.inputs);
  }
}

void fuzzOptions(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> fields;
  text.split(fields, '\n');
  fields.resize(11);
  auto list = [](llvm::StringRef field) {
    std::vector<std::string> values;
    if (field.empty())
      return values;
    llvm::SmallVector<llvm::StringRef> parts;
    field.split(parts, '\t');
    for (llvm::StringRef part : parts)
      values.push_back(part.str());
    return values;
  };
  std::string error;
  FailureOr<PlanningOptions> planning = parsePlanningOptions(
      fields[0], fields[1].empty() ? "balanced" : fields[1],
      fields[2].empty() ? "cpu" : fields[2], kDefaultOffloadBandwidthGBps,
      /*allowOverBudget=*/false, list(fields[8]), list(fields[9]),
      list(fields[10]), error);
  if (failed(planning))
    return checkFailure("options", error);
  CompileOptions options;
  options.inputPath = "/dev/null";
  options.analyzeOnly = true;
  options.planning = *planning;
  if (!fields[3].empty())
    options.gradBuffers = fields[3].str();
  if (!fields[4].empty())
    options.kernelWorkspaces = fields[4].str();
  if (!fields[5].empty())
    options.fallback = fields[5].str();
  options.inputShapes = list(fields[6]);
  options.specs = list(fields[7]);
  if (failed(validateCompileOptions(options, error)))
    return checkFailure("options", error);
  FailureOr<std::vector<InputSignature>> signatures =
      collectSignatures(options, error);
  if (failed(signatures))
    return checkFailure("options (signatures)", error);
  bool several = signatures->size() > 1;
  std::string pipeline = buildPipeline(options, several, /*plan=*/true);
  MLIRContext context(MLIRContext::Threading::DISABLED);
  memopt_fuzz::ErrorCounter errors(context);
  PassManager pm(&context);
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  if (failed(parsePassPipeline("builtin.module(" + pipeline + ")", pm, os)))
    memopt_fuzz::fail("options: valid options gave a pipeline that does "
                      "not parse: " +
                      pipeline + ": " + diagnostics);
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registerAllMemoptPasses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  llvm::StringRef text(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] % 5) {
  case 0:
    fuzzBudget(text);
    break;
  case 1:
    fuzzInputSpec(text);
    break;
  case 2:
    fuzzSignatureSpec(text);
    break;
  case 3:
    fuzzSignatureJSON(text);
    break;
  case 4:
    fuzzOptions(text);
    break;
  }
  return 0;
}
