//===- MarksLine.cpp - one measurement as a line of a marks file ----------===//
//
// Plain C++: the CPU probe's cache and the marks files a GPU's probe writes
// (bench/cuda_kernel_probe.py) share the format.
//
//===----------------------------------------------------------------------===//
#include "MarksLine.h"

#include <sstream>

namespace memopt::probe {
std::string formatMarksLine(const std::string &context, const std::string &key,
                            const KernelMarks &marks) {
  std::ostringstream line;
  line << context << '\t' << key << '\t' << marks.forward;
  for (int64_t bytes : marks.backward)
    line << ' ' << bytes;
  if (marks.saved >= 0 && marks.retained >= 0)
    line << ' ' << marks.saved << ' ' << marks.retained;
  return line.str();
}

bool parseMarksLine(const std::string &line, std::string &context,
                    std::string &key, KernelMarks &marks) {
  size_t first = line.find('\t');
  size_t second =
      first == std::string::npos ? first : line.find('\t', first + 1);
  if (second == std::string::npos)
    return false;
  std::istringstream numbers(line.substr(second + 1));
  KernelMarks read;
  numbers >> read.forward;
  for (int64_t &bytes : read.backward)
    numbers >> bytes;
  if (numbers.fail())
    return false;
  // Recurrent layers' saved bytes and kept operands (older lines and
  // convolutions end before them).
  int64_t saved, retained;
  if (numbers >> saved >> retained) {
    read.saved = saved;
    read.retained = retained;
  }
  context = line.substr(0, first);
  key = line.substr(first + 1, second - first - 1);
  marks = read;
  return true;
}
} // namespace memopt::probe
