//===- ModuleState.h - Parameters, buffers and attributes in forward -*- C++
//-*-===//
//
// Resolves prim::GetAttr / prim::SetAttr chains from `self` to qualified
// module paths (`layer1.0.conv1.weight`) and classifies what they read.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_MODULESTATE_H
#define MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_MODULESTATE_H

#include "ImportInternal.h"

namespace mlir::memopt::detail {

enum class StateKind {
  Module,    ///< a submodule or other object: not a value in MLIR
  Parameter, ///< memopt.param
  Buffer,    ///< memopt.buffer
  Transient, ///< a tensor attribute outside state_dict: memopt.buffer transient
  Attribute, ///< anything else, or state assigned in forward: memopt.get_attr
};

struct StateRef {
  std::string path;
  StateKind kind = StateKind::Attribute;
  /// The attribute's value in the loaded module.
  c10::IValue value;
};

class ModuleState {
public:
  ModuleState(const torch::jit::Module &module, torch::jit::Graph &graph);
  /// The attribute a prim::GetAttr reads (or prim::SetAttr writes).
  StateRef resolve(const torch::jit::Node *node) const;
  /// The paths of the parameters a list attribute holds, when forward does
  /// not assign it and every element is a parameter of the same module
  /// (nn.LSTM's `_flat_weights`); empty otherwise.
  std::vector<std::string>
  getListedParameters(const torch::jit::Node *node) const;
  /// True for values that are modules or objects (no MLIR value).
  bool isObject(const torch::jit::Value *value) const {
    return objects.count(value) != 0;
  }

private:
  std::unordered_map<const torch::jit::Value *, StateRef> objects;
  std::set<std::string> assigned;
};

} // namespace mlir::memopt::detail

#endif // MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_MODULESTATE_H
