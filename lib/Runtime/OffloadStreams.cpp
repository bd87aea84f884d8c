//===- OffloadStreams.cpp - Device-generic stream and event helpers -------===//

#include "OffloadInternal.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#include <map>
#include <mutex>

namespace memopt::runtime {

c10::Stream currentStream(const c10::Device &device) {
  c10::impl::VirtualGuardImpl impl(device.type());
  return impl.getStream(device);
}

c10::Stream sideStream(const c10::Device &device) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, c10::Stream> streams;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(static_cast<int>(device.type()),
                            static_cast<int>(device.index()));
  auto it = streams.find(key);
  if (it == streams.end()) {
    c10::impl::VirtualGuardImpl impl(device.type());
    it = streams
             .emplace(key,
                      impl.getStreamFromGlobalPool(device,
                                                   /*isHighPriority=*/false))
             .first;
  }
  return it->second;
}

std::unique_ptr<c10::Event> recordEvent(const c10::Stream &stream) {
  auto event = std::make_unique<c10::Event>(stream.device_type());
  event->record(stream);
  return event;
}

void streamWaitsFor(const c10::Stream &waiter, const c10::Stream &producer) {
  if (waiter == producer)
    return;
  recordEvent(producer)->block(waiter);
}

void recordTensorOnStream(const at::Tensor &t, const c10::Stream &stream) {
  c10::impl::VirtualGuardImpl impl(t.device().type());
  impl.recordDataPtrOnStream(t.storage().data_ptr(), stream);
}

std::vector<int64_t> denseStridesFor(const at::Tensor &t) {
  if (t.is_non_overlapping_and_dense())
    return t.strides().vec();
  std::vector<int64_t> strides(t.dim());
  int64_t running = 1;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    strides[d] = running;
    running *= std::max<int64_t>(t.size(d), 1);
  }
  return strides;
}

} // namespace memopt::runtime
