//===- Locations.cpp - Module paths and source lines of TorchScript nodes -===//
//
// A node's location is NameLoc("<module path>", FileLineColLoc(file, line,
// col)): the module path is the tag ModuleLoader's inliner put on the node
// (the prim::GetAttr chain the called submodule was fetched by), the
// file and line from the node's source range, mapped back to the original
// Python source when the archive carries debug info. Nodes of the root module
// have no NameLoc.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <torch/csrc/jit/ir/scope.h>

using namespace mlir;
using namespace mlir::memopt::detail;

std::string mlir::memopt::detail::modulePathOf(const torch::jit::Node *node) {
  if (node->hasAttribute(kModulePathAttr))
    return node->s(kModulePathAttr);
  // Fallback: the inliner's call stack (graphs inlined by TorchScript).
  std::string path;
  auto callstack = node->callstack();
  while (callstack) {
    const torch::jit::InlinedCallStackPtr &frame = *callstack;
    if (auto instance = frame->module_instance()) {
      std::string name = instance->instance_name();
      // The inliner's placeholders for `self` and unknown instances.
      if (!name.empty() && name != "SELF" && name != "INSTANCE_NAME_UNKNOWN")
        path += (path.empty() ? "" : ".") + name;
    }
    callstack = frame->callee();
  }
  return path;
}

/// File, line and column of a source range, preferring the Python source the
/// serialized code was generated from. That mapping is unpickled lazily from
/// the archive's debug info; when it is damaged, the serialized code's own
/// line is still a location.
static auto sourceLineOf(const torch::jit::SourceRange &range) {
  try {
    if (auto original = range.findSourceRangeThatGenerated())
      if (auto site = original->file_line_col())
        return site;
  } catch (const std::exception &) {
    // Damaged debug info (or an allocation it asked for failed).
  }
  return range.file_line_col();
}

Location mlir::memopt::detail::locationOf(const torch::jit::Node *node,
                                          MLIRContext *context) {
  Location location = UnknownLoc::get(context);
  if (auto site = sourceLineOf(node->sourceRange())) {
    auto [file, line, column] = *site;
    if (!file.empty())
      location = FileLineColLoc::get(context, file, line, column + 1);
  }
  std::string path = modulePathOf(node);
  if (!path.empty())
    location = NameLoc::get(StringAttr::get(context, path), location);
  return location;
}

std::string mlir::memopt::detail::describeNode(const torch::jit::Node *node) {
  std::string site;
  if (auto where = sourceLineOf(node->sourceRange())) {
    auto [file, line, column] = *where;
    (void)column;
    if (!file.empty()) {
      llvm::StringRef name(file);
      site = name.rsplit('/').second.empty() ? file
                                             : name.rsplit('/').second.str();
      site += ":" + std::to_string(line);
    }
  }
  std::string path = modulePathOf(node);
  if (path.empty())
    return site;
  return site.empty() ? path : path + " (" + site + ")";
}
