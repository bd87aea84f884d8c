//===- OperatorCatalog.cpp - what the analyses know of each operator ------===//
#include "memopt/Analysis/OperatorCatalog.h"

#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <string>

using namespace mlir;
using namespace mlir::memopt;

static const OperatorInfo catalog[] = {
#define MEMOPT_OPERATOR(NAME, COST, FLOPS, PER_ELEMENT, BINARY, LAYOUT,        \
                        WORKSPACE, SIMULATOR, SAVED_ROW)                       \
  {NAME,                                                                       \
   CostClass::COST,                                                            \
   FlopRule::FLOPS,                                                            \
   PER_ELEMENT,                                                                \
   BinaryRule::BINARY,                                                         \
   LayoutRule::LAYOUT,                                                         \
   WorkspaceRule::WORKSPACE,                                                   \
   SimulatorRule::SIMULATOR,                                                   \
   SavedRowKey::SAVED_ROW},
#include "OperatorCatalog.def"
#undef MEMOPT_OPERATOR
};

static const OperatorInfo defaultOperator = {
    "",   CostClass::Elementwise, FlopRule::PerOutput,
    1,    BinaryRule::None,       LayoutRule::Inherit,
    WorkspaceRule::None, SimulatorRule::Default, SavedRowKey::Name};

static const OperatorInfo defaultPrimOperator = {
    "",   CostClass::View,  FlopRule::None,
    1,    BinaryRule::None, LayoutRule::Inherit,
    WorkspaceRule::None, SimulatorRule::Default, SavedRowKey::Name};

static const llvm::StringMap<const OperatorInfo *> &getIndex() {
  static const llvm::StringMap<const OperatorInfo *> index = [] {
    llvm::StringMap<const OperatorInfo *> map;
    for (const OperatorInfo &info : catalog) {
      bool inserted = map.try_emplace(info.name, &info).second;
      assert(inserted && "operator listed twice in OperatorCatalog.def");
      (void)inserted;
    }
    return map;
  }();
  return index;
}

static const OperatorInfo &findOperator(StringRef name) {
  const auto &index = getIndex();
  if (auto it = index.find(name); it != index.end())
    return *it->second;
  return name.starts_with("prim::") ? defaultPrimOperator : defaultOperator;
}

const OperatorInfo &mlir::memopt::lookupOperator(StringRef name) {
  // The memory model asks about every op several times per run, and the
  // planner runs it on hundreds of copies of a function: names come from
  // the context's uniqued attributes, so a per-thread cache by address
  // saves hashing them. The name is compared too: storage freed with one
  // context may hold another name later.
  struct Entry {
    const char *data = nullptr;
    std::string name;
    const OperatorInfo *info = nullptr;
  };
  constexpr size_t kEntries = 256;
  thread_local Entry cache[kEntries];
  Entry &entry =
      cache[(reinterpret_cast<uintptr_t>(name.data()) >> 3) % kEntries];
  if (entry.data == name.data() && entry.info && StringRef(entry.name) == name)
    return *entry.info;
  const OperatorInfo &info = findOperator(name);
  entry.data = name.data();
  entry.name = name.str();
  entry.info = &info;
  return info;
}

bool mlir::memopt::isCataloged(StringRef name) {
  return getIndex().count(name);
}

ArrayRef<OperatorInfo> mlir::memopt::getOperatorCatalog() { return catalog; }
