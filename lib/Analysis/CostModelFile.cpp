//===- CostModelFile.cpp - a machine's cost-model fit from a file ---------===//
#include "memopt/Analysis/CostModelFile.h"
#include "memopt/Analysis/CostModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace mlir::memopt;

/// One number as the calibration prints it (`%.4e`), or any decimal form.
static bool parseCoefficient(StringRef text, double &value) {
  text = text.trim();
  return !text.empty() && !text.getAsDouble(value) && std::isfinite(value) &&
         value >= 0;
}

FailureOr<DictionaryAttr> mlir::memopt::parseCostModelText(StringRef text,
                                                           StringRef name,
                                                           MLIRContext *context,
                                                           std::string &error) {
  std::array<bool, kNumCostClasses> seen{};
  SmallVector<NamedAttribute> classes;
  Builder builder(context);
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  for (auto [index, rawLine] : llvm::enumerate(lines)) {
    std::string where = (name + ":" + Twine(index + 1) + ": ").str();
    StringRef line = rawLine.trim();
    if (line.empty() || line.starts_with("//"))
      continue;
    constexpr StringLiteral prefix = "MEMOPT_COST_CLASS(";
    if (!line.consume_front(prefix) || !line.consume_back(")")) {
      error = where + "expected 'MEMOPT_COST_CLASS(class, secondsPerFlop, "
                      "secondsPerByte, overheadSeconds)' or a // comment";
      return failure();
    }
    SmallVector<StringRef> fields;
    line.split(fields, ',');
    if (fields.size() != 4) {
      error = where + "expected a class and three coefficients, got " +
              std::to_string(fields.size()) + " fields";
      return failure();
    }
    StringRef className = fields[0].trim();
    std::optional<CostClass> cls = symbolizeCostClass(className);
    if (!cls) {
      error = where + "unknown cost class '" + className.str() +
              "' (expected one of " + llvm::join(getCostClassNames(), ", ") +
              ")";
      return failure();
    }
    if (seen[static_cast<unsigned>(*cls)]) {
      error = where + "cost class '" + className.str() + "' given twice";
      return failure();
    }
    seen[static_cast<unsigned>(*cls)] = true;
    std::array<double, 3> values;
    for (unsigned i = 0; i < 3; ++i)
      if (!parseCoefficient(fields[i + 1], values[i])) {
        error = where + "'" + fields[i + 1].trim().str() + "' (" +
                std::array{"secondsPerFlop", "secondsPerByte",
                           "overheadSeconds"}[i] +
                " of " + className.str() +
                ") is not a finite non-negative number";
        return failure();
      }
    classes.push_back(
        builder.getNamedAttr(className, builder.getDenseF64ArrayAttr(values)));
  }
  if (classes.empty()) {
    error = (name + ": no MEMOPT_COST_CLASS line (write one with "
                    "bench/cost_model_calibration.py --write FILE)")
                .str();
    return failure();
  }
  return builder.getDictionaryAttr(classes);
}

FailureOr<DictionaryAttr> mlir::memopt::readCostModelFile(StringRef path,
                                                          MLIRContext *context,
                                                          std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = "cannot read cost model '" + path.str() +
            "': " + buffer.getError().message();
    return failure();
  }
  if ((*buffer)->getBuffer().contains('\0')) {
    error = "cost model '" + path.str() + "' is not a text file";
    return failure();
  }
  return parseCostModelText((*buffer)->getBuffer(), path, context, error);
}
