//===- CostModelFile.h - a machine's cost-model fit from a file -*- C++ -*-===//
//
// bench/cost_model_calibration.py --write FILE fits the cost model's
// coefficients on the machine it runs on and writes them one class a line,
// `MEMOPT_COST_CLASS(Conv, secondsPerFlop, secondsPerByte, overheadSeconds)`,
// with `//` comments: the format of the built-in CostCoefficients.def.
// memopt-compile --cost-model FILE stamps such a fit on the module
// (`memopt.cost_model`), so that plans are priced for the machine that will
// train instead of the one memopt was built on.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_ANALYSIS_COSTMODELFILE_H
#define MEMOPT_ANALYSIS_COSTMODELFILE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::memopt {

/// Parses a fit's text (`name` for messages) into `memopt.cost_model`'s
/// value. A line that is not a comment, blank or one known class's three
/// finite non-negative numbers, a class given twice, or a file with no
/// class at all sets `error` to one line `name:line: what`.
FailureOr<DictionaryAttr> parseCostModelText(StringRef text, StringRef name,
                                             MLIRContext *context,
                                             std::string &error);

/// Reads and parses the file at `path` (errors as above, or why it cannot
/// be read).
FailureOr<DictionaryAttr>
readCostModelFile(StringRef path, MLIRContext *context, std::string &error);

} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_COSTMODELFILE_H
