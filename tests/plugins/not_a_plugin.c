/* A shared library with the plugin file name but no hpf_get_plugin_api: the host skips it. */
__attribute__((visibility("default"))) int hpf_something_else(void) { return 42; }
