//===- ModuleState.cpp - Rebuild the module hierarchy and check state -----===//
//
// The exported module holds exactly the source's state under the source's
// names: one fresh class per class of the source (instances TorchScript let
// share a class share one here too), with the attributes in the original
// slot order (so state_dict() lists keys in the same order), the same types
// and parameter/buffer flags, and the very tensors of the source.
// Submodules get no methods: forward is rebuilt on the root and reads state
// through prim::GetAttr chains.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::memopt;

/// `__torch__.a.___torch_mangle_3.Block` -> `__torch__.a.Block`: names stay
/// readable; the compilation unit re-mangles where two classes collide.
static c10::QualifiedName demangledName(const c10::ClassTypePtr &type) {
  std::vector<std::string> atoms;
  if (type->name())
    for (const std::string &atom : type->name()->atoms())
      if (!llvm::StringRef(atom).starts_with("___torch_mangle_"))
        atoms.push_back(atom);
  if (atoms.empty())
    atoms = {"__torch__", "Module"};
  return c10::QualifiedName(atoms);
}

static bool isModuleType(const c10::TypePtr &type) {
  auto cls = type->cast<c10::ClassType>();
  return cls && cls->is_module();
}

namespace {
/// Rebuilds instances, one fresh class per source class: fewer classes make
/// the saved code smaller and torch.jit.load faster (each class constant is
/// compiled on load).
class HierarchyBuilder {
public:
  torch::jit::Module rebuild(const torch::jit::Module &source);

private:
  std::shared_ptr<torch::jit::CompilationUnit> cu =
      std::make_shared<torch::jit::CompilationUnit>();
  llvm::DenseMap<const c10::ClassType *, c10::ClassTypePtr> classes;
};
} // namespace

torch::jit::Module HierarchyBuilder::rebuild(const torch::jit::Module &source) {
  const c10::ClassTypePtr &type = source.type();
  c10::IValue instance = source._ivalue();
  auto values = [&](size_t slot) {
    c10::IValue value = instance.toObject()->getSlot(slot);
    return isModuleType(type->getAttribute(slot))
               ? rebuild(torch::jit::Module(value.toObject()))._ivalue()
               : value;
  };
  if (c10::ClassTypePtr known = classes.lookup(type.get())) {
    auto object = c10::ivalue::Object::create(c10::StrongTypePtr(cu, known),
                                              type->numAttributes());
    for (size_t slot = 0; slot < type->numAttributes(); ++slot)
      object->setSlot(slot, values(slot));
    return torch::jit::Module(object);
  }
  torch::jit::Module copy(demangledName(type), cu, /*shouldMangle=*/true);
  for (size_t slot = 0; slot < type->numAttributes(); ++slot) {
    const std::string &name = type->getAttributeName(slot);
    const c10::TypePtr &attrType = type->getAttribute(slot);
    c10::IValue value = values(slot);
    if (isModuleType(attrType)) {
      copy.register_module(name, torch::jit::Module(value.toObject()));
      continue;
    }
    copy.register_attribute(name, attrType, value, type->is_parameter(slot),
                            type->is_buffer(slot));
  }
  for (size_t i = 0; i < type->numConstants(); ++i)
    copy.type()->addConstant(type->getConstantName(i), type->getConstant(i));
  classes[type.get()] = copy.type();
  return copy;
}

torch::jit::Module
exporter::rebuildModuleHierarchy(const torch::jit::Module &source) {
  return HierarchyBuilder().rebuild(source);
}

//===----------------------------------------------------------------------===//
// Checking the IR's state ops against the source
//===----------------------------------------------------------------------===//

namespace {
/// The attribute a dotted path names, or an explanation of why none.
struct ResolvedAttr {
  c10::ClassTypePtr owner;
  size_t slot = 0;
  c10::IValue value;
  std::string error;
};
} // namespace

static ResolvedAttr resolve(const torch::jit::Module &root,
                            llvm::StringRef path) {
  ResolvedAttr result;
  SmallVector<StringRef> segments;
  path.split(segments, '.');
  torch::jit::Module module = root;
  for (auto [index, segment] : llvm::enumerate(segments)) {
    std::string name = segment.str();
    auto slot = module.type()->findAttributeSlot(name);
    std::string prefix =
        llvm::join(llvm::ArrayRef(segments).take_front(index + 1), ".");
    if (!slot) {
      result.error = "has no attribute '" + prefix + "'";
      return result;
    }
    c10::IValue value = module._ivalue()->getSlot(*slot);
    bool last = index + 1 == segments.size();
    if (last) {
      result.owner = module.type();
      result.slot = *slot;
      result.value = value;
      return result;
    }
    if (!isModuleType(module.type()->getAttribute(*slot))) {
      result.error = "'" + prefix + "' is not a submodule";
      return result;
    }
    module = torch::jit::Module(value.toObject());
  }
  return result;
}

static std::string shapeString(llvm::ArrayRef<int64_t> sizes) {
  return "[" +
         llvm::join(llvm::map_range(
                        sizes, [](int64_t s) { return std::to_string(s); }),
                    ", ") +
         "]";
}

/// A parameter or buffer tensor against the IR's result type.
static LogicalResult checkTensor(Operation *op, llvm::StringRef what,
                                 llvm::StringRef path, const at::Tensor &tensor,
                                 Type irType, llvm::StringRef sourceName) {
  auto ranked = dyn_cast<RankedTensorType>(irType);
  if (!ranked)
    return success();
  llvm::ArrayRef<int64_t> sizes(tensor.sizes().data(), tensor.sizes().size());
  bool same = ranked.getRank() == static_cast<int64_t>(sizes.size());
  for (size_t i = 0; same && i < sizes.size(); ++i)
    same = ranked.isDynamicDim(i) || ranked.getDimSize(i) == sizes[i];
  if (!same)
    return op->emitError() << what << " '" << path << "' has shape "
                           << shapeString(sizes) << " in " << sourceName
                           << " but the IR says " << irType;
  auto dtype = scalarTypeOf(ranked.getElementType());
  if (dtype && *dtype != tensor.scalar_type())
    return op->emitError() << what << " '" << path << "' has dtype "
                           << c10::toString(tensor.scalar_type()) << " in "
                           << sourceName << " but the IR says " << irType;
  return success();
}

LogicalResult exporter::verifyModuleState(ModuleOp module,
                                          const torch::jit::Module &root,
                                          llvm::StringRef sourceName) {
  WalkResult walk = module.walk([&](Operation *op) -> WalkResult {
    StringRef path, what;
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      auto assumes = func->getAttrOfType<DictionaryAttr>(kAssumesAttrName);
      for (NamedAttribute assumption :
           assumes ? assumes.getValue() : ArrayRef<NamedAttribute>()) {
        ResolvedAttr attr = resolve(root, assumption.getName().getValue());
        if (!attr.error.empty()) {
          op->emitError() << "assumed attribute '"
                          << assumption.getName().getValue()
                          << "' (memopt.assumes) does not exist in "
                          << sourceName << ": the model " << attr.error;
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    }
    if (auto param = dyn_cast<ParamOp>(op))
      path = param.getPath(), what = "parameter";
    else if (auto buffer = dyn_cast<BufferOp>(op))
      path = buffer.getPath(), what = "buffer";
    else if (auto get = dyn_cast<GetAttrOp>(op))
      path = get.getPath(), what = "attribute";
    else if (auto set = dyn_cast<SetAttrOp>(op))
      path = set.getPath(), what = "attribute";
    else
      return WalkResult::advance();

    ResolvedAttr attr = resolve(root, path);
    if (!attr.error.empty()) {
      op->emitError() << what << " '" << path << "' does not exist in "
                      << sourceName << ": the model " << attr.error;
      return WalkResult::interrupt();
    }
    const c10::TypePtr &attrType = attr.owner->getAttribute(attr.slot);
    if (isModuleType(attrType)) {
      op->emitError() << what << " '" << path << "' is a submodule in "
                      << sourceName;
      return WalkResult::interrupt();
    }
    bool isParam = attr.owner->is_parameter(attr.slot);
    bool isBuffer = attr.owner->is_buffer(attr.slot);
    if (isa<ParamOp, BufferOp>(op)) {
      bool wantParam = isa<ParamOp>(op);
      // A tensor attribute that is neither (`self.mask = torch.ones(...)`
      // without register_buffer) is imported as a transient buffer: state
      // the module keeps, outside its state_dict.
      auto buffer = dyn_cast<BufferOp>(op);
      bool plain = !isParam && !isBuffer;
      bool plainAsTransient = buffer && buffer.getTransient() && plain;
      if (!plainAsTransient &&
          (wantParam != isParam || (!wantParam && !isBuffer))) {
        op->emitError() << "'" << path << "' is "
                        << (isParam    ? "a parameter"
                            : isBuffer ? "a buffer"
                                       : "a plain attribute")
                        << " in " << sourceName << ", not a " << what;
        return WalkResult::interrupt();
      }
      if (!attr.value.isTensor()) {
        op->emitError() << what << " '" << path << "' is "
                        << attr.value.tagKind() << " in " << sourceName
                        << ", not a tensor";
        return WalkResult::interrupt();
      }
      const at::Tensor &tensor = attr.value.toTensor();
      if (failed(checkTensor(op, what, path, tensor, op->getResult(0).getType(),
                             sourceName)))
        return WalkResult::interrupt();
      // Made from parameters outside forward (weight_norm's pre-hook sets
      // such an attribute, and TorchScript does not run the hook): its
      // gradient would go back through a graph built once, at __init__.
      if (plainAsTransient && tensor.requires_grad()) {
        op->emitError() << "'" << path << "' is a plain tensor attribute "
                        << "that requires grad in " << sourceName
                        << " (computed outside forward, as by a forward "
                           "pre-hook such as weight_norm's, which "
                           "TorchScript does not run): compute it in forward "
                           "or make it a parameter";
        return WalkResult::interrupt();
      }
      auto param = dyn_cast<ParamOp>(op);
      if (param && param.getFrozen() == tensor.requires_grad()) {
        op->emitError() << "parameter '" << path << "' is "
                        << (param.getFrozen() ? "frozen" : "trainable")
                        << " in the IR but "
                        << (tensor.requires_grad() ? "requires"
                                                   : "does not require")
                        << " grad in " << sourceName;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    }
    Type irType = isa<GetAttrOp>(op) ? op->getResult(0).getType()
                                     : cast<SetAttrOp>(op).getValue().getType();
    c10::TypePtr converted = convertType(irType);
    if (!converted) {
      op->emitError() << "type " << irType << " of attribute '" << path
                      << "' has no TorchScript equivalent";
      return WalkResult::interrupt();
    }
    bool compatible = isa<GetAttrOp>(op) ? attrType->isSubtypeOf(*converted) ||
                                               converted->isSubtypeOf(*attrType)
                                         : converted->isSubtypeOf(*attrType);
    if (!compatible) {
      op->emitError() << "attribute '" << path << "' has type "
                      << attrType->repr_str() << " in " << sourceName
                      << " but the IR uses it as " << irType;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

std::optional<c10::IValue>
exporter::readAttribute(const torch::jit::Module &root, llvm::StringRef path) {
  ResolvedAttr attr = resolve(root, path);
  if (!attr.error.empty())
    return std::nullopt;
  return attr.value;
}
