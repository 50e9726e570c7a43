// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem and tensorbatch: what a GstAggregator needs to
 * drive a BatchAssembler beyond wiring its vfuncs.
 *
 * Frames never queue on the aggregator's pads: each sink pad's chain
 * places its frame in the assembler (batch_aggregator_place), where a
 * frame of a later batch waits for the front one to leave. GstAggregator
 * runs its source task only when every pad holds data or its live wait
 * ends, so whatever may let a batch leave (a placed frame, a released pad,
 * the non-live timeout) wakes it with a serialized custom event sent into
 * a sink pad (batch_aggregator_wake; batch_aggregator_is_wake reads it),
 * and the source task then sends what may leave
 * (batch_aggregator_send). C++ only; not installed. */
#pragma once

#include <gio/gio.h>
#include <gst/base/gstaggregator.h>
#include <gst/tensormem/gsttensorbackend-private.h>
#include <gst/tensormem/gsttensorbatchassembler-private.h>

namespace gst_tensormem {

/* Places frame `buffer` (taken) of sink pad `pad` (stream `id`) of `agg`,
 * in the pad's chain: its fences are waited for where it is copied
 * (cancelled by `waits`). Once placed: the last flow downstream (OK, or
 * an error, EOS or not-linked the streams now return; flushing reads as
 * OK). OK where it came after its batch had left (`*late`: dropped; the
 * caller counts it on the pad). Otherwise a flow saying why, with an
 * element error where the frame is refused. */
GstFlowReturn batch_aggregator_place(GstAggregator *agg, BatchAssembler &s, GstPad *pad, guint id, GstBuffer *buffer,
                                     GCancellable *waits, bool *late);

/* Sends from `agg`'s source task every batch that may leave: the front
 * one for `why`, the next ones for `then`. The batches' caps, segment
 * (the first stream's) and the streams' events go before them. */
GstFlowReturn batch_aggregator_send(GstAggregator *agg, BatchAssembler &s, BatchReason why,
                                    BatchReason then = BatchReason::Complete);

/* Stream `id`'s caps event on `pad`, or the description of its frames'
 * tensor (a GST_TENSOR_MEM_FRAME_TENSOR_EVENT, before GStreamer 1.28): the
 * assembler takes it, or the element error that says why not is posted on
 * `agg` and FALSE returned. TRUE for any other event (borrowed). */
bool batch_aggregator_take_caps(GstAggregator *agg, BatchAssembler &s, ElementBackend &devices, guint id, GstPad *pad,
                                GstEvent *event);

/* Wakes `agg`'s source task (for `why`) from outside a chain: through a
 * sink pad whose stream lock is free, or, where every pad's chain holds
 * its own (they wait for their batch), by the next of those chains. */
void batch_aggregator_wake(GstAggregator *agg, BatchAssembler &s, BatchReason why);

/* Whether `event` is a wake (and its reason in `*why`). */
bool batch_aggregator_is_wake(GstEvent *event, BatchReason *why);

/* Whether every sink pad of `agg` has ended. */
bool batch_aggregator_all_ended(GstAggregator *agg);

/* Whether seek `event` repeats the previous one (after a split, each
 * stream's sink sends the pipeline's seek): only the first goes upstream.
 * GstAggregator drops repeats too, but 1.22 leaks each one. */
bool batch_aggregator_seek_again(BatchAssembler &s, GstEvent *event);

} // namespace gst_tensormem
