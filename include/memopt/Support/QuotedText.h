//===- QuotedText.h - user text inside one-line messages --------*- C++ -*-===//
//
// Messages quote what the user wrote ("invalid --budget '80 MB'"). Command
// line arguments and JSON strings can hold newlines and other control
// characters; quoted raw they would break the one-line promise and could
// forge lines of output. quoted() escapes them (\n, \t, \x1B, and \\ and \"
// as in a YAML double-quoted string) inside single quotes.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_SUPPORT_QUOTEDTEXT_H
#define MEMOPT_SUPPORT_QUOTEDTEXT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/YAMLParser.h"

#include <string>

namespace mlir::memopt {

/// `'text'` with control characters escaped (printable UTF-8 kept).
inline std::string quoted(llvm::StringRef text) {
  return "'" + llvm::yaml::escape(text, /*EscapePrintable=*/false) + "'";
}

// Exact overloads for strings: where <iomanip> is visible (LibTorch's
// headers bring it), argument-dependent lookup also finds std::quoted, a
// better match for a std::string than the conversion to StringRef above;
// these win over it (not templates).
inline std::string quoted(const std::string &text) {
  return quoted(llvm::StringRef(text));
}
inline std::string quoted(std::string &text) { // std::quoted's input form
  return quoted(llvm::StringRef(text));
}
inline std::string quoted(const char *text) {
  return quoted(llvm::StringRef(text));
}

} // namespace mlir::memopt

#endif // MEMOPT_SUPPORT_QUOTEDTEXT_H
