// SPDX-License-Identifier: Apache-2.0
/* Every name our library and plugin register carries the project's prefix and
 * none is a name NNStreamer or GStreamer's analytics library registers, so
 * the three can live in one process. The program starts GStreamer without
 * our plugin on its path, records every GType and debug category, then loads
 * the plugin and the library and checks what appeared. */
#include <gtest/gtest.h>

#include <gst/allocators/gstdmabuf.h>
#include <gst/base/gstaggregator.h>
#include <gst/base/gstbasetransform.h>
#include <gst/base/gstflowcombiner.h>
#include <gst/gst.h>
#include <gst/tensormem/tensormem.h>
#include <gst/video/video.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace {

/* Names registered by NNStreamer (elements, their bases and enums) and by
 * GStreamer's analytics library (GstTensor, GstTensorMeta). */
const char *const kForeignNames[] = {
    "GstTensor",
    "GstTensorMeta",
    "GstTensorMetaAPI",
    "GstTensorDataType",
    "GstTensorDimOrder",
    "GstTensorLayout",
    "GstTensorTransform",
    "GstTensorFilter",
    "GstTensorConverter",
    "GstTensorDecoder",
    "GstTensorSink",
    "GstTensorSrc",
    "GstTensorMux",
    "GstTensorDemux",
    "GstTensorMerge",
    "GstTensorSplit",
    "GstTensorAggregator",
    "GstTensorRepoSink",
    "GstTensorRepoSrc",
    "GstTensorIf",
    "GstTensorRate",
    "GstTensorCrop",
    "GstTensorQuerySrc",
    "GstTensorQuerySink",
    "GstTensorQueryClient",
    "GstTensorQueryServerSrc",
    "GstTensorQueryServerSink",
    "GstTensorSparseEnc",
    "GstTensorSparseDec",
    "GstTensorTrainer",
    "GstTensorFilterFramework",
};

void collect_types(GType type, std::set<std::string> *out) {
  out->insert(g_type_name(type));
  guint n = 0;
  GType *children = g_type_children(type, &n);
  for (guint i = 0; i < n; ++i)
    collect_types(children[i], out);
  g_free(children);
}

/* Every type registered in the process: the tree under each fundamental. */
std::set<std::string> all_types() {
  std::set<std::string> names;
  const GType last = g_type_fundamental_next();
  for (GType f = G_TYPE_MAKE_FUNDAMENTAL(1); f < last; f += G_TYPE_MAKE_FUNDAMENTAL(1)) {
    if (g_type_name(f))
      collect_types(f, &names);
  }
  return names;
}

std::set<std::string> all_debug_categories() {
  std::set<std::string> names;
  GSList *list = gst_debug_get_all_categories();
  for (GSList *l = list; l; l = l->next)
    names.insert(gst_debug_category_get_name(static_cast<GstDebugCategory *>(l->data)));
  g_slist_free(list);
  return names;
}

std::set<std::string> difference(const std::set<std::string> &after, const std::set<std::string> &before) {
  std::set<std::string> out;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::inserter(out, out.end()));
  return out;
}

/* What registering our plugin and library added, recorded once. */
struct Registered {
  std::set<std::string> types;
  std::set<std::string> categories;
  std::vector<std::string> elements;
  std::vector<std::string> caps_features;
};

Registered *g_registered = nullptr;

class NamesEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    gst_init(nullptr, nullptr);
    // GStreamer's own types that ours derive from or use, and their debug
    // categories: registered before the first snapshot, so that the
    // difference holds only our names.
    for (GType type : {gst_video_buffer_pool_get_type(), gst_dmabuf_allocator_get_type(), gst_base_transform_get_type(),
                       gst_ghost_pad_get_type(), gst_aggregator_get_type(), gst_aggregator_pad_get_type()})
      g_type_class_unref(g_type_class_ref(type));
    g_type_ensure(gst_video_meta_api_get_type());
    g_type_ensure(gst_parent_buffer_meta_api_get_type());
    g_type_ensure(gst_param_spec_array_get_type()); // tensorconvert's mean and std
    g_type_ensure(g_cancellable_get_type());        // every element's interruptible waits
    g_type_ensure(gst_flow_combiner_get_type());    // tensorunbatch's source pads
    const std::set<std::string> types_before = all_types();
    const std::set<std::string> categories_before = all_debug_categories();
    ASSERT_EQ(types_before.count("GstTensorMemUpload"), 0u) << "the plugin was loaded before the first snapshot";

    const char *path = g_getenv("TENSORMEM_TEST_PLUGIN");
    ASSERT_NE(path, nullptr) << "TENSORMEM_TEST_PLUGIN names the plugin file";
    GError *error = nullptr;
    GstPlugin *plugin = gst_plugin_load_file(path, &error);
    ASSERT_NE(plugin, nullptr) << (error ? error->message : "gst_plugin_load_file failed");
    gst_tensor_mem_init();

    g_registered = new Registered;
    GList *features = gst_registry_get_feature_list_by_plugin(gst_registry_get(), gst_plugin_get_name(plugin));
    for (GList *l = features; l; l = l->next) {
      auto *feature = GST_PLUGIN_FEATURE(l->data);
      if (!GST_IS_ELEMENT_FACTORY(feature))
        continue;
      auto *factory = GST_ELEMENT_FACTORY(gst_plugin_feature_load(feature));
      ASSERT_NE(factory, nullptr);
      g_registered->elements.emplace_back(gst_plugin_feature_get_name(feature));
      // An instance runs class_init and instance init: the types they touch
      // (enums, allocators, the GL worker) get registered.
      GstElement *element = gst_element_factory_create(factory, nullptr);
      ASSERT_NE(element, nullptr);
      gst_object_unref(element);
      for (const GList *t = gst_element_factory_get_static_pad_templates(factory); t; t = t->next) {
        GstCaps *caps = gst_static_caps_get(&static_cast<GstStaticPadTemplate *>(t->data)->static_caps);
        for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
          GstCapsFeatures *f = gst_caps_get_features(caps, i);
          for (guint j = 0; f && j < gst_caps_features_get_size(f); ++j)
            g_registered->caps_features.emplace_back(gst_caps_features_get_nth(f, j));
        }
        gst_caps_unref(caps);
      }
      gst_object_unref(factory);
    }
    gst_plugin_feature_list_free(features);
    gst_object_unref(plugin);

    g_registered->types = difference(all_types(), types_before);
    g_registered->categories = difference(all_debug_categories(), categories_before);
  }
  void TearDown() override {
    delete g_registered;
    g_registered = nullptr;
    gst_deinit();
  }
};

const auto *const g_env = ::testing::AddGlobalTestEnvironment(new NamesEnvironment);

bool is_foreign(const std::string &name) {
  return std::find(std::begin(kForeignNames), std::end(kForeignNames), name) != std::end(kForeignNames);
}

TEST(Names, LoadingThePluginRegistersOurTypes) {
  ASSERT_NE(g_registered, nullptr);
  // The set the checks below run over: elements, their base, allocators,
  // the pool, the GL worker, the storage enum, the CUDA and fence metas.
  for (const char *expected : {"GstTensorMemUpload",          "GstTensorMemDownload",
                               "GstTensorMemCudaImport",      "GstTensorMemInspect",
                               "GstTensorMemTransform",       "GstTensorMemStorage",
                               "GstTensorMemSystemAllocator", "GstTensorMemDmaBufAllocator",
                               "GstTensorMemPboAllocator",    "GstTensorMemBufferPool",
                               "GstTensorMemGlWorker",        "GstTensorMemCudaMetaAPI",
                               "GstTensorMemCudaMeta",        "GstTensorMemAllocator",
                               "GstTensorMemConvert",         "GstTensorMemResizeMetaAPI",
                               "GstTensorMemResizeMeta",      "GstTensorMemResizeMode",
                               "GstTensorMemChannelOrder",    "GstTensorMemConvertDType",
                               "GstTensorMemTensorLayout",
                               "GstTensorMemBaseAllocator",   "GstTensorMemFenceMetaAPI",
                               "GstTensorMemFenceMeta",       "GstTensorMemSync",
                               "GstTensorMemUnbatch"})
    EXPECT_EQ(g_registered->types.count(expected), 1u) << expected << " was not registered";
}

TEST(Names, EveryRegisteredTypeCarriesTheProjectPrefix) {
  ASSERT_NE(g_registered, nullptr);
  ASSERT_FALSE(g_registered->types.empty());
  for (const std::string &name : g_registered->types) {
    EXPECT_EQ(name.rfind("GstTensorMem", 0), 0u) << name << " lacks the GstTensorMem prefix";
    EXPECT_FALSE(is_foreign(name)) << name << " is a name NNStreamer or GStreamer analytics registers";
  }
}

/* A meta registers two names: its API ("…MetaAPI") and its implementation
 * (what gst_meta_get_info() finds). */
TEST(Names, MetasCarryTheProjectPrefix) {
  ASSERT_NE(g_registered, nullptr);
  guint apis = 0, metas = 0;
  for (const std::string &name : g_registered->types) {
    if (gst_meta_get_info(name.c_str())) {
      ++metas;
      EXPECT_EQ(name.rfind("GstTensorMem", 0), 0u) << name;
      const GstMetaInfo *info = gst_meta_get_info(name.c_str());
      const std::string api = g_type_name(info->api);
      EXPECT_EQ(api, name + "API") << "the API of " << name;
      apis += g_registered->types.count(api);
    }
  }
  EXPECT_GE(metas, 1u);
  EXPECT_EQ(apis, metas) << "a meta whose API was registered before our plugin loaded";
}

TEST(Names, DebugCategoriesAreTensormemOrAnElementName) {
  ASSERT_NE(g_registered, nullptr);
  ASSERT_FALSE(g_registered->categories.empty());
  for (const std::string &name : g_registered->categories) {
    const bool element =
        std::find(g_registered->elements.begin(), g_registered->elements.end(), name) != g_registered->elements.end();
    EXPECT_TRUE(element || name.rfind("tensormem", 0) == 0)
        << "debug category " << name << " is neither tensormem… nor one of our element names";
  }
}

/* memory:DMABuf is GStreamer's own feature and must stay so (as GstGL's
 * memory:GLMemory, which tensorupload storage=pbo takes); our features
 * (memory:TensorPBO) begin with memory:Tensor, which neither NNStreamer nor
 * GStreamer uses. */
TEST(Names, CapsFeaturesAreGStreamersOrOurs) {
  ASSERT_NE(g_registered, nullptr);
  ASSERT_FALSE(g_registered->caps_features.empty());
  for (const std::string &f : g_registered->caps_features) {
    const bool gstreamer = f == GST_CAPS_FEATURE_MEMORY_SYSTEM_MEMORY || f == "memory:DMABuf" || f == "memory:GLMemory";
    EXPECT_TRUE(gstreamer || f.rfind("memory:Tensor", 0) == 0) << f;
  }
}

TEST(Names, ContextTypesCarryTheProjectPrefix) {
  EXPECT_EQ(std::string(GST_TENSOR_MEM_GL_WORKER_CONTEXT_TYPE).rfind("gst.tensormem.", 0), 0u);
}

} // namespace
