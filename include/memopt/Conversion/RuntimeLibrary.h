//===- RuntimeLibrary.h - The runtime in the compiler's process -*- C++ -*-===//
//
// The compiler never links the runtime (docs/architecture.md, layering), yet
// memopt-compile runs the module it wrote once before it reports success,
// and that module calls the runtime's operators. So the runtime is loaded
// at run time, as a training script loads it (torch.ops.load_library), from
// where an installation or a build tree puts it next to the tools.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_RUNTIMELIBRARY_H
#define MEMOPT_CONVERSION_RUNTIMELIBRARY_H

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::memopt {

/// Where the runtime library is looked for, in order: `MEMOPT_RUNTIME_LIB`
/// when set, then `../lib` and `../_lib` (a pip install) beside the
/// running executable.
std::vector<std::string> runtimeLibraryCandidates();

/// Loads the first candidate that exists into this process, once (later
/// calls return the same result): its path, or an error naming the places
/// looked at or why the library would not load.
llvm::Expected<std::string> loadRuntimeLibrary();

/// Loads a library that registers operators (TORCH_LIBRARY: torchvision's
/// `_C`, a team's C++ extension) into this process for its whole life, as
/// `torch.ops.load_library` does in Python, so that archives calling its
/// operators import and run here. The error is one line naming `path`.
llvm::Error loadOperatorLibrary(llvm::StringRef path);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_RUNTIMELIBRARY_H
