// SPDX-License-Identifier: Apache-2.0
// The test programs see a fixed GStreamer plugin set (meson.build,
// scripts/gst-test-plugins.py): our plugin plus the few the tests use,
// whatever else the machine has installed.
#include <gtest/gtest.h>

#include <gst/gst.h>

#include <set>
#include <sstream>
#include <string>

namespace {

std::set<std::string> expected_plugins() {
  std::set<std::string> names{"tensormem"};
  const char *listed = g_getenv("TENSORMEM_TEST_GST_PLUGINS");
  std::istringstream in(listed != nullptr ? listed : "");
  for (std::string name; std::getline(in, name, ',');) {
    if (!name.empty()) {
      names.insert(name);
    }
  }
  return names;
}

std::set<std::string> registered_plugins() {
  std::set<std::string> names;
  GList *plugins = gst_registry_get_plugin_list(gst_registry_get());
  for (GList *l = plugins; l != nullptr; l = l->next) {
    names.insert(gst_plugin_get_name(GST_PLUGIN(l->data)));
  }
  gst_plugin_list_free(plugins);
  return names;
}

TEST(TestPluginSet, the_registry_holds_only_our_plugin_and_the_listed_ones) {
  ASSERT_NE(g_getenv("TENSORMEM_TEST_GST_PLUGINS"), nullptr) << "the meson test environment names the plugin set";
  const auto expected = expected_plugins();
  const auto seen = registered_plugins();
  // Plugins built into libgstreamer (statically registered) are always there;
  // "staticelements" is the only one in 1.22.
  std::set<std::string> unexpected;
  for (const auto &name : seen) {
    if (expected.count(name) == 0 && name != "staticelements") {
      unexpected.insert(name);
    }
  }
  std::string list;
  for (const auto &name : unexpected) {
    list += " " + name;
  }
  EXPECT_TRUE(unexpected.empty()) << "plugins from outside the test set:" << list;
  EXPECT_EQ(seen.count("tensormem"), 1u) << "our plugin is not in the registry";
  // The core plugins every test needs must be present; the others may be
  // missing on a machine without gst-plugins-bad, and the tests that use them
  // say so.
  for (const char *core : {"coreelements", "app", "videotestsrc"}) {
    EXPECT_EQ(seen.count(core), 1u) << core << " is missing from the test plugin set";
  }
}

} // namespace
