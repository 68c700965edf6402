"""pytest plugin (fixtures come with the plugin issue)."""
