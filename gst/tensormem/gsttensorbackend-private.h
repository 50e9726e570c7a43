// SPDX-License-Identifier: Apache-2.0
/* Private to libgsttensormem: one backend per storage family, and the state
 * an element keeps for the backend of its storage.
 *
 * A Backend says everything an element needs to know about a storage: the
 * caps feature of its memory, the process-wide object it needs (a GL worker,
 * a D3D11 device: shared through GstContext) and when to find it, the start
 * check that names what this machine lacks, its allocator and pool, and how
 * a CPU write into its memory is fenced. Each storage unit defines its entry
 * (gsttensormemory.cpp, gsttensordmabuf.cpp, gsttensorpbo.cpp,
 * gsttensord3d11.cpp); backend_for() and backend_at() are the one switch
 * over storages. The entry covers the family's whole life: its memory's
 * caps, its device, allocator and pool, windows of its memory, how a CPU
 * write into it is fenced and how it is readied for a CUDA import; an
 * element or a library unit outside the family asks the table.
 *
 * ElementBackend is what an element holds: the storage property, the shared
 * objects its neighbours or the application gave it, and the allocator
 * between start and stop. Elements call it and never name a storage.
 * C++ only; not installed. */
#pragma once

#include <gst/allocators/gstdmabuf.h>
#include <gst/tensormem/gsttensormemconfig.h>
#include <gst/tensormem/gsttensorstorage.h>
#include <gst/tensormem/tensormem-prelude.h>
#include <gst/video/video.h>

#include <tensormem/types.hpp>

#include <cstddef>

namespace gst_tensormem {

struct Backend {
  GstTensorMemStorage storage;
  /* In messages: "system", "DMA-BUF", "PBO", "D3D11". */
  const char *memory_name;
  /* The caps feature of the output memory; NULL: plain system-memory caps. */
  const char *caps_feature = nullptr;
  tensormem::StorageKind kind;
  /* The largest alignment mask an allocation of this memory may ask for:
   * what the family promises about the address of a CPU map. */
  gsize max_align_mask = 0;

  /* The shared object this storage needs, or all NULL. The slot holds a
   * GstObject of the backend's type. */
  gboolean (*ensure_device)(GstElement *element, GstObject **slot, GError **error) = nullptr;
  gboolean (*handle_set_context)(GstElement *element, GstContext *context, GstObject **slot) = nullptr;
  gboolean (*handle_context_query)(GstElement *element, GstQuery *query, GstObject **slot) = nullptr;
  /* TRUE: the device is found on the way to READY, so that every element has
   * it before any streams (D3D11); else at start. */
  bool device_at_ready = false;
  /* Posted when no device can be had: the error, then the fix (printf format
   * with the reason as its one %s). */
  GstResourceError device_error = GST_RESOURCE_ERROR_FAILED;
  const char *device_failure = nullptr;
  /* Logs which device was found. */
  void (*describe_device)(GstElement *element, GstObject *device) = nullptr;

  /* At set_caps, for output caps of this memory: FALSE after an element
   * error naming a format the memory cannot hold. NULL: all can. */
  gboolean (*check_caps)(GstElement *element, GstCaps *caps) = nullptr;
  /* Start check: FALSE after an element error naming what is missing. NULL: none. */
  gboolean (*check_usable)(GstElement *element) = nullptr;
  /* The allocator of this storage's memory (new reference); `device` is the
   * slot's object, NULL for storages without one. */
  GstAllocator *(*new_allocator)(GstObject *device) = nullptr;
  /* After a CPU write into a buffer of this memory: TRUE when it needs a
   * fence (fence_writes adds one). NULL: never. */
  gboolean (*cpu_writes_need_fence)(GstBuffer *buffer) = nullptr;
  gboolean (*fence_writes)(GstBuffer *buffer, GError **error) = nullptr;

  /* TRUE: any element can read this memory through an ordinary CPU map,
   * so besides its caps feature the family may be offered with plain caps
   * (system memory, and DMA-BUF: an fd's mmap). */
  bool maps_as_system = false;
  /* TRUE: the family's memory lives in GL objects that a GstGL context can
   * share (PBO), so an element writing it answers GstGL's display query from
   * upstream (gst_tensor_mem_gstgl_display_answer_query) and GstGL's textures
   * reach it on the GPU. */
  bool shares_gstgl_display = false;
  /* TRUE: tensorconvert's GL compute pass writes this family's memory (its
   * output buffers are GL buffer objects of the family's device), so
   * picking the family picks the GL path. At most one family. */
  bool written_by_gl_pass = false;
  /* TRUE: this family's memory can wrap the fds of another producer's
   * DMA-BUF memory without a copy (tensorupload's fd import). */
  bool wraps_dmabuf_fds = false;
  /* TRUE: an allocation of any byte count is one flat range, and a window
   * of it is memory of its own (system, DMA-BUF, PBO), so n slots of a batch
   * can be one allocation of the family (BatchStore) and a batching
   * element's templates list it. FALSE where memory has a shape of its own
   * (a D3D11 texture: rows at the driver's pitch). */
  bool holds_batches = false;
  /* A template structure this family adds after its featured caps where
   * GStreamer knows it (DMA-BUF: its DMA_DRM form); "" for none. */
  const char *extra_template = "";
  /* The type of the family's allocators, and of its pool where the family
   * has a subclass of GstTensorMemBufferPool (NULL: the base pool). */
  GType (*allocator_type)(void) = nullptr;
  GType (*pool_type)(void) = nullptr;
  /* TRUE when `mem` is memory of this family (shares and windows too). */
  gboolean (*owns_memory)(GstMemory *mem) = nullptr;
  /* The pool of this family's memory from `allocator` (the backend's; not
   * NULL for families with a device); NULL for an allocator of another kind. */
  GstBufferPool *(*new_pool)(GstAllocator *allocator) = nullptr;
  /* A writable memory over bytes [offset, offset + size) of `mem` (this
   * family's), sharing its storage: no copy, no GstMemory parent, so it can
   * be written while other windows of the storage are in use (a batch's
   * slots). NULL when the range is outside `mem`. */
  GstMemory *(*new_window)(GstMemory *mem, gsize offset, gsize size) = nullptr;
  /* Before `mem` (this family's, in `buffer`) is imported into CUDA: makes
   * what the buffer says about pending GPU work part of the storage, where
   * the CUDA attachment waits on it (D3D11: the buffer's D3D11 fence metas
   * become the texture's recorded write). NULL: nothing to do. */
  void (*prepare_cuda)(GstBuffer *buffer, GstMemory *mem) = nullptr;
  /* TRUE with the bytes of the fd behind `mem` (this family's) as its
   * storage measured them when it was made, so that buffer validation need
   * not ask the kernel; 0 bytes when the memory has no fd. FALSE (or NULL):
   * not known here, ask the kernel. */
  gboolean (*fd_bytes)(GstMemory *mem, guint64 *bytes) = nullptr;
  /* Drops what the family keeps of other producers' memory between buffers
   * (DMA-BUF: the imports kept for re-wrapping a producer's fds), so a
   * stopped pipeline holds none of it. NULL: nothing kept. */
  void (*forget_foreign_imports)(void) = nullptr;
};

/* The number of families, and family `i` of the table (0: system). */
constexpr std::size_t kBackendCount = 4;
const Backend &backend_at(std::size_t i);

/* The family whose memory `mem` is; NULL for memory that is not ours. */
const Backend *backend_of_memory(GstMemory *mem);

/* The family whose caps feature structure `index` of `caps` names (system
 * for plain caps); NULL for a feature no family has. */
const Backend *backend_of_caps(const GstCaps *caps, guint index);

/* A window of `mem` (see Backend::new_window) for memory of any family;
 * NULL for memory that is not ours or a range outside it. */
GstMemory *memory_new_window(GstMemory *mem, gsize offset, gsize size);

/* Before a CUDA import of `mem` (of `buffer`): the family's preparation. */
void prepare_cuda_import(GstBuffer *buffer, GstMemory *mem);

/* Every family's forget_foreign_imports: an element that imported other
 * producers' memory calls it at stop. */
void forget_foreign_imports();

/* The family tensorconvert's GL pass writes (written_by_gl_pass); NULL in a
 * build without GL or a table without one. */
const Backend *gl_pass_backend();

/* Which families template_caps() lists, and in which order. */
enum class TemplateFamilies {
  All,               // every family, system first
  AllShared,         // every family, the shared families that map as system first
  CpuReadable,       // the families that map as system, system first
  CpuReadableShared, // the same, the shared ones first
  Batches,           // the families that hold batches (holds_batches), system first
};

/* Pad-template caps built from the table (as GstGL builds its upload's
 * from its method table): the caps string `plain` (structures without
 * features) once per family, with the family's caps feature and, for
 * video/x-raw, its extra template structure. A new family's memory reaches
 * every element's template by its table entry. New reference. */
GstCaps *template_caps(const char *plain, TemplateFamilies families);

/* Each storage unit's entry. */
const Backend &system_backend();
const Backend &dmabuf_backend();
const Backend &pbo_backend();
const Backend &d3d11_backend();

/* The backend of `storage`, resolved (gst_tensor_mem_storage_resolve()). */
const Backend &backend_for(GstTensorMemStorage storage);

/* The property's nick: "auto", "system", "dmabuf", "pbo" or "d3d11". */
const char *storage_nick(GstTensorMemStorage storage);

/* `caps` with every structure's features replaced by `feature` (NULL: none). */
GstCaps *caps_with_feature(GstCaps *caps, const char *feature);

/* The pad-template structure (with its leading "; ") our DMA-BUF pads add
 * for DMA_DRM caps where GStreamer has them: any drm-format, so that a
 * modifier we cannot read reaches set_caps and is refused there by name. */
#if GST_TENSOR_MEM_HAVE_DMA_DRM
#define GST_TENSOR_MEM_DMA_DRM_STRUCTURE GST_VIDEO_CAPS_MAKE_WITH_FEATURES(GST_CAPS_FEATURE_MEMORY_DMABUF, "DMA_DRM")
#define GST_TENSOR_MEM_DMA_DRM_TEMPLATE "; " GST_TENSOR_MEM_DMA_DRM_STRUCTURE
#else
#define GST_TENSOR_MEM_DMA_DRM_STRUCTURE ""
#define GST_TENSOR_MEM_DMA_DRM_TEMPLATE ""
#endif

/* DMA_DRM caps (GStreamer 1.24: `format=DMA_DRM, drm-format=FOURCC[:MODIFIER]`)
 * read as the ordinary caps they describe: `caps` (borrowed) with every
 * DMA_DRM structure's drm-format values replaced by the video formats they
 * name, whatever their modifier (set_caps refuses a modifier that is not
 * linear by name, see gst_tensor_mem_video_info_from_caps()); a structure
 * whose fourccs name no video format is dropped, one without drm-format
 * takes GST_TENSOR_MEM_VIDEO_FORMATS. New reference; a plain copy where
 * GStreamer has no DMA_DRM caps. */
GstCaps *caps_without_dma_drm(GstCaps *caps);

/* `caps` (borrowed) with, after each `video/x-raw(memory:DMABuf)` structure
 * of ordinary formats, its DMA_DRM form: `format=DMA_DRM` and the linear
 * drm-format of each of those formats that has a DRM fourcc (of
 * GST_TENSOR_MEM_VIDEO_FORMATS for a structure without a format). This is what
 * our DMA-BUF pads offer and accept on GStreamer 1.24 and later: linear
 * layouts only. New reference; a plain copy where GStreamer has no DMA_DRM
 * caps. */
GstCaps *caps_with_dma_drm(GstCaps *caps);

/* TRUE when structure `index` of `caps` (not empty, not ANY) names
 * `feature` among its caps features. */
bool caps_have_feature(const GstCaps *caps, guint index, const char *feature);

/* A pool of the backend's memory configured for `caps`; NULL after a warning
 * when the element has no allocator yet or the pool refuses the config. */
GstBufferPool *backend_make_pool(const Backend &backend, GstElement *element, GstAllocator *allocator, GstCaps *caps,
                                 guint size, guint min_buffers, guint max_buffers, guint *aligned_size);

/* One element's use of the backend of its storage property. The element's
 * object lock guards every field; the methods take it themselves. */
class ElementBackend {
public:
  explicit ElementBackend(GstElement *element, GstTensorMemStorage storage = GST_TENSOR_MEM_STORAGE_AUTO);
  ~ElementBackend();
  ElementBackend(const ElementBackend &) = delete;
  ElementBackend &operator=(const ElementBackend &) = delete;

  /* The property (AUTO allowed; mutable in NULL and READY). */
  void set_storage(GstTensorMemStorage storage);
  GstTensorMemStorage storage() const;
  /* The backend the property resolves to. */
  const Backend &backend() const;

  /* GstElement::change_state: NULL→READY finds the device of a backend
   * that wants it then (FALSE after an element error); READY→NULL lets go
   * of every shared object, so the next run takes what is shared then. */
  gboolean open();
  void close();
  /* GstBaseTransform::start/stop: the start check, the device, the allocator. */
  gboolean start();
  void stop();

  /* GstElement::set_context and context queries, for every backend's shared
   * object (a context may arrive before the storage is chosen). */
  void handle_set_context(GstContext *context);
  gboolean handle_context_query(GstQuery *query);

  /* GstBaseTransform::set_caps: FALSE after an element error when output
   * caps of the backend's memory name a format it cannot hold. */
  gboolean check_caps(GstCaps *outcaps) const;

  /* New references (or NULL): the allocator between start and stop, the
   * backend's shared object. */
  GstAllocator *allocator() const;
  /* The same for `backend` (this element's, already read: one storage read
   * per buffer). */
  GstAllocator *allocator_for(const Backend &backend) const;
  GstObject *device() const;
  /* The shared object of `backend` (any entry, not only the property's):
   * found or made without posting anything (FALSE with `error` set), and
   * read (a new reference, or NULL). */
  gboolean find_device(const Backend &backend, GError **error);
  GstObject *device_of(const Backend &backend) const;
  /* Replaces the backend's shared object and its allocator (GstGL interop:
   * a GL worker that shares GstGL's context). */
  void use_device(GstObject *device);

  /* After a CPU write into `*outbuf` (the input itself when passed
   * through): fences it where the backend needs that; GST_FLOW_ERROR after
   * an element error. A passed-through input that is not writable is shared
   * first. */
  GstFlowReturn fence_cpu_writes(const Backend &backend, GstBuffer *inbuf, GstBuffer **outbuf) const;
  /* Fences a write into `*outbuf` unconditionally (a GPU write). */
  GstFlowReturn fence_writes(const Backend &backend, GstBuffer *inbuf, GstBuffer **outbuf) const;

private:
  static constexpr std::size_t kSlots = kBackendCount;
  GstObject **slot_of(const Backend &backend);
  gboolean ensure_device(const Backend &backend);

  GstElement *element_;
  GstTensorMemStorage storage_;
  GstObject *devices_[kSlots] = {};
  GstAllocator *allocator_ = nullptr;
};

} // namespace gst_tensormem
