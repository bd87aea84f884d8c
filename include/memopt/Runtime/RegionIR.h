//===- RegionIR.h - the text form of a checkpoint region's graph -*- C++
//-*-===//
//
// A checkpoint region travels in the compiled module as the text of its
// TorchScript graph (Graph::toString), which the runtime reads back with
// torch::jit::parseIR. Shared by the runtime, which parses it, and the
// exporter, which parses what it wrote before reporting success; both report
// a failure with describeRegionIRParseError. Plain C++:
// neither LibTorch nor MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_REGIONIR_H
#define MEMOPT_RUNTIME_REGIONIR_H

#include <sstream>
#include <string>
#include <vector>

namespace memopt::runtime {

/// Graph::toString prints a node without outputs as "<indent> =
/// prim::Print(%x)", which parseIR rejects; it expects
/// "<indent>prim::Print(%x)". Dropping that " = " lets printed graphs
/// round-trip.
inline std::string normalizeRegionIR(const std::string &ir) {
  std::string out;
  out.reserve(ir.size());
  size_t pos = 0;
  while (pos < ir.size()) {
    size_t end = ir.find('\n', pos);
    if (end == std::string::npos)
      end = ir.size();
    size_t first = ir.find_first_not_of(" \t", pos);
    if (first < end && first > pos && ir.compare(first - 1, 3, " = ") == 0) {
      out.append(ir, pos, first - 1 - pos); // the indent, without the " = "
      out.append(ir, first + 2, end - first - 2);
    } else {
      out.append(ir, pos, end - pos);
    }
    if (end < ir.size())
      out.push_back('\n');
    pos = end + 1;
  }
  return out;
}

/// torch::jit::parseIR's error on one line: its message (up to the line
/// ending in ':'; PyTorch 2.x starts some messages with a newline), then
/// the source line it marks ("<message>:\n<context>\n<line>\n   ~ <--- HERE").
inline std::string describeRegionIRParseError(const std::string &what) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(what);
  while (std::getline(in, line))
    lines.push_back(line);
  std::string message, source;
  bool inMessage = true;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("<--- HERE") != std::string::npos) {
      if (i > 0)
        source = lines[i - 1];
      break;
    }
    if (!inMessage || lines[i].find_first_not_of(" \t") == std::string::npos)
      continue;
    message += (message.empty() ? "" : " ") + lines[i];
    inMessage = lines[i].back() != ':';
  }
  size_t first = source.find_first_not_of(" \t");
  if (first != std::string::npos)
    message += " `" + source.substr(first) + "`";
  return message.empty() ? what : message;
}

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_REGIONIR_H
