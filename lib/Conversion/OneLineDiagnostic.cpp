//===- OneLineDiagnostic.cpp - memopt's one-line error format -------------===//
#include "memopt/Conversion/OneLineDiagnostic.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace mlir;

std::string mlir::memopt::describeLocation(Location loc) {
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return describeLocation(call.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location part : fused.getLocations())
      if (std::string text = describeLocation(part); !text.empty())
        return text;
    return "";
  }
  if (auto name = dyn_cast<NameLoc>(loc)) {
    std::string path = name.getName().str();
    std::string site = describeLocation(name.getChildLoc());
    return site.empty() ? path : path + " (" + site + ")";
  }
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (llvm::sys::path::filename(file.getFilename().getValue()) + ":" +
            llvm::Twine(file.getLine()))
        .str();
  return "";
}

static llvm::StringRef severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

void mlir::memopt::printOneLineDiagnostic(Diagnostic &diagnostic,
                                          llvm::raw_ostream &os) {
  std::string message = diagnostic.str();
  // One line per diagnostic, whatever a LibTorch message contained.
  std::replace(message.begin(), message.end(), '\n', ' ');
  os << "memopt: " << severityName(diagnostic.getSeverity()) << ": " << message;
  std::string where = describeLocation(diagnostic.getLocation());
  if (!where.empty())
    os << ", at " << where;
  os << "\n";
}
