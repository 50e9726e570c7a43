// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: a GCancellable seen by the core library's
 * cancellable waits (tensormem::WaitCancel), so one GLib object can end a
 * fence, reader or pool wait that a flush or a state change interrupts. Not
 * installed. */
#pragma once

#include <gio/gio.h>

#include <tensormem/timeline.hpp>

namespace gst_tensormem {

class CancellableWait final : public tensormem::WaitCancel {
public:
  explicit CancellableWait(GCancellable *cancellable) noexcept : cancellable_(cancellable) {}
  bool cancelled() const noexcept override {
    return cancellable_ != nullptr && g_cancellable_is_cancelled(cancellable_);
  }
  /// The core library's argument: null when there is nothing to watch.
  const tensormem::WaitCancel *get() const noexcept { return cancellable_ != nullptr ? this : nullptr; }

private:
  GCancellable *cancellable_;
};

} // namespace gst_tensormem
