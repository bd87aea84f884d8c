//===- memopt-opt.cpp - run memopt passes on .mlir files ------------------===//
#include "memopt/Analysis/TestPasses.h"
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  mlir::memopt::registerAllMemoptPasses();
  mlir::memopt::registerAnalysisTestPasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::memopt::MemoptDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "memopt training-memory optimizer driver\n", registry));
}
