//===- FuzzSupport.cpp - shared pieces of memopt's libFuzzer targets ------===//
#include "FuzzSupport.h"

#include "memopt/Dialect/MemoptDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;

/// The dialects memopt-opt registers.
static void initContext(MLIRContext &context) {
  DialectRegistry registry;
  registry.insert<memopt::MemoptDialect, func::FuncDialect>();
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

OwningOpRef<ModuleOp> memopt_fuzz::readModule(llvm::StringRef bytes,
                                              MLIRContext &context,
                                              const ErrorCounter &errors) {
  // Copied into a std::string: MLIR's lexer reads up to a terminating NUL.
  std::string text = bytes.str();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&context), "fuzz.mlir");
  if (!module && errors.count() == 0)
    fail("the parser failed without an error");
  if (errors.count() != 0)
    return nullptr;
  return module;
}

memopt_fuzz::ModuleInput::ModuleInput(const uint8_t *data, size_t size) {
  initContext(context);
  module =
      readModule(llvm::StringRef(reinterpret_cast<const char *>(data), size),
                 context, errors);
}
