//===- ReportFuzzer.cpp - libFuzzer target over the compile report --------===//
//
// The report reads what the planner left on a function (memopt.plan,
// checkpoint regions and their input policies, compress and offload ops,
// prefetch schedules) and re-predicts its memory. Here those come from
// arbitrary verified modules, not from the planner, so every attribute the
// report reads can be missing, mistyped or out of range. Findings: see
// FuzzSupport.h; also a JSON report that does not parse back.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "memopt/Compile/CompileReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::memopt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  memopt_fuzz::ModuleInput input(data, size);
  if (!input.module)
    return 0;
  OwningOpRef<ModuleOp> &module = input.module;

  CompileReport report;
  report.model = "fuzz.pt";
  // The default planning options: balanced, cpu.
  report.timelineInJSON = size % 2 == 0;
  for (auto func : module->getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    SignatureReport signature;
    signature.function = func.getSymName().str();
    signature.baseline = predictMemory(func, &signature.unknownOps);
    collectPlan(func, signature);
    std::string timeline;
    llvm::raw_string_ostream timelineStream(timeline);
    printTimeline(func, "planned", timelineStream);
    report.signatures.push_back(std::move(signature));
  }

  std::string json;
  llvm::raw_string_ostream jsonStream(json);
  report.writeJSON(jsonStream);
  if (llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
      !parsed) {
    llvm::consumeError(parsed.takeError());
    memopt_fuzz::fail("the JSON report does not parse: " + json);
  }
  std::string summary;
  llvm::raw_string_ostream summaryStream(summary);
  report.printSummary(summaryStream);
  return 0;
}
