//===- PickleCheck.h - Pickles that would make LibTorch allocate wildly --===//
//
// LibTorch's unpickler trusts the numbers in a pickle: a memo index makes
// it grow its memo table to that index (16 bytes an entry), a length makes
// it allocate that many bytes, before it finds that the record cannot hold
// them. An archive whose CRCs are right but whose pickles are not (written
// by a broken tool, or damaged before its CRCs were computed) then costs
// gigabytes and tens of seconds, or the process. This walks a pickle's
// opcodes first and names the number no record of that size can hold.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_PICKLECHECK_H
#define MEMOPT_CONVERSION_PICKLECHECK_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::memopt {

/// Why the pickle `bytes` cannot be what a pickler wrote: an argument or a
/// length past its end, or a memo index (PUT, GET and their binary forms)
/// no pickle of its size reaches (a pickler numbers memo entries from 0,
/// each costing at least two bytes). std::nullopt when the walk reaches
/// STOP, or an opcode it does not know (LibTorch judges the rest).
std::optional<std::string> findPickleDamage(llvm::StringRef bytes);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_PICKLECHECK_H
