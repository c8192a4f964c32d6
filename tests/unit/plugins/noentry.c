/* A shared object without the entry symbol. */
int caravan_plugin_entry_misspelt(void) { return 42; }
